"""The core's argparse types, which the plugin's parsers use too (issue 93 item 2)."""

import argparse

import pytest

from elmo_bilm.utils.checks import count_argument, number_argument


def test_a_fraction_is_in_zero_to_one() -> None:
    parse = number_argument(fraction=True)
    assert parse("0.5") == 0.5 and parse("1") == 1.0
    for bad in ("0", "1.5", "nan", "inf", "-0.1", "half"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"a finite number in \(0, 1\]"):
            parse(bad)


def test_the_bounds_in_the_messages() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"finite number >= 0, got '-1'"):
        number_argument(0)("-1")
    with pytest.raises(argparse.ArgumentTypeError, match=r"whole number >= 0, got '1.5'"):
        count_argument(0)("1.5")
    assert number_argument()("-1e3") == -1000.0 and count_argument(-1)(" -1 ") == -1
