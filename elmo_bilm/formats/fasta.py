"""FASTA input (`elmo-embed proteins.fasta out.hdf5`; SeqVec's proteins,
`elmo_bilm.bio_embeddings`): each record's residues are its tokens, and its id (the header's
first word) names its dataset. Read from a path or a stream (`<(zcat proteins.fasta.gz)`)."""

from typing import Dict, Iterator, List

from elmo_bilm.formats.text import Item, Source, numbered_text, source_name
from elmo_bilm.utils.errors import FormatError

FASTA_SUFFIXES = (".fasta", ".fa", ".faa")


def is_fasta(path: str) -> bool:
    """Whether `path` is named as FASTA (`.fasta`, `.fa`, `.faa`, each maybe `.gz`)."""
    name = path.lower()
    return (name[:-3] if name.endswith(".gz") else name).endswith(FASTA_SUFFIXES)


def read_fasta(input_file: Source) -> Iterator[Item]:
    """`(index, id, residues)` of each record, in file order: a `>id description` header, then
    sequence lines joined (whitespace dropped; every other character a residue, as written).
    Errors name FILE:LINE: text before the first header, a header without an id, an id that
    repeats or cannot name an HDF5 dataset (`/`), a record without residues."""
    input_name = source_name(input_file)
    seen: Dict[str, int] = {}
    name, header = "", 0  # the current record's id and header line (0: none yet)
    residues: List[str] = []
    for line_number, line in numbered_text(input_file):
        if line.startswith(">"):
            if header:
                yield _fasta_record(input_name, len(seen) - 1, name, header, residues)
            fields = line[1:].split()
            name, header, residues = (fields[0] if fields else ""), line_number, []
            where = f"{input_name}:{line_number}"
            if not name or "/" in name or name == ".":
                raise FormatError(f"{where}: header {line[:40]!r}: its id cannot name a dataset")
            if name in seen:
                raise FormatError(f"{where}: id {name!r} repeats line {seen[name]}'s")
            seen[name] = line_number
        elif line.strip():
            if not header:
                raise FormatError(
                    f"{input_name}:{line_number}: sequence before the first '>' header "
                    "(FASTA: '>id' lines, each followed by its sequence)"
                )
            residues.extend("".join(line.split()))
    if header:
        yield _fasta_record(input_name, len(seen) - 1, name, header, residues)


def _fasta_record(input_name: str, index: int, name: str, header: int, residues: List[str]) -> Item:
    if not residues:
        raise FormatError(f"{input_name}:{header}: record {name!r} has no residues")
    return index, name, residues
