// SNLI ESIM (Chen et al. 2017) as in Peters et al. 2018, Supplement A.3, with or without ELMo.
// `elmo` is null (baseline) or the ELMo settings (see elmo.libsonnet); the paper's best: ELMo at the
// input and output of the encoder, layer norm, lambda = 0.001, plus L2 1e-4 on the recurrent and
// feed-forward weight matrices and 50% dropout after the attention layer. `seed`: all three seeds.
// `num_epochs`: the epoch cap, 8 (the bundled small-scale run, training on SNLI dev) unless given;
// the paper's setting on all of SNLI: 75 (`-o '{"trainer.num_epochs": 75}'`). No data path changes it.
// Data: SNLI_TRAIN / SNLI_DEV / SNLI_TEST: SNLI 1.0 jsonl, or DIR/SPLIT of the bundled s1/s2/labels
// line files, each optionally sliced with [START:END]. Default (no SNLI train set here): train on
// the bundled dev pairs, validate on test[:4912], test on test[4912:].
// Word vectors: SNLI_WORD_VECTORS (300-d, kept fixed, as A.3's GloVe; default: word2vec on the bundled Wikipedia, cased (w2v_cased_300d);
// read only with `pretrained_word_vectors=true`, what `allennlp elmo-table1` passes (it builds the file;
// a missing one is an error naming the command); false, the default: trained from scratch).
local common = import "common.libsonnet";
local elmo_lib = import "elmo.libsonnet";

function(elmo=null, seed=13370, pretrained_word_vectors=false, num_epochs=8)
  // the choice is the argument: "" = trained from scratch, never because a file is missing
  local word_vectors = if !pretrained_word_vectors then "" else
    local path = std.extVar("SNLI_WORD_VECTORS");
    if path == "" then error "pretrained_word_vectors=true but SNLI_WORD_VECTORS is empty: name the vectors file (SNLI_WORD_VECTORS unset: the one `allennlp elmo-word-vectors` / `allennlp elmo-table1` builds)" else path;
  local dim = 300;
  local elmo_dim = elmo_lib.dim(elmo);
  local elmo_in = elmo_lib.at_input(elmo);
  local elmo_out = elmo_lib.at_output(elmo);
  local token_embedders = {
    tokens: {
      type: "embedding",
      embedding_dim: dim,
      trainable: word_vectors == "",
      [if word_vectors != "" then "pretrained_file"]: word_vectors,
    },
  };
  local lstm = { type: "elmo_plugin_lstm", input_size: dim + (if elmo_in then elmo_dim else 0), hidden_size: dim, num_layers: 1, bidirectional: true };
  local encoded = 2 * dim + (if elmo_out then elmo_dim else 0);
  common.seeds(seed) + {
    dataset_reader: {
      type: "elmo_plugin_snli",
      token_indexers: elmo_lib.indexers({ tokens: { type: "single_id", lowercase_tokens: false } }, elmo),
    },
    train_data_path: std.extVar("SNLI_TRAIN"),
    validation_data_path: std.extVar("SNLI_DEV"),
    test_data_path: std.extVar("SNLI_TEST"),
    evaluate_on_test: true,
    model: {
      type: "elmo_plugin_esim",
      dropout: 0.5,  // variational (locked) dropout, as in ESIM
      // ESIM's variational dropout on the LSTM input drops ELMo at the input and (riding along) at the output
      text_field_embedder: elmo_lib.embedder(token_embedders, elmo, dropped_by_model=["input", "output"]),
      encoder: elmo_lib.encoder(lstm, elmo),
      matrix_attention: { type: "dot_product" },
      projection_feedforward: { input_dim: 4 * encoded, hidden_dims: dim, num_layers: 1, activations: "relu" },
      inference_encoder: { type: "elmo_plugin_lstm", input_size: dim, hidden_size: dim, num_layers: 1, bidirectional: true },
      output_feedforward: { input_dim: 8 * dim, num_layers: 1, hidden_dims: dim, activations: "relu", dropout: 0.5 },
      output_logit: { input_dim: dim, num_layers: 1, hidden_dims: 3, activations: "linear" },
      initializer: {
        regexes: [
          [".*linear_layers.*weight", { type: "xavier_uniform" }],
          [".*linear_layers.*bias", { type: "constant", val: 0 }],
          [".*weight_ih.*", { type: "xavier_uniform" }],
          [".*weight_hh.*", { type: "orthogonal" }],
          [".*bias_ih.*", { type: "constant", val: 0 }],
          [".*bias_hh.*", { type: "lstm_hidden_bias" }],
        ],
      },
      // A.3, ELMo model only: 50% dropout after the attention layer; L2 1e-4 on the recurrent
      // (LSTM weight_ih / weight_hh) and feed-forward weight matrices, not on embeddings, biases,
      // the biLM or the ELMo mixes
      [if elmo != null then "attention_dropout"]: 0.5,
      [if elmo != null then "regularizer"]: { regexes: [[@"^(?!_text_field_embedder\.).*\.(weight_[ih]h_l\d+(_reverse)?|_linear_layers\.\d+\.weight)$", { type: "l2", alpha: 0.0001 }]] },
    },
    data_loader: { batch_sampler: { type: "bucket", batch_size: 32 } },
    validation_data_loader: common.validation_loader(32),
    trainer: {
      optimizer: { type: "adam", lr: 0.0004 },
      learning_rate_scheduler: { type: "elmo_plugin_reduce_on_plateau", factor: 0.5, mode: "max", patience: 0 },
      validation_metric: "+accuracy",
      num_epochs: num_epochs,  // the function's argument (above), whatever the data
      patience: 5,
      grad_norm: 5.0,
      checkpointer: { type: "elmo_plugin_safe" },
      // --recover retraces an uninterrupted run exactly (docs/reliability.md)
      callbacks: [{ type: "elmo_plugin_exact_recovery" }, { type: "elmo_plugin_run_progress" }],
    },
  }
