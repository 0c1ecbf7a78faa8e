// CoNLL-2012 SRL baseline, He et al. 2017 (Supplement A.5; paper Table 1: 81.4 test F1).
// Run: allennlp train training_config/srl_he2017.jsonnet -s out/srl --include-package elmo_plugin
// with SRL_TRAIN / SRL_DEV / SRL_TEST pointing at the CoNLL-2012 OntoNotes *gold_conll files.
local srl = import "srl_he2017.libsonnet";

// The seed is the function's argument (all three of AllenNLP's seeds); another: SEED=2 allennlp train ...
// pretrained_word_vectors: true reads the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
function(seed=std.parseInt(std.extVar("SEED")), pretrained_word_vectors=false)
  srl(elmo=null, seed=seed, pretrained_word_vectors=pretrained_word_vectors)
