"""Peak memory and wall time of one line longer than the token budget (issue 81), before and after
the pieces of `elmo_bilm.model.chunked`.

`elmo-embed` on one line of N tokens (words drawn from a fixed list with a fixed seed) at the
paper's size (random bilm-tf weights, `random_bilm_tf("paper")`), and on one protein of titin's
34,350 residues through `--fasta` at SeqVec's size (`random_bilm_tf("seqvec")`), every layer
written (the default). Each run is a process of its own, its peak resident memory read from the
kernel (`wait4`'s `ru_maxrss`, `elmo_benchmarks.processes.measure`). The "after" side is the working
tree; the "before" side is `elmo_bilm/` at git revision `--before` (today's code when the issue
was filed: 7858938), unpacked into a temporary folder and run with the same interpreter, on the
lengths it survives (`--before-max` tokens at most: past it the uncut run's memory grows past what
a shared machine should be asked for). Where both sides ran, the largest difference of their
vectors over the largest magnitude is reported (`max_diff_of_scale`), read back a slice at a time.

    python -m elmo_benchmarks.long_sequences [--cases 1000,10000,100000,1000000,titin]
        [--sides after,before] [--before 7858938] [--before-max 100000] [--config paper]
        [--protein-config seqvec] [--max-tokens 4096] [--precision float32] [--residues 34350]
        [--keep DIR] [--json OUT]

`--precision` is `elmo-embed`'s (both sides have it): the pieces are the same in every precision,
and int8's faster products bring a line of a million tokens at the paper size within a sitting's
reach on a CPU (docs/long_sequences.md).
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

import h5py
import numpy

from elmo_benchmarks.processes import peak, random_weights

REPO_ROOT = Path(__file__).resolve().parents[1]

WORDS = "the of and to in a is that for it as was with be by on not he this are".split()
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
TITIN = 34_350  # residues of titin (UniProt Q8WZ42), the longest human protein
SLICE = 4096  # positions compared at a time


def write_line(path: Path, tokens: int, seed: int = 81) -> None:
    """One line of `tokens` words drawn from `WORDS`."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        out.write(" ".join(rng.choice(WORDS) for _ in range(tokens)) + "\n")


def write_protein(path: Path, residues: int, seed: int = 81) -> None:
    """One FASTA record of `residues` amino acids drawn uniformly, 60 a line."""
    rng = random.Random(seed)
    sequence = "".join(rng.choice(AMINO_ACIDS) for _ in range(residues))
    with open(path, "w", encoding="ascii") as out:
        out.write(">titin_length random residues\n")
        for start in range(0, len(sequence), 60):
            out.write(sequence[start : start + 60] + "\n")


def unpack_revision(revision: str, folder: Path) -> Path:
    """`elmo_bilm/` at `revision`, unpacked under `folder`; the folder to put on the path."""
    archive = folder / "before.tar"
    with open(archive, "wb") as out:
        subprocess.run(
            ["git", "archive", revision, "elmo_bilm"], cwd=REPO_ROOT, stdout=out, check=True
        )
    root = folder / "before"
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    archive.unlink()
    return root


def embed_command(
    root: Path,
    source: Path,
    output: Path,
    files: Dict[str, str],
    fasta: bool,
    max_tokens: int,
    precision: str = "float32",
) -> List[str]:
    """`elmo-embed` of the package under `root` (`-P`: not the working directory's)."""
    return [
        "env",
        f"PYTHONPATH={root}",
        sys.executable,
        "-P",
        "-m",
        "elmo_bilm.cli.embed",
        str(source),
        str(output),
        *(["--fasta"] if fasta else []),
        "--overwrite",
        "--max-tokens",
        str(max_tokens),
        "--precision",
        precision,
        "--options-file",
        files["options_file"],
        "--weight-file",
        files["weight_file"],
    ]


def largest_difference(a: Path, b: Path) -> float:
    """The largest difference between the two files' vectors (every dataset but the sentence
    index) over the largest magnitude (at least 1), a slice of positions at a time."""
    worst, scale = 0.0, 1.0
    with h5py.File(a, "r") as left, h5py.File(b, "r") as right:
        for name in left:
            if name == "sentence_to_index":
                continue
            length = left[name].shape[-2]
            for start in range(0, length, SLICE):
                x = left[name][..., start : start + SLICE, :]
                y = right[name][..., start : start + SLICE, :]
                worst = max(worst, float(numpy.abs(x - y).max()))
                scale = max(scale, float(numpy.abs(y).max()))
    return worst / scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="1000,10000,100000,1000000,titin")
    parser.add_argument("--sides", default="after,before")
    parser.add_argument("--before", default="7858938", help="git revision of today's code")
    parser.add_argument("--before-max", type=int, default=100_000)
    parser.add_argument("--config", default="paper")
    parser.add_argument("--protein-config", default="seqvec")
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--precision", default="float32", choices=["float32", "bfloat16", "int8"])
    parser.add_argument("--residues", type=int, default=TITIN, help="the titin case's length")
    parser.add_argument("--keep", help="move the outputs into this folder instead of deleting them")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    results: List[Dict[str, object]] = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        roots = {"after": REPO_ROOT}
        if "before" in args.sides:
            roots["before"] = unpack_revision(args.before, folder)
        for case in args.cases.split(","):
            fasta = case == "titin"
            tokens = args.residues if fasta else int(case)
            config = args.protein_config if fasta else args.config
            files = random_weights(config)
            source = folder / ("titin.fasta" if fasta else f"line_{tokens}.txt")
            (write_protein if fasta else write_line)(source, tokens)
            outputs: Dict[str, Optional[Path]] = {}
            for side in args.sides.split(","):
                row: Dict[str, object] = {
                    "case": case,
                    "tokens": tokens,
                    "config": config,
                    "side": side,
                    "max_tokens": args.max_tokens,
                    "precision": args.precision,
                }
                if side == "before" and tokens > args.before_max:
                    row["skipped"] = f"longer than --before-max {args.before_max}"
                    print(json.dumps(row), flush=True)
                    results.append(row)
                    continue
                output = folder / f"{side}.hdf5"
                command = embed_command(
                    roots[side], source, output, files, fasta, args.max_tokens, args.precision
                )
                try:
                    row.update(peak(command))
                    row["output_mb"] = round(os.path.getsize(output) / 2**20, 1)
                    outputs[side] = output
                except RuntimeError as error:  # the uncut run out of memory, say
                    row["failed"] = str(error).splitlines()[-1][:300]
                print(json.dumps(row), flush=True)
                results.append(row)
            if outputs.get("after") and outputs.get("before"):
                difference = largest_difference(outputs["after"], outputs["before"])  # type: ignore[arg-type]
                for row in results[-2:]:
                    row["max_diff_of_scale"] = difference
                print(json.dumps({"case": case, "max_diff_of_scale": difference}), flush=True)
            for side, output in outputs.items():
                if output is not None and args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    shutil.move(output, Path(args.keep) / f"{case}_{side}.hdf5")
                elif output is not None:
                    output.unlink()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
