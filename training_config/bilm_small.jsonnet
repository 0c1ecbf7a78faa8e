// A small ELMo biLM that trains on CPU in minutes on the bundled text (Sec. 3.1/3.4 architecture,
// scaled down: 512 char filters, 1 highway, 2 x LSTM 256 cells / 64 projection, residual, clip 3).
// Round 1's default biLM was trained with it; the shipped biLM comes from bilm_wikipedia.jsonnet.
//
// Data: BILM_TRAIN, BILM_DEV: comma-separated FORMAT::PATH lists (default: WikiText valid +
// CoNLL-2003 train + SST train text; dev: WikiText test). BILM_VOCAB: a bilm-tf vocab.txt, or empty
// to build the softmax vocabulary from the training text (min count 3, at most 20k tokens).
// Run: allennlp train training_config/bilm_small.jsonnet -s out/bilm_small --include-package elmo_plugin
local vocab_file = std.extVar("BILM_VOCAB");
local num_epochs = 4;

{
  dataset_reader: { type: "elmo_plugin_lm_corpus", max_sentence_length: 50 },
  train_data_path: std.split(std.extVar("BILM_TRAIN"), ","),
  validation_data_path: std.split(std.extVar("BILM_DEV"), ","),
  vocabulary: if vocab_file != "" then {
    type: "elmo_plugin_bilm_tf_vocab",
    vocab_file: vocab_file,
  } else {
    type: "from_instances",
    min_count: { lm_tokens: 3 },
    max_vocab_size: { lm_tokens: 20000 },
    only_include_pretrained_words: false,
  },
  model: {
    type: "elmo_plugin_bilm",
    options: {
      char_cnn: {
        activation: "relu",
        embedding: { dim: 16 },
        filters: [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256]],
        max_characters_per_token: 50,
        n_characters: 262,
        n_highway: 1,
      },
      lstm: { cell_clip: 3, dim: 256, n_layers: 2, proj_clip: 3, projection_dim: 64, use_skip_connections: true },
    },
    dropout: 0.1,
    num_samples: 1024,
  },
  data_loader: { batch_sampler: { type: "bucket", batch_size: 32, sorting_keys: ["tokens"] } },
  validation_data_loader: { batch_sampler: { type: "bucket", batch_size: 64, sorting_keys: ["tokens"], shuffle: false } },
  trainer: {
    optimizer: { type: "adagrad", lr: 0.2, initial_accumulator_value: 1.0 },
    grad_norm: 10.0,
    num_epochs: num_epochs,
    validation_metric: "-perplexity",
    checkpointer: { type: "elmo_plugin_safe", keep_most_recent_by_count: 1 },
    // the optimizer state goes into model.tar.gz, for fine-tuning (bilm_finetune.jsonnet)
    callbacks: [
      { type: "elmo_plugin_optimizer_state" },
      { type: "elmo_plugin_exact_recovery" },
      { type: "elmo_plugin_run_progress" },
    ],
  },
  include_in_archive: ["optimizer_state.th"],
}
