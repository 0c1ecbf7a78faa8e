import os
import subprocess
import sys

import pytest

from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.elmo_bilm.cli.test_embed import assert_same_contents, contents, write_input


def allennlp(*args, cwd, **kwargs):
    command = [os.path.join(os.path.dirname(sys.executable), "allennlp"), *map(str, args)]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600, **kwargs)


@pytest.mark.slow
def test_console_script_and_subcommand_write_the_same_file(tmp_path, repo_root, fixture_sentences):
    source = write_input(tmp_path / "in.txt", fixture_sentences[0] + [["Single"]])
    arguments = ["--options-file", OPTIONS_FILE, "--weight-file", WEIGHT_FILE, "--batch-size", 4]
    result = allennlp(
        "elmo-embed",
        source,
        tmp_path / "sub.hdf5",
        *arguments,
        "--include-package",
        "elmo_plugin",
        cwd=repo_root,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    tokens = sum(len(sentence) for sentence in fixture_sentences[0]) + 1
    assert f"{tokens}/{tokens} [" in result.stderr  # progress in tokens
    script = os.path.join(os.path.dirname(sys.executable), "elmo-embed")
    result = subprocess.run(
        [
            script,
            source,
            str(tmp_path / "script.hdf5"),
            *map(str, arguments),
            "--include-package",
            "elmo_plugin",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_contents(contents(tmp_path / "sub.hdf5"), contents(tmp_path / "script.hdf5"))


@pytest.mark.slow
def test_subcommand_empty_line_error_names_line_and_writes_nothing(tmp_path, repo_root):
    (tmp_path / "in.txt").write_text("a sentence\n\nanother one\n")
    result = allennlp("elmo-embed", tmp_path / "in.txt", tmp_path / "out.hdf5", cwd=repo_root)
    assert result.returncode != 0
    assert "in.txt:2: empty line" in result.stderr
    assert not (tmp_path / "out.hdf5").exists()
    assert not (tmp_path / "out.hdf5.partial").exists()


def test_the_subcommand_embeds_fasta_naming_no_bilm_with_seqvec(tmp_path, monkeypatch):
    """`allennlp elmo-embed proteins.fasta OUT`, no biLM named: SeqVec, as the console script
    (`tests/elmo_bilm/cli/test_embed.py`), never the shipped English biLM."""
    import argparse

    from elmo_bilm.cli.embed import add_arguments
    from elmo_plugin.commands.elmo_embed import _run
    from tests.elmo_bilm.cli.test_embed import seqvec_cache

    seqvec_cache(tmp_path, monkeypatch, place=True)
    (tmp_path / "in.fasta").write_text(">p1\nMKTAYIAK\n")
    parser = add_arguments(argparse.ArgumentParser())
    parser.add_argument("--archive-file")
    _run(parser.parse_args([str(tmp_path / "in.fasta"), str(tmp_path / "out.hdf5")]))
    assert contents(tmp_path / "out.hdf5")["p1"].shape == (3, 8, 32)  # the fixture's SeqVec


def test_the_subcommand_takes_reduce(tmp_path):
    """`allennlp elmo-embed ... --reduce mean` parses with the subcommand's own arguments (the
    console script's, shared) and writes one vector per line."""
    import argparse

    from elmo_plugin.commands.elmo_embed import _run
    from elmo_plugin.common.parsers import embed_arguments

    source = write_input(tmp_path / "in.txt", [["a", "b", "c"], ["d"]])
    parser = argparse.ArgumentParser()
    embed_arguments(parser)
    files = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    _run(
        parser.parse_args([source, str(tmp_path / "out.hdf5"), *files, "--top", "--reduce", "mean"])
    )
    stored = contents(tmp_path / "out.hdf5")
    assert stored["0"].shape == (32,) and stored["1"].shape == (32,)
