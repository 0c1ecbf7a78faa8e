"""Offline sentence splitting + tokenisation of raw text (spaCy rules, no trained model)."""

from typing import Iterable, Iterator, List

import spacy


class SentenceTokenizer:
    """spaCy's rule-based English tokenizer and sentencizer (`spacy.blank("en")` + "sentencizer"):
    offline, no trained model."""

    def __init__(self, language: str = "en") -> None:
        self.nlp = spacy.blank(language)
        self.nlp.add_pipe("sentencizer")

    def sentences(self, texts: Iterable[str], batch_size: int = 256) -> Iterator[List[str]]:
        """The tokenised sentences of `texts`, in order."""
        for doc in self.nlp.pipe(texts, batch_size=batch_size):
            for sentence in doc.sents:
                tokens = [token.text for token in sentence if not token.is_space]
                if tokens:
                    yield tokens
