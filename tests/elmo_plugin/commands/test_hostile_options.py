"""The elmo-plugin subcommands' numeric options swept with what a careless user types (0, a
negative count, NaN, inf, a fraction above 1): each is refused at parse time in one line naming
the option, before a corpus is read, a biLM loads or a grid trains (they were plain `type=int` /
`type=float`: `-k -1` listed all but one token, `--fraction nan` failed inside training)."""

import argparse
from typing import List

import pytest

from elmo_plugin.common.parsers import COMMANDS

# (command, the arguments that parse, the option swept, its bad values)
CASES = [
    ("elmo-vocab", ["out.txt", "text::in"], "--min-count", ["0", "-1", "x"]),
    ("elmo-vocab", ["out.txt", "text::in"], "--max-size", ["0", "-1", "1.5"]),
    ("elmo-word-vectors", ["c", "o"], "--dim", ["0", "-300"]),
    ("elmo-word-vectors", ["c", "o"], "--window", ["0"]),
    ("elmo-word-vectors", ["c", "o"], "--max-vocab", ["0", "-1"]),
    ("elmo-word-vectors", ["c", "o"], "--epochs", ["0"]),
    ("elmo-word-vectors", ["c", "o"], "--workers", ["0", "-2"]),
    ("elmo-neighbours", ["a b", "0", "corpus", "--output-dir", "o"], "-k", ["0", "-1"]),
    ("elmo-table1", ["-s", "runs"], "--cuda-device", ["-2", "gpu"]),
    ("elmo-sweep", ["c.jsonnet", "-s", "runs"], "--fraction", ["0", "1.5", "nan", "-0.5"]),
    ("elmo-sweep", ["c.jsonnet", "-s", "runs"], "--lambda", ["nan", "inf", "-1"]),
    ("elmo-sweep", ["c.jsonnet", "-s", "runs"], "--fraction-batches-per-epoch", ["0"]),
]


def parser_of(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=command)
    COMMANDS[command].arguments(parser)
    return parser


@pytest.mark.parametrize(
    "command, good, option, value",
    [(c, g, o, v) for c, g, o, values in CASES for v in values],
)
def test_a_bad_number_is_refused_at_parse_time(
    command: str,
    good: List[str],
    option: str,
    value: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = parser_of(command)
    parser.parse_args(good)  # the rest parses
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args([*good, f"{option}={value}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"argument {option}" in err and "expected a" in err, err


@pytest.mark.parametrize("probe", ["pos", "sst"])
def test_a_probe_of_no_epochs_is_refused(probe: str) -> None:
    with pytest.raises(SystemExit):
        parser_of("elmo-probe").parse_args([probe, "--output-dir", "o", "--epochs", "0"])


def test_the_index_of_a_word_is_not_negative() -> None:
    """`elmo-neighbours 'a b' -- -1 ...` was the last word by Python's indexing; 0 is the first."""
    parser = parser_of("elmo-neighbours")
    assert parser.parse_args(["a b", "0", "corpus", "--output-dir", "o"]).index == 0
    (index,) = [action for action in parser._actions if action.dest == "index"]
    with pytest.raises(argparse.ArgumentTypeError, match="whole number >= 0"):
        index.type("-1")  # type: ignore[misc,operator]


def test_good_values_still_parse() -> None:
    args = parser_of("elmo-sweep").parse_args(
        ["c.jsonnet", "-s", "runs", "--fraction", "0.1", "1", "--lambda", "0", "0.001"]
    )
    assert args.fraction == [0.1, 1.0] and args.l2 == [0.0, 0.001]
    assert parser_of("elmo-table1").parse_args(["-s", "r", "--cuda-device", "-1"]).cuda_device == -1
