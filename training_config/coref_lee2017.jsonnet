// CoNLL-2012 coreference baseline, Lee et al. 2017 (Supplement A.6; paper Table 1: 67.2 average F1).
// Run: allennlp train training_config/coref_lee2017.jsonnet -s out/coref --include-package elmo_plugin
// with COREF_TRAIN / COREF_DEV / COREF_TEST pointing at the CoNLL-2012 *gold_conll files.
local coref = import "coref_lee2017.libsonnet";

// The seed is the function's argument (all three of AllenNLP's seeds); another: SEED=2 allennlp train ...
// pretrained_word_vectors: true reads the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
function(seed=std.parseInt(std.extVar("SEED")), pretrained_word_vectors=false)
  coref(elmo=null, seed=seed, pretrained_word_vectors=pretrained_word_vectors)
