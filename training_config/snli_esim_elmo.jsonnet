// SNLI ESIM + ELMo (Supplement A.3; paper: 88.7 +/- 0.17 test accuracy, 5 seeds): ELMo at the
// input and output of the encoder, layer norm, lambda = 0.001, L2 1e-4 on the recurrent and
// feed-forward weight matrices, 50% dropout after the attention layer. The biLM defaults to the one
// shipped with the plugin. SNLI_TRAIN etc. default to a small-scale run on the bundled SNLI dev / test
// pairs (no SNLI train set is here): train on dev, validate and test on the two halves of test.
// Run: allennlp train training_config/snli_esim_elmo.jsonnet -s out/ --include-package elmo_plugin
local esim = import "snli_esim.libsonnet";

// The ELMo settings and the seed are this function's arguments (jsonnet's top-level arguments):
// the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change of a default here, or
// `jsonnet --tla-str placement=input ...`; `allennlp elmo-sweep` calls it with each run's values.
function(
  placement="both",  // "input", "output" or "both"
  l2_coefficient=0.001,  // lambda in lambda * ||w||^2 (Sec. 3.2)
  do_layer_norm=true,
  dropout=0.5,  // applies to no ELMo vector here: ESIM's 50% variational dropout on the LSTM input, which ELMo at the output rides through too, drops each once
  layers="all",  // "all": Eq. (1) over every biLM layer; "top": the last layer only
  gamma=true,  // false: gamma fixed at 1
  seed=std.parseInt(std.extVar("SEED")),  // all three of AllenNLP's seeds; another: SEED=2 allennlp train ...
  num_epochs=8,  // the bundled small-scale run (the README's); the paper's setting on all of SNLI: 75 (`-o '{"trainer.num_epochs": 75}'`)
  pretrained_word_vectors=false,  // true: the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
)
  esim(
    elmo={ placement: placement, l2_coefficient: l2_coefficient, do_layer_norm: do_layer_norm, dropout: dropout, layers: layers, gamma: gamma },
    seed=seed,
    num_epochs=num_epochs,
    pretrained_word_vectors=pretrained_word_vectors,
  )
