// CoNLL-2012 SRL, He et al. 2017 + ELMo at the input (Supplement A.5; paper Table 1: 84.6 test F1
// with the biLM trained on the 1B Word Benchmark). A.5 gives no lambda for SRL: 0.001, the value
// Sec. 5.1 recommends, and AllenNLP's ELMo dropout of 0.1 for this model. The biLM defaults to the
// one shipped with the plugin.
// Run: allennlp train training_config/srl_he2017_elmo.jsonnet -s out/srl --include-package elmo_plugin
local srl = import "srl_he2017.libsonnet";

// ELMo settings: the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change.
local elmo_placement = "input";  // "input", "output" or "both"
local elmo_lambda = 0.001;  // lambda in lambda * ||w||^2 (Sec. 3.2)
local elmo_layer_norm = false;
local elmo_dropout = 0.1;  // applies to every ELMo vector (the model has no dropout of its own on the embedded text)
local elmo_layers = "all";  // "all": Eq. (1) over every biLM layer; "top": the last layer only
local elmo_gamma = true;  // false: gamma fixed at 1
// The run's seed (all three of AllenNLP's seeds); another seed: SEED=2 allennlp train ...
local seed = std.parseInt(std.extVar("SEED"));

srl(
  elmo={
    placement: elmo_placement,
    l2_coefficient: elmo_lambda,
    do_layer_norm: elmo_layer_norm,
    dropout: elmo_dropout,
    layers: elmo_layers,
    gamma: elmo_gamma,
  },
  seed=seed,
)
