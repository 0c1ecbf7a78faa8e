"""`elmo-plugin` answers the commands that need no model without importing AllenNLP (issue 69
item 2): `--help` (or no command), each `elmo-*` command's `--help`, and `elmo-config [NAME]`
print what AllenNLP's command line prints for them, byte for byte on stdout, and the same stderr
but for the log lines' timestamps.

Each fast run is the installed console script run in a fresh interpreter that asserts, after the
command, that AllenNLP (and for all but the commands whose arguments come from the torch core,
torch) was never imported. The full path is `elmo-plugin`'s `main` with the fast path switched
off, every case in one process, so that AllenNLP is imported once for all of them.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest

SCRIPT = str(Path(sys.executable).with_name("elmo-plugin"))
ROOT = Path(__file__).resolve().parents[3]

# runs the console script as `python SCRIPT ARGS...` would, then checks what it imported
FAST = r"""
import runpy, sys
script, forbidden = sys.argv[1], sys.argv[2].split(",")
sys.argv = [script, *sys.argv[3:]]
try:
    runpy.run_path(script, run_name="__main__")
finally:
    imported = [name for name in forbidden if name in sys.modules]
    if imported:
        sys.__stderr__.write(f"IMPORTED {imported}\n")
        sys.__stderr__.flush()
        import os
        os._exit(99)
"""

# `elmo-plugin`'s main with the fast path off, once per case, stdout and stderr caught at the
# file descriptors (AllenNLP's log handler holds the original stderr)
FULL = r"""
import json, os, sys, tempfile
from elmo_plugin.common import command_line
command_line.answer_without_allennlp = lambda argv: False
script, cases = sys.argv[1], json.loads(sys.argv[2])
results = []
for folder, argv in cases:
    os.chdir(folder)
    sys.argv = [script, *argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            command_line.main()
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
            if isinstance(exit.code, str):
                print(exit.code, file=sys.stderr)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
        out.seek(0)
        err.seek(0)
        results.append([out.read().decode(), err.read().decode(), code])
print("RESULTS " + json.dumps(results))
"""

# the core's argparse types (`elmo_bilm.utils.checks`) are torch-free: only torch is refused
TORCH_FREE = "allennlp,allennlp_models,torch"
WITH_TORCH = "allennlp,allennlp_models"

# (argv, the modules it must not import); run in a folder whose `.allennlp_plugins` names
# elmo_plugin (as the checkout's does), the `PLAIN` ones also in a folder with no plugins file
CASES: List[Tuple[List[str], str]] = [
    ([], TORCH_FREE),
    (["--help"], TORCH_FREE),
    (["-h"], TORCH_FREE),
    (["elmo-config"], TORCH_FREE),
    (["elmo-config", "snli_esim_elmo"], TORCH_FREE),
    (["elmo-config", "snli_esim_elm"], TORCH_FREE),  # did you mean
    (["elmo-config", "no_such_config"], TORCH_FREE),  # lists them all
    (["elmo-config", "missing/x.jsonnet"], TORCH_FREE),
    (["elmo-config", "own.jsonnet"], TORCH_FREE),  # a file here: its path as it is
    (["elmo-config", "sst_bcn"], TORCH_FREE),  # a folder here of a packaged config's name
    (["elmo-config", "a_folder"], TORCH_FREE),  # a folder here, no config
    (["elmo-config", "a", "b"], TORCH_FREE),
    (["elmo-config", "--bogus"], TORCH_FREE),
    (["elmo-config", "--help"], TORCH_FREE),
    (["elmo-export", "--help"], TORCH_FREE),
    (["elmo-prepare-corpus", "-h"], TORCH_FREE),
    (["elmo-table1", "--help"], TORCH_FREE),
    (["elmo-table1", "--scale", "huge", "--help"], TORCH_FREE),  # the bad choice first
    (["elmo-vocab", "--help"], TORCH_FREE),
    (["elmo-word-vectors", "--help"], TORCH_FREE),
    (["elmo-layer-weights", "--help"], TORCH_FREE),
    (["elmo-sweep", "--help"], TORCH_FREE),
    (["elmo-embed", "--help"], WITH_TORCH),
    (["elmo-probe", "--help"], WITH_TORCH),
    (["elmo-probe", "pos", "--help"], WITH_TORCH),
    (["elmo-probe", "sst", "-h"], WITH_TORCH),
    (["elmo-probe", "wsd", "--help"], WITH_TORCH),
    (["elmo-neighbours", "--help"], WITH_TORCH),
    # AllenNLP's own commands (issue 82 item 4), from `elmo_plugin.common.allennlp_parsers`
    (["train", "--help"], TORCH_FREE),
    (["train", "-h"], TORCH_FREE),
    (["train", "config.jsonnet", "-s", "out", "--help"], TORCH_FREE),
    (["build-vocab", "--help"], TORCH_FREE),
    (["count-instances", "--help"], TORCH_FREE),
    (["diff", "--help"], TORCH_FREE),
    (["evaluate", "--help"], TORCH_FREE),
    (["evaluate", "--cuda-device", "x", "--help"], TORCH_FREE),  # the bad value first
    (["find-lr", "--help"], TORCH_FREE),
    (["predict", "-h"], TORCH_FREE),
    (["print-results", "--help"], TORCH_FREE),
    (["push-to-hf", "--help"], TORCH_FREE),
    (["test-install", "--help"], TORCH_FREE),
]

PLAIN = [
    ([], TORCH_FREE),
    (["--help"], TORCH_FREE),
    (["elmo-config", "sst_bcn"], TORCH_FREE),
    (["train", "--help"], TORCH_FREE),
]

_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - ", re.MULTILINE)


def _environment() -> Dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    env.pop("ALLENNLP_DEBUG", None)
    env.pop("ALLENNLP_LOG_LEVEL", None)
    return env


def _fast(argv: Sequence[str], forbidden: str, cwd: Path) -> Tuple[str, str, int]:
    done = subprocess.run(
        [sys.executable, "-c", FAST, SCRIPT, forbidden, *argv],
        cwd=cwd,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.stdout, done.stderr, done.returncode


def _full(cases: Sequence[Tuple[Path, Sequence[str]]]) -> List[Tuple[str, str, int]]:
    """The full path's (stdout, stderr, exit status) for each (folder, argv)."""
    payload = json.dumps([[str(folder), list(argv)] for folder, argv in cases])
    done = subprocess.run(
        [sys.executable, "-c", FULL, SCRIPT, payload],
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = [line for line in done.stdout.splitlines() if line.startswith("RESULTS ")][-1]
    return [tuple(result) for result in json.loads(line[len("RESULTS ") :])]


ALL_CASES = [("plugins", argv, forbidden) for argv, forbidden in CASES] + [
    ("plain", argv, forbidden) for argv, forbidden in PLAIN
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """The current folders: `plugins`, with a `.allennlp_plugins` naming elmo_plugin, a config
    file, a folder named as a packaged config and another folder (the `elmo-config NAME` cases
    that look at the current folder); `plain`, empty."""
    root = tmp_path_factory.mktemp("start_up")
    plugins, plain = root / "plugins", root / "plain"
    plain.mkdir()
    plugins.mkdir()
    (plugins / ".allennlp_plugins").write_text("elmo_plugin\n\n")
    (plugins / "own.jsonnet").write_text("{}\n")
    (plugins / "sst_bcn").mkdir()
    (plugins / "a_folder").mkdir()
    return {"plugins": plugins, "plain": plain}


@pytest.fixture(scope="module")
def full_results(folders: Dict[str, Path]) -> List[Tuple[str, str, int]]:
    """What AllenNLP's command line (the full path) prints for every case."""
    return _full([(folders[folder], argv) for folder, argv, _ in ALL_CASES])


@pytest.mark.parametrize(
    "index",
    range(len(ALL_CASES)),
    ids=[f"{folder}: {' '.join(argv) or 'no-args'}" for folder, argv, _ in ALL_CASES],
)
def test_answered_without_allennlp_as_the_full_path_answers(
    index: int, folders: Dict[str, Path], full_results: List[Tuple[str, str, int]]
) -> None:
    folder, argv, forbidden = ALL_CASES[index]
    out, err, code = _fast(argv, forbidden, folders[folder])
    assert "IMPORTED" not in err, err
    full_out, full_err, full_code = full_results[index]
    assert (out, code) == (full_out, full_code)
    assert _TIMESTAMP.sub("", err) == _TIMESTAMP.sub("", full_err)


def test_the_fast_path_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases above go through `answer_without_allennlp` (a fast run that fell through to the
    full path would import AllenNLP and fail there); a command that needs a model does not."""
    from elmo_plugin.common import command_line

    monkeypatch.chdir(tmp_path)
    (tmp_path / ".allennlp_plugins").write_text("elmo_plugin\n")
    assert command_line.known_command_line()
    assert not command_line.answer_without_allennlp(["train", "config.jsonnet", "-s", "out"])
    assert not command_line.answer_without_allennlp(
        ["train", "-s", "out", "--", "--help"]
    )  # a file
    assert not command_line.answer_without_allennlp(["cached-path", "--help"])  # left out
    assert not command_line.answer_without_allennlp(["elmo-config", "x", "--resolved"])
    assert not command_line.answer_without_allennlp(["elmo-embed", "in.txt", "out.hdf5"])


def test_a_plugins_file_takes_the_full_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `.allennlp_plugins` file may add subcommands the fast path cannot list."""
    from elmo_plugin.common import command_line

    monkeypatch.chdir(tmp_path)
    (tmp_path / ".allennlp_plugins").write_text("some_plugin\n")
    assert not command_line.known_command_line()
    assert not command_line.answer_without_allennlp(["--help"])


def test_the_values_repeated_for_the_fast_path_match_their_sources(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`elmo_plugin.common.parsers` repeats a few values of modules that import AllenNLP; both
    paths build their parsers from the copies, so only this comparison sees one drift."""
    from elmo_plugin.analysis import probes, sweep, table1
    from elmo_plugin.common import config_env, parsers

    assert parsers.TABLE1_SCALES == tuple(sorted(table1.SCALES))
    assert parsers.TABLE1_TASKS == tuple(table1.TASKS)
    assert parsers.WSD_DATASETS == tuple(probes.WSD_DATASETS)
    assert parsers.SWEEP_BASELINE == sweep.BASELINE
    assert parsers.CONFIG_DIR == config_env.CONFIG_DIR
    for value in ("", "~/data", "rel/data/", str(tmp_path)):
        monkeypatch.setenv("ELMO_PLUGIN_DATA", value)
        data = config_env.data_dir()
        expected = os.path.join(str(data) if data is not None else "", "sst", "train.txt")
        assert parsers.data_default("sst", "train.txt") == expected


def test_the_snapshot_of_allennlps_parsers_is_allennlps() -> None:
    """`allennlp_parsers.json` is what `snapshot()` reads from the installed AllenNLP (rewrite it
    with `python -m elmo_plugin.common.allennlp_parsers`), for the AllenNLP version and the
    commands `command_line` lists; a command whose parser depends on the machine is left out."""
    from elmo_plugin.common import allennlp_parsers, command_line

    shipped = allennlp_parsers.load()
    assert allennlp_parsers.snapshot() == shipped
    assert shipped["allennlp"] == command_line.ALLENNLP_VERSION
    commands = shipped["commands"]
    assert set(commands) == set(command_line.ALLENNLP_COMMANDS) - set(allennlp_parsers.LEFT_OUT)
    for name, entry in commands.items():
        # argparse folds the white space of a help line
        assert " ".join(entry["help"].split()) == command_line.ALLENNLP_COMMANDS[name]


def test_a_parser_the_snapshot_cannot_rebuild_is_refused() -> None:
    """An argument of a kind the snapshot does not describe (here a `type` that is not str, int
    or float) is an error when the snapshot is made, never a different help at run time."""
    import argparse

    from elmo_plugin.common import allennlp_parsers

    parser = argparse.ArgumentParser(prog="x")
    parser.add_argument("--when", type=lambda text: text)
    with pytest.raises(ValueError, match="--when"):
        allennlp_parsers.describe(parser, "help line")
    plain = argparse.ArgumentParser(prog="y")
    plain.add_argument("--count", type=int, default=3, help="how many")
    described = allennlp_parsers.describe(plain, "help line")
    assert [action["dest"] for action in described["actions"]] == ["count"]
    assert described["actions"][0]["type"] == "int"


# `python -m allennlp ARGS...` (the `allennlp` command), then which plugin modules it imported
ALLENNLP_MAIN = r"""
import runpy, sys
sys.argv = ["allennlp", *sys.argv[1:]]
try:
    runpy.run_module("allennlp", run_name="__main__", alter_sys=True)
finally:
    names = sorted(name for name in sys.modules if name.startswith("elmo_plugin"))
    sys.__stderr__.write("MODULES " + " ".join(names) + "\n")
"""

# what a help needs of the plugin (its commands' parsers), and what it does not: the hooks, the
# components (tasks, embedders, training callbacks) and the analysis behind the commands
HELP_NEEDS = ("elmo_plugin.commands.elmo_config", "elmo_plugin.commands.analysis")
HELP_SKIPS = (
    "elmo_plugin.hooks",
    "elmo_plugin.tasks",
    "elmo_plugin.token_embedders",
    "elmo_plugin.training",
    "elmo_plugin.analysis.table1",
    "elmo_plugin.analysis.sweep",
    "elmo_plugin.analysis.probes",
)


@pytest.mark.slow
def test_allennlps_help_imports_the_plugins_commands_only(folders: Dict[str, Path]) -> None:
    """`allennlp --help` and `allennlp elmo-config --help` with the plugin in a plugins file
    (issue 82 item 4): the plugin's commands listed, neither hooks nor components imported."""
    for argv in (["--help"], ["elmo-config", "--help"]):
        done = subprocess.run(
            [sys.executable, "-c", ALLENNLP_MAIN, *argv],
            cwd=folders["plugins"],
            env=_environment(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert ("elmo-table1" in done.stdout) == (argv == ["--help"]), done.stdout
        assert "--resolved" in done.stdout or argv == ["--help"], done.stdout
        line = [line for line in done.stderr.splitlines() if line.startswith("MODULES ")][-1]
        imported = set(line.split()[1:])
        assert set(HELP_NEEDS) <= imported, sorted(imported)
        assert not imported & set(HELP_SKIPS), sorted(imported & set(HELP_SKIPS))


@pytest.mark.parametrize(
    "argv, help_only",
    [
        (["--help"], True),
        (["elmo-config", "-h"], True),
        (["train", "config.jsonnet", "-s", "out", "--help"], True),
        (["train", "config.jsonnet", "-s", "out"], False),
        (["train", "-s", "out", "--", "--help"], False),  # a config named --help
        (["elmo-config"], False),
    ],
)
def test_only_a_help_of_the_allennlp_command_skips_the_components(
    argv: List[str], help_only: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import elmo_plugin
    from elmo_plugin.common import command_line

    monkeypatch.setattr(sys, "argv", ["allennlp", *argv])
    monkeypatch.setattr(command_line, "is_allennlp_command", lambda: True)
    assert elmo_plugin._help_only() is help_only
    monkeypatch.setattr(command_line, "is_allennlp_command", lambda: False)
    assert not elmo_plugin._help_only()
