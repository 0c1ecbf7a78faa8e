// SST-5 BCN baseline (Supplement A.8; paper baseline 51.4 test accuracy, with GloVe vectors, not available here).
// Run: allennlp train training_config/sst_bcn.jsonnet -s out/sst_base --include-package elmo_plugin
local bcn = import "sst_bcn.libsonnet";

// The seed is the function's argument (all three of AllenNLP's seeds); another: SEED=2 allennlp train ...
// pretrained_word_vectors: true reads the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
function(seed=std.parseInt(std.extVar("SEED")), pretrained_word_vectors=false)
  bcn(elmo=null, seed=seed, pretrained_word_vectors=pretrained_word_vectors)
