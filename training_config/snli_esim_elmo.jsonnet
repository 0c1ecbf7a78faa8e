// SNLI ESIM + ELMo (Supplement A.3; paper: 88.7 +/- 0.17 test accuracy, 5 seeds): ELMo at the
// input and output of the encoder, layer norm, lambda = 0.001, L2 1e-4 on the recurrent and
// feed-forward weight matrices, 50% dropout after the attention layer. The biLM defaults to the one
// shipped with the plugin. SNLI_TRAIN etc. default to a small-scale run on the bundled SNLI dev / test
// pairs (no SNLI train set is here): train on dev, validate and test on the two halves of test.
// Run: allennlp train training_config/snli_esim_elmo.jsonnet -s out/ --include-package elmo_plugin
local esim = import "snli_esim.libsonnet";

// ELMo settings: the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change.
local elmo_placement = "both";  // "input", "output" or "both"
local elmo_lambda = 0.001;  // lambda in lambda * ||w||^2 (Sec. 3.2)
local elmo_layer_norm = true;
local elmo_dropout = 0.5;  // applies to no ELMo vector here: ESIM's 50% variational dropout on the LSTM input, which ELMo at the output rides through too, drops each once
local elmo_layers = "all";  // "all": Eq. (1) over every biLM layer; "top": the last layer only
local elmo_gamma = true;  // false: gamma fixed at 1
// The run's seed (all three of AllenNLP's seeds); another seed: SEED=2 allennlp train ...
local seed = std.parseInt(std.extVar("SEED"));

esim(
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
