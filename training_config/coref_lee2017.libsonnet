// CoNLL-2012 coreference, Lee et al. (2017) as in Peters et al. 2018, Supplement A.6, with or
// without ELMo (`elmo`: see elmo.libsonnet; the paper: at the input of the lowest biLSTM, lambda 0,
// no layer norm, 50% dropout on ELMo). Model `elmo_plugin_coref`: allennlp-models' "coref" span
// ranking + Lee et al.'s same-speaker and genre features. Lee et al.: 300-d GloVe (fixed) + char
// CNN (8-d characters, widths 3/4/5 x 50 filters), dropout 0.5 on the embeddings, a 1-layer biLSTM
// of 200, FFNNs of 2 x 150 ReLU with dropout 0.2, 20-d features, spans up to 10 words, 0.4 spans
// per word, 250 antecedents, Adam 1e-3 decayed by 0.1% every 100 steps (here per epoch: 0.999^28,
// 28 x 100 documents in the OntoNotes training set), one document per batch.
// Not reproduced: Lee et al. also concatenate fixed 50-d Turian embeddings.
// Data: COREF_TRAIN / COREF_DEV / COREF_TEST, a *gold_conll file or a directory of them, optionally
// `PATH#IDS_FILE` (the listed documents only). Default, as OntoNotes is not on these machines:
// LitBank fold LITBANK_FOLD (default 0) of its 10-fold split. LitBank has no speaker or genre: one
// speaker per document and one "other" genre make those features constant. Its singletons are
// removed (`remove_singleton_clusters`), as OntoNotes annotates none and the model predicts none;
// gold mentions wider than `max_span_width` (10) stay in the gold clusters, so they count as
// missed (fold 0 test: 18 of 2,267).
// Word vectors: COREF_WORD_VECTORS (300-d, kept fixed, as A.6's GloVe; default: word2vec on the bundled Wikipedia, cased (w2v_cased_300d);
// read only with `pretrained_word_vectors=true`, what `allennlp elmo-table1` passes (it builds the file;
// a missing one is an error naming the command); false, the default: trained from scratch).
local common = import "common.libsonnet";
local elmo_lib = import "elmo.libsonnet";

function(elmo=null, seed=13370, pretrained_word_vectors=false)
  // the choice is the argument: "" = trained from scratch, never because a file is missing
  local word_vectors = if !pretrained_word_vectors then "" else
    local path = std.extVar("COREF_WORD_VECTORS");
    if path == "" then error "pretrained_word_vectors=true but COREF_WORD_VECTORS is empty: name the vectors file (COREF_WORD_VECTORS unset: the one `allennlp elmo-word-vectors` / `allennlp elmo-table1` builds)" else path;
  local word_dim = 300;
  local char_dim = 3 * 50;
  local feature_size = 20;
  local elmo_dim = elmo_lib.dim(elmo);
  local embedding_dim = word_dim + char_dim
    + (if elmo_lib.at_input(elmo) then elmo_dim else 0) + (if elmo_lib.at_output(elmo) then elmo_dim else 0);
  local context_dim = 2 * 200 + (if elmo_lib.at_output(elmo) then elmo_dim else 0);
  // [endpoints; width] + head attention over the embedded text
  local span_dim = 2 * context_dim + feature_size + embedding_dim;
  local token_embedders = {
    tokens: {
      type: "embedding",
      embedding_dim: word_dim,
      trainable: word_vectors == "",
      [if word_vectors != "" then "pretrained_file"]: word_vectors,
    },
    token_characters: {
      type: "character_encoding",
      embedding: { embedding_dim: 8, vocab_namespace: "token_characters" },
      encoder: { type: "cnn", embedding_dim: 8, num_filters: 50, ngram_filter_sizes: [3, 4, 5] },
    },
  };
  local lstm = {
    type: "elmo_plugin_lstm",
    input_size: word_dim + char_dim + (if elmo_lib.at_input(elmo) then elmo_dim else 0),
    hidden_size: 200,
    num_layers: 1,
    bidirectional: true,
  };
  local ffnn(input_dim) = { input_dim: input_dim, num_layers: 2, hidden_dims: 150, activations: "relu", dropout: 0.2 };
  common.seeds(seed) + {
    local reader = {
      type: "elmo_plugin_coref",
      max_span_width: 10,
      remove_singleton_clusters: true,
      token_indexers: elmo_lib.indexers({
        tokens: { type: "single_id", lowercase_tokens: false },
        token_characters: { type: "elmo_plugin_capped_characters", min_padding_length: 5, max_characters: 50 },
      }, elmo),
    },
    // training documents cut to their first 50 sentences, as Lee et al.'s code
    // (max_training_sentences = 50): it bounds the memory of a training step; evaluation reads
    // whole documents
    dataset_reader: reader { max_sentences: 50 },
    validation_dataset_reader: reader,
    train_data_path: std.extVar("COREF_TRAIN"),
    validation_data_path: std.extVar("COREF_DEV"),
    test_data_path: std.extVar("COREF_TEST"),
    evaluate_on_test: true,
    model: {
      type: "elmo_plugin_coref",
      // lexical_dropout (A.6's 50% on ELMo) drops ELMo at the input and (riding along) at the output
      text_field_embedder: elmo_lib.embedder(token_embedders, elmo, dropped_by_model=["input", "output"]),
      context_layer: elmo_lib.encoder(lstm, elmo),
      mention_feedforward: ffnn(span_dim),
      // [g_i; g_j; g_i * g_j; distance; same speaker; genre]
      antecedent_feedforward: ffnn(3 * span_dim + 3 * feature_size),
      initializer: {
        regexes: [
          [".*linear_layers.*weight", { type: "xavier_normal" }],
          [".*scorer._module.weight", { type: "xavier_normal" }],
          ["_distance_embedding.weight", { type: "xavier_normal" }],
          ["_span_width_embedding.weight", { type: "xavier_normal" }],
          ["_context_layer.*weight_ih.*", { type: "xavier_normal" }],
          ["_context_layer.*weight_hh.*", { type: "orthogonal" }],
        ],
      },
      lexical_dropout: 0.5,
      feature_size: feature_size,
      max_span_width: 10,
      spans_per_word: 0.4,
      max_antecedents: 250,
    },
    data_loader: { batch_sampler: { type: "bucket", sorting_keys: ["text"], padding_noise: 0.0, batch_size: 1 } },
    validation_data_loader: { batch_size: 1, shuffle: false },
    trainer: {
      optimizer: { type: "adam", lr: 0.001 },
      learning_rate_scheduler: { type: "exponential", gamma: 0.9724 },
      grad_norm: 5.0,
      validation_metric: "+coref_f1",
      num_epochs: 150,
      patience: 10,
      checkpointer: { type: "elmo_plugin_safe" },
      // --recover retraces an uninterrupted run exactly (docs/reliability.md)
      callbacks: [{ type: "elmo_plugin_exact_recovery" }, { type: "elmo_plugin_run_progress" }],
    },
  }
