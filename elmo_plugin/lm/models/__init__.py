"""The biLM as an AllenNLP language model."""

from elmo_plugin.lm.models.bilm_language_model import BiLmLanguageModel
