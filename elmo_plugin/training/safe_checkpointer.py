"""A checkpointer whose `--recover` survives a run killed while it was writing a checkpoint."""

import errno
import functools
import logging
import os
import shutil
import zipfile
from typing import Any, List, Optional, Set, Tuple

import numpy
import torch
from allennlp.training.checkpointer import Checkpointer, TrainerCheckpoint

from elmo_plugin.common.config_env import ConfigError

logger = logging.getLogger(__name__)


class CheckpointWriteError(ConfigError, OSError):
    """A checkpoint that cannot be written (a full disk): an `OSError`, and a `ConfigError` so
    that the `allennlp` command reports it in one line, not a traceback
    (`elmo_plugin.common.command_line`)."""


def numpy_scalar_globals() -> List[Any]:
    """numpy's scalar reconstructor and dtypes: what AllenNLP's training states hold beyond
    tensors and plain values (its metric tracker keeps numpy scalars)."""
    dtypes = [
        type(numpy.dtype(name))
        for name in ("float16", "float32", "float64", "int32", "int64", "bool")
    ]
    # numpy 2 pickles scalars by this private path; numpy's stubs do not declare it
    scalar = numpy._core.multiarray.scalar  # type: ignore[attr-defined]
    return [scalar, numpy.dtype, *dtypes]


def install_checkpoint_loading() -> None:
    """AllenNLP's `Checkpointer.load_checkpoint` (every checkpointer's `--recover`) with numpy's
    scalars allowed to torch's weights-only loader for that load only (hook 3 of
    `elmo_plugin.hooks`, a compatibility entry); idempotent.

    torch >= 2.6 loads with `weights_only=True` by default, and refuses AllenNLP 2.10's training
    states where a metric is a numpy scalar (`SpearmanCorrelation`, allennlp-models' coreference
    scores: the metric tracker keeps them): `allennlp train --recover` failed with "Weights only
    load failed". The loader stays weights-only (numpy's scalar and dtypes, no code) and torch's
    own allow-list is left as it is (`torch.serialization.safe_globals`, not `add_safe_globals`).
    """
    original = Checkpointer.load_checkpoint
    if getattr(original, "_elmo_plugin", False) or not hasattr(torch.serialization, "safe_globals"):
        return

    @functools.wraps(original)
    def load_checkpoint(self: Checkpointer) -> Optional[TrainerCheckpoint]:
        with torch.serialization.safe_globals(numpy_scalar_globals()):
            return original(self)

    load_checkpoint._elmo_plugin = True  # type: ignore[attr-defined]
    Checkpointer.load_checkpoint = load_checkpoint  # type: ignore[method-assign]


@Checkpointer.register("elmo_plugin_safe")
class SafeCheckpointer(Checkpointer):
    """AllenNLP's checkpointer, but only complete checkpoints count.

    AllenNLP writes `model_state_*.th` and `training_state_*.th` in place; a run killed (preempted,
    out of time) during that write leaves a truncated newest checkpoint, and `--recover` then fails
    on it. Here a checkpoint counts only when both files exist and are complete torch archives; an
    incomplete one is renamed to `*.incomplete` (kept, never deleted) and recovery resumes from the
    newest complete one. A checkpoint that cannot be written (a full disk: torch's "enforce fail
    at inline_container.cc ... unexpected pos") stops the run with one line naming the folder and
    its free space. `--recover` loads AllenNLP's training states (numpy scalars in them) with
    torch's weights-only loader, as every checkpointer does once the plugin is imported
    (`install_checkpoint_loading`). Same parameters as the "default" checkpointer.

    Registered as a `Checkpointer` with name "elmo_plugin_safe".
    """

    def _find_all_checkpoints(self) -> Set[Tuple[int, int]]:
        complete = set()
        for point in super()._find_all_checkpoints():
            paths = [self._model_state_path(*point), self._training_state_path(*point)]
            if all(os.path.isfile(path) and zipfile.is_zipfile(path) for path in paths):
                complete.add(point)
            elif self._is_primary:
                for path in paths:
                    if os.path.exists(path):
                        logger.warning(
                            "Incomplete checkpoint file %s: moved to %s.incomplete", path, path
                        )
                        os.replace(path, f"{path}.incomplete")
        return complete

    def save_checkpoint(self, trainer: Any) -> None:
        try:
            super().save_checkpoint(trainer)
        except (RuntimeError, OSError) as error:
            text = str(error)
            if not (
                isinstance(error, OSError) or "inline_container" in text or "unexpected pos" in text
            ):
                raise
            folder = self._serialization_dir
            free = shutil.disk_usage(folder).free / 2**20 if os.path.isdir(folder) else 0.0
            first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
            failure = CheckpointWriteError(
                f"{folder}: writing a checkpoint failed ({free:.1f} MB free; full disk?): {first}"
            )
            failure.errno = errno.ENOSPC if free < 1 else errno.EIO
            raise failure from error
