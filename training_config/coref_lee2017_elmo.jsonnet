// CoNLL-2012 coreference, Lee et al. 2017 + ELMo at the input of the lowest biLSTM (Supplement A.6:
// lambda = 0, no layer norm, 50% dropout on ELMo; paper Table 1: 70.4 average F1 with the biLM
// trained on the 1B Word Benchmark). The biLM defaults to the one shipped with the plugin.
// Run: allennlp train training_config/coref_lee2017_elmo.jsonnet -s out/coref --include-package elmo_plugin
local coref = import "coref_lee2017.libsonnet";

// ELMo settings: the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change.
local elmo_placement = "input";  // "input", "output" or "both"
local elmo_lambda = 0.0;  // lambda in lambda * ||w||^2 (Sec. 3.2)
local elmo_layer_norm = false;
local elmo_dropout = 0.5;  // applies to no ELMo vector here: the model's 50% lexical dropout on the embedded text (A.6's 50% on ELMo) drops each once
local elmo_layers = "all";  // "all": Eq. (1) over every biLM layer; "top": the last layer only
local elmo_gamma = true;  // false: gamma fixed at 1
// The run's seed (all three of AllenNLP's seeds); another seed: SEED=2 allennlp train ...
local seed = std.parseInt(std.extVar("SEED"));

coref(
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
