// CoNLL-2012 coreference, Lee et al. 2017 + ELMo at the input of the lowest biLSTM (Supplement A.6:
// lambda = 0, no layer norm, 50% dropout on ELMo; paper Table 1: 70.4 average F1 with the 5.5B biLM).
// The biLM defaults to the shipped small biLM.
// Run: allennlp train training_config/coref_lee2017_elmo.jsonnet -s out/coref --include-package elmo_plugin
local coref = import "coref_lee2017.libsonnet";

// ELMo settings: the Table 2 / Table 3 ablations are a one-line change.
local elmo_placement = "input";  // "input", "output" or "both"
local elmo_lambda = 0.0;
local elmo_layer_norm = false;
local elmo_dropout = 0.5;

coref(elmo={ placement: elmo_placement, l2_coefficient: elmo_lambda, do_layer_norm: elmo_layer_norm, dropout: elmo_dropout })
