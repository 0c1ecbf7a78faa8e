// SNLI ESIM + ELMo (Supplement A.3; paper: 88.7 +/- 0.17 test accuracy, 5 seeds): ELMo at the
// input and output of the encoder, layer norm, lambda = 0.001. The biLM defaults to the shipped
// small biLM; SNLI_TRAIN etc. default to the bundled format sample (no SNLI train set is here).
// Run: allennlp train training_config/snli_esim_elmo.jsonnet -s out/ --include-package elmo_plugin
local esim = import "snli_esim.libsonnet";

// ELMo settings: the Table 2 / Table 3 ablations are a one-line change.
local elmo_placement = "both";  // "input", "output" or "both"
local elmo_lambda = 0.001;
local elmo_layer_norm = true;
local elmo_dropout = 0.5;

esim(elmo={ placement: elmo_placement, l2_coefficient: elmo_lambda, do_layer_norm: elmo_layer_norm, dropout: elmo_dropout })
