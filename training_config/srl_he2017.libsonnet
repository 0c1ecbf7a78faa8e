// CoNLL-2012 SRL, He et al. (2017) as in Peters et al. 2018, Supplement A.5, with or without ELMo
// (`elmo`: see elmo.libsonnet; the paper puts it at the input only). allennlp-models' "srl" model:
// 100-d word embeddings + 100-d predicate-indicator embedding, an 8-layer interleaved biLSTM of 300
// units with highway connections, variational recurrent dropout 0.1, orthogonal init and forget bias
// 1 (AugmentedLstm), softmax over BIO tags, Viterbi decoding with BIO constraints, span F1 from the
// official srl-eval.pl (the verb excluded); Adadelta (lr 1.0, rho 0.95), gradient clipping 1.0.
// Data: SRL_TRAIN / SRL_DEV / SRL_TEST, a *gold_conll file or a directory of them (OntoNotes 5.0's
// CoNLL-2012 split; default, as OntoNotes is not on these machines: PropBank on the English Web
// Treebank, ../shared/data/propbank_ewt). Verbal predicates (VB*) as He et al.; every predicate:
// --overrides '{"dataset_reader.predicates": "all"}'.
// Word vectors: SRL_WORD_VECTORS (100-d, fine-tuned, as A.5's GloVe; default: word2vec on the bundled Wikipedia, lowercased (w2v_lower_100d);
// read only with `pretrained_word_vectors=true`, what `allennlp elmo-table1` passes (it builds the file;
// a missing one is an error naming the command); false, the default: trained from scratch).
local common = import "common.libsonnet";
local elmo_lib = import "elmo.libsonnet";

// `hidden_size` / `num_layers` shrink the encoder for tests.
function(elmo=null, seed=13370, pretrained_word_vectors=false, hidden_size=300, num_layers=8)
  // the choice is the argument: "" = trained from scratch, never because a file is missing
  local word_vectors = if !pretrained_word_vectors then "" else
    local path = std.extVar("SRL_WORD_VECTORS");
    if path == "" then error "pretrained_word_vectors=true but SRL_WORD_VECTORS is empty: name the vectors file (SRL_WORD_VECTORS unset: the one `allennlp elmo-word-vectors` / `allennlp elmo-table1` builds)" else path;
  local word_dim = 100;
  local predicate_dim = 100;
  local token_embedders = {
    tokens: {
      type: "embedding",
      embedding_dim: word_dim,
      trainable: true,
      [if word_vectors != "" then "pretrained_file"]: word_vectors,
    },
  };
  local lstm = {
    type: "elmo_plugin_alternating_lstm",
    input_size: word_dim + predicate_dim + (if elmo_lib.at_input(elmo) then elmo_lib.dim(elmo) else 0),
    hidden_size: hidden_size,
    num_layers: num_layers,
    recurrent_dropout_probability: 0.1,
    use_highway: true,
  };
  common.seeds(seed) + {
    dataset_reader: {
      type: "elmo_plugin_srl",
      predicates: "verbal",
      token_indexers: elmo_lib.indexers({ tokens: { type: "single_id", lowercase_tokens: true } }, elmo),
    },
    train_data_path: std.extVar("SRL_TRAIN"),
    validation_data_path: std.extVar("SRL_DEV"),
    test_data_path: std.extVar("SRL_TEST"),
    evaluate_on_test: true,
    model: {
      type: "srl",
      text_field_embedder: elmo_lib.embedder(token_embedders, elmo),
      // the predicate-indicator embedding follows the embedded text in the encoder input
      encoder: elmo_lib.encoder(lstm, elmo, trailing_dim=predicate_dim),
      binary_feature_dim: predicate_dim,
      initializer: { regexes: [["tag_projection_layer.*weight", { type: "orthogonal" }]] },
    },
    data_loader: { batch_sampler: { type: "bucket", batch_size: 80 } },
    validation_data_loader: common.validation_loader(80),
    trainer: {
      optimizer: { type: "adadelta", lr: 1.0, rho: 0.95, eps: 1e-6 },
      grad_clipping: 1.0,
      validation_metric: "+f1-measure-overall",
      num_epochs: 500,
      patience: 200,
      checkpointer: { type: "elmo_plugin_safe" },
      // --recover retraces an uninterrupted run exactly (docs/reliability.md)
      callbacks: [{ type: "elmo_plugin_exact_recovery" }, { type: "elmo_plugin_run_progress" }],
    },
  }
