// The paper's biLM (Peters et al. 2018, Sec. 3.4; bilm-tf's 1B Word Benchmark run): char CNN with
// 2048 filters + 2 highway layers, 2 x LSTM with 4096 cells and 512 projection per direction,
// residual connection, cell/projection clip 3, dropout 0.1, 8192 sampled negatives, Adagrad 0.2,
// gradient clipping 10, 10 epochs. The paper reports average forward/backward test perplexity
// 39.7 on the 1B Word Benchmark (bilm-tf: about two weeks on 3 GTX 1080).
//
// Data: BILM_TRAIN (comma-separated FORMAT::PATH; e.g. the shard glob
//   ".../training-monolingual.tokenized.shuffled/news.en-*-of-00100"), BILM_DEV, BILM_VOCAB (the
//   bilm-tf vocab.txt, frequency-sorted, ~793k words; empty = build from BILM_TRAIN).
// Several GPUs: add  "distributed": {"cuda_devices": [0, 1, 2]}  (torch DDP; the reader shards the
// corpus across workers). bilm-tf used batch 128 per GPU.
// Memory does not grow with the corpus: batches come from a buffer of max_instances_in_memory
// sentences (per worker), bucketed by length inside it; nothing holds an epoch.
// Run: allennlp train training_config/bilm_pretrain.jsonnet -s out/bilm --include-package elmo_plugin
local vocab_file = std.extVar("BILM_VOCAB");
local buffer = 4096;

{
  dataset_reader: { type: "elmo_plugin_lm_corpus", max_sentence_length: 100 },
  train_data_path: std.split(std.extVar("BILM_TRAIN"), ","),
  validation_data_path: std.split(std.extVar("BILM_DEV"), ","),
  vocabulary: if vocab_file != "" then {
    type: "elmo_plugin_bilm_tf_vocab",
    vocab_file: vocab_file,
  } else {
    type: "from_instances",
    min_count: { lm_tokens: 3 },
    max_vocab_size: { lm_tokens: 800000 },
  },
  model: {
    type: "elmo_plugin_bilm",
    options: {
      char_cnn: {
        activation: "relu",
        embedding: { dim: 16 },
        filters: [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
        max_characters_per_token: 50,
        n_characters: 262,
        n_highway: 2,
      },
      lstm: { cell_clip: 3, dim: 4096, n_layers: 2, proj_clip: 3, projection_dim: 512, use_skip_connections: true },
    },
    dropout: 0.1,
    num_samples: 8192,
    loss_scale: 20,  // bilm-tf differentiates the mean loss times unroll_steps (20)
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
    num_epochs: 10,
    validation_metric: "-perplexity",
    checkpointer: { type: "elmo_plugin_safe", keep_most_recent_by_count: 2 },
    // the optimizer state goes into model.tar.gz, for fine-tuning (bilm_finetune.jsonnet)
    callbacks: [
      { type: "elmo_plugin_optimizer_state" },
      { type: "elmo_plugin_exact_recovery" },
      { type: "elmo_plugin_run_progress" },
    ],
  },
  include_in_archive: ["optimizer_state.th"],
}
