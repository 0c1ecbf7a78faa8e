"""CoNLL-2012 (OntoNotes 5.0 `*gold_conll`) files: finding them and checking them line by line.

allennlp-models' `Ontonotes` parser does the reading; it only walks directories and fails on a
malformed row with a bare `IndexError` or `ValueError`. The SRL and coreference readers call
`conll2012_files` first, so a file path works as well as a directory and a bad row stops reading
with `FILE:LINE: ...`.
"""

import os
from typing import List

from elmo_bilm.files import FormatError

# document id, part, word number, word, POS, parse bit, lemma, frameset, sense, speaker, NE,
# (one column per predicate), coreference
_MIN_COLUMNS = 12


def _check_sentence(path: str, rows: List[List[str]], first_line: int) -> None:
    widths = {len(row) for row in rows}
    if len(widths) > 1:
        raise FormatError(
            f"{path}:{first_line}: the rows of one sentence have different column counts {sorted(widths)}"
        )
    for column in range(11, len(rows[0]) - 1):
        opened = sum(row[column].count("(") for row in rows)
        closed = sum(row[column].count(")") for row in rows)
        if opened != closed:
            raise FormatError(
                f"{path}:{first_line}: predicate-argument column {column + 1} opens {opened} spans and closes {closed}"
            )


def check_conll2012_file(path: str) -> None:
    """Raise `FormatError` at the first malformed row of `path`: too few columns, a word
    number that does not increase, a sentence whose rows differ in width, or unbalanced argument brackets."""
    rows: List[List[str]] = []
    first_line = 0
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                if rows:
                    _check_sentence(path, rows, first_line)
                rows = []
                continue
            columns = line.split()
            if len(columns) < _MIN_COLUMNS:
                raise FormatError(
                    f"{path}:{line_number}: {len(columns)} columns, a CoNLL-2012 row has at least {_MIN_COLUMNS}"
                )
            if not columns[2].isdigit() or (rows and int(columns[2]) <= int(rows[-1][2])):
                raise FormatError(
                    f"{path}:{line_number}: word number {columns[2]!r} is not an integer above the previous row's"
                )
            if not rows:
                first_line = line_number
            rows.append(columns)
    if rows:
        _check_sentence(path, rows, first_line)


def conll2012_files(path: str) -> List[str]:
    """`path` itself if it is a file, else every `*gold_conll` file under it (sorted); each file
    is checked with `check_conll2012_file` first."""
    if os.path.isfile(path):
        files = [path]
    elif os.path.isdir(path):
        files = sorted(
            os.path.join(root, name)
            for root, _, names in os.walk(path)
            for name in names
            if name.endswith("gold_conll")
        )
        if not files:
            raise FileNotFoundError(f"no *gold_conll files under {path}")
    else:
        raise FileNotFoundError(f"no such file or directory: {path}")
    for file in files:
        check_conll2012_file(file)
    return files
