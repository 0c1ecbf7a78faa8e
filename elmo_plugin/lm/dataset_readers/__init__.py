"""The biLM's corpus reader."""

from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader
