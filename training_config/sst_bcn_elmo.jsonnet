// SST-5 BCN + ELMo (Supplement A.8; paper: 54.7 +/- 0.5 test accuracy, 5 seeds): ELMo at the input
// and the integrator output, lambda = 0.001. The biLM defaults to the one shipped with the plugin.
// Run: allennlp train training_config/sst_bcn_elmo.jsonnet -s out/sst --include-package elmo_plugin
local bcn = import "sst_bcn.libsonnet";

// ELMo settings: the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change.
local elmo_placement = "both";  // "input", "output" or "both"
local elmo_lambda = 0.001;  // lambda in lambda * ||w||^2 (Sec. 3.2)
local elmo_layer_norm = false;
local elmo_dropout = 0.5;  // applies to ELMo at the output; ELMo at the input is dropped once by BCN's 50% embedding dropout
local elmo_layers = "all";  // "all": Eq. (1) over every biLM layer; "top": the last layer only
local elmo_gamma = true;  // false: gamma fixed at 1
// The run's seed (all three of AllenNLP's seeds); another seed: SEED=2 allennlp train ...
local seed = std.parseInt(std.extVar("SEED"));

bcn(
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
