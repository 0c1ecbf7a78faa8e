// SQuAD 1.1: BiDAF + self-attention + ELMo at the input and the output of the shared GRU
// (Supplement A.4: no layer norm, lambda = 0; paper Table 1: 85.8 test F1 with the biLM trained on
// the 1B Word Benchmark). The biLM defaults to the one shipped with the plugin.
// Run: allennlp train training_config/squad_bidaf_selfattn_elmo.jsonnet -s out/squad --include-package elmo_plugin
local squad = import "squad_bidaf_selfattn.libsonnet";

// The ELMo settings and the seed are this function's arguments (jsonnet's top-level arguments):
// the Table 2 / Table 3 / Supplement A.2 ablations are a one-line change of a default here, or
// `jsonnet --tla-str placement=input ...`; `allennlp elmo-sweep` calls it with each run's values.
function(
  placement="both",  // "input", "output" or "both"
  l2_coefficient=0.0,  // lambda in lambda * ||w||^2 (Sec. 3.2)
  do_layer_norm=false,
  dropout=0.5,  // applies to no ELMo vector here: the model's 20% variational dropout before the GRU, which ELMo at the output rides through too, drops each once
  layers="all",  // "all": Eq. (1) over every biLM layer; "top": the last layer only
  gamma=true,  // false: gamma fixed at 1
  seed=std.parseInt(std.extVar("SEED")),  // all three of AllenNLP's seeds; another: SEED=2 allennlp train ...
  pretrained_word_vectors=false,  // true: the task's *_WORD_VECTORS file (docs/configs.md, Word vectors); false: trained from scratch
)
  squad(
    elmo={ placement: placement, l2_coefficient: l2_coefficient, do_layer_norm: do_layer_norm, dropout: dropout, layers: layers, gamma: gamma },
    seed=seed,
    pretrained_word_vectors=pretrained_word_vectors,
  )
