// CoNLL-2003 NER biLSTM-CRF (Peters et al. 2018, Supplement A.7), with or without ELMo.
// `elmo` is null (baseline) or {placement: "input" | "output" | "both", l2_coefficient, do_layer_norm, dropout}:
// the plugin's placement mechanism (`elmo_plugin_placement` embedder + `elmo_plugin_output_elmo`
// encoder wrapper; biLM from ELMO_OPTIONS_FILE / ELMO_WEIGHT_FILE).
//
// Data: CONLL2003_TRAIN / CONLL2003_DEV / CONLL2003_TEST (default: ../shared/data/conll2003).
// Word vectors: CONLL2003_WORD_VECTORS (50-d, fine-tuned, as A.7's Senna; default: word2vec on the bundled Wikipedia, lowercased (w2v_lower_50d);
// read only with `pretrained_word_vectors=true`, what `allennlp elmo-table1` passes (it builds the file;
// a missing one is an error naming the command); false, the default: trained from scratch).
local common = import "common.libsonnet";
local elmo_lib = import "elmo.libsonnet";

function(elmo=null, seed=13370, pretrained_word_vectors=false)
  // the choice is the argument: "" = trained from scratch, never because a file is missing
  local word_vectors = if !pretrained_word_vectors then "" else
    local path = std.extVar("CONLL2003_WORD_VECTORS");
    if path == "" then error "pretrained_word_vectors=true but CONLL2003_WORD_VECTORS is empty: name the vectors file (CONLL2003_WORD_VECTORS unset: the one `allennlp elmo-word-vectors` / `allennlp elmo-table1` builds)" else path;
  local word_dim = 50;
  local char_filters = 128;
  local elmo_in = elmo_lib.at_input(elmo);
  local token_embedders = {
    tokens: {
      type: "embedding",
      embedding_dim: word_dim,
      trainable: true,
      [if word_vectors != "" then "pretrained_file"]: word_vectors,
    },
    token_characters: {
      type: "character_encoding",
      embedding: { embedding_dim: 16, vocab_namespace: "token_characters" },
      encoder: { type: "cnn", embedding_dim: 16, num_filters: char_filters, ngram_filter_sizes: [3], conv_layer_activation: "relu" },
    },
  };
  // A.7: two biLSTM layers, 200 then 100 hidden units, variational dropout on the input of both
  local lstm = {
    type: "elmo_plugin_stacked_bilstm",
    input_size: word_dim + char_filters + (if elmo_in then elmo_lib.dim(elmo) else 0),
    hidden_sizes: [200, 100],
    dropout: 0.5,
  };
  common.seeds(seed) + {
    dataset_reader: {
      type: "elmo_plugin_conll2003",
      tag_label: "ner",
      convert_to_coding_scheme: "BIOUL",
      token_indexers: elmo_lib.indexers({
        tokens: { type: "single_id", lowercase_tokens: true },
        token_characters: { type: "elmo_plugin_capped_characters", min_padding_length: 3, max_characters: 50 },
      }, elmo),
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
      include_start_end_transitions: false,
      // the encoder's variational input dropout drops ELMo at the input
      text_field_embedder: elmo_lib.embedder(token_embedders, elmo, dropped_by_model=["input"]),
      encoder: elmo_lib.encoder(lstm, elmo),
    },
    data_loader: { batch_sampler: { type: "bucket", batch_size: 64 } },
    validation_data_loader: common.validation_loader(64),
    trainer: {
      optimizer: { type: "adam", lr: 0.001 },
      validation_metric: "+f1-measure-overall",
      // early stopping on dev decides (allennlp-models: 75 / 25); shorter: --overrides '{"trainer.num_epochs": 10}'
      num_epochs: 75,
      patience: 25,
      grad_norm: 5.0,
      checkpointer: { type: "elmo_plugin_safe" },
      // --recover retraces an uninterrupted run exactly (docs/reliability.md)
      callbacks: [{ type: "elmo_plugin_exact_recovery" }, { type: "elmo_plugin_run_progress" }],
    },
  }
