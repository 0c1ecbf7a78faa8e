// The biLM shipped with the plugin: trained on CPU on the bundled English Wikipedia (32.6 M words,
// 200 WikiExtractor files; the last two, AB_wiki_98/99, held out for validation). Architecture of
// Sec. 3.1/3.4 scaled to a 2-core CPU (chosen by measurement, see README "The shipped biLM").
// Memory does not grow with the corpus: batches come from a buffer of max_instances_in_memory
// sentences, bucketed by length inside it.
//
// Data: BILM_WIKI_TRAIN, BILM_WIKI_DEV (comma-separated FORMAT::PATH; default: the raw bundled
// files, tokenised on the fly; or prepared once with `allennlp elmo-prepare-corpus` and given as
// text::DIR). BILM_VOCAB: a vocab.txt from `allennlp elmo-vocab` (recommended: one quick pass);
// empty = counted from BILM_WIKI_TRAIN through the data loader (same result, slower).
// Run (see README for the exact commands and figures):
//   allennlp elmo-vocab out/wiki_vocab.txt $BILM_WIKI_TRAIN --min-count 3 --max-size 50000
//   BILM_VOCAB=out/wiki_vocab.txt allennlp train training_config/bilm_wikipedia.jsonnet -s out/bilm_wiki --include-package elmo_plugin
// A run stopped part-way continues with `--recover` from its newest checkpoint (one every 500 batches),
// retracing the uninterrupted run exactly (elmo_plugin_exact_recovery).
local vocab_file = std.extVar("BILM_VOCAB");
local buffer = 4096;

{
  dataset_reader: { type: "elmo_plugin_lm_corpus", max_sentence_length: 50 },
  train_data_path: std.split(std.extVar("BILM_WIKI_TRAIN"), ","),
  validation_data_path: std.split(std.extVar("BILM_WIKI_DEV"), ","),
  vocabulary: if vocab_file != "" then {
    type: "elmo_plugin_bilm_tf_vocab",
    vocab_file: vocab_file,
  } else {
    type: "from_instances",
    min_count: { lm_tokens: 3 },
    max_vocab_size: { lm_tokens: 50000 },
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
    loss_scale: 20,
  },
  data_loader: {
    batch_sampler: { type: "bucket", batch_size: 128, sorting_keys: ["tokens"] },
    max_instances_in_memory: buffer,
  },
  validation_data_loader: {
    batch_sampler: { type: "bucket", batch_size: 128, sorting_keys: ["tokens"], shuffle: false },
    max_instances_in_memory: buffer,
  },
  trainer: {
    optimizer: { type: "adagrad", lr: 0.2, initial_accumulator_value: 1.0 },
    grad_norm: 10.0,
    num_epochs: 1,
    validation_metric: "-perplexity",
    checkpointer: { type: "elmo_plugin_safe", save_every_num_batches: 500, keep_most_recent_by_count: 2 },
    // the optimizer state goes into model.tar.gz, for fine-tuning (bilm_finetune.jsonnet); the
    // shipped run predates this callback: its state was added to the archive from the last checkpoint
    callbacks: [
      { type: "elmo_plugin_optimizer_state" },
      { type: "elmo_plugin_exact_recovery" },
      { type: "elmo_plugin_run_progress" },
    ],
  },
  include_in_archive: ["optimizer_state.th"],
}
