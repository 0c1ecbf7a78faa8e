"""Under the `allennlp` command, the plugin's config errors and an interrupted `allennlp train`
end in one line, not a traceback; AllenNLP's own errors stay as they are."""

import json
import os
import subprocess
import sys

import pytest
import tomllib
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import SigTermReceived

from elmo_plugin.common import command_line
from tests.conftest import REPO_ROOT

ALLENNLP = os.path.join(os.path.dirname(sys.executable), "allennlp")


def one_line(error: BaseException, capsys, monkeypatch, argv=("allennlp", "train", "x")) -> str:
    """What the plugin's excepthook prints for `error` (one line; nothing passed on)."""
    monkeypatch.setattr(sys, "argv", list(argv))
    passed: list = []
    hook = command_line.make_excepthook(lambda kind, value, tb: passed.append(value))
    hook(type(error), error, None)
    assert passed == []
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def raised(name: str) -> BaseException:
    with pytest.raises(ConfigurationError) as info:
        Params.from_file(name)
    return info.value


def test_each_config_error_is_one_line(capsys, monkeypatch, tmp_path):
    line = one_line(raised("snli_esim_elmoo"), capsys, monkeypatch)
    assert line.startswith("allennlp: error: snli_esim_elmoo: no such config file")
    assert "did you mean snli_esim_elmo" in line
    monkeypatch.delenv("ELMO_PLUGIN_DATA")
    line = one_line(raised("snli_esim_elmo"), capsys, monkeypatch)
    assert line.startswith("allennlp: error: SNLI_DEV is not set: ")
    monkeypatch.setenv("ELMO_PLUGIN_DATA", str(tmp_path / "nowhere"))
    line = one_line(raised("snli_esim_elmo"), capsys, monkeypatch)
    assert line.startswith("allennlp: error: SNLI_DEV=") and "no such file or folder" in line


def test_allennlp_own_errors_and_other_interrupts_pass_through(capsys, monkeypatch):
    passed: list = []
    hook = command_line.make_excepthook(lambda kind, value, tb: passed.append(value))
    errors = [ConfigurationError("AllenNLP's own"), ValueError("a bug")]
    for error in errors:
        hook(type(error), error, None)
    monkeypatch.setattr(sys, "argv", ["allennlp", "evaluate", "model.tar.gz", "data"])
    interrupts = [KeyboardInterrupt(), SigTermReceived()]
    for interrupt in interrupts:
        hook(type(interrupt), interrupt, None)
    assert passed == [*errors, *interrupts] and capsys.readouterr().err == ""


def test_the_interrupt_line_names_what_was_saved_and_the_resume_command(tmp_path):
    argv = ["allennlp", "train", "cfg.jsonnet", "-s", str(tmp_path / "run"), "-f"]
    line = command_line.interrupted_line(argv, "Ctrl-C")
    assert line == (
        f"allennlp train: interrupted (Ctrl-C); nothing saved ({tmp_path / 'run'} was not "
        f"created); resume with: allennlp train cfg.jsonnet -s {tmp_path / 'run'} --recover"
    )
    (tmp_path / "run").mkdir()
    assert "no checkpoint yet" in command_line.interrupted_line(argv, "SIGTERM")
    for name in ("training_state_e1_b0.th", "training_state_e2_b5.th", "model.tar.gz"):
        (tmp_path / "run" / name).write_text("")
    assert command_line.saved(tmp_path / "run") == (
        f"saved in {tmp_path / 'run'}: model.tar.gz (the best weights so far) and a checkpoint "
        "after 2 epoch(s) and 5 batch(es)"
    )
    assert command_line.serialization_dir(["train", "c", "--serialization-dir=o"]) == "o"


def test_not_installed_by_a_plain_import():
    code = "import sys, elmo_plugin; print(getattr(sys.excepthook, '_elmo_plugin', False))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.stdout.strip() == "False", result.stderr[-2000:]


CASES = {
    "misspelt config": ("snli_esim_elmoo", {}, "snli_esim_elmoo: no such config file"),
    "unset variable": ("snli_esim_elmo", {"ELMO_PLUGIN_DATA": None}, "SNLI_DEV is not set: "),
    "missing file": ("snli_esim_elmo", {"SNLI_DEV": "nowhere/test"}, "SNLI_DEV=nowhere/test: no "),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_a_user_error_under_allennlp_train_is_one_line(tmp_path, case):
    config, changes, message = CASES[case]
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), **{k: v for k, v in changes.items() if v}}
    env = {k: v for k, v in env.items() if k not in changes or changes[k]}
    command = [ALLENNLP, "train", config, "-s", "out", "--include-package", "elmo_plugin"]
    result = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"allennlp: error: {message}"), last


@pytest.mark.slow
def test_sigterm_during_allennlp_train_is_one_line_saying_how_to_resume(tmp_path):
    callback = [{"type": "test_sigterm_at_batch"}, {"type": "elmo_plugin_optimizer_state"}]
    overrides = json.dumps({"trainer.callbacks": callback})
    out = tmp_path / "run"
    command = [ALLENNLP, "train", str(REPO_ROOT / "fixtures" / "bilm_tiny.jsonnet"), "-s", str(out)]
    command += ["-o", overrides, "--include-package", "elmo_plugin"]
    command += ["--include-package", "tests.common.interrupt_callback"]
    env = {**os.environ, "SIGTERM_AT_BATCH": "1:1"}  # the second epoch's first batch
    result = subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"allennlp train: interrupted (SIGTERM); saved in {out}: model.tar.gz (the best weights "
        "so far) and a checkpoint after 1 epoch(s); resume with: allennlp train "
    ), last
    assert last.endswith("--recover"), last
    assert (out / "model.tar.gz").is_file()


@pytest.mark.slow
def test_elmo_plugin_script_reaches_the_subcommands_without_a_plugins_file(tmp_path):
    """`elmo-plugin` (the plugin's console script) from an empty folder, HOME an empty folder:
    no `.allennlp_plugins`, no `~/.allennlp/plugins`."""
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["elmo-plugin"] == "elmo_plugin.common.command_line:main"
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    script = os.path.join(os.path.dirname(sys.executable), "elmo-plugin")
    env = {**os.environ, "HOME": str(home)}
    run = dict(cwd=work, capture_output=True, text=True, timeout=600, env=env)
    result = subprocess.run([script, "elmo-config"], **run)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "snli_esim_elmo" in result.stdout.split()
    result = subprocess.run([script, "train", "snli_esim_elmoo", "-s", "out"], **run)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("elmo-plugin: error: snli_esim_elmoo: no such config file"), last


@pytest.mark.parametrize("verbose", [False, True])
def test_elmo_table1_keeps_plugin_discovery_off_its_console_unless_verbose(tmp_path, verbose):
    """AllenNLP logs `Plugin allennlp_models available` once the arguments parse, before the
    command runs; `elmo-plugin elmo-table1` keeps it off the console without `--verbose` (issue
    69 item 3). A missing `--runs-from` ends the command at its first check, in one line."""
    script = os.path.join(os.path.dirname(sys.executable), "elmo-plugin")
    argv = [script, "elmo-table1", "-s", "out", "--scale", "smoke", "--runs-from", "missing"]
    argv += ["--verbose"] if verbose else []
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert "elmo-table1: error: --runs-from missing: no such file" in done.stderr
    assert ("Plugin allennlp_models available" in done.stderr) == verbose
    assert not (tmp_path / "out").exists()
