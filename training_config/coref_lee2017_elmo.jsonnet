// CoNLL-2012 coreference, Lee et al. 2017 + ELMo at the input of the lowest biLSTM (Supplement A.6:
// lambda = 0, no layer norm, 50% dropout on ELMo; paper Table 1: 70.4 average F1 with the biLM
// trained on the 1B Word Benchmark). The biLM defaults to the one shipped with the plugin.
// Run: allennlp train training_config/coref_lee2017_elmo.jsonnet -s out/coref --include-package elmo_plugin
local coref = import "coref_lee2017.libsonnet";

// The ELMo settings and the seed are this function's arguments (jsonnet's top-level arguments):
// the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change of a default here, or
// `jsonnet --tla-str placement=input ...`; `allennlp elmo-sweep` calls it with each run's values.
function(
  placement="input",  // "input", "output" or "both"
  l2_coefficient=0.0,  // lambda in lambda * ||w||^2 (Sec. 3.2)
  do_layer_norm=false,
  dropout=0.5,  // applies to no ELMo vector here: the model's 50% lexical dropout on the embedded text (A.6's 50% on ELMo) drops each once
  layers="all",  // "all": Eq. (1) over every biLM layer; "top": the last layer only
  gamma=true,  // false: gamma fixed at 1
  seed=std.parseInt(std.extVar("SEED")),  // all three of AllenNLP's seeds; another: SEED=2 allennlp train ...
  pretrained_word_vectors=false,  // true: the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
)
  coref(
    elmo={ placement: placement, l2_coefficient: l2_coefficient, do_layer_norm: do_layer_norm, dropout: dropout, layers: layers, gamma: gamma },
    seed=seed,
    pretrained_word_vectors=pretrained_word_vectors,
  )
