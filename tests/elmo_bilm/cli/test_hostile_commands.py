"""Checks before the work (issue 79's fifth sweep): every option's range at parse time, the API's
arguments when a run starts or an object is made, the output before a biLM loads, a line is
counted or Ray starts. Each finding of the sweep is a test; a property (hypothesis) holds the
count options for any text typed."""

import argparse
import math
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elmo_bilm.cli import embed, embed_corpus, export_onnx
from elmo_bilm.cli.embed import main as embed_main
from elmo_bilm.integrations.corpus import CorpusOptions
from elmo_bilm.runtime import engine
from elmo_bilm.sources.resolver import load_bilm
from elmo_bilm.utils.checks import check_output, count_argument, whole_number
from elmo_bilm.utils.files import FormatError, UsageError
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE

BILM = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]


@pytest.fixture
def no_load(monkeypatch: pytest.MonkeyPatch) -> List[Any]:
    """Record (and refuse) every biLM load by the commands: a check that must come first fails
    the test if the load came before it."""
    loads: List[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> None:
        loads.append(args)
        raise AssertionError("the biLM was loaded before the check")

    monkeypatch.setattr(embed, "load_bilm", refuse)
    monkeypatch.setattr(export_onnx, "load_bilm", refuse)
    return loads


@pytest.fixture
def text(tmp_path: Path) -> Path:
    path = tmp_path / "in.txt"
    path.write_text("the cat sat\na dog\n")
    return path


@pytest.mark.parametrize("value", ["0", "-3", "nan", "1.5", "", "ten"])
def test_max_tokens_is_refused_at_parse_time(
    value: str, text: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_load: List[Any]
) -> None:
    """Was refused after the biLM loaded and every line was counted, on the progress bar's line."""
    with pytest.raises(SystemExit) as exit_:
        embed_main([str(text), str(tmp_path / "out.hdf5"), "--max-tokens", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "argument --max-tokens" in err[-1] and "whole number >= 1" in err[-1]
    assert not no_load and not (tmp_path / "out.hdf5").exists()


@pytest.mark.parametrize("option", ["--batch-size", "--chunk-size"])
def test_sizes_are_refused_at_parse_time(
    option: str, text: Path, tmp_path: Path, no_load: List[Any]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        embed_main([str(text), str(tmp_path / "out.hdf5"), option, "0"])
    assert exit_.value.code == 2


def test_an_output_that_is_a_folder_fails_before_the_biLM_loads(
    text: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_load: List[Any]
) -> None:
    """Was an error after everything was embedded."""
    (tmp_path / "out").mkdir()
    assert embed_main([str(text), str(tmp_path / "out"), *BILM]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "a folder" in err and not no_load


def test_an_existing_output_fails_before_the_biLM_loads(
    text: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_load: List[Any]
) -> None:
    (tmp_path / "out.hdf5").write_bytes(b"keep")
    assert embed_main([str(text), str(tmp_path / "out.hdf5")]) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert (tmp_path / "out.hdf5").read_bytes() == b"keep" and not no_load


def test_an_output_in_a_missing_folder_fails_before_the_biLM_loads(
    text: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_load: List[Any]
) -> None:
    assert embed_main([str(text), str(tmp_path / "nowhere" / "out.hdf5")]) == 1
    assert "no such folder" in capsys.readouterr().err and not no_load


def test_export_onnx_checks_its_output_before_the_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_load: List[Any]
) -> None:
    """Was checked after a 31-73 s export."""
    (tmp_path / "bilm.onnx").write_bytes(b"keep")
    assert export_onnx.main([str(tmp_path / "bilm.onnx"), *BILM]) == 1
    assert "exists" in capsys.readouterr().err and not no_load
    (tmp_path / "folder.onnx").mkdir()
    assert export_onnx.main([str(tmp_path / "folder.onnx"), *BILM]) == 1
    assert "a folder" in capsys.readouterr().err and not no_load


@pytest.mark.parametrize("value", [0, -3, math.nan, math.inf, 2.5, True, "8"])
def test_the_engine_refuses_a_bad_budget_before_reading(
    value: Any, text: Path, tmp_path: Path
) -> None:
    """The API took `nan`; every bad budget is refused before a line is read."""
    bilm = load_bilm(OPTIONS_FILE, WEIGHT_FILE)
    with pytest.raises(UsageError, match="max_tokens"):
        engine.embed_file(bilm, str(text), str(tmp_path / "out.hdf5"), max_tokens=value)
    assert not list(tmp_path.glob("out.hdf5*"))


@pytest.mark.parametrize("line", [".", "/", "a/b", ".."])
def test_sentence_keys_that_cannot_name_a_dataset_name_file_and_line(
    line: str, tmp_path: Path
) -> None:
    """Was an h5py traceback."""
    path = tmp_path / "in.txt"
    path.write_text(f"the cat\n{line}\n")
    bilm = load_bilm(OPTIONS_FILE, WEIGHT_FILE)
    with pytest.raises(FormatError, match=r"in\.txt:2: .*--use-sentence-keys"):
        engine.embed_file(bilm, str(path), str(tmp_path / "out.hdf5"), sentence_keys=True)
    assert not list(tmp_path.glob("out.hdf5*"))


# -- the corpus run: before Ray starts ---------------------------------------------------------------


def test_corpus_max_tokens_zero_is_refused_at_parse_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was a 62-line traceback after Ray started, leaving `_manifest.json`."""
    parser = embed_corpus.add_arguments(argparse.ArgumentParser(prog="elmo-embed-corpus"))
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["in.txt", str(tmp_path / "out"), "--max-tokens", "0"])
    assert exit_.value.code == 2
    assert "argument --max-tokens" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "field, value",
    [
        ("max_tokens", math.nan),
        ("max_tokens", 0),
        ("batch_size", 0),
        ("shard_lines", 1.5),
        ("num_workers", True),
        ("gpus_per_worker", math.nan),
        ("gpus_per_worker", -1.0),
    ],
)
def test_corpus_options_are_checked_when_made(field: str, value: Any) -> None:
    with pytest.raises(UsageError, match=field):
        CorpusOptions(**{field: value})


def test_a_corpus_output_that_is_a_file_fails_before_ray(
    text: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from elmo_bilm.integrations import corpus

    def no_ray() -> None:
        raise AssertionError("Ray was started before the output was checked")

    monkeypatch.setattr(corpus, "require_ray", no_ray)
    (tmp_path / "out").write_text("a file")
    with pytest.raises(NotADirectoryError, match="not a folder"):
        corpus.embed_corpus([str(text)], str(tmp_path / "out"))


# -- the spaCy component's settings --------------------------------------------------------------------


@pytest.mark.parametrize(
    "setting, value", [("max_tokens", 0), ("max_tokens", -3), ("batch_size", 0)]
)
def test_the_spacy_component_refuses_bad_sizes_when_made(setting: str, value: int) -> None:
    """Took `max_tokens` 0 or -3 and failed at the first document."""
    spacy = pytest.importorskip("spacy")
    nlp = spacy.blank("en")
    with pytest.raises(Exception, match=setting) as error:
        nlp.add_pipe("elmo", config={setting: value})
    assert isinstance(error.value, (UsageError, ValueError))


# -- the helpers, and a property over what users type ------------------------------------------------------


def test_check_output_names_each_problem(tmp_path: Path) -> None:
    assert check_output(tmp_path / "new.hdf5", overwrite=False) == str(tmp_path / "new.hdf5")
    (tmp_path / "old").write_text("x")
    assert check_output(tmp_path / "old", overwrite=True)
    with pytest.raises(UsageError, match="empty"):
        check_output("", overwrite=False)


@settings(derandomize=True, database=None, deadline=None, max_examples=300)
@given(text=st.text(max_size=12))
def test_count_options_take_whole_numbers_or_say_what_they_want(text: str) -> None:
    parse = count_argument()
    try:
        number = parse(text)
    except argparse.ArgumentTypeError as error:
        assert "whole number >= 1" in str(error) and "\n" not in str(error)
        return
    assert isinstance(number, int) and number >= 1
    assert number == int(text)


@settings(derandomize=True, database=None, deadline=None, max_examples=300)
@given(value=st.one_of(st.integers(), st.floats(), st.booleans(), st.none(), st.text(max_size=3)))
def test_whole_number_accepts_only_whole_numbers(value: Any) -> None:
    try:
        number = whole_number(value, "x")
    except UsageError as error:
        assert str(error).startswith("x must be a whole number")
        return
    assert isinstance(number, int) and number >= 1 and number == value
    assert not isinstance(value, bool)


def test_a_bad_option_through_the_installed_script_is_one_line(tmp_path: Path) -> None:
    """The console script as users run it: exit status 2, the last line names the option."""
    result = subprocess.run(
        [sys.executable, "-m", "elmo_bilm.cli.embed", "in.txt", "out.hdf5", "--max-tokens", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    assert "argument --max-tokens: expected a whole number >= 1, got '0'" in result.stderr
    assert not list(tmp_path.iterdir())


def test_an_output_that_is_a_device_or_fifo_is_refused_before_the_biLM_loads(
    text: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_load: List[Any]
) -> None:
    """`elmo-embed in.txt /dev/null --overwrite` (a benchmark's habit) passed the check, and the
    output, written beside it and renamed, would have replaced the device node itself (as root,
    /dev/null). A FIFO in a temporary folder stands in for the device here."""
    fifo = tmp_path / "null"
    os.mkfifo(fifo)
    assert embed_main([str(text), str(fifo), "--overwrite", *BILM]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a regular file" in err and not no_load
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO
    with pytest.raises(UsageError, match="not a regular file"):
        check_output(fifo, overwrite=True)


def test_an_output_ending_in_a_separator_is_refused_before_the_biLM_loads(
    text: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_load: List[Any]
) -> None:
    """`elmo-embed in.txt out.hdf5/` passed the check (abspath drops the slash) and failed
    after the whole input was embedded, writing `out.hdf5/.PID.partial`."""
    assert embed_main([str(text), f"{tmp_path}/out.hdf5/", *BILM]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "ends in a separator" in err and not no_load
    assert list(tmp_path.iterdir()) == [text]


def test_a_dangling_link_as_output_needs_overwrite_and_is_then_replaced(
    text: Path, tmp_path: Path
) -> None:
    """A dangling link is something there: not replaced without --overwrite; with it, the link
    itself is replaced by the output (its missing target is not created)."""
    link = tmp_path / "out.hdf5"
    link.symlink_to(tmp_path / "missing" / "target.hdf5")
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        check_output(link, overwrite=False)
    assert check_output(link, overwrite=True) == str(link)


def test_a_name_too_long_for_the_file_system_fails_before_the_biLM_loads(
    text: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_load: List[Any]
) -> None:
    assert embed_main([str(text), str(tmp_path / ("o" * 251 + ".hdf5")), *BILM]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "the name is 256 bytes" in err and not no_load
    assert list(tmp_path.iterdir()) == [text]


def test_a_250_byte_output_name_is_written(text: Path, tmp_path: Path) -> None:
    """Issue 88: a 250-byte output name (ext4 allows 255) failed once the biLM had loaded and
    the input was embedded: the partial file's name (`NAME.PID.partial`) was too long."""
    output = tmp_path / ("o" * 245 + ".hdf5")
    assert embed_main([str(text), str(output), *BILM]) == 0
    assert sorted(tmp_path.iterdir()) == sorted([text, output])
