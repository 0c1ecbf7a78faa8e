// bilm_wikipedia.jsonnet scaled up for one GPU: LSTM 1024 cells with 128-d projections (ELMo
// vectors of 256), batches of 256 sentences from 10 loader workers. Trained on one H100 for
// 19 minutes, then 200 batches more on the CPU (README "A larger biLM trained on a GPU"); shipped as packaging/elmo-bilm-wikipedia-1024/elmo_bilm_wikipedia_1024.
// Run:
//   BILM_VOCAB=elmo_bilm/pretrained/wikipedia/vocab.txt allennlp train training_config/bilm_wikipedia_gpu.jsonnet -s out/bilm_gpu --include-package elmo_plugin
(import "bilm_wikipedia.jsonnet") + {
  model+: { options+: { lstm+: { dim: 1024, projection_dim: 128 } } },
  data_loader+: { num_workers: 10, batch_sampler+: { batch_size: 256 } },
  trainer+: { cuda_device: 0, num_epochs: 3 },
}
