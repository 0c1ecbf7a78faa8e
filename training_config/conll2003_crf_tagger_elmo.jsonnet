// CoNLL-2003 NER: biLSTM-CRF (Peters et al. 2018, Supplement A.7) with ELMo at the input through
// the plugin's TokenEmbedder. Paper: 92.22 test F1 (+/- 0.10) with the full 5.5B biLM and Senna
// vectors; here the biLM defaults to the bundled fixture (set ELMO_OPTIONS_FILE/ELMO_WEIGHT_FILE
// to a real one) and word vectors are trained from scratch unless WORD_VECTORS names a file.
//
// Data: CONLL2003_TRAIN / CONLL2003_DEV / CONLL2003_TEST (default: ../shared/data/conll2003).
// Run: allennlp train training_config/conll2003_crf_tagger_elmo.jsonnet -s out/ner --include-package elmo_plugin
local word_vectors = std.extVar("WORD_VECTORS");

// ELMo settings (Table 2 ablations are a one-line change).
local elmo_lambda = 0.1;
local elmo_layer_norm = false;
local elmo_dropout = 0.5;

local word_dim = 50;
local char_filters = 128;
local elmo_dim = 2 * std.parseJson(std.extVar("ELMO_PROJECTION_DIM"));

{
  dataset_reader: {
    type: "conll2003",
    tag_label: "ner",
    coding_scheme: "BIOUL",
    token_indexers: {
      tokens: { type: "single_id", lowercase_tokens: true },
      token_characters: { type: "characters", min_padding_length: 3 },
      elmo: { type: "elmo_characters" },
    },
  },
  train_data_path: std.extVar("CONLL2003_TRAIN"),
  validation_data_path: std.extVar("CONLL2003_DEV"),
  test_data_path: std.extVar("CONLL2003_TEST"),
  evaluate_on_test: true,
  model: {
    type: "crf_tagger",
    label_encoding: "BIOUL",
    constrain_crf_decoding: true,
    calculate_span_f1: true,
    dropout: 0.5,
    include_start_end_transitions: false,
    text_field_embedder: {
      token_embedders: {
        tokens: {
          type: "embedding",
          embedding_dim: word_dim,
          trainable: true,
          [if word_vectors != "" then "pretrained_file"]: word_vectors,
        },
        token_characters: {
          type: "character_encoding",
          embedding: { embedding_dim: 16 },
          encoder: { type: "cnn", embedding_dim: 16, num_filters: char_filters, ngram_filter_sizes: [3], conv_layer_activation: "relu" },
        },
        elmo: {
          type: "elmo_plugin_token_embedder",
          options_file: std.extVar("ELMO_OPTIONS_FILE"),
          weight_file: std.extVar("ELMO_WEIGHT_FILE"),
          do_layer_norm: elmo_layer_norm,
          dropout: elmo_dropout,
          l2_coefficient: elmo_lambda,
        },
      },
    },
    encoder: {
      type: "lstm",
      input_size: word_dim + char_filters + elmo_dim,
      hidden_size: 200,
      num_layers: 2,
      dropout: 0.5,
      bidirectional: true,
    },
  },
  data_loader: { batch_sampler: { type: "bucket", batch_size: 64 } },
  trainer: {
    optimizer: { type: "adam", lr: 0.001 },
    validation_metric: "+f1-measure-overall",
    num_epochs: 10,
    grad_norm: 5.0,
    patience: 25,
  },
}
