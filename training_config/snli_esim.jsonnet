// SNLI ESIM baseline (Supplement A.3; paper baseline 88.0 test accuracy).
// Run: allennlp train training_config/snli_esim.jsonnet -s out/esim --include-package elmo_plugin
local esim = import "snli_esim.libsonnet";

// The seed is the function's argument (all three of AllenNLP's seeds); another: SEED=2 allennlp train ...
// num_epochs: 8, the bundled small-scale run; the paper's setting on all of SNLI: 75 (`-o '{"trainer.num_epochs": 75}'`)
// pretrained_word_vectors: true reads the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
function(seed=std.parseInt(std.extVar("SEED")), num_epochs=8, pretrained_word_vectors=false)
  esim(elmo=null, seed=seed, num_epochs=num_epochs, pretrained_word_vectors=pretrained_word_vectors)
