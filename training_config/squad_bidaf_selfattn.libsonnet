// SQuAD 1.1, the simplified Clark and Gardner (2017) BiDAF + self-attention model as in Peters et
// al. 2018, Supplement A.4, with or without ELMo (`elmo`: see elmo.libsonnet; the paper: at the input
// and the output of the shared GRU, no layer norm, lambda 0). GloVe 300-d (fixed) + char CNN (20-d
// characters, 100 filters of width 5), a shared bidirectional GRU of 90, BiDAF attention, linear+ReLU
// 180, residual self-attention (GRU 90), linear+ReLU 180, start / end GRUs of 90; variational dropout
// 0.2; Adadelta (lr 1.0), batch 45, an exponential moving average (0.999) of the weights at test time;
// answers of at most 17 tokens. Official EM / F1.
// Data: SQUAD_TRAIN / SQUAD_DEV / SQUAD_TEST, SQuAD 1.1 json files; a path may end in [START:END] to
// read that slice of its articles. Default: no SQuAD training set is on these machines, so the
// bundled dev set split by article: train [:36], dev [36:42], test [42:].
// Word vectors: SQUAD_WORD_VECTORS (300-d, kept fixed, as A.4's GloVe; default: word2vec on the bundled Wikipedia, cased (w2v_cased_300d);
// read only with `pretrained_word_vectors=true`, what `allennlp elmo-table1` passes (it builds the file;
// a missing one is an error naming the command); false, the default: trained from scratch).
local common = import "common.libsonnet";
local elmo_lib = import "elmo.libsonnet";

function(elmo=null, seed=13370, pretrained_word_vectors=false)
  // the choice is the argument: "" = trained from scratch, never because a file is missing
  local word_vectors = if !pretrained_word_vectors then "" else
    local path = std.extVar("SQUAD_WORD_VECTORS");
    if path == "" then error "pretrained_word_vectors=true but SQUAD_WORD_VECTORS is empty: name the vectors file (SQUAD_WORD_VECTORS unset: the one `allennlp elmo-word-vectors` / `allennlp elmo-table1` builds)" else path;
  local word_dim = 300;
  local char_filters = 100;
  local gru = 90;
  local hidden = 180;
  local elmo_dim = elmo_lib.dim(elmo);
  local indexers = elmo_lib.indexers({
    tokens: { type: "single_id", lowercase_tokens: false },
    token_characters: { type: "elmo_plugin_capped_characters", min_padding_length: 5, max_characters: 50 },
  }, elmo);
  local token_embedders = {
    tokens: {
      type: "embedding",
      embedding_dim: word_dim,
      trainable: word_vectors == "",
      [if word_vectors != "" then "pretrained_file"]: word_vectors,
    },
    token_characters: {
      type: "character_encoding",
      embedding: { embedding_dim: 20, vocab_namespace: "token_characters" },
      encoder: { type: "cnn", embedding_dim: 20, num_filters: char_filters, ngram_filter_sizes: [5] },
    },
  };
  local bigru(input_size) = { type: "elmo_plugin_gru", input_size: input_size, hidden_size: gru, num_layers: 1, bidirectional: true };
  common.seeds(seed) + {
    dataset_reader: { type: "elmo_plugin_squad", token_indexers: indexers, passage_length_limit: 400, question_length_limit: 50 },
    // evaluation: every question whose answer text is in the passage, whole passages
    // whole passages up to 1,000 tokens (the bundled SQuAD 1.1 dev set's longest has 706): memory
    // bounded by the configuration; answers beyond the cap count as unmappable (logged)
    validation_dataset_reader: { type: "elmo_plugin_squad", token_indexers: indexers, skip_unmappable: false, passage_length_limit: 1000 },
    train_data_path: std.extVar("SQUAD_TRAIN"),
    validation_data_path: std.extVar("SQUAD_DEV"),
    test_data_path: std.extVar("SQUAD_TEST"),
    evaluate_on_test: true,
    model: {
      type: "elmo_plugin_bidaf_self_attention",
      // the model's variational dropout before the GRU drops ELMo at the input and (riding along) at the output
      text_field_embedder: elmo_lib.embedder(token_embedders, elmo, dropped_by_model=["input", "output"]),
      phrase_layer: elmo_lib.encoder(bigru(word_dim + char_filters + (if elmo_lib.at_input(elmo) then elmo_dim else 0)), elmo),
      residual_encoder: bigru(hidden),
      span_start_encoder: bigru(hidden),
      span_end_encoder: bigru(hidden + 2 * gru),
      hidden_dim: hidden,
      dropout: 0.2,
      max_span_length: 17,
    },
    data_loader: { batch_sampler: { type: "bucket", batch_size: 45 } },
    validation_data_loader: common.validation_loader(45),
    trainer: {
      optimizer: { type: "adadelta", lr: 1.0 },
      moving_average: { type: "exponential", decay: 0.999 },
      grad_norm: 5.0,
      validation_metric: "+f1",
      num_epochs: 26,
      patience: 10,
      checkpointer: { type: "elmo_plugin_safe" },
      // --recover retraces an uninterrupted run exactly (docs/reliability.md)
      callbacks: [{ type: "elmo_plugin_exact_recovery" }, { type: "elmo_plugin_run_progress" }],
    },
  }
