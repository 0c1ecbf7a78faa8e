"""Peak memory of `elmo-embed --top` by input shape, with the token budget and without it.

Issue 66's cases at the paper size (random bilm-tf weights, `random_bilm_tf("paper")`): 32 lines
of 1,000 tokens, 2,000 lines of ten tokens, and one line of 20,000 tokens; each case in a process
of its own, its peak resident memory read from the kernel (`wait4`'s `ru_maxrss`, through
`elmo_benchmarks.processes.measure`). Words are drawn from a fixed list, so the runs are the same on
every machine.

    python -m elmo_benchmarks.embed_memory [--config paper] [--cases long,short,one] [--json OUT]
"""

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

from elmo_benchmarks.processes import peak, random_weights

CASES = {"long": (32, 1000), "short": (2000, 10), "one": (1, 20000)}
WORDS = "the of and to in a is that for it as was with be by on not he this are".split()
UNBOUNDED = 10**9  # --max-tokens large enough to switch the budget off


def write_input(path: Path, lines: int, tokens: int) -> None:
    rng = random.Random(13370)
    with open(path, "w", encoding="utf-8") as out:
        for _ in range(lines):
            out.write(" ".join(rng.choice(WORDS) for _ in range(tokens)) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="paper")
    parser.add_argument("--cases", default="long,short,one")
    parser.add_argument(
        "--budgets",
        default="default,none",
        help="default: the --max-tokens default; none: no budget",
    )
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    files = random_weights(args.config)
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for case in args.cases.split(","):
            lines, tokens = CASES[case]
            text = Path(folder) / f"{case}.txt"
            write_input(text, lines, tokens)
            for budget in args.budgets.split(","):
                if budget == "none" and case == "one":
                    continue  # one line: the budget changes nothing
                command = [
                    sys.executable,
                    "-m",
                    "elmo_bilm.cli.embed",
                    str(text),
                    str(Path(folder) / "out.hdf5"),
                    "--top",
                    "--overwrite",
                    "--options-file",
                    files["options_file"],
                    "--weight-file",
                    files["weight_file"],
                ]
                if budget == "none":
                    command += ["--max-tokens", str(UNBOUNDED)]
                row = {
                    "case": case,
                    "lines": lines,
                    "tokens": tokens,
                    "budget": budget,
                    **peak(command),
                }
                print(json.dumps(row), flush=True)
                results.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
