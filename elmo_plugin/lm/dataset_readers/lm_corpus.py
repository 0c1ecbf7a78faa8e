"""A streaming reader of language-model corpora for biLM pretraining and domain fine-tuning."""

import functools
import logging
import re
from typing import Dict, Iterable, Iterator, List, Optional, Tuple, Union

from allennlp.data import DatasetReader, Instance, Token
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import (
    ELMoTokenCharactersIndexer,
    SingleIdTokenIndexer,
    TokenIndexer,
)

from elmo_bilm.model.vocab import BOS, EOS
from elmo_bilm.utils.files import FormatError, UsageError, expand_paths, numbered_lines
from elmo_plugin.data.conll2003 import conll2003_sentences
from elmo_plugin.data.tokenizers.sentence_tokenizer import SentenceTokenizer
from elmo_plugin.data.wikipedia import wikiextractor_paragraphs

logger = logging.getLogger(__name__)

FORMATS = ("text", "wikitext", "conll2003", "ptb_trees", "wikiextractor")
FORMAT_SEPARATOR = "::"


def corpus_files(
    file_path: Union[str, List[str]], default_format: str = "text"
) -> List[Tuple[str, str]]:
    """`(format, file)` for every file of a data path: a `FORMAT::PATH` spec or a list of them,
    each PATH a file, a directory or a glob of shards (see `LmCorpusReader`)."""
    specs = file_path if isinstance(file_path, (list, tuple)) else [file_path]
    files: List[Tuple[str, str]] = []
    for spec in specs:
        corpus_format, separator, path = str(spec).partition(FORMAT_SEPARATOR)
        if not separator:
            corpus_format, path = default_format, str(spec)
        elif corpus_format not in FORMATS:
            raise FormatError(f"{spec}: unknown corpus format {corpus_format!r}; one of {FORMATS}")
        try:
            files.extend((corpus_format, name) for name in expand_paths(path))
        except FileNotFoundError as error:
            raise FormatError(f"{path}: no corpus files found") from error
    return files


_PTB_LEAF = re.compile(r"\([^\s()]+ ([^\s()]+)\)")


def _ptb_leaves(tree: str) -> List[str]:
    """Leaves of a PTB-bracketed tree, `(label word)` -> `word`."""
    return _PTB_LEAF.findall(tree)


@functools.lru_cache(maxsize=1)
def _sentence_tokenizer() -> SentenceTokenizer:
    return SentenceTokenizer()


def read_sentences(path: str, corpus_format: str) -> Iterator[List[str]]:
    """Yield the tokenised sentences of one file in `corpus_format`."""
    if corpus_format == "wikiextractor":
        yield from _sentence_tokenizer().sentences(wikiextractor_paragraphs(path))
        return
    if corpus_format == "conll2003":
        for sentence in conll2003_sentences(path):
            yield [fields[0] for _, fields in sentence]
        return
    for line_number, line in numbered_lines(path):
        stripped = line.strip()
        if not stripped:
            continue
        if corpus_format == "wikitext" and stripped.startswith("=") and stripped.endswith("="):
            continue
        if corpus_format == "ptb_trees":
            if not stripped.startswith("("):
                raise FormatError(f"{path}:{line_number}: expected a PTB tree starting with '('")
            yield _ptb_leaves(stripped)
        else:
            yield stripped.split()


@DatasetReader.register("elmo_plugin_lm_corpus")
class LmCorpusReader(DatasetReader):
    """Tokenised sentences for the biLM, streamed lazily from plain text, gzip, shards or directories.

    Each instance is one sentence wrapped in `<S>` ... `</S>`, with the biLM's character ids
    (`elmo_characters`, under `"elmo"`) and softmax target ids (namespace `lm_tokens`, under `"lm"`).

    A data path is a file, a directory (all its files, sorted), or a glob of shards (the 1B Word
    Benchmark layout, `.../news.en-*-of-00100`), optionally prefixed with a format,
    `FORMAT::PATH`, and a list of such paths reads them in turn. Formats: `text` (one tokenised
    sentence a line, blank lines skipped), `wikitext` (also drops ` = Heading = ` lines),
    `conll2003` (first column of CoNLL files, `-DOCSTART-` skipped), `ptb_trees` (leaves of
    Penn-Treebank trees, e.g. SST), `wikiextractor` (raw Wikipedia `<doc>` blocks, titles
    dropped, sentence-split and tokenised on the fly by spaCy's rule-based English pipeline; or
    prepare them once with `allennlp elmo-prepare-corpus` and read the shards as `text`).
    `conll2003` and `ptb_trees` read a task's unlabeled text for fine-tuning.

    Registered as a `DatasetReader` with name "elmo_plugin_lm_corpus".

    # Parameters

    corpus_format : `str`, optional (default = `"text"`)
        Format of paths without a `FORMAT::` prefix.
    max_sentence_length : `int`, optional
        Longer sentences are split into pieces of at most this many tokens (never dropped).
    lm_namespace : `str`, optional (default = `"lm_tokens"`)
        Vocabulary namespace of the softmax.
    token_indexers : `Dict[str, TokenIndexer]`, optional
        Defaults to `{"elmo": elmo_characters, "lm": single_id(lm_namespace)}`.
    """

    def __init__(
        self,
        corpus_format: str = "text",
        max_sentence_length: Optional[int] = None,
        lm_namespace: str = "lm_tokens",
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        **kwargs,
    ) -> None:
        super().__init__(
            manual_distributed_sharding=True, manual_multiprocess_sharding=True, **kwargs
        )
        if corpus_format not in FORMATS:
            raise UsageError(f"corpus_format must be one of {FORMATS}, got {corpus_format!r}")
        if max_sentence_length is not None and max_sentence_length < 1:
            raise UsageError(f"max_sentence_length must be positive, got {max_sentence_length}")
        self.corpus_format = corpus_format
        self.max_sentence_length = max_sentence_length
        self.token_indexers = token_indexers or {
            "elmo": ELMoTokenCharactersIndexer(),
            "lm": SingleIdTokenIndexer(namespace=lm_namespace),
        }

    def _sentences(self, file_path: Union[str, List[str]]) -> Iterator[List[str]]:
        for corpus_format, path in corpus_files(file_path, self.corpus_format):
            found = False
            for tokens in read_sentences(path, corpus_format):
                found = True
                step = self.max_sentence_length or len(tokens)
                for start in range(0, len(tokens), step):
                    yield tokens[start : start + step]
            if not found:
                logger.warning("%s: no sentences", path)

    def _read(self, file_path: Union[str, List[str]]) -> Iterable[Instance]:
        count = 0

        def counted() -> Iterator[List[str]]:
            nonlocal count
            for tokens in self._sentences(file_path):
                count += 1
                yield tokens

        for tokens in self.shard_iterable(counted()):
            yield self.text_to_instance(tokens)
        if count == 0:
            raise FormatError(f"{file_path}: empty corpus (no sentences)")

    def text_to_instance(self, tokens: List[str]) -> Instance:  # type: ignore[override]
        """One tokenised sentence (without boundaries) -> an instance with `<S>`/`</S>` added."""
        return Instance({"tokens": TextField([Token(t) for t in [BOS, *tokens, EOS]])})

    def apply_token_indexers(self, instance: Instance) -> None:
        instance["tokens"].token_indexers = self.token_indexers  # type: ignore[attr-defined]
