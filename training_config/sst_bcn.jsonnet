// SST-5 BCN baseline (Supplement A.8; paper baseline 51.4 test accuracy, with GloVe vectors, not available here).
// Run: allennlp train training_config/sst_bcn.jsonnet -s out/sst_base --include-package elmo_plugin
local bcn = import "sst_bcn.libsonnet";

// The seed is the function's argument (all three of AllenNLP's seeds); another: SEED=2 allennlp train ...
function(seed=std.parseInt(std.extVar("SEED"))) bcn(elmo=null, seed=seed)
