"""A biLM softmax vocabulary from a large corpus in one streaming pass of token counts."""

import collections
import logging
from typing import Counter, List, Optional, Union

from elmo_bilm.model.vocab import SPECIAL_TOKENS, write_vocab_file
from elmo_bilm.utils.files import FormatError, UsageError
from elmo_bilm.utils.progress import progress_bar
from elmo_plugin.lm.dataset_readers.lm_corpus import corpus_files, read_sentences

logger = logging.getLogger(__name__)


def count_tokens(file_path: Union[str, List[str]]) -> Counter[str]:
    """Token counts over every sentence of a data path (`FORMAT::PATH` specs, as for the
    `elmo_plugin_lm_corpus` reader), one file at a time with a progress bar; only the counts are
    kept in memory."""
    counts: Counter[str] = collections.Counter()
    files = corpus_files(file_path)
    progress = progress_bar(files, desc="counting tokens", unit="file")
    for corpus_format, path in progress:
        for tokens in read_sentences(path, corpus_format):
            counts.update(tokens)
        progress.set_postfix(tokens=sum(counts.values()), distinct=len(counts))
    if not counts:
        raise FormatError(f"{file_path}: empty corpus (no tokens)")
    return counts


def build_vocab_file(
    file_path: Union[str, List[str]],
    vocab_file: str,
    min_count: int = 1,
    max_size: Optional[int] = None,
) -> List[str]:
    """Write a bilm-tf `vocab.txt` of the corpus: `<S>`, `</S>`, `<UNK>`, then every token seen at
    least `min_count` times, most frequent first (ties in code-point order), at most `max_size` of
    them. Never overwrites. Returns the lines written."""
    if min_count < 1 or (max_size is not None and max_size < 1):
        raise UsageError(
            f"--min-count and --max-size must be at least 1, got {min_count}, {max_size}"
        )
    counts = count_tokens(file_path)
    ranked = sorted(
        (
            token
            for token, count in counts.items()
            if count >= min_count and token not in SPECIAL_TOKENS
        ),
        key=lambda token: (-counts[token], token),
    )
    kept = ranked[:max_size] if max_size is not None else ranked
    if not kept:
        raise UsageError(
            f"no token occurs {min_count} times in {file_path}: the vocabulary would hold only "
            "<S>, </S> and <UNK>"
        )
    total = sum(counts.values())
    covered = sum(counts[token] for token in kept)
    logger.info(
        "%d tokens, %d distinct; kept %d (min count %d), covering %.2f%% of the tokens",
        total,
        len(counts),
        len(kept),
        min_count,
        100.0 * covered / total,
    )
    return write_vocab_file(kept, vocab_file)
