"""CoNLL-2003 files (token, POS, chunk, NER per line; `-DOCSTART-` and blank lines between
sentences), read line by line with `FILE:LINE` errors. Used by the NER reader and by the biLM
corpus reader (the unlabeled task text for fine-tuning)."""

import re
from typing import Iterator, List, Tuple

from elmo_bilm.utils.files import FormatError, numbered_lines

_TAG = re.compile(r"^(O|[BI]-\S+)$")


def conll2003_sentences(path: str) -> Iterator[List[Tuple[int, List[str]]]]:
    """Each sentence as `(line number, [token, POS, chunk, NER])` rows. A line without exactly four
    columns, or with a chunk/NER tag that is not IOB, is an error naming the file and line."""
    sentence: List[Tuple[int, List[str]]] = []
    for line_number, line in numbered_lines(path):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if sentence:
                yield sentence
            sentence = []
            continue
        if len(fields) != 4:
            raise FormatError(
                f"{path}:{line_number}: expected 4 columns (token POS chunk NER), "
                f"got {len(fields)}: {line.rstrip()!r}"
            )
        for tag in fields[2:]:
            if not _TAG.match(tag):
                raise FormatError(f"{path}:{line_number}: {tag!r} is not an IOB tag")
        sentence.append((line_number, fields))
    if sentence:
        yield sentence
