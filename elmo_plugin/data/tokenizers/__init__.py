"""Tokenizers that need no trained model: raw text into sentences, spaCy's blank rules."""

from elmo_plugin.data.tokenizers.sentence_tokenizer import SentenceTokenizer
from elmo_plugin.data.tokenizers.spacy_blank_tokenizer import SpacyBlankTokenizer
