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


def test_a_folder_output_is_checked_as_a_folder(tmp_path) -> None:
    """One `check_output` for files and folders (elmo-convert, the corpus run and elmo-export
    each checked their folder on their own)."""
    from elmo_bilm.utils.checks import check_output

    assert check_output(tmp_path / "new" / "deeper", False, kind="folder").endswith("deeper")
    assert check_output(tmp_path, False, kind="folder") == str(tmp_path)  # files: the caller's
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="file: a file, not a folder; name the folder"):
        check_output(tmp_path / "file", True, kind="folder")
    with pytest.raises(NotADirectoryError, match="file: not a folder, cannot make"):
        check_output(tmp_path / "file" / "under", True, kind="folder")
