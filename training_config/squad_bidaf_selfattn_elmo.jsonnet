// SQuAD 1.1: BiDAF + self-attention + ELMo at the input and the output of the shared GRU
// (Supplement A.4: no layer norm, lambda = 0; paper Table 1: 85.8 test F1 with the 5.5B biLM).
// The biLM defaults to the shipped small biLM.
// Run: allennlp train training_config/squad_bidaf_selfattn_elmo.jsonnet -s out/squad --include-package elmo_plugin
local squad = import "squad_bidaf_selfattn.libsonnet";

// ELMo settings: the Table 2 / Table 3 ablations are a one-line change.
local elmo_placement = "both";  // "input", "output" or "both"
local elmo_lambda = 0.0;
local elmo_layer_norm = false;
local elmo_dropout = 0.5;

squad(elmo={ placement: elmo_placement, l2_coefficient: elmo_lambda, do_layer_norm: elmo_layer_norm, dropout: elmo_dropout })
