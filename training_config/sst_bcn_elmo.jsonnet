// SST-5 BCN + ELMo (Supplement A.8; paper: 54.7 +/- 0.5 test accuracy, 5 seeds): ELMo at the input
// and the integrator output, lambda = 0.001. The biLM defaults to the one shipped with the plugin.
// Run: allennlp train training_config/sst_bcn_elmo.jsonnet -s out/sst --include-package elmo_plugin
local bcn = import "sst_bcn.libsonnet";

// The ELMo settings and the seed are this function's arguments (jsonnet's top-level arguments):
// the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change of a default here, or
// `jsonnet --tla-str placement=input ...`; `allennlp elmo-sweep` calls it with each run's values.
function(
  placement="both",  // "input", "output" or "both"
  l2_coefficient=0.001,  // lambda in lambda * ||w||^2 (Sec. 3.2)
  do_layer_norm=false,
  dropout=0.5,  // applies to ELMo at the output; ELMo at the input is dropped once by BCN's 50% embedding dropout
  layers="all",  // "all": Eq. (1) over every biLM layer; "top": the last layer only
  gamma=true,  // false: gamma fixed at 1
  seed=std.parseInt(std.extVar("SEED")),  // all three of AllenNLP's seeds; another: SEED=2 allennlp train ...
  pretrained_word_vectors=false,  // true: the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
)
  bcn(
    elmo={ placement: placement, l2_coefficient: l2_coefficient, do_layer_norm: do_layer_norm, dropout: dropout, layers: layers, gamma: gamma },
    seed=seed,
    pretrained_word_vectors=pretrained_word_vectors,
  )
