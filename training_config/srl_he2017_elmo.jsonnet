// CoNLL-2012 SRL, He et al. 2017 + ELMo at the input (Supplement A.5; paper Table 1: 84.6 test F1
// with the 5.5B biLM). A.5 gives no lambda for SRL: 0.001, the value Sec. 5.1 recommends, and
// AllenNLP's ELMo dropout of 0.1 for this model. The biLM defaults to the shipped small biLM.
// Run: allennlp train training_config/srl_he2017_elmo.jsonnet -s out/srl --include-package elmo_plugin
local srl = import "srl_he2017.libsonnet";

// ELMo settings: the Table 2 / Table 3 ablations are a one-line change.
local elmo_placement = "input";  // "input", "output" or "both"
local elmo_lambda = 0.001;
local elmo_layer_norm = false;
local elmo_dropout = 0.1;

srl(elmo={ placement: elmo_placement, l2_coefficient: elmo_lambda, do_layer_norm: elmo_layer_norm, dropout: elmo_dropout })
