"""Peak memory and wall time of `elmo-embed --fasta` on proteins at SeqVec's size (issue 68).

SeqVec's architecture (`random_bilm_tf("seqvec")`: the paper's character CNN, 2 highway layers,
512 LSTM cells, 512 projection, 2 layers) with random weights, so the figures need no download.
Cases, each in a process of its own, its peak resident memory read from the kernel (`wait4`'s
`ru_maxrss`), every layer written (the default, SeqVec's `(3, n_residues, 1024)`):

- `one`: one protein of 10 residues (what loading and the first batch cost);
- `long`: one protein of 10,000 residues;
- `uniprot`: a FASTA file of 1,000 proteins, lengths drawn uniformly from 50 to 1,000 residues.

Residues are drawn from the 20 standard amino acids with a fixed seed, so the inputs are the
same on every machine. The peak RSS comes through `elmo_benchmarks.processes.measure`.

    python -m elmo_benchmarks.protein_memory [--cases one,long,uniprot] [--seed 68] [--json OUT]
"""

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

from elmo_benchmarks.processes import peak, random_weights

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
SHORTEST, LONGEST = 50, 1000  # the `uniprot` case's lengths, drawn uniformly


def proteins(case: str, seed: int) -> List[Tuple[str, str]]:
    """`(id, sequence)` records of `case`, drawn with `seed`."""
    rng = random.Random(seed)
    if case == "one":
        lengths = [10]
    elif case == "long":
        lengths = [10_000]
    elif case == "uniprot":
        lengths = [rng.randint(SHORTEST, LONGEST) for _ in range(1000)]
    else:
        raise SystemExit(f"unknown case {case!r} (one, long, uniprot)")
    return [
        (f"protein_{i}", "".join(rng.choice(AMINO_ACIDS) for _ in range(length)))
        for i, length in enumerate(lengths)
    ]


def write_fasta(path: Path, records: List[Tuple[str, str]]) -> None:
    with open(path, "w", encoding="ascii") as out:
        for name, sequence in records:
            out.write(f">{name}\n")
            for start in range(0, len(sequence), 60):
                out.write(sequence[start : start + 60] + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="seqvec")
    parser.add_argument("--cases", default="one,long,uniprot")
    parser.add_argument("--seed", type=int, default=68)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    files = random_weights(args.config)
    results: List[Dict[str, object]] = []
    with tempfile.TemporaryDirectory() as folder:
        for case in args.cases.split(","):
            records = proteins(case, args.seed)
            fasta = Path(folder) / f"{case}.fasta"
            output = Path(folder) / "out.hdf5"
            write_fasta(fasta, records)
            command = [
                sys.executable,
                "-m",
                "elmo_bilm.cli.embed",
                str(fasta),
                str(output),
                "--fasta",
                "--overwrite",
                "--options-file",
                files["options_file"],
                "--weight-file",
                files["weight_file"],
            ]
            lengths = [len(sequence) for _, sequence in records]
            row = {
                "case": case,
                "proteins": len(records),
                "residues": sum(lengths),
                "longest": max(lengths),
                **peak(command),
                "output_mb": round(os.path.getsize(output) / 2**20, 1),
            }
            output.unlink()
            print(json.dumps(row), flush=True)
            results.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
