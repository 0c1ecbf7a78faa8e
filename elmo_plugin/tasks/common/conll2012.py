"""CoNLL-2012 (OntoNotes 5.0 `*gold_conll`) files: finding them and checking them line by line.

allennlp-models' `Ontonotes` parser does the reading; it only walks directories and fails on a
malformed row with a bare `IndexError` or `ValueError`. The SRL and coreference readers call
`conll2012_files` first, so a file path works as well as a directory and a bad row stops reading
with `FILE:LINE: ...`.
"""

import os
import re
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from elmo_bilm.utils.files import FormatError, numbered_lines

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


def conll2012_sentences(path: str) -> Iterator[Tuple[str, int, List[List[str]]]]:
    """`(document, first line, rows)` of each sentence of `path` (rows = whitespace-split columns;
    document = the `#begin document` line's id and part), each checked first: `FormatError`
    `FILE:LINE` at too few columns, a word number that does not increase, a sentence whose rows
    differ in width, or unbalanced argument brackets."""
    rows: List[List[str]] = []
    first_line = 0
    document = ""
    for line_number, line in numbered_lines(path):
        line = line.strip()
        if not line or line.startswith("#"):
            if rows:
                _check_sentence(path, rows, first_line)
                yield document, first_line, rows
            rows = []
            if line.startswith("#begin document"):
                document = line[len("#begin document") :].strip()
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
        yield document, first_line, rows


def check_conll2012_file(path: str) -> None:
    """Raise `FormatError` at the first malformed row of `path` (see `conll2012_sentences`)."""
    for _ in conll2012_sentences(path):
        pass


def span_column_to_bio(cells: Sequence[str], where: str) -> List[str]:
    """One CoNLL-2012 predicate-argument column (`(ARG0*`, `*`, `*)`, `(V*)`) -> BIO tags
    (`B-ARG0`, `I-ARG0`, `O`, `B-V`); spans do not nest in these columns."""
    tags: List[str] = []
    label: Optional[str] = None
    for cell in cells:
        opening = cell.split("*")[0].strip("(")
        if opening:
            if label is not None:
                raise FormatError(f"{where}: argument {opening!r} opens inside {label!r}")
            label = opening
            tags.append(f"B-{label}")
        else:
            tags.append("O" if label is None else f"I-{label}")
        if cell.endswith(")"):
            if label is None:
                raise FormatError(f"{where}: {cell!r} closes no argument")
            label = None
    return tags


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


_COREF_CELL = re.compile(r"^(\()?(\d+)(\))?$")


def coreference_spans(
    path: str, sentences: Sequence[Tuple[int, List[List[str]]]]
) -> Dict[str, List[Tuple[int, int]]]:
    """The mentions of one document's coreference column (the last): cluster id -> inclusive
    `(start, end)` word offsets within the document. Cells are `-` or `|`-separated `(12`, `12)`,
    `(12)`; a mention left open, a close without an open or another cell is a `FormatError`
    naming the line."""
    clusters: Dict[str, List[Tuple[int, int]]] = {}
    opened: Dict[str, List[Tuple[int, int]]] = {}  # cluster id -> stack of (start, line)
    offset = 0
    for first_line, rows in sentences:
        for index, row in enumerate(rows):
            line = first_line + index
            cell = row[-1]
            if cell == "-":
                continue
            for part in cell.split("|"):
                match = _COREF_CELL.match(part)
                if match is None or not (match[1] or match[3]):
                    raise FormatError(
                        f"{path}:{line}: coreference cell {cell!r} is not like (12, 12) or (12)"
                    )
                cluster = match[2]
                if match[1]:
                    opened.setdefault(cluster, []).append((offset + index, line))
                if match[3]:
                    if not opened.get(cluster):
                        raise FormatError(
                            f"{path}:{line}: {part!r} closes a mention of {cluster} never opened"
                        )
                    start, _ = opened[cluster].pop()
                    clusters.setdefault(cluster, []).append((start, offset + index))
        offset += len(rows)
    for cluster, starts in opened.items():
        if starts:
            raise FormatError(
                f"{path}:{starts[0][1]}: mention of cluster {cluster} opened, never closed"
            )
    return clusters
