// CoNLL-2003 NER biLSTM-CRF + ELMo at the input (Supplement A.7: lambda = 0.1).
// Paper: 92.22 +/- 0.10 test F1 (5 seeds) with the biLM trained on the 1B Word Benchmark and Senna
// vectors. The biLM defaults to the one shipped with the plugin; ELMO_OPTIONS_FILE / ELMO_WEIGHT_FILE
// choose another.
// Run: allennlp train training_config/conll2003_crf_tagger_elmo.jsonnet -s out/ner --include-package elmo_plugin
local tagger = import "conll2003_crf_tagger.libsonnet";

// ELMo settings: the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change.
local elmo_placement = "input";  // "input", "output" or "both"
local elmo_lambda = 0.1;  // lambda in lambda * ||w||^2 (Sec. 3.2)
local elmo_layer_norm = false;
local elmo_dropout = 0.5;  // applies to ELMo at the output; ELMo at the input is dropped once by the encoder's 50% variational input dropout (A.7)
local elmo_layers = "all";  // "all": Eq. (1) over every biLM layer; "top": the last layer only
local elmo_gamma = true;  // false: gamma fixed at 1
// The run's seed (all three of AllenNLP's seeds); another seed: SEED=2 allennlp train ...
local seed = std.parseInt(std.extVar("SEED"));

tagger(
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
