"""bilm-tf vocabulary files (`vocab.txt`): one token a line, `<S>`, `</S>`, `<UNK>` first."""

import os
from typing import Iterable, List

from elmo_bilm.utils.files import FormatError, atomic_output, numbered_lines

BOS = "<S>"
EOS = "</S>"
UNK = "<UNK>"
SPECIAL_TOKENS = (BOS, EOS, UNK)


def read_vocab_file(vocab_file: "os.PathLike[str] | str") -> List[str]:
    """The tokens of a `vocab.txt`, in file order; a line that is not one token is an error
    naming the file and line."""
    tokens: List[str] = []
    for line_number, line in numbered_lines(vocab_file):
        fields = line.split()
        if len(fields) != 1:
            raise FormatError(
                f"{vocab_file}:{line_number}: expected one token per line, got {line!r}"
            )
        tokens.append(fields[0])
    return tokens


def write_vocab_file(tokens: Iterable[str], vocab_file: "os.PathLike[str] | str") -> List[str]:
    """Write `<S>`, `</S>`, `<UNK>`, then `tokens` (in the given order, specials skipped) as a
    `vocab.txt`; never overwrites, appears only when complete. Returns the lines written."""
    lines = [*SPECIAL_TOKENS, *(token for token in tokens if token not in SPECIAL_TOKENS)]
    with atomic_output(vocab_file) as partial, open(partial, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return lines
