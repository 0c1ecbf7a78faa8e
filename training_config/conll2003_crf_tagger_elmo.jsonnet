// CoNLL-2003 NER biLSTM-CRF + ELMo at the input (Supplement A.7: lambda = 0.1).
// Paper: 92.22 +/- 0.10 test F1 (5 seeds) with the biLM trained on the 1B Word Benchmark and Senna
// vectors. The biLM defaults to the one shipped with the plugin; ELMO_OPTIONS_FILE / ELMO_WEIGHT_FILE
// choose another.
// Run: allennlp train training_config/conll2003_crf_tagger_elmo.jsonnet -s out/ner --include-package elmo_plugin
local tagger = import "conll2003_crf_tagger.libsonnet";

// The ELMo settings and the seed are this function's arguments (jsonnet's top-level arguments):
// the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change of a default here, or
// `jsonnet --tla-str placement=input ...`; `allennlp elmo-sweep` calls it with each run's values.
function(
  placement="input",  // "input", "output" or "both"
  l2_coefficient=0.1,  // lambda in lambda * ||w||^2 (Sec. 3.2)
  do_layer_norm=false,
  dropout=0.5,  // applies to ELMo at the output; ELMo at the input is dropped once by the encoder's 50% variational input dropout (A.7)
  layers="all",  // "all": Eq. (1) over every biLM layer; "top": the last layer only
  gamma=true,  // false: gamma fixed at 1
  seed=std.parseInt(std.extVar("SEED")),  // all three of AllenNLP's seeds; another: SEED=2 allennlp train ...
  pretrained_word_vectors=false,  // true: the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
)
  tagger(
    elmo={ placement: placement, l2_coefficient: l2_coefficient, do_layer_norm: do_layer_norm, dropout: dropout, layers: layers, gamma: gamma },
    seed=seed,
    pretrained_word_vectors=pretrained_word_vectors,
  )
