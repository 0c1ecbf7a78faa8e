"""Under the `allennlp` command, the plugin's config errors and an interrupted `allennlp train`
end in one line, not a traceback; AllenNLP's own errors stay as they are."""

import importlib.metadata
import json
import os
import subprocess
import sys

import pytest
import tomllib
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import SigTermReceived

from elmo_plugin.common import command_line, config_errors
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


TINY = str(REPO_ROOT / "fixtures" / "bilm_tiny.jsonnet")


def embedder_typo() -> ConfigurationError:
    """The error of a config whose ELMo embedder's `type` is misspelt, as a model builds it."""
    from allennlp.modules.text_field_embedders import TextFieldEmbedder

    embedders = {"token_embedders": {"elmo": {"type": "elmo_plugin_token_embeder"}}}
    params = Params(embedders, history="model.text_field_embedder.")
    with pytest.raises(ConfigurationError) as info:
        TextFieldEmbedder.from_params(params)
    return info.value


def test_an_unknown_registered_name_is_one_line_with_the_config_key_and_closest_names(
    capsys, monkeypatch
):
    """AllenNLP's message (every registered name, `--include-package` advice) is kept for
    everyone else; under the command the line names the config, the key and the closest names."""
    allennlp_own = str(embedder_typo())
    assert "not in acceptable choices" in allennlp_own and "did you mean" not in allennlp_own
    monkeypatch.setattr(Params, "pop_choice", Params.pop_choice)  # restored after the test
    config_errors.install_unknown_names()
    error = embedder_typo()
    assert isinstance(error, config_errors.UnknownNameError) and str(error) == allennlp_own
    argv = ("allennlp", "train", "my.jsonnet", "-s", "out", "--include-package", "elmo_plugin")
    line = one_line(error, capsys, monkeypatch, argv)
    assert line == (
        "allennlp: error: my.jsonnet: model.text_field_embedder.token_embedders.elmo.type: "
        '"elmo_plugin_token_embeder" is not a registered name; did you mean '
        '"elmo_plugin_token_embedder"?'
    ), line
    nothing_close = config_errors.UnknownNameError("m", "model.type", "zzz", ["b", "a"])
    assert nothing_close.one_line(None) == (
        'model.type: "zzz" is not a registered name; the registered names there: a, b'
    )
    assert (
        config_errors.config_argument(["x", "train", "-s", "o", "-f", "c.jsonnet"]) == "c.jsonnet"
    )


def test_a_failed_start_removes_only_the_folder_it_created_and_the_retry_trains(
    tmp_path, monkeypatch
):
    from allennlp.commands import train

    monkeypatch.setattr(Params, "pop_choice", Params.pop_choice)
    monkeypatch.setattr(train, "train_model", train.train_model)
    config_errors.install()
    typo = json.dumps({"model.type": "elmo_plugin_bilmm", "trainer.num_epochs": 1})
    out = tmp_path / "out"
    with pytest.raises(config_errors.UnknownNameError) as info:
        train.train_model_from_file(TINY, str(out), overrides=typo)
    assert not out.exists()
    assert config_errors.removal_note(info.value) == (
        f"removed {out}, which this run created before it failed and which held nothing "
        "trained; the same command retries"
    )
    # a folder there before the run (here: an empty one) is never removed
    kept = tmp_path / "kept"
    kept.mkdir()
    with pytest.raises(config_errors.UnknownNameError) as info:
        train.train_model_from_file(TINY, str(kept), overrides=typo)
    assert kept.is_dir() and config_errors.removal_note(info.value) is None
    # `-s parent/a/b` with a and b new: both removed, parent (there before) kept (issue 88)
    nested = tmp_path / "parent" / "a" / "b"
    nested.parent.parent.mkdir()
    with pytest.raises(config_errors.UnknownNameError) as info:
        train.train_model_from_file(TINY, str(nested), overrides=typo)
    assert list((tmp_path / "parent").iterdir()) == []
    assert config_errors.removal_note(info.value).startswith(
        f"removed {tmp_path / 'parent' / 'a'},"
    )
    # the retry, with the config fixed, trains where the failed run was
    fixed = json.dumps({"trainer.num_epochs": 1})
    train.train_model_from_file(TINY, str(out), overrides=fixed)
    assert (out / "model.tar.gz").is_file()
    assert config_errors.holds_training(out)


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
@pytest.mark.parametrize("command", ["allennlp", "elmo-plugin"])
def test_a_typo_in_a_config_is_one_line_and_the_same_command_then_trains(tmp_path, command):
    """Through `allennlp train ... --include-package elmo_plugin` and `elmo-plugin train`: the
    misspelt name in one line with the right suggestion, no folder left; the retry trains."""
    script = os.path.join(os.path.dirname(sys.executable), command)
    home = tmp_path / "home"
    home.mkdir()
    run = dict(cwd=tmp_path, capture_output=True, text=True, timeout=600)
    run["env"] = {**os.environ, "HOME": str(home)}
    line = [script, "train", TINY, "-s", "out"]
    line += ["--include-package", "elmo_plugin"] if command == "allennlp" else []
    typo = {"dataset_reader.type": "elmo_plugin_lm_corpuss", "trainer.num_epochs": 1}
    result = subprocess.run([*line, "-o", json.dumps(typo)], **run)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        f'{command}: error: {TINY}: dataset_reader.type: "elmo_plugin_lm_corpuss" is not a '
        'registered name; did you mean "elmo_plugin_lm_corpus"?; removed out, which this run '
        "created before it failed and which held nothing trained; the same command retries"
    ), last
    assert not (tmp_path / "out").exists()
    result = subprocess.run([*line, "-o", json.dumps({"trainer.num_epochs": 1})], **run)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "out" / "model.tar.gz").is_file()


@pytest.mark.slow
def test_sigterm_during_allennlp_train_is_one_line_saying_how_to_resume(tmp_path):
    callback = [{"type": "test_sigterm_at_batch"}, {"type": "elmo_plugin_optimizer_state"}]
    overrides = json.dumps({"trainer.callbacks": callback})
    out = tmp_path / "run"
    command = [ALLENNLP, "train", str(REPO_ROOT / "fixtures" / "bilm_tiny.jsonnet"), "-s", str(out)]
    command += ["-o", overrides, "--include-package", "elmo_plugin"]
    command += ["--include-package", "tests.elmo_plugin.common.interrupt_callback"]
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
    assert " - INFO - " not in result.stdout + result.stderr  # no plugin discovery line
    result = subprocess.run([script, "--help"], **run)
    assert result.returncode == 0 and result.stderr == "", result.stderr


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


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"model": {"type": "x",}\n', "STATIC ERROR: "),  # a missing brace
        ('{"a": std.extVar("NO_SUCH_VARIABLE_SET")}', "RUNTIME ERROR: "),
        ('local x = {}; {"a": x.missing}', "RUNTIME ERROR: field does not exist: missing"),
    ],
)
def test_a_config_that_is_not_valid_jsonnet_is_one_line(
    text, expected, capsys, monkeypatch, tmp_path
):
    """Was a traceback of AllenNLP's Params.from_file ending in _jsonnet's RuntimeError (and,
    for a runtime error, its Jsonnet stack on further lines)."""
    config = tmp_path / "broken.jsonnet"
    config.write_text(text)
    with pytest.raises(RuntimeError) as info:
        Params.from_file(str(config))
    argv = ("allennlp", "train", str(config), "-s", "out")
    line = one_line(info.value, capsys, monkeypatch, argv)
    assert line.startswith(f"allennlp: error: {config}: not valid Jsonnet: {expected}"), line
    if expected.startswith("RUNTIME"):
        assert f"(at {config}:1:" in line, line


def test_a_run_into_a_folder_that_holds_a_run_is_one_line_naming_the_ways_on(
    capsys, monkeypatch, tmp_path
):
    """Was AllenNLP's 24-line traceback ending "Specify --recover ..."; names --recover, -f and
    a new -s, and what the folder holds."""
    from allennlp.training.util import create_serialization_dir

    out = tmp_path / "out"
    out.mkdir()
    (out / "model.tar.gz").write_bytes(b"")
    (out / "config.json").write_text("{}")
    with pytest.raises(ConfigurationError) as info:
        create_serialization_dir(Params({}), str(out), recover=False, force=False)
    argv = ("elmo-plugin", "train", "tiny", "-s", str(out))
    line = one_line(info.value, capsys, monkeypatch, argv)
    assert line == (
        f"allennlp: error: {out} holds a run (model.tar.gz (the best weights so "
        "far)); resume it with --recover, start over with -f / --force (deletes it), or train "
        "into a new folder with another -s"
    )
    assert out.is_dir() and (out / "model.tar.gz").is_file()  # nothing removed


def test_the_console_drops_allennlps_parameters_and_plugin_lines_and_a_file_keeps_them(tmp_path):
    """`quiet_console`: a config's hundred `allennlp.common.params` INFO lines and AllenNLP's
    plugin discovery stay off the console (they came before a config error's one line), a run's
    out.log keeps them, and a warning still shows."""
    import io
    import logging

    root = logging.getLogger()
    console, file = io.StringIO(), tmp_path / "out.log"
    handlers = [logging.StreamHandler(console), logging.FileHandler(file)]
    level = root.level
    root.setLevel(logging.INFO)
    for handler in handlers:
        root.addHandler(handler)
    # the loggers as a fresh process has them (earlier tests in this process may have quieted
    # or disabled AllenNLP's)
    names = ("allennlp.common.params", "allennlp.common.plugins", "allennlp.training.trainer")
    loggers = [logging.getLogger(name) for name in names]
    states = [(lg.level, lg.disabled, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.NOTSET)
        lg.disabled, lg.propagate = False, True
    try:
        command_line.quiet_console()
        command_line.quiet_console()  # once per handler
        logging.getLogger("allennlp.common.params").info("trainer.num_epochs = 1")
        logging.getLogger("allennlp.common.plugins").info("Plugin allennlp_models available")
        logging.getLogger("allennlp.common.params").warning("a warning")
        logging.getLogger("allennlp.training.trainer").info("Epoch 0/0")
    finally:
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)
        for lg, (lg_level, disabled, propagate) in zip(loggers, states):
            lg.setLevel(lg_level)
            lg.disabled, lg.propagate = disabled, propagate
    assert console.getvalue().splitlines() == ["a warning", "Epoch 0/0"]
    assert len(file.read_text().splitlines()) == 4
    assert sum(isinstance(f, command_line.ConsoleNoise) for f in handlers[0].filters) == 1


def test_elmo_plugin_version_names_the_plugin_and_allennlp(tmp_path):
    """`elmo-plugin --version`: the plugin's version and AllenNLP's (AllenNLP's own flag printed
    only AllenNLP's); `elmo_plugin.__version__` is the installed distribution's."""
    import elmo_plugin

    plugin, allennlp = (importlib.metadata.version(name) for name in ("elmo_plugin", "allennlp"))
    assert elmo_plugin.__version__ == plugin
    script = os.path.join(os.path.dirname(sys.executable), "elmo-plugin")
    result = subprocess.run(
        [script, "--version"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == f"elmo-plugin {plugin} (AllenNLP {allennlp})\n"


def test_a_run_that_trained_an_epoch_is_kept_when_its_validation_file_fails(
    tmp_path, monkeypatch, capsys
):
    """Issue 88: a bad line in a lazily read validation file ended the run after epoch 1 in a
    traceback, and the folder and its logs were removed as holding nothing trained."""
    from allennlp.commands import train

    from elmo_bilm.utils.errors import FormatError

    monkeypatch.setattr(Params, "pop_choice", Params.pop_choice)
    monkeypatch.setattr(train, "train_model", train.train_model)
    config_errors.install()
    dev = tmp_path / "dev.txt"
    dev.write_bytes(b"a b c\nbad \xff line\n")
    overrides = {
        "validation_data_path": str(dev),
        "trainer.num_epochs": 1,
        "validation_data_loader.max_instances_in_memory": 64,  # read while validating
        "datasets_for_vocab_creation": ["train"],
    }
    out = tmp_path / "out"
    with pytest.raises(FormatError) as info:
        train.train_model_from_file(TINY, str(out), overrides=json.dumps(overrides))
    assert (out / "out.log").is_file() and (out / "config.json").is_file()
    note = config_errors.removal_note(info.value)
    assert note is not None and note.startswith(f"kept {out}: 1 epoch(s) trained")
    capsys.readouterr()
    hook = command_line.make_excepthook(lambda *args: pytest.fail("a traceback"))
    hook(type(info.value), info.value, info.value.__traceback__)
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert (
        line == f"{command_line.PROG}: error: {dev}:2: not UTF-8 text (invalid start byte); {note}"
    )


# AllenNLP's logging set-up (stubbed: it would take over the console) wrapped by the plugin, then
# one of AllenNLP's bars drawn with a refresh at every item, as a training epoch's is
FILE_FRIENDLY_RUN = """
import sys, time
from allennlp.common import logging as common_logging
common_logging.prepare_global_logging = lambda *args, **kwargs: None
from elmo_plugin.common import command_line
command_line.install(force=True)
common_logging.prepare_global_logging("unused")
from allennlp.common.tqdm import Tqdm
for _ in Tqdm.tqdm(range(4), mininterval=0, miniters=1):
    time.sleep(0.01)
print(common_logging.FILE_FRIENDLY_LOGGING)
"""


def test_off_a_terminal_allennlps_bars_are_plain_lines():
    """Under the plugin, AllenNLP's bars in a log file or pipe are written as its
    `--file-friendly-logging` writes them: a line per refresh, no carriage return redrawing
    them (a smoke run's log filled with them: issue 90 item 7). Bytes, not text: text mode would
    turn each carriage return into a newline."""
    result = subprocess.run([sys.executable, "-c", FILE_FRIENDLY_RUN], capture_output=True)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert b"\r" not in result.stderr and b"\x1b[A" not in result.stderr
    assert b"4/4" in result.stderr
    assert result.stdout.split() == [b"True"]
