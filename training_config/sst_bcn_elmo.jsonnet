// SST-5 BCN + ELMo (Supplement A.8; paper: 54.7 +/- 0.5 test accuracy): ELMo at the input and the
// integrator output, lambda = 0.001. The biLM defaults to the shipped small biLM.
// Run: allennlp train training_config/sst_bcn_elmo.jsonnet -s out/sst --include-package elmo_plugin
local bcn = import "sst_bcn.libsonnet";

// ELMo settings: the Table 2 / Table 3 ablations are a one-line change.
local elmo_placement = "both";  // "input", "output" or "both"
local elmo_lambda = 0.001;
local elmo_layer_norm = false;
local elmo_dropout = 0.5;

bcn(elmo={ placement: elmo_placement, l2_coefficient: elmo_lambda, do_layer_norm: elmo_layer_norm, dropout: elmo_dropout })
