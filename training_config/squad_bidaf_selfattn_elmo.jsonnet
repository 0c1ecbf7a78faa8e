// SQuAD 1.1: BiDAF + self-attention + ELMo at the input and the output of the shared GRU
// (Supplement A.4: no layer norm, lambda = 0; paper Table 1: 85.8 test F1 with the biLM trained on
// the 1B Word Benchmark). The biLM defaults to the one shipped with the plugin.
// Run: allennlp train training_config/squad_bidaf_selfattn_elmo.jsonnet -s out/squad --include-package elmo_plugin
local squad = import "squad_bidaf_selfattn.libsonnet";

// ELMo settings: the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change.
local elmo_placement = "both";  // "input", "output" or "both"
local elmo_lambda = 0.0;  // lambda in lambda * ||w||^2 (Sec. 3.2)
local elmo_layer_norm = false;
local elmo_dropout = 0.5;  // applies to no ELMo vector here: the model's 20% variational dropout before the GRU, which ELMo at the output rides through too, drops each once
local elmo_layers = "all";  // "all": Eq. (1) over every biLM layer; "top": the last layer only
local elmo_gamma = true;  // false: gamma fixed at 1
// The run's seed (all three of AllenNLP's seeds); another seed: SEED=2 allennlp train ...
local seed = std.parseInt(std.extVar("SEED"));

squad(
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
