"""The `allennlp` command with the plugin loaded: a user's config error and an interrupted
`allennlp train` end in one line on stderr, not a traceback (hook 7 of `elmo_plugin.hooks`); and
`elmo-plugin`, AllenNLP's command line with the plugin loaded, with no plugins file.

Installed only when the process is the `allennlp` command (or the plugin's `elmo-plugin`), never
by `import elmo_plugin` in a script or a test. A `sys.excepthook` reports:

- the plugin's `ConfigError` (an unset or missing dataset, a misspelt config name):
  `allennlp: error: MESSAGE`, exit status 1;
- a config's unknown registered name (a model's, reader's, embedder's, encoder's `type`, ...):
  `allennlp: error: CONFIG: KEY: "NAME" is not a registered name; did you mean ...?`
  (`elmo_plugin.common.config_errors`), exit status 1; a run that failed before it trained
  anything removes the serialization folder it created, and its line says so (the same command
  retries);
- Ctrl-C or SIGTERM (AllenNLP's `SigTermReceived`) during `allennlp train`, after AllenNLP has
  archived the best weights so far: `allennlp train: interrupted ...` naming what the
  serialization folder holds and the command that resumes the run (`--recover`);
- `allennlp train` into a serialization folder that holds a run (a finished one, say): one line
  naming what it holds, `--recover`, `-f` / `--force` and a new `-s` (AllenNLP's error was a
  24-line traceback).

On the console (not in a run's out.log), AllenNLP's plugin discovery and a config's parameters
(`CONSOLE_NOISE`) log no INFO line: `--help` and a config error show only their own output.

Every other exception goes to the hook in place before (AllenNLP's own errors stay as they are).
AllenNLP's training replaces `sys.excepthook` when it sets up logging, so that set-up is wrapped
to put this hook back in front.
"""

import argparse
import contextlib
import logging
import os
import re
import shlex
import sys
from pathlib import Path
from types import TracebackType
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Type

from elmo_plugin.common import allennlp_parsers
from elmo_plugin.common.allennlp_parsers import ALLENNLP_COMMANDS, ALLENNLP_VERSION
from elmo_plugin.common.config_names import config_names, find_config
from elmo_plugin.common.parsers import COMMANDS

# the command's name in the lines below: `allennlp`, or `elmo-plugin` under `main`
PROG = "allennlp"

ExceptHook = Callable[[Type[BaseException], BaseException, Optional[TracebackType]], Any]

_CHECKPOINT = re.compile(r"training_state_e(\d+)_b(\d+)")


# other libraries' loggers whose INFO lines the command keeps off the console without --verbose:
# gensim (word2vec of the smoke vectors, in this process), Ray, AllenNLP's (plugin discovery, and
# every parameter of the readers that count the finished runs' training instances), and the file
# and download helpers beneath them; each run's `allennlp train` output goes to its own log
QUIET_LOGGERS = ("gensim", "ray", "allennlp", "smart_open", "filelock", "urllib3")


@contextlib.contextmanager
def quiet_loggers(names: Sequence[str] = QUIET_LOGGERS) -> Iterator[None]:
    """The loggers `names` (and their children) at WARNING while the block runs, their levels
    restored afterwards (the command may run inside another program, e.g. a test)."""
    loggers = [logging.getLogger(name) for name in names]
    levels: Dict[logging.Logger, int] = {logger: logger.level for logger in loggers}
    for logger in loggers:
        logger.setLevel(max(logger.getEffectiveLevel(), logging.WARNING))
    try:
        yield
    finally:
        for logger, level in levels.items():
            logger.setLevel(level)


# AllenNLP's loggers whose INFO lines stay off the console of `allennlp` / `elmo-plugin` (they
# still reach a training run's out.log): plugin discovery, on every call, and every parameter a
# config sets, read before the run starts (a hundred lines before a config error's one)
CONSOLE_NOISE = ("allennlp.common.params", "allennlp.common.plugins")


class ConsoleNoise(logging.Filter):
    """Drops `CONSOLE_NOISE`'s records below WARNING (a console handler's filter)."""

    def filter(self, record: logging.LogRecord) -> bool:
        noise = record.name in CONSOLE_NOISE or record.name.startswith(
            tuple(f"{name}." for name in CONSOLE_NOISE)
        )
        return not noise or record.levelno >= logging.WARNING


def quiet_console() -> None:
    """`ConsoleNoise` on the root logger's console handlers (not on its files), once each."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler) or not isinstance(
            handler, logging.StreamHandler
        ):
            continue
        if not any(isinstance(f, ConsoleNoise) for f in handler.filters):
            handler.addFilter(ConsoleNoise())


def is_allennlp_command() -> bool:
    """Whether this process is the `allennlp` command (its console script, `python -m allennlp`
    or the plugin's `elmo-plugin`)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return "allennlp.__main__" in sys.modules or getattr(spec, "name", "") == "allennlp.__main__"


def serialization_dir(argv: Sequence[str]) -> Optional[str]:
    """The `-s` / `--serialization-dir` of an `allennlp train` command line, or None."""
    for index, arg in enumerate(argv):
        if arg in ("-s", "--serialization-dir") and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--serialization-dir="):
            return arg.split("=", 1)[1]
        if arg.startswith("-s") and len(arg) > 2 and not arg.startswith("--"):
            return arg[2:]
    return None


def saved(folder: Path) -> str:
    """What an interrupted run left in its serialization folder, in words."""
    if not folder.is_dir():
        return f"nothing saved ({folder} was not created)"
    parts = []
    if (folder / "model.tar.gz").is_file():
        parts.append("model.tar.gz (the best weights so far)")
    checkpoints = sorted(
        (int(match.group(1)), int(match.group(2)))
        for match in map(_CHECKPOINT.match, os.listdir(folder))
        if match is not None
    )
    if checkpoints:
        epochs, batches = checkpoints[-1]
        after = f"{epochs} epoch(s)" + (f" and {batches} batch(es)" if batches else "")
        parts.append(f"a checkpoint after {after}")
    if not parts:
        return f"no checkpoint yet in {folder} (--recover starts over)"
    return f"saved in {folder}: {' and '.join(parts)}"


def resume_command(argv: Sequence[str]) -> str:
    """The command line that resumes `argv`'s run: the same with `--recover` (and no `--force`,
    which would delete the run)."""
    args: List[str] = [arg for arg in argv[1:] if arg not in ("-f", "--force")]
    if "-r" not in args and "--recover" not in args:
        args.append("--recover")
    return shlex.join([PROG, *args])


def interrupted_line(argv: Sequence[str], signal_name: str) -> str:
    """The one line for an `allennlp train` ended by `signal_name`."""
    folder = serialization_dir(argv)
    where = saved(Path(folder)) if folder else "nothing saved"
    return (
        f"allennlp train: interrupted ({signal_name}); {where}; resume with: {resume_command(argv)}"
    )


def occupied_line(argv: Sequence[str], error: BaseException) -> Optional[str]:
    """The one line for an `allennlp train` into a serialization folder that holds a run
    (AllenNLP's `ConfigurationError` "... already exists and is not empty ..."), or None for any
    other error: what the folder holds and the three ways on."""
    if "already exists and is not empty" not in str(error):
        return None
    folder = serialization_dir(argv) or "the serialization folder"
    described = saved(Path(folder))
    prefix = f"saved in {folder}: "
    held = described[len(prefix) :] if described.startswith(prefix) else "no checkpoint yet"
    return (
        f"{folder} holds a run ({held}); resume it with --recover, start over "
        "with -f / --force (deletes it), or train into a new folder with another -s"
    )


def make_excepthook(previous: ExceptHook) -> ExceptHook:
    """A `sys.excepthook` that reports the plugin's `ConfigError`, a data file's `FormatError`
    (FILE:LINE: what is wrong, from the core's readers) and an interrupted `allennlp train` in
    one line and passes everything else to `previous`."""
    from allennlp.common.checks import ConfigurationError
    from allennlp.common.util import SigTermReceived

    from elmo_bilm.utils.errors import FormatError
    from elmo_plugin.common.config_env import ConfigError
    from elmo_plugin.common.config_errors import (
        UnknownNameError,
        config_argument,
        jsonnet_line,
        removal_note,
    )

    def excepthook(
        kind: Type[BaseException], error: BaseException, traceback: Optional[TracebackType]
    ) -> None:
        removed = removal_note(error)
        if isinstance(error, (ConfigError, UnknownNameError, FormatError)):
            if isinstance(error, UnknownNameError):
                message = error.one_line(config_argument(sys.argv))
            else:
                message = str(error)
            tail = f"; {removed}" if removed else ""
            print(f"{PROG}: error: {message}{tail}", file=sys.stderr, flush=True)
            return
        jsonnet = jsonnet_line(error, config_argument(sys.argv))
        if jsonnet is not None:  # was a traceback ending in _jsonnet's RuntimeError
            tail = f"; {removed}" if removed else ""
            print(f"{PROG}: error: {jsonnet}{tail}", file=sys.stderr, flush=True)
            return
        training = len(sys.argv) > 1 and sys.argv[1] == "train"
        occupied = occupied_line(sys.argv, error) if training else None
        if isinstance(error, ConfigurationError) and occupied is not None:
            print(f"{PROG}: error: {occupied}", file=sys.stderr, flush=True)
            return
        if training and isinstance(error, (KeyboardInterrupt, SigTermReceived)):
            name = "Ctrl-C" if isinstance(error, KeyboardInterrupt) else "SIGTERM"
            print(interrupted_line(sys.argv, name), file=sys.stderr, flush=True)
            return
        previous(kind, error, traceback)
        if removed:
            print(f"{PROG} train: {removed}", file=sys.stderr, flush=True)

    excepthook._elmo_plugin = True  # type: ignore[attr-defined]
    return excepthook


def _put_in_front() -> None:
    """Wrap the current `sys.excepthook` with the plugin's, unless it is the plugin's."""
    if not getattr(sys.excepthook, "_elmo_plugin", False):
        sys.excepthook = make_excepthook(sys.excepthook)


def install(force: bool = False) -> None:
    """Under the `allennlp` command (or with `force`): the plugin's excepthook in front of the
    current one, and again after AllenNLP's `prepare_global_logging` replaces it; off a terminal,
    AllenNLP's file-friendly bars. Idempotent."""
    if not (force or is_allennlp_command()):
        return
    from allennlp.common import logging as common_logging

    from elmo_plugin.common import config_errors

    config_errors.install()

    prepare = common_logging.prepare_global_logging
    if not getattr(prepare, "_elmo_plugin", False):

        def prepare_global_logging(*args: Any, **kwargs: Any) -> None:
            if not sys.stderr.isatty():
                # AllenNLP's bars as plain lines in a log file or pipe, as its
                # `--file-friendly-logging` writes them (redrawn, they fill a log with escapes)
                common_logging.FILE_FRIENDLY_LOGGING = True
            prepare(*args, **kwargs)
            _put_in_front()
            quiet_console()  # its new console handlers

        prepare_global_logging._elmo_plugin = True  # type: ignore[attr-defined]
        common_logging.prepare_global_logging = prepare_global_logging  # type: ignore[assignment]
    _put_in_front()


# AllenNLP's default plugins (`allennlp.common.plugins.DEFAULT_PLUGINS`) other than
# allennlp-models: one installed may add subcommands, so the fast path is not taken
OTHER_DEFAULT_PLUGINS = ("allennlp_semparse", "allennlp_server")


class ParserWithDefaults(argparse.ArgumentParser):
    """AllenNLP's `ArgumentParserWithDefaults` (`allennlp.commands`): a meaningful default is
    appended to an argument's help, `(default = VALUE)`."""

    _action_defaults_to_ignore = {"help", "store_true", "store_false", "store_const"}

    @staticmethod
    def _is_empty_default(default: Any) -> bool:
        if default is None:
            return True
        if isinstance(default, (str, list, tuple, set)):
            return not bool(default)
        return False

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        default = kwargs.get("default")
        if kwargs.get(
            "action"
        ) not in self._action_defaults_to_ignore and not self._is_empty_default(default):
            description = kwargs.get("help", "")
            kwargs["help"] = f"{description} (default = {default})"
        return super().add_argument(*args, **kwargs)


def file_plugins() -> List[str]:
    """The plugins AllenNLP's `discover_plugins` reads, in its order: the lines of
    `.allennlp_plugins` here, then of `~/.allennlp/plugins`, each once."""
    names: List[str] = []
    for path in (Path(".allennlp_plugins"), Path.home() / ".allennlp" / "plugins"):
        if path.is_file():
            lines = path.read_text().splitlines()
            names += [name for name in map(str.strip, lines) if name and name not in names]
    return names


def known_command_line() -> bool:
    """Whether `allennlp --help` here lists what `ALLENNLP_COMMANDS` and the plugin's commands
    say: the AllenNLP version they were written for, no other default plugin and no plugin in a
    plugins file but this one (another could add subcommands); and AllenNLP's logging at INFO or
    above (below, importing it logs more)."""
    from importlib import metadata, util

    try:
        if metadata.version("allennlp") != ALLENNLP_VERSION:
            return False
    except metadata.PackageNotFoundError:
        return False
    if any(util.find_spec(name) is not None for name in OTHER_DEFAULT_PLUGINS):
        return False
    if any(name != "elmo_plugin" for name in file_plugins()):
        return False
    return not os.environ.get("ALLENNLP_DEBUG") and log_level() >= logging.INFO


def log_level() -> int:
    """The level AllenNLP's command line logs at (`ALLENNLP_LOG_LEVEL`, INFO by default)."""
    name = os.environ.get("ALLENNLP_LOG_LEVEL", "INFO")
    return logging._nameToLevel.get(name, logging.INFO)


def version_line() -> str:
    """What `elmo-plugin --version` prints: the plugin's version and the installed AllenNLP's
    (AllenNLP's own `--version` names only the latter)."""
    from importlib import metadata

    from elmo_plugin import __version__

    try:
        allennlp = metadata.version("allennlp")
    except metadata.PackageNotFoundError:
        allennlp = "not installed"
    return f"{PROG} {__version__} (AllenNLP {allennlp})"


def light_parser(command: Optional[str]) -> argparse.ArgumentParser:
    """AllenNLP's top-level parser as `elmo-plugin` builds it, without AllenNLP: every command's
    name and help line, and the arguments of `command` alone (an `elmo-*` command, one of
    AllenNLP's in `allennlp_parsers`' snapshot, or None)."""
    parser = ParserWithDefaults(description="Run AllenNLP", prog=PROG)
    parser.add_argument("--version", action="version", version=version_line())
    subparsers = parser.add_subparsers(title="Commands", metavar="")
    helps = {**ALLENNLP_COMMANDS, **{name: entry.help for name, entry in COMMANDS.items()}}
    for name in sorted(helps):
        if name != command:
            subparsers.add_parser(name, help=helps[name])
            continue
        if name not in COMMANDS:  # AllenNLP's own, from the snapshot (`--include-package` in it)
            allennlp_parsers.add_parser(subparsers, name)
            continue
        subparser = COMMANDS[name].add_parser(subparsers, name)
        # what AllenNLP adds to every command that `requires_plugins`, as the plugin's do
        allennlp_parsers.add_include_package(subparser)
    return parser


def config_path(name: str) -> str:
    """A config given as a path or a packaged config's name (`config_names.find_config`); one
    that is neither ends the command with `elmo-config: error: ...`."""
    try:
        return find_config(name)
    except FileNotFoundError as error:
        sys.exit(f"elmo-config: error: {error}")


def answer_without_allennlp(argv: Sequence[str]) -> bool:
    """Answer `argv` without importing AllenNLP if it needs no model: `elmo-plugin` with no
    command, `-h` / `--help`, the help of an `elmo-*` command or of AllenNLP's own (`train`,
    `evaluate`, ...: `allennlp_parsers`), or a bad argument before it, and `elmo-config [NAME]`;
    the same output as AllenNLP's command line. False: nothing was done, the command needs
    AllenNLP."""
    argv = list(argv)
    top_help = argv in ([], ["-h"], ["--help"])
    known = (*COMMANDS, *allennlp_parsers.load()["commands"])
    command = argv[0] if argv and argv[0] in known else None
    wants_help = command is not None and ("-h" in argv or "--help" in argv)
    if not (top_help or wants_help or command == "elmo-config") or not known_command_line():
        return False
    parser = light_parser(command)
    if top_help:
        if not argv:
            parser.print_help()
            return True
    args = parser.parse_args(argv)  # help, or a bad argument, ends the command here
    if command != "elmo-config" or args.resolved or args.include_package:
        return False
    try:
        print("\n".join(config_names()) if args.name is None else config_path(args.name))
    except OSError as error:  # as `elmo_bilm.utils.files.reports_errors` reports it
        sys.exit(f"elmo-config: error: {error}")
    return True


def main() -> None:
    """`elmo-plugin`: AllenNLP's command line (`allennlp.__main__.run`) with the plugin imported
    first, so that its subcommands (`elmo-plugin elmo-config`, `elmo-table1`, ...) and components
    (`elmo-plugin train snli_esim_elmo -s out`) need neither a plugins file nor
    `--include-package`. The commands that need no model are answered first, without importing
    AllenNLP (`answer_without_allennlp`); `import elmo_plugin` leaves registering to this."""
    global PROG
    PROG = "elmo-plugin"
    if sys.argv[1:] == ["--version"]:
        print(version_line())
        return
    if answer_without_allennlp(sys.argv[1:]):
        return
    import elmo_plugin

    argv = sys.argv[1:]
    elmo_plugin.register()  # the subcommands and components, before AllenNLP's logging set-up
    import allennlp.__main__  # noqa: F401  # AllenNLP's logging set-up, as under `allennlp`
    from allennlp.commands import main as allennlp_main
    from allennlp.common.util import install_sigterm_handler

    # AllenNLP's plugin discovery and a config's parameters stay off the console (elmo-table1
    # shows them with `--verbose`)
    if not (argv[:1] == ["elmo-table1"] and "--verbose" in argv):
        quiet_console()
    install(force=True)
    install_sigterm_handler()
    allennlp_main(prog=PROG)
