"""spaCy's rule-based tokenizer without a trained pipeline, so nothing is downloaded."""

from typing import List

import spacy
from allennlp.data.tokenizers import Token, Tokenizer


@Tokenizer.register("elmo_plugin_spacy_blank")
class SpacyBlankTokenizer(Tokenizer):
    """spaCy's rule-based tokenizer (`spacy.blank(language)`): the tokenisation of AllenNLP's
    "spacy" tokenizer, offline, since that one loads `en_core_web_sm` and tries to download it.
    Tokens keep their character offsets (`idx`), which span-extraction readers need; whitespace
    tokens are dropped. No POS tags, parses or entities.

    Registered as a `Tokenizer` with name "elmo_plugin_spacy_blank".

    # Parameters

    language : `str`, optional (default = `"en"`)
        A spaCy language code.
    """

    def __init__(self, language: str = "en") -> None:
        self.spacy = spacy.blank(language)

    def tokenize(self, text: str) -> List[Token]:
        return [
            Token(token.text, idx=token.idx, idx_end=token.idx + len(token.text))
            for token in self.spacy(text)
            if not token.is_space
        ]

    def batch_tokenize(self, texts: List[str]) -> List[List[Token]]:
        return [self.tokenize(text) for text in texts]
