"""Training the biLM: its corpus reader, the language model, bilm-tf vocabularies."""

from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader
from elmo_plugin.lm.models.bilm_language_model import BiLmLanguageModel
from elmo_plugin.lm.vocabulary import BilmTfVocabulary
