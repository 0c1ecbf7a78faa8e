// CoNLL-2003 NER biLSTM-CRF baseline without ELMo (Supplement A.7; paper baseline 90.15 test F1
// with Senna vectors).
// Run: allennlp train training_config/conll2003_crf_tagger.jsonnet -s out/ner_base --include-package elmo_plugin
local tagger = import "conll2003_crf_tagger.libsonnet";

// The seed is the function's argument (all three of AllenNLP's seeds); another: SEED=2 allennlp train ...
// pretrained_word_vectors: true reads the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
function(seed=std.parseInt(std.extVar("SEED")), pretrained_word_vectors=false)
  tagger(elmo=null, seed=seed, pretrained_word_vectors=pretrained_word_vectors)
