"""`elmo-embed` end to end, as a user runs it: whole processes (start-up, imports, loading, biLM,
HDF5 writing), the light console script against `allennlp elmo-embed` and against AllenNLP's own
`Elmo` in a plain script, on the same input file in one run; and the console script's peak memory
on large inputs (chunked sorting keeps it flat).

    python -m elmo_benchmarks.embed_cli [--memory-lines 20000 200000]
    python -m elmo_benchmarks.embed_cli --cases paper --paper-sentences 2000 \
        --precisions float32 bfloat16 int8 --memory-lines   # each precision against AllenNLP
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Sequence

from elmo_benchmarks.common import DATA, conll_dev_sentences, emit, random_bilm_tf
from elmo_benchmarks.processes import measure
from elmo_bilm.runtime.precision import PRECISIONS
from elmo_bilm.sources.shipped import SHIPPED_OPTIONS_FILE, SHIPPED_WEIGHT_FILE
from elmo_plugin.lm.dataset_readers.lm_corpus import read_sentences

BIN = Path(sys.executable).parent
# AllenNLP's Elmo in a plain script: batches of 64 in file order, one dataset per sentence
ALLENNLP_SCRIPT = """
import sys, h5py, torch
from allennlp.modules.elmo import Elmo, batch_to_ids
options, weights, source, target = sys.argv[1:]
sentences = [line.split() for line in open(source)]
elmo = Elmo(options, weights, 1, dropout=0.0).eval()
with h5py.File(target, "w") as out, torch.no_grad():
    for start in range(0, len(sentences), 64):
        batch = sentences[start:start + 64]
        vectors = elmo(batch_to_ids(batch))["elmo_representations"][0]
        for row, tokens in enumerate(batch):
            out.create_dataset(str(start + row), data=vectors[row, :len(tokens)].numpy())
"""


def write_lines(path: Path, sentences: List[List[str]]) -> str:
    path.write_text("".join(" ".join(tokens) + "\n" for tokens in sentences))
    return str(path)


def compare(
    label: str,
    files: Dict[str, str],
    source: str,
    folder: Path,
    precisions: Sequence[str] = ("float32",),
) -> None:
    """The three ways in one run, `elmo-embed` once per precision (`--precision`); each
    command's record has its speed-up of every `elmo-embed` run (its seconds over theirs)."""
    biLM = ["--options-file", files["options_file"], "--weight-file", files["weight_file"]]
    ours = {
        "elmo-embed" if precision == "float32" else f"elmo-embed --precision {precision}": [
            str(BIN / "elmo-embed"),
            source,
            str(folder / "a.hdf5"),
            *biLM,
            "--overwrite",
            "--precision",
            precision,
        ]
        for precision in precisions
    }
    commands = {
        **ours,
        "allennlp elmo-embed": [
            str(BIN / "allennlp"),
            "elmo-embed",
            source,
            str(folder / "b.hdf5"),
            *biLM,
            "--overwrite",
            "--include-package",
            "elmo_plugin",
        ],
        "AllenNLP Elmo script": [
            sys.executable,
            "-c",
            ALLENNLP_SCRIPT,
            files["options_file"],
            files["weight_file"],
            source,
            str(folder / "c.hdf5"),
        ],
    }
    seconds = {name: measure(command)[0] for name, command in commands.items()}
    for name, value in seconds.items():
        emit(
            {
                "bench": "embed_cli",
                "case": label,
                "command": name,
                "seconds": round(value, 2),
                **{f"speed-up of {mine}": round(value / seconds[mine], 2) for mine in ours},
            }
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memory-lines", type=int, nargs="*", default=[20_000, 200_000])
    parser.add_argument("--memory-only", action="store_true", help="skip the speed comparison")
    parser.add_argument(
        "--cases", nargs="*", choices=("one", "small", "paper"), default=["one", "small", "paper"]
    )
    parser.add_argument("--paper-sentences", type=int, default=200)
    parser.add_argument(
        "--precisions",
        nargs="+",
        choices=PRECISIONS,
        default=["float32"],
        help="elmo-embed's --precision values, each timed against the same AllenNLP runs",
    )
    args = parser.parse_args()
    shipped = {"options_file": str(SHIPPED_OPTIONS_FILE), "weight_file": str(SHIPPED_WEIGHT_FILE)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if not args.memory_only:
            if "one" in args.cases:
                one = write_lines(folder / "one.txt", conll_dev_sentences(1))
                compare("1 sentence, shipped biLM", shipped, one, folder, args.precisions)
            for count, config in ((600, "small"), (args.paper_sentences, "paper")):
                if config not in args.cases:
                    continue
                source = write_lines(folder / f"{count}.txt", conll_dev_sentences(count))
                label = f"{count} sentences, {config}"
                compare(label, random_bilm_tf(config), source, folder, args.precisions)
        train = list(read_sentences(str(DATA / "conll2003" / "eng.train"), "conll2003"))
        for lines in args.memory_lines:
            source = write_lines(folder / "many.txt", [train[i % len(train)] for i in range(lines)])
            seconds, peak = measure(
                [
                    str(BIN / "elmo-embed"),
                    source,
                    str(folder / "many.hdf5"),
                    "--layers",
                    "top",
                    "--overwrite",
                ]
            )
            emit(
                {
                    "bench": "embed_memory",
                    "lines": lines,
                    "seconds": round(seconds, 1),
                    "peak_rss_mb": round(peak),
                }
            )
            os.remove(folder / "many.hdf5")


if __name__ == "__main__":
    main()
