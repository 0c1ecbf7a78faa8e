// Settings every task config shares.
{
  // all three of AllenNLP's seeds from one number (the `seed` switch of each task config)
  seeds(seed):: { random_seed: seed, numpy_seed: seed, pytorch_seed: seed },
  // deterministic validation batches (no shuffling, no sorting noise), so that --recover retraces a run
  validation_loader(batch_size):: { batch_sampler: { type: "bucket", batch_size: batch_size, padding_noise: 0.0, shuffle: false } },
}
