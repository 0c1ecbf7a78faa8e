// Domain fine-tuning of a pretrained biLM (Peters et al. 2018, Supplement A.1 / Table 7): one epoch
// on a task's unlabeled training text, reporting dev perplexity before
// (SERIALIZATION_DIR/metrics_before_training.json) and after (metrics.json).
// The paper's Table 7: SNLI 72.1 -> 16.8, CoNLL-2003 NER 103.2 -> 46.3, SST-5 131.5 -> 78.6 dev ppl.
//
// Start: BILM_PRETRAINED_ARCHIVE (a model.tar.gz of elmo_plugin_bilm: biLM, softmax and, from a run
// with the elmo_plugin_optimizer_state callback, the optimizer state, which continues here), or
// ELMO_OPTIONS_FILE + ELMO_WEIGHT_FILE with BILM_VOCAB (files of `allennlp elmo-export`, like the
// shipped biLM, carry the softmax too; original bilm-tf files do not, and their softmax
// starts fresh, and then no "before" perplexity is reported: it would measure a random softmax;
// without BILM_VOCAB the vocabulary is built from the task text).
// Task text: FINETUNE_TRAIN / FINETUNE_DEV, FORMAT::PATH (default: CoNLL-2003 train / dev text).
// Run: allennlp train training_config/bilm_finetune.jsonnet -s out/bilm_ner --include-package elmo_plugin
local archive = std.extVar("BILM_PRETRAINED_ARCHIVE");
local vocab_file = std.extVar("BILM_VOCAB");

{
  dataset_reader: { type: "elmo_plugin_lm_corpus", max_sentence_length: 100 },
  train_data_path: std.split(std.extVar("FINETUNE_TRAIN"), ","),
  validation_data_path: std.split(std.extVar("FINETUNE_DEV"), ","),
  vocabulary: if archive != "" then {
    type: "from_files",
    directory: archive,
  } else if vocab_file != "" then {
    type: "elmo_plugin_bilm_tf_vocab",
    vocab_file: vocab_file,
  } else {
    type: "from_instances",
    min_count: { lm_tokens: 2 },
  },
  model: {
    type: "elmo_plugin_bilm",
    [if archive != "" then "pretrained_archive"]: archive,
    [if archive == "" then "pretrained_options_file"]: std.extVar("ELMO_OPTIONS_FILE"),
    [if archive == "" then "pretrained_weight_file"]: std.extVar("ELMO_WEIGHT_FILE"),
    [if archive == "" && vocab_file != "" then "pretrained_vocab_file"]: vocab_file,
    dropout: 0.1,
  },
  data_loader: { batch_sampler: { type: "bucket", batch_size: 32, sorting_keys: ["tokens"] } },
  validation_data_loader: { batch_sampler: { type: "bucket", batch_size: 64, sorting_keys: ["tokens"], shuffle: false } },
  trainer: {
    optimizer: { type: "adagrad", lr: 0.2, initial_accumulator_value: 1.0 },
    grad_norm: 10.0,
    num_epochs: 1,
    validation_metric: "-perplexity",
    callbacks: [
      { type: "elmo_plugin_validate_before_training" },
      // Adagrad's accumulators continue from the archive's, as bilm-tf's restart does
      { type: "elmo_plugin_optimizer_state", [if archive != "" then "from_archive"]: archive },
      { type: "elmo_plugin_exact_recovery" },
      { type: "elmo_plugin_run_progress" },
    ],
    checkpointer: { type: "elmo_plugin_safe" },
  },
  include_in_archive: ["optimizer_state.th"],
}
