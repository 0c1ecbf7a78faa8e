"""Cut the `smoke` scale's data (this folder) from the project's data folder.

Run from a checkout: `ELMO_PLUGIN_DATA=../shared/data python elmo_plugin/data/smoke/make_slices.py`.
Each slice is the first lines, documents, articles or sentences of a freely licensed file (the
README beside this script lists them); the output is the same on every run.
"""

import gzip
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

HERE = Path(__file__).resolve().parent

# (source split, first line, number of lines) of each smoke split
SNLI = {"train": ("dev", 0, 300), "dev": ("test", 0, 100), "test": ("test", 100, 100)}
SST = {"train": ("train", 0, 200), "dev": ("dev", 0, 60), "test": ("test", 0, 60)}
# (article index in dev-v1.1.json, number of paragraphs from its first)
SQUAD = {"train": (0, 4), "dev": (36, 4), "test": (42, 4)}
# (source file, number of documents from its first)
SRL = {"train": ("train", 5), "dev": ("dev", 4), "test": ("test", 4)}
COREF = {"train": ("train", 1), "dev": ("dev", 1), "test": ("test", 1)}
WIKI_SHARDS, WIKI_SENTENCES = ("AA_wiki_00.gz", "AA_wiki_01.gz"), 10_000


def lines(path: Path) -> List[str]:
    """A text file's lines, newlines kept."""
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def write(path: Path, text: str) -> None:
    """Write `text` (UTF-8, Unix newlines) and report the file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"{path.relative_to(HERE)}: {path.stat().st_size:,} bytes")


def documents(path: Path, count: int) -> Tuple[str, int, int]:
    """The first `count` `#begin document` ... `#end document` blocks of a CoNLL-2012 file: the
    text, and the (1-based, inclusive) line range they span."""
    text = lines(path)
    ends = [i for i, line in enumerate(text) if line.startswith("#end document")]
    end = ends[count - 1] + 1
    return "".join(text[:end]), 1, end


def main(data: Path) -> None:
    """Write every slice under this folder."""
    provenance: Dict[str, str] = {}
    for split, (source, start, size) in SNLI.items():
        for prefix in ("s1", "s2", "labels"):
            text = lines(data / "snli_eval" / f"{prefix}.{source}")[start : start + size]
            write(HERE / "snli" / f"{prefix}.{split}", "".join(text))
        provenance[f"snli/*.{split}"] = f"snli_eval/*.{source} lines {start + 1}-{start + size}"
    for split, (source, start, size) in SST.items():
        text = lines(data / "sst" / f"{source}.txt")[start : start + size]
        write(HERE / "sst" / f"{split}.txt", "".join(text))
        provenance[f"sst/{split}.txt"] = f"sst/{source}.txt lines {start + 1}-{start + size}"
    squad = json.loads((data / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    for split, (article, paragraphs) in SQUAD.items():
        chosen = dict(squad["data"][article])
        chosen["paragraphs"] = chosen["paragraphs"][:paragraphs]
        questions = sum(len(p["qas"]) for p in chosen["paragraphs"])
        write(HERE / "squad" / f"{split}.json", json.dumps({"version": "1.1", "data": [chosen]}))
        provenance[f"squad/{split}.json"] = (
            f"squad/dev-v1.1.json article {article} ({chosen['title']}), paragraphs "
            f"1-{paragraphs} ({questions} questions)"
        )
    for name, folder, splits, suffix in (
        ("srl", "propbank_ewt", SRL, ".gold_conll"),
        ("coref", "litbank", COREF, ".english.gold_conll"),
    ):
        for split, (source, count) in splits.items():
            block, first, last = documents(data / folder / f"{source}{suffix}", count)
            write(HERE / name / f"{split}.gold_conll", block)
            provenance[f"{name}/{split}.gold_conll"] = (
                f"{folder}/{source}{suffix} lines {first}-{last} (its first {count} documents)"
            )
    sys.path.insert(0, str(HERE.parents[2]))
    from elmo_plugin.data.wikipedia import prepare_corpus

    with tempfile.TemporaryDirectory() as tmp:
        sentences: List[str] = []
        for tokenised in prepare_corpus([str(data / "wikipedia" / s) for s in WIKI_SHARDS], tmp):
            with gzip.open(tokenised, "rt", encoding="utf-8") as handle:
                sentences += handle.readlines()
        sentences = sentences[:WIKI_SENTENCES]
    output = HERE / "wikipedia" / "sentences.txt.gz"
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write("".join(sentences).encode("utf-8"))
    print(f"{output.relative_to(HERE)}: {output.stat().st_size:,} bytes")
    provenance["wikipedia/sentences.txt.gz"] = (
        f"wikipedia/{' and '.join(WIKI_SHARDS)}: their first {WIKI_SENTENCES:,} sentences, sentence-split and "
        "tokenised by `elmo_plugin.data.wikipedia.prepare_corpus` (one sentence a line)"
    )
    for name, source in provenance.items():
        print(f"| `{name}` | {source} |")


if __name__ == "__main__":
    main(Path(os.environ["ELMO_PLUGIN_DATA"]).expanduser().resolve())
