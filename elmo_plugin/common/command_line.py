"""The `allennlp` command with the plugin loaded: a user's config error and an interrupted
`allennlp train` end in one line on stderr, not a traceback (hook 7 of `elmo_plugin.hooks`); and
`elmo-plugin`, AllenNLP's command line with the plugin loaded, with no plugins file.

Installed only when the process is the `allennlp` command (or the plugin's `elmo-plugin`), never
by `import elmo_plugin` in a script or a test. A `sys.excepthook` reports:

- the plugin's `ConfigError` (an unset or missing dataset, a misspelt config name):
  `allennlp: error: MESSAGE`, exit status 1;
- Ctrl-C or SIGTERM (AllenNLP's `SigTermReceived`) during `allennlp train`, after AllenNLP has
  archived the best weights so far: `allennlp train: interrupted ...` naming what the
  serialization folder holds and the command that resumes the run (`--recover`).

Every other exception goes to the hook in place before (AllenNLP's own errors stay as they are).
AllenNLP's training replaces `sys.excepthook` when it sets up logging, so that set-up is wrapped
to put this hook back in front.
"""

import os
import re
import shlex
import sys
from pathlib import Path
from types import TracebackType
from typing import Any, Callable, List, Optional, Sequence, Type

from elmo_plugin.common.config_env import ConfigError

# the command's name in the lines below: `allennlp`, or `elmo-plugin` under `main`
PROG = "allennlp"

ExceptHook = Callable[[Type[BaseException], BaseException, Optional[TracebackType]], Any]

_CHECKPOINT = re.compile(r"training_state_e(\d+)_b(\d+)")


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


def make_excepthook(previous: ExceptHook) -> ExceptHook:
    """A `sys.excepthook` that reports the plugin's `ConfigError` and an interrupted `allennlp
    train` in one line and passes everything else to `previous`."""
    from allennlp.common.util import SigTermReceived

    def excepthook(
        kind: Type[BaseException], error: BaseException, traceback: Optional[TracebackType]
    ) -> None:
        if isinstance(error, ConfigError):
            print(f"{PROG}: error: {error}", file=sys.stderr, flush=True)
            return
        training = len(sys.argv) > 1 and sys.argv[1] == "train"
        if training and isinstance(error, (KeyboardInterrupt, SigTermReceived)):
            name = "Ctrl-C" if isinstance(error, KeyboardInterrupt) else "SIGTERM"
            print(interrupted_line(sys.argv, name), file=sys.stderr, flush=True)
            return
        previous(kind, error, traceback)

    excepthook._elmo_plugin = True  # type: ignore[attr-defined]
    return excepthook


def _put_in_front() -> None:
    """Wrap the current `sys.excepthook` with the plugin's, unless it is the plugin's."""
    if not getattr(sys.excepthook, "_elmo_plugin", False):
        sys.excepthook = make_excepthook(sys.excepthook)


def install(force: bool = False) -> None:
    """Under the `allennlp` command (or with `force`): the plugin's excepthook in front of the
    current one, and again after AllenNLP's `prepare_global_logging` replaces it. Idempotent."""
    if not (force or is_allennlp_command()):
        return
    from allennlp.common import logging as common_logging

    prepare = common_logging.prepare_global_logging
    if not getattr(prepare, "_elmo_plugin", False):

        def prepare_global_logging(*args: Any, **kwargs: Any) -> None:
            prepare(*args, **kwargs)
            _put_in_front()

        prepare_global_logging._elmo_plugin = True  # type: ignore[attr-defined]
        common_logging.prepare_global_logging = prepare_global_logging  # type: ignore[assignment]
    _put_in_front()


def main() -> None:
    """`elmo-plugin`: AllenNLP's command line (`allennlp.__main__.run`) with the plugin imported
    first, so that its subcommands (`elmo-plugin elmo-config`, `elmo-table1`, ...) and components
    (`elmo-plugin train snli_esim_elmo -s out`) need neither a plugins file nor
    `--include-package`."""
    global PROG
    PROG = "elmo-plugin"
    import allennlp.__main__  # noqa: F401  # AllenNLP's logging set-up, as under `allennlp`
    from allennlp.commands import main as allennlp_main
    from allennlp.common.util import install_sigterm_handler

    import elmo_plugin  # noqa: F401  # registers the subcommands and components

    install(force=True)
    install_sigterm_handler()
    allennlp_main(prog=PROG)
