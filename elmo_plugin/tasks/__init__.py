"""The paper's six task baselines (Table 1), one folder each, as in allennlp-models: readers,
models and predictors on top of allennlp-models' building blocks. Importing this package registers
them (and the allennlp-models components their configs name)."""

from elmo_plugin.tasks import coref, ner, snli, squad, srl, sst  # noqa: F401
