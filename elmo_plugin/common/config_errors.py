"""Under the `allennlp` command (or `elmo-plugin`) only: a config's unknown registered name in one
line, and a failed start that leaves nothing to block the retry (part of hook 7 of
`elmo_plugin.hooks`, installed by `elmo_plugin.common.command_line.install`).

- **Unknown names.** AllenNLP's `Params.pop_choice` (behind every `type` of a config: model,
  reader, embedder, encoder, ...) raises a `ConfigurationError` listing every registered name and
  advising `--include-package`. Under the command it raises `UnknownNameError`, a subclass with
  the same message that keeps the key, the name and the registered names, so that the command's
  excepthook prints one line: the config, the key, the closest registered names.
- **A failed start.** `allennlp train` creates its serialization folder before it builds anything,
  so a run that failed on a typo left a folder that refused the retry ("already exists and is not
  empty"). AllenNLP's `train_model` is wrapped: when a run fails (not Ctrl-C or SIGTERM, which
  `--recover` resumes) and the folder did not exist before the run and holds no trained weights,
  checkpoint or epoch metrics, the folder is removed and the error says so; the same command then
  retries. A folder that existed before the run is never removed.
"""

import difflib
import inspect
import os
import shutil
from pathlib import Path
from typing import Any, Iterable, List, Optional, Sequence

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

# the attribute a failed run's exception carries: the serialization folder removed
REMOVED = "_elmo_plugin_removed_folder"
KEPT = "_elmo_plugin_kept_folder"  # (folder, epochs trained) of a failed run kept
# what a serialization folder holds once training has produced anything worth keeping
TRAINED_FILES = ("model.tar.gz", "best.th", "metrics.json")
TRAINED_PREFIXES = ("model_state_", "training_state_", "metrics_epoch_")
# `allennlp train`'s options that take a value (the config is its first other argument)
VALUE_OPTIONS = (
    "-s",
    "--serialization-dir",
    "-o",
    "--overrides",
    "--include-package",
    "--node-rank",
)


class UnknownNameError(ConfigurationError):
    """A config's `type` (or another choice) that is not a registered name: AllenNLP's message,
    with the key (`model.text_field_embedder.token_embedders.elmo.type`), the name and the
    registered names kept for the one-line report."""

    def __init__(self, message: str, key: str, name: str, choices: Iterable[Any]) -> None:
        super().__init__(message)
        self.key, self.name = key, name
        self.choices = [str(choice) for choice in choices]

    def closest(self) -> List[str]:
        """The registered names closest to the name: by difflib's ratio, at least 0.6 and within
        0.1 of the best (a typo's one name, not every name sharing the plugin's prefix), at most
        three; then those containing it."""
        ratios = {
            choice: difflib.SequenceMatcher(None, self.name, choice).ratio()
            for choice in self.choices
        }
        best = max(ratios.values(), default=0.0)
        ranked = sorted(ratios, key=lambda choice: -ratios[choice])
        close = [c for c in ranked if ratios[c] >= max(0.6, best - 0.1)][:3]
        close += [
            choice
            for choice in self.choices
            if len(self.name) >= 3 and self.name in choice and choice not in close
        ]
        return close[:4]

    def one_line(self, config: Optional[str]) -> str:
        """The report: where (config and key), the name, and the closest registered names (or
        all of them when none is close)."""
        where = f"{config}: " if config else ""
        close = self.closest()
        if close:
            hint = "did you mean " + " or ".join(f'"{name}"' for name in close) + "?"
        else:
            hint = f"the registered names there: {', '.join(sorted(self.choices))}"
        return f'{where}{self.key}: "{self.name}" is not a registered name; {hint}'


def config_argument(argv: Sequence[str]) -> Optional[str]:
    """The config of a command line `PROG COMMAND CONFIG ...` (`train`, `find-lr`, ...): the
    first argument after the command that is neither an option nor an option's value."""
    args = list(argv[2:])
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in VALUE_OPTIONS:
            index += 2
            continue
        if not arg.startswith("-"):
            return arg
        index += 1
    return None


def removal_note(error: BaseException) -> Optional[str]:
    """What was removed, or kept, after `error` ended a run (None: nothing to say)."""
    kept = getattr(error, KEPT, None)
    if kept is not None:
        folder, epochs = kept
        return (
            f"kept {folder}: {epochs} epoch(s) trained before the failure (its logs are there); "
            "after the fix, start over with -f / --force (deletes it) or train into another -s"
        )
    folder = getattr(error, REMOVED, None)
    if folder is None:
        return None
    return (
        f"removed {folder}, which this run created before it failed and which held nothing "
        "trained; the same command retries"
    )


def trained_epochs(error: BaseException) -> int:
    """The epochs AllenNLP's trainer had trained when `error` ended the run, read from the
    traceback: raised while validating epoch N, N + 1; while training epoch N, N."""
    trained, trace = 0, error.__traceback__
    while trace is not None:
        code = trace.tb_frame.f_code
        if code.co_name in ("_train_epoch", "_validation_loss") and code.co_filename.endswith(
            "gradient_descent_trainer.py"
        ):
            epoch = trace.tb_frame.f_locals.get("epoch")
            if isinstance(epoch, int):
                trained = max(trained, epoch + (code.co_name == "_validation_loss"))
        trace = trace.tb_next
    return trained


def holds_training(folder: Path) -> bool:
    """Whether a serialization folder holds trained weights, a checkpoint or epoch metrics."""
    names = os.listdir(folder)
    return any(name in TRAINED_FILES or name.startswith(TRAINED_PREFIXES) for name in names)


def install_unknown_names() -> None:
    """`Params.pop_choice` raising `UnknownNameError` for an unknown name (idempotent)."""
    original = Params.pop_choice
    if getattr(original, "_elmo_plugin", False):
        return

    def pop_choice(self: Params, key: str, choices: List[Any], *args: Any, **kwargs: Any) -> Any:
        name = self.get(key, None)
        try:
            return original(self, key, choices, *args, **kwargs)
        except ConfigurationError as error:
            if not isinstance(name, str) or name in choices:
                raise
            key_path = f"{self.history}{key}"
            unknown = UnknownNameError(str(error), key_path, name, choices)
            raise unknown.with_traceback(error.__traceback__) from None

    pop_choice._elmo_plugin = True  # type: ignore[attr-defined]
    Params.pop_choice = pop_choice  # type: ignore[method-assign]


def _first_missing(folder: Path) -> Path:
    """The highest folder on `folder`'s path that does not exist yet (`folder` itself when its
    parent exists): what a run making `folder` creates."""
    created = folder
    while created.parent != created and not created.parent.exists():
        created = created.parent
    return created


def _remove_empty_parents(folder: Path, created: Path) -> None:
    """Remove `folder`'s parents up to `created` that the run made and that are empty (a file
    put there meanwhile keeps its folder)."""
    for parent in folder.parents:
        if parent == created.parent:
            return
        try:
            parent.rmdir()
        except OSError:
            return


def install_failed_start_cleanup() -> None:
    """AllenNLP's `train_model` removing the folder of a failed start (idempotent)."""
    from allennlp.commands import train
    from allennlp.common.util import SigTermReceived

    original = train.train_model
    if getattr(original, "_elmo_plugin", False):
        return
    signature = inspect.signature(original)

    def train_model(*args: Any, **kwargs: Any) -> Any:
        folder = Path(signature.bind(*args, **kwargs).arguments["serialization_dir"])
        existed = folder.exists()
        created = _first_missing(folder)  # `-s parent/a/b` with a and b new: a
        try:
            return original(*args, **kwargs)
        except Exception as error:
            if isinstance(error, SigTermReceived) or existed or not folder.is_dir():
                raise
            epochs = trained_epochs(error)
            if epochs:  # its logs say what the epochs did: kept, and the note says so
                setattr(error, KEPT, (str(folder), epochs))
            elif not holds_training(folder):
                shutil.rmtree(folder, ignore_errors=True)
                _remove_empty_parents(folder, created)
                setattr(error, REMOVED, str(created))
            raise

    train_model._elmo_plugin = True  # type: ignore[attr-defined]
    train.train_model = train_model  # type: ignore[assignment]


def install() -> None:
    """Both wraps (idempotent); `command_line.install` calls this under the command only."""
    install_unknown_names()
    install_failed_start_cleanup()


JSONNET_ERRORS = ("STATIC ERROR:", "RUNTIME ERROR:")


def jsonnet_line(error: BaseException, config: Optional[str]) -> Optional[str]:
    """A config that is not valid Jsonnet (`_jsonnet`'s RuntimeError: a syntax error, a field
    or variable that does not exist) in one line: the config, the error's first line and,
    for a runtime error, the first place its stack names; None for any other error."""
    text = str(error)
    if not isinstance(error, RuntimeError) or not text.startswith(JSONNET_ERRORS):
        return None
    first, *stack = [line.strip() for line in text.splitlines() if line.strip()]
    place = stack[0].split("\t")[0].split()[0] if stack and text.startswith("RUNTIME") else ""
    where = f"{config}: " if config else ""
    return f"{where}not valid Jsonnet: {first}" + (f" (at {place})" if place else "")
