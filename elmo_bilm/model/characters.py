"""Character ids of tokens, as AllenNLP's `elmo_characters` indexer and `batch_to_ids` make them,
without AllenNLP (for the light `elmo-embed`)."""

import os
import sys
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Sized

import torch

from elmo_bilm.model.char_cnn import (
    BEGINNING_OF_SENTENCE_CHAR,
    BEGINNING_OF_WORD_CHAR,
    END_OF_SENTENCE_CHAR,
    END_OF_WORD_CHAR,
    PADDING_CHAR,
)
from elmo_bilm.model.vocab import BOS, EOS

MAX_WORD_LENGTH = 50


def word_char_ids(word: str) -> List[int]:
    """The 50 ids of one token (+1-shifted, 0 = padding): `<bow>`, its UTF-8 bytes (at most 48),
    `<eow>`, then padding; `<S>` / `</S>` get their own byte."""
    if word in (BOS, EOS):
        body = [BEGINNING_OF_SENTENCE_CHAR if word == BOS else END_OF_SENTENCE_CHAR]
    else:
        body = list(word.encode("utf-8", "ignore")[: MAX_WORD_LENGTH - 2])
    ids = [BEGINNING_OF_WORD_CHAR, *body, END_OF_WORD_CHAR]
    ids += [PADDING_CHAR] * (MAX_WORD_LENGTH - len(ids))
    return [i + 1 for i in ids]


class _ClassOrInstanceMethod:
    """A method that also works on the class itself: AllenNLP 0.9 scripts call
    `ELMoCharacterMapper.convert_word_to_char_ids(word)` (a static method there), 2.x scripts call
    it on an instance (which may carry `tokens_to_add`)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.__doc__ = function.__doc__

    def __get__(self, instance: Any, owner: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.function(instance, *args, **kwargs)


def _sentence_boundary(character: int) -> List[int]:
    return [BEGINNING_OF_WORD_CHAR, character, END_OF_WORD_CHAR] + [PADDING_CHAR] * (
        MAX_WORD_LENGTH - 3
    )


class ELMoCharacterMapper:
    """AllenNLP's `ELMoCharacterMapper` (`allennlp.data.token_indexers.elmo_indexer`): the
    constants of ELMo's character vocabulary (ids before the +1 shift that makes 0 padding) and
    `convert_word_to_char_ids`, the 50 (shifted) ids of a token, as `batch_to_ids` makes them.

    # Parameters

    tokens_to_add : `Dict[str, int]`, optional
        Extra special tokens, each written as `<bow>`, its one character id, `<eow>` (2.x).
    """

    max_word_length = MAX_WORD_LENGTH
    beginning_of_sentence_character = BEGINNING_OF_SENTENCE_CHAR
    end_of_sentence_character = END_OF_SENTENCE_CHAR
    beginning_of_word_character = BEGINNING_OF_WORD_CHAR
    end_of_word_character = END_OF_WORD_CHAR
    padding_character = PADDING_CHAR
    beginning_of_sentence_characters = _sentence_boundary(BEGINNING_OF_SENTENCE_CHAR)
    end_of_sentence_characters = _sentence_boundary(END_OF_SENTENCE_CHAR)
    bos_token = BOS
    eos_token = EOS

    def __init__(self, tokens_to_add: Optional[Dict[str, int]] = None) -> None:
        self.tokens_to_add = tokens_to_add or {}

    @_ClassOrInstanceMethod
    def convert_word_to_char_ids(self: Optional["ELMoCharacterMapper"], word: str) -> List[int]:
        """The 50 character ids of `word`, shifted by +1 (0 = padding)."""
        added = self.tokens_to_add if self is not None else {}
        if word in added:
            ids = [BEGINNING_OF_WORD_CHAR, added[word], END_OF_WORD_CHAR]
            return [i + 1 for i in ids + [PADDING_CHAR] * (MAX_WORD_LENGTH - 3)]
        return word_char_ids(word)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ELMoCharacterMapper):
            return self.tokens_to_add == other.tokens_to_add
        return NotImplemented


# A string where a list of tokens belongs is embedded character by character (each character a
# token), as AllenNLP's `batch_to_ids` does: SeqVec passes a protein as a string of residues.
# Text with spaces is more likely a sentence meant word by word: said once per process.
_warned_text_as_characters = False
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _outside_package_stacklevel() -> int:
    """The `stacklevel` of the first caller outside `elmo_bilm` (so a warning names the
    user's line, whichever entry point was called)."""
    level, frame = 1, sys._getframe(1)  # level 1: the function that calls `warnings.warn`
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    return level


def warn_text_as_characters(sentence: str) -> None:
    """Warn, once per process, that a string sentence with whitespace is embedded character by
    character (a protein string has none: no warning)."""
    global _warned_text_as_characters
    if _warned_text_as_characters or not any(c.isspace() for c in sentence):
        return
    _warned_text_as_characters = True
    warnings.warn(
        f"the string sentence {sentence[:40]!r} is embedded character by character (each "
        "character a token, spaces too), as AllenNLP does; for words pass a list of tokens, "
        "e.g. sentence.split() (this warning is given once)",
        stacklevel=_outside_package_stacklevel(),
    )


def as_tokens(sentence: Sequence[str]) -> Sequence[str]:
    """`sentence` as tokens: a string is its characters (AllenNLP's reading), with the warning
    of `warn_text_as_characters`; another sequence unchanged; what is no sentence (None, a
    number: a bare `len()` error later) a one-line `TypeError`."""
    if isinstance(sentence, str):
        warn_text_as_characters(sentence)
        return list(sentence)
    if not isinstance(sentence, Sized) or not isinstance(sentence, Iterable):
        raise TypeError(
            f"a sentence must be a list of tokens (or a string), got {type(sentence).__name__} "
            f"{sentence!r:.40}"
        )
    return sentence


def check_tokenised(sentences: Sequence[Sequence[str]]) -> None:
    """Refuse what is not a batch of sentences (`List[List[str]]`; a sentence that is a string
    is its characters, as in AllenNLP)."""
    if isinstance(sentences, str):
        raise TypeError(
            f"expected a batch of sentences (a list of token lists), got the string "
            f"{sentences[:40]!r}; one sentence is [sentence] (a string sentence is embedded "
            "character by character, as AllenNLP does; for words pass its tokens)"
        )
    if not isinstance(sentences, Iterable):
        raise TypeError(
            f"expected a batch of sentences (a list of token lists), got "
            f"{type(sentences).__name__} {sentences!r:.40}"
        )
    for row, sentence in enumerate(sentences):
        if isinstance(sentence, str):
            warn_text_as_characters(sentence)
            continue
        for column, token in enumerate(sentence):
            if not isinstance(token, str):
                raise TypeError(
                    f"sentence {row}, token {column} is {type(token).__name__} {token!r}, not "
                    "a string; ELMo embeds words, not ids"
                )


def batch_char_ids(sentences: Sequence[Sequence[str]]) -> torch.Tensor:
    """`(batch, longest sentence, 50)` ids of tokenised sentences; padded tokens are all 0. A
    sentence given as a string is its characters, one token each (AllenNLP's `batch_to_ids`
    iterates it so: SeqVec's proteins are strings of residues). A bare string as the batch and a
    token that is not a string are errors naming the fix."""
    check_tokenised(sentences)
    longest = max((len(sentence) for sentence in sentences), default=0)
    ids = torch.zeros((len(sentences), longest, MAX_WORD_LENGTH), dtype=torch.long)
    cache = {}
    for row, sentence in enumerate(sentences):
        for column, word in enumerate(sentence):
            if word not in cache:
                cache[word] = torch.tensor(word_char_ids(word), dtype=torch.long)
            ids[row, column] = cache[word]
    return ids


def vocabulary_char_ids(
    vocabulary: Sequence[str],
    to_ids: Callable[[Sequence[Sequence[str]]], torch.Tensor] = batch_char_ids,
) -> torch.Tensor:
    """`(len(vocabulary), 50)` ids, one row per word, row 0 all zeros (word id 0 is padding,
    whatever word a vocabulary puts there): indexing it with word ids gives character ids.
    `to_ids`: a biLM's own ids function (`BiLm.batch_to_ids`; ELMoForManyLangs' differ)."""
    table = to_ids([vocabulary])[0]
    table[0] = 0
    return table
