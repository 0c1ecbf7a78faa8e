"""Section 5 of Peters et al. (2018) as code: layer probes, nearest neighbours, learned layer
weights and ablation / sample-efficiency sweeps (the `allennlp elmo-*` analysis commands)."""
