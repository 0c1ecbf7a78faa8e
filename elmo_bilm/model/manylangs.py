"""ELMoForManyLangs' biLM (HIT-SCIR, 44 languages): its tokens-to-ids (`CharVocabulary`), its
token encoder (`ManyLangsTokenEncoder`) and the `BiLm` that holds them (`ManyLangsBiLm`).

Here with the rest of the network (issue 80): `elmo_bilm.formats.manylangs` reads a model folder
into these classes (`load_manylangs`), and what runs the biLM needs only the model. How its token
encoder differs from bilm-tf's:

- characters are ids of a character dictionary, not UTF-8 bytes: a token is `<eow>`'s id, its
  characters' ids (`<oov>`'s for unknown ones), `<bow>`'s id, then `<pad>`'s up to
  `max_characters_per_token` (the two markers in that swapped order, as its `create_one_batch`
  writes them), and `<S>` / `</S>` are ELMoForManyLangs' `<bos>` / `<eos>`. The ids here are its
  ids + 1, so that 0 stays batch padding (as with AllenNLP's `batch_to_ids`);
- an optional word embedding (`word_dim > 0`, ids from `word.dic`) is concatenated in front of
  the char-CNN + highway output before the projection; here it is a second product added to the
  projection's (`W [w; c] + b = W_w w + (W_c c + b)`), and each token's word id rides in two
  extra columns of the ids (`id // 32768`, `id % 32768`), so that the word cache and the
  distinct-word pass tell apart tokens with the same characters.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.char_cnn import CharCnnEncoder

WORD_ID_BASE = 32768  # a word id in two columns below 2**15: the word cache keys ids as int16


class CharVocabulary:
    """ELMoForManyLangs' tokens-to-ids of one model (`create_one_batch`, `read_list`), +1-shifted.

    Row of a token: `max_characters_per_token` character ids, then with a word embedding two
    columns of its word id (`id // 32768`, `id % 32768`)."""

    def __init__(
        self, chars: Dict[str, int], words: Optional[Dict[str, int]], max_chars: int
    ) -> None:
        self.chars = chars
        self.words = words
        self.max_chars = max_chars
        self.width = max_chars + (2 if words is not None else 0)
        self.oov_char = chars["<oov>"] + 1
        # its `create_one_batch` writes the id of `<eow>` first and `<bow>`'s after the word
        self.first, self.last, self.pad = chars["<eow>"] + 1, chars["<bow>"] + 1, chars["<pad>"] + 1

    def token_ids(self, token: str) -> List[int]:
        """The row of one token (truncated to `max_characters_per_token - 2` characters first,
        as `read_list` does; `<bos>` / `<eos>` are the sentence markers)."""
        if len(token) + 2 > self.max_chars:
            token = token[: self.max_chars - 2]
        if token in ("<bos>", "<eos>"):
            body = [self.chars[token] + 1]
        else:
            body = [self.chars.get(c, self.oov_char - 1) + 1 for c in token]
        row = [self.first, *body, self.last] + [self.pad] * (self.max_chars - len(body) - 2)
        if self.words is not None:
            word = self.words.get(token, self.words["<oov>"])
            row += [word // WORD_ID_BASE, word % WORD_ID_BASE]
        return row

    def batch_to_ids(self, sentences: Sequence[Sequence[str]]) -> torch.Tensor:
        """`(batch, T, width)` ids of tokenised sentences, 0 at padding positions."""
        if isinstance(sentences, str) or any(isinstance(s, str) for s in sentences):
            raise TypeError("batch_to_ids takes a list of tokenised sentences (lists of tokens)")
        longest = max((len(s) for s in sentences), default=0)
        rows: Dict[str, List[int]] = {}
        padding = [0] * self.width
        flat: List[List[int]] = []
        for sentence in sentences:
            for token in sentence:
                if token not in rows:
                    rows[token] = self.token_ids(token)
                flat.append(rows[token])
            flat.extend([padding] * (longest - len(sentence)))
        ids = torch.tensor(flat, dtype=torch.long)
        return ids.view(len(sentences), longest, self.width)


class ManyLangsTokenEncoder(CharCnnEncoder):
    """The char CNN of `CharCnnEncoder` over a character dictionary, plus an optional word
    embedding added through its own columns of the projection (see the module's docstring)."""

    def __init__(
        self,
        n_chars: int,
        n_words: int,
        config: Dict[str, Any],
        pad_id: int,
    ) -> None:
        embedder = config["token_embedder"]
        projection_dim = config["encoder"]["projection_dim"]
        super().__init__(
            char_dim=embedder["char_dim"],
            filters=embedder["filters"],
            n_highway=embedder["n_highway"],
            projection_dim=projection_dim,
            activation=embedder["activation"],
            initialise=False,
        )
        self.char_embedding = nn.Embedding(n_chars + 1, embedder["char_dim"], padding_idx=0)
        self.padding_id = pad_id
        self.max_chars = int(embedder["max_characters_per_token"])
        word_dim = int(embedder["word_dim"])
        self.word_embedding = nn.Embedding(n_words, word_dim) if word_dim else None
        # its own columns of the projection; the projection's bias is in `projection`
        self.word_projection = nn.Linear(word_dim, projection_dim, bias=False) if word_dim else None
        if n_chars + 1 >= WORD_ID_BASE:
            self.word_cache_size = 0  # its keys are int16: ids that large would collide

    def encode_words(self, word_char_ids: torch.Tensor, trim: bool = True) -> torch.Tensor:
        """`(n_words, width)` rows of `CharVocabulary` -> `(n_words, projection_dim)`."""
        out = super().encode_words(word_char_ids[:, : self.max_chars], trim)
        if self.word_embedding is not None and self.word_projection is not None:
            words = word_char_ids[:, self.max_chars] * WORD_ID_BASE + word_char_ids[:, -1]
            out = out + self.word_projection(self.word_embedding(words))
        return out


class ManyLangsBiLm(BiLm):
    """A `BiLm` with ELMoForManyLangs' token encoder and ids (`batch_to_ids`); `load_manylangs`
    builds it from a model folder."""

    bos_ids: torch.Tensor  # buffers: this model's rows of `<bos>` and `<eos>`
    eos_ids: torch.Tensor

    def __init__(
        self, config: Dict[str, Any], chars: Dict[str, int], words: Optional[Dict[str, int]]
    ) -> None:
        embedder, encoder = config["token_embedder"], config["encoder"]
        options = {
            "char_cnn": {
                "embedding": {"dim": embedder["char_dim"]},
                "filters": embedder["filters"],
                "n_highway": embedder["n_highway"],
                "activation": embedder["activation"],
                "max_characters_per_token": embedder["max_characters_per_token"],
            },
            "lstm": {
                "dim": encoder["dim"],
                "projection_dim": encoder["projection_dim"],
                "n_layers": encoder["n_layers"],
                "cell_clip": encoder.get("cell_clip") or None,  # 0: no clip, as its `if clip:`
                "proj_clip": encoder.get("proj_clip") or None,
                "use_skip_connections": True,
            },
            "elmoformanylangs": config,
        }
        super().__init__(options, initialise=False)
        self.vocabulary = CharVocabulary(chars, words, int(embedder["max_characters_per_token"]))
        self.char_cnn = ManyLangsTokenEncoder(
            max(chars.values()) + 1,
            max(words.values()) + 1 if words else 0,
            config,
            self.vocabulary.pad,
        )
        bos, eos = (torch.tensor(self.vocabulary.token_ids(t)) for t in ("<bos>", "<eos>"))
        self.register_buffer("bos_ids", bos, persistent=False)
        self.register_buffer("eos_ids", eos, persistent=False)

    def batch_to_ids(self, sentences: Sequence[Sequence[str]]) -> torch.Tensor:
        """This model's ids of tokenised sentences, the input of `forward` and of `Elmo`
        (`Elmo(folder, None, 1)(elmo.bilm.batch_to_ids(sentences))`), in place of
        `elmo_bilm.batch_to_ids` (bilm-tf's character ids)."""
        return self.vocabulary.batch_to_ids(sentences)

    def add_boundaries(
        self, char_ids: torch.Tensor, mask: torch.Tensor
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """`<bos>` ... `<eos>` (this model's rows) around each sentence."""
        timesteps = char_ids.shape[1]
        lengths = mask.long().sum(-1)
        positions = torch.arange(timesteps + 2, device=char_ids.device)[None, :]
        out = nn.functional.pad(char_ids, (0, 0, 1, 1))
        out = torch.where((positions == (lengths + 1)[:, None])[..., None], self.eos_ids, out)
        out = torch.where((positions == 0)[..., None], self.bos_ids, out)
        return out, positions < (lengths + 2)[:, None]


__all__ = ["WORD_ID_BASE", "CharVocabulary", "ManyLangsBiLm", "ManyLangsTokenEncoder"]
