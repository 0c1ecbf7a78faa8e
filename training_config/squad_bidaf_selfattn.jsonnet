// SQuAD 1.1 baseline: Clark and Gardner's BiDAF + self-attention (Supplement A.4; paper Table 1:
// 81.1 test F1). Run: allennlp train training_config/squad_bidaf_selfattn.jsonnet -s out/squad
// --include-package elmo_plugin, with SQUAD_TRAIN / SQUAD_DEV pointing at SQuAD 1.1 json files.
local squad = import "squad_bidaf_selfattn.libsonnet";

// The seed is the function's argument (all three of AllenNLP's seeds); another: SEED=2 allennlp train ...
// pretrained_word_vectors: true reads the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
function(seed=std.parseInt(std.extVar("SEED")), pretrained_word_vectors=false)
  squad(elmo=null, seed=seed, pretrained_word_vectors=pretrained_word_vectors)
