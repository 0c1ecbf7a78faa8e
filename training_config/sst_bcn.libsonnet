// SST-5 BCN (McCann et al. 2017) as in Peters et al. 2018, Supplement A.8, with or without ELMo.
// `elmo` is null (baseline) or the ELMo settings (see elmo.libsonnet); the paper: ELMo at the
// input and the output (after the integrator), lambda = 0.001. BCN's maxout output network is
// replaced, as in A.8, by two ReLU layers with dropout (then a linear layer to the 5 classes).
// `seed`: all three seeds. Training on phrases of 4+ tokens,
// evaluation on whole sentences. Data: SST_TRAIN / SST_DEV / SST_TEST (default ../shared/data/sst).
// Word vectors: SST_WORD_VECTORS (300-d, kept fixed, as A.8's GloVe; default: word2vec on the bundled Wikipedia, lowercased (w2v_lower_300d);
// read only with `pretrained_word_vectors=true`, what `allennlp elmo-table1` passes (it builds the file;
// a missing one is an error naming the command); false, the default: trained from scratch).
local common = import "common.libsonnet";
local elmo_lib = import "elmo.libsonnet";

function(elmo=null, seed=13370, pretrained_word_vectors=false)
  // the choice is the argument: "" = trained from scratch, never because a file is missing
  local word_vectors = if !pretrained_word_vectors then "" else
    local path = std.extVar("SST_WORD_VECTORS");
    if path == "" then error "pretrained_word_vectors=true but SST_WORD_VECTORS is empty: name the vectors file (SST_WORD_VECTORS unset: the one `allennlp elmo-word-vectors` / `allennlp elmo-table1` builds)" else path;
  local dim = 300;
  local elmo_dim = elmo_lib.dim(elmo);
  local elmo_in = elmo_lib.at_input(elmo);
  local elmo_out = elmo_lib.at_output(elmo);
  local indexers = elmo_lib.indexers({ tokens: { type: "single_id", lowercase_tokens: true } }, elmo);
  local integrated = 2 * dim + (if elmo_out then elmo_dim else 0);
  common.seeds(seed) + {
    dataset_reader: { type: "elmo_plugin_sst", granularity: "5-class", use_subtrees: true, min_phrase_length: 4, token_indexers: indexers },
    validation_dataset_reader: { type: "elmo_plugin_sst", granularity: "5-class", use_subtrees: false, token_indexers: indexers },
    train_data_path: std.extVar("SST_TRAIN"),
    validation_data_path: std.extVar("SST_DEV"),
    test_data_path: std.extVar("SST_TEST"),
    evaluate_on_test: true,
    model: {
      type: "elmo_plugin_bcn",
      text_field_embedder: {
        token_embedders: {
          tokens: {
            type: "embedding",
            embedding_dim: dim,
            trainable: word_vectors == "",
            [if word_vectors != "" then "pretrained_file"]: word_vectors,
          },
        },
      },
      embedding_dropout: 0.5,
      pre_encode_feedforward: { input_dim: dim + (if elmo_in then elmo_dim else 0), num_layers: 1, hidden_dims: [dim], activations: ["relu"], dropout: [0.25] },
      encoder: { type: "elmo_plugin_lstm", input_size: dim, hidden_size: dim, num_layers: 1, bidirectional: true },
      integrator: { type: "elmo_plugin_lstm", input_size: 6 * dim, hidden_size: dim, num_layers: 1, bidirectional: true },
      integrator_dropout: 0.1,
      output_layer: { input_dim: 4 * integrated, num_layers: 3, hidden_dims: [1200, 600, 5], activations: ["relu", "relu", "linear"], dropout: [0.2, 0.3, 0.0] },
      [if elmo != null then "elmo_placement"]: elmo.placement,
      [if elmo != null then "elmo"]: elmo_lib.options(elmo),
      // He (kaiming) initialisation for the ReLU layers: with PyTorch's default Linear init the
      // output stack 2400 -> 1200 -> 600 shrinks its activations, the lower layers' gradients
      // start 100x below the output layer's, and the baseline stays on the class-prior plateau
      initializer: { regexes: [
        ["_pre_encode_feedforward._linear_layers.0.weight|_output_layer._linear_layers.[01].weight", { type: "kaiming_normal", nonlinearity: "relu" }],
      ] },
    },
    data_loader: { batch_sampler: { type: "bucket", batch_size: 32 } },
    validation_data_loader: common.validation_loader(32),
    trainer: {
      optimizer: { type: "adam", lr: 0.0001 },
      validation_metric: "+accuracy",
      num_epochs: 20,
      patience: 5,
      grad_norm: 5.0,
      checkpointer: { type: "elmo_plugin_safe" },
      // --recover retraces an uninterrupted run exactly (docs/reliability.md)
      callbacks: [{ type: "elmo_plugin_exact_recovery" }, { type: "elmo_plugin_run_progress" }],
    },
  }
