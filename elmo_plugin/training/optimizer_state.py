"""Carry the optimizer state from pretraining into fine-tuning, as bilm-tf's restart restores its
Adagrad accumulators (Supplement A.1)."""

import logging
import os
import pickle
from typing import Any, Dict, Optional

import torch
from allennlp.training.callbacks.callback import TrainerCallback

from elmo_bilm.sources.archives import open_member
from elmo_bilm.utils.files import FormatError, atomic_output

logger = logging.getLogger(__name__)

OPTIMIZER_STATE_NAME = "optimizer_state.th"


def parameter_names(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> list:
    """The model's parameter names in the optimizer's order (the keys of its state dict)."""
    name_of = {id(parameter): name for name, parameter in model.named_parameters()}
    return [name_of[id(p)] for group in optimizer.param_groups for p in group["params"]]


@TrainerCallback.register("elmo_plugin_optimizer_state")
class OptimizerState(TrainerCallback):
    """At the end of training writes the optimizer's state (with each entry's parameter name) to
    `SERIALIZATION_DIR/optimizer_state.th`, which the config's `include_in_archive` puts into
    `model.tar.gz`. With `from_archive`, loads that file from the archive into the optimizer before
    the first step: every parameter of the same name and shape continues with its accumulators
    (a softmax over a different vocabulary starts fresh). Optimizer hyper-parameters (learning
    rate, ...) stay the config's. A run resumed with `--recover` keeps its own checkpoint instead.

    Registered as a `TrainerCallback` with name "elmo_plugin_optimizer_state".

    # Parameters

    from_archive : `str`, optional
        A `model.tar.gz` of a run that used this callback.
    """

    def __init__(self, serialization_dir: str, from_archive: Optional[str] = None) -> None:
        super().__init__(serialization_dir)
        self.from_archive = from_archive
        self._loaded = False

    def on_start(self, trainer: Any, is_primary: bool = True, **kwargs: Any) -> None:
        super().on_start(trainer, is_primary=is_primary, **kwargs)
        if self.from_archive and not self._loaded:
            saved = self._read_archive(self.from_archive)
            if saved is not None:
                self.load_into(trainer.model, trainer.optimizer, saved)
            self._loaded = True

    def on_end(
        self,
        trainer: Any,
        metrics: Optional[Dict[str, Any]] = None,
        epoch: Optional[int] = None,
        is_primary: bool = True,
        **kwargs: Any,
    ) -> None:
        if not is_primary:
            return
        path = os.path.join(self.serialization_dir, OPTIMIZER_STATE_NAME)
        saved = {
            "optimizer": type(trainer.optimizer).__name__,
            "parameter_names": parameter_names(trainer.model, trainer.optimizer),
            "state_dict": trainer.optimizer.state_dict(),
        }
        with atomic_output(path, overwrite=True) as partial:
            torch.save(saved, partial)

    def state_dict(self) -> Dict[str, Any]:
        return {"loaded": self._loaded}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self._loaded = state_dict["loaded"]

    @staticmethod
    def _read_archive(archive: str) -> Optional[Dict[str, Any]]:
        """The archive's saved optimizer state, loaded with `weights_only=True` (tensors and
        plain values only: an archive is untrusted). None, with a warning, where it holds
        anything else: the optimizer starts fresh."""
        with open_member(archive, OPTIMIZER_STATE_NAME) as member:
            if member is None:
                logger.info(
                    "%s has no %s: the optimizer starts fresh", archive, OPTIMIZER_STATE_NAME
                )
                return None
            try:
                saved = torch.load(member, map_location="cpu", weights_only=True)
            except pickle.UnpicklingError as error:
                logger.warning(
                    "%s: %s holds objects other than tensors and plain values; not loaded, the "
                    "optimizer starts fresh (%s)",
                    archive,
                    OPTIMIZER_STATE_NAME,
                    str(error).splitlines()[0],
                )
                return None
            except Exception as error:
                raise FormatError(
                    f"{archive}: {OPTIMIZER_STATE_NAME} is unreadable ({error})"
                ) from error
        if (
            not isinstance(saved, dict)
            or not {"optimizer", "parameter_names", "state_dict"} <= saved.keys()
        ):
            raise FormatError(f"{archive}: {OPTIMIZER_STATE_NAME} is not a saved optimizer state")
        return saved

    @staticmethod
    def load_into(
        model: torch.nn.Module, optimizer: torch.optim.Optimizer, saved: Dict[str, Any]
    ) -> int:
        """Copy the saved state of every parameter with the same name and shapes; returns how many."""
        if saved["optimizer"] != type(optimizer).__name__:
            logger.warning(
                "the archive's optimizer state is %s's, this run uses %s: it starts fresh",
                saved["optimizer"],
                type(optimizer).__name__,
            )
            return 0
        saved_state = saved["state_dict"]["state"]
        saved_index = {name: index for index, name in enumerate(saved["parameter_names"])}
        current = optimizer.state_dict()
        parameters = [p for group in optimizer.param_groups for p in group["params"]]
        copied = 0
        for index, name in enumerate(parameter_names(model, optimizer)):
            entry = saved_state.get(saved_index.get(name, -1))
            if entry is None:
                continue
            shaped = [v for v in entry.values() if torch.is_tensor(v) and v.dim() > 0]
            if any(v.shape != parameters[index].shape for v in shaped):
                continue
            current["state"][index] = entry
            copied += 1
        optimizer.load_state_dict(current)
        logger.info(
            "optimizer state for %d of %d parameters from the archive", copied, len(parameters)
        )
        return copied
