// CoNLL-2012 SRL, He et al. 2017 + ELMo at the input (Supplement A.5; paper Table 1: 84.6 test F1
// with the biLM trained on the 1B Word Benchmark). A.5 gives no lambda for SRL: 0.001, the value
// Sec. 5.1 recommends, and AllenNLP's ELMo dropout of 0.1 for this model. The biLM defaults to the
// one shipped with the plugin.
// Run: allennlp train training_config/srl_he2017_elmo.jsonnet -s out/srl --include-package elmo_plugin
local srl = import "srl_he2017.libsonnet";

// The ELMo settings and the seed are this function's arguments (jsonnet's top-level arguments):
// the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change of a default here, or
// `jsonnet --tla-str placement=input ...`; `allennlp elmo-sweep` calls it with each run's values.
function(
  placement="input",  // "input", "output" or "both"
  l2_coefficient=0.001,  // lambda in lambda * ||w||^2 (Sec. 3.2)
  do_layer_norm=false,
  dropout=0.1,  // applies to every ELMo vector (the model has no dropout of its own on the embedded text)
  layers="all",  // "all": Eq. (1) over every biLM layer; "top": the last layer only
  gamma=true,  // false: gamma fixed at 1
  seed=std.parseInt(std.extVar("SEED")),  // all three of AllenNLP's seeds; another: SEED=2 allennlp train ...
  pretrained_word_vectors=false,  // true: the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
)
  srl(
    elmo={ placement: placement, l2_coefficient: l2_coefficient, do_layer_norm: do_layer_norm, dropout: dropout, layers: layers, gamma: gamma },
    seed=seed,
    pretrained_word_vectors=pretrained_word_vectors,
  )
