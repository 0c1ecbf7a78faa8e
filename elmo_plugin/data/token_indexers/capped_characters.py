"""Characters of a token, at most a configured number: the task models' character CNNs get a
bounded width whatever the data holds (a 200,000-character "token" asked for 22 GB before)."""

from typing import List

from allennlp.data.token_indexers import TokenCharactersIndexer, TokenIndexer
from allennlp.data.tokenizers import CharacterTokenizer, Token

from elmo_bilm.utils.files import UsageError


class _CappedCharacterTokenizer(CharacterTokenizer):
    def __init__(self, max_characters: int) -> None:
        super().__init__()
        self.max_characters = max_characters

    def tokenize(self, text: str) -> List[Token]:
        return super().tokenize(text[: self.max_characters])


# "elmo_plugin_characters", the name before 0.2.0, stays registered so that archives trained with
# it load; configs use the name that says what it does
@TokenIndexer.register("elmo_plugin_characters")
@TokenIndexer.register("elmo_plugin_capped_characters")
class CappedCharactersIndexer(TokenCharactersIndexer):
    """AllenNLP's `characters` indexer keeping the first `max_characters` characters of each token
    (ELMo's own character ids stop at 50 too), so memory is bounded by the configuration.

    Registered as a `TokenIndexer` with name "elmo_plugin_capped_characters" (and, for archives
    trained before 0.2.0, "elmo_plugin_characters").

    # Parameters

    max_characters : `int`, optional (default = `50`)
        Characters kept per token; the rest are dropped.
    **kwargs
        As AllenNLP's "characters" indexer (`namespace`, `min_padding_length`, ...), without
        `character_tokenizer`.
    """

    def __init__(self, max_characters: int = 50, **kwargs) -> None:
        if max_characters < 1:
            raise UsageError(f"max_characters must be at least 1, got {max_characters}")
        super().__init__(character_tokenizer=_CappedCharacterTokenizer(max_characters), **kwargs)
        self.max_characters = max_characters
