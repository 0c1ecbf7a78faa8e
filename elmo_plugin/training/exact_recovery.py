"""`--recover` that retraces the interrupted run exactly, from any checkpoint, mid-epoch included.

AllenNLP's `--recover` loads the newest checkpoint and replays the data loader from the first
epoch, skipping the batches already trained. Three things then differ from the run that was
interrupted: the random generators (dropout, sampled-softmax negatives, and the loader's own
shuffling, which the replay draws from generators in another state), the model's metric
accumulators (the resumed epoch's perplexity counts only the batches after the checkpoint), and
the epoch's `training_loss` (AllenNLP sums the losses of the batches after the checkpoint and
divides by all of them), and `training_duration` (AllenNLP counts only the last process). This
callback saves what is needed with every checkpoint and puts it back at the right moment of the
replay.
"""

import logging
import os
import random
from datetime import timedelta
from time import monotonic
from typing import Any, Dict, Iterator, List, Optional, Set

import numpy
import torch
from allennlp.common.util import dump_metrics
from allennlp.training.callbacks.callback import TrainerCallback
from allennlp.training.metrics import Metric

logger = logging.getLogger(__name__)


def rng_state() -> Dict[str, Any]:
    """Every random generator a training step may draw from: Python's, numpy's, torch's (CPU and
    each CUDA device), as tensors and plain values (a checkpoint loads with `weights_only`)."""
    kind, keys, position, has_gauss, cached = numpy.random.get_state(legacy=True)
    key_tensor = torch.from_numpy(numpy.asarray(keys).astype(numpy.int64))
    state = {
        "python": random.getstate(),
        "numpy": (kind, key_tensor, position, has_gauss, cached),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Dict[str, Any]) -> None:
    """Restore the random states `rng_state` returned (CUDA's where a GPU is present)."""
    random.setstate(state["python"])
    kind, keys, position, has_gauss, cached = state["numpy"]
    numpy.random.set_state((kind, keys.numpy().astype(numpy.uint32), position, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


PLAIN = (bool, int, float, str, type(None), torch.Tensor)
VARS = "__vars__"  # marks the saved attributes of an object (a metric's helper, e.g. a scorer)


def snapshot(value: Any, depth: int = 0) -> Any:
    """`value` in plain types (numbers, strings, tensors, dicts, lists) that a checkpoint loads
    with `weights_only`; an object becomes its attributes, less functions and classes (settings,
    not state). Raises TypeError for anything else."""
    if depth > 8:
        raise TypeError("nested too deep")
    if isinstance(value, PLAIN):
        return value.clone() if isinstance(value, torch.Tensor) else value
    if isinstance(value, dict):
        return {k: snapshot(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(v, depth + 1) for v in value)
    if hasattr(value, "__dict__") and not isinstance(value, type):
        kept = {k: v for k, v in vars(value).items() if not callable(v)}
        return {VARS: snapshot(kept, depth + 1)}
    raise TypeError(type(value).__name__)


def restore(current: Any, saved: Any) -> Any:
    """`saved` (from `snapshot`) put back into `current` in place where it is an object, dict or
    list of objects (so a defaultdict keeps its default); the value to assign otherwise."""
    if isinstance(saved, dict) and set(saved) == {VARS}:
        for name, value in saved[VARS].items():
            setattr(current, name, restore(getattr(current, name, None), value))
        return current
    if isinstance(saved, dict) and isinstance(current, dict):
        old = dict(current)
        current.clear()
        current.update({k: restore(old.get(k), v) for k, v in saved.items()})
        return current
    if isinstance(saved, list) and isinstance(current, list) and len(saved) == len(current):
        current[:] = [restore(c, v) for c, v in zip(current, saved)]
        return current
    return saved


def metric_state(model: torch.nn.Module) -> Dict[str, Any]:
    """The model's running metrics: its non-persistent buffers (not in a checkpoint's weights, e.g.
    the biLM's perplexity totals) and its AllenNLP `Metric`s (also those in dicts)."""
    persistent = set(model.state_dict())
    buffers = {
        name: buffer.detach().clone()
        for name, buffer in model.named_buffers()
        if name not in persistent
    }
    metrics: Dict[str, Any] = {}
    for path, module in model.named_modules():
        for attribute, value in vars(module).items():
            found = {attribute: value} if isinstance(value, Metric) else {}
            if isinstance(value, dict):
                found = {f"{attribute}:{k}": v for k, v in value.items() if isinstance(v, Metric)}
            for key, metric in found.items():
                try:
                    metrics[f"{path}:{key}"] = snapshot(metric)
                except TypeError as error:
                    if key not in _UNSAVED:
                        _UNSAVED.add(key)
                        logger.warning(
                            "%s.%s: not restored on --recover (holds %s)", path, key, error
                        )
    return {"buffers": buffers, "metrics": metrics}


_UNSAVED: Set[str] = set()  # metrics already reported as not restorable


def set_metric_state(model: torch.nn.Module, state: Dict[str, Any]) -> None:
    """Restore the model's buffers and metrics that `metric_state` returned."""
    with torch.no_grad():
        for name, value in state["buffers"].items():
            model.get_buffer(name).copy_(value)
    for key, saved in state["metrics"].items():
        path, attribute, *item = key.split(":")
        holder = getattr(model.get_submodule(path), attribute)
        restore(holder[item[0]] if item else holder, saved)


def cache_state(model: torch.nn.Module) -> Dict[str, Any]:
    """The inference caches of a frozen biLM (the char-CNN's word vectors, ELMo's activations),
    by module path: their entries hold the bits of the batch that computed them, which a
    recomputation in another batch matches only up to float32 rounding."""
    return {
        path: module.cache_state()
        for path, module in model.named_modules()
        if callable(getattr(module, "cache_state", None))
    }


def set_cache_state(model: torch.nn.Module, state: Dict[str, Any]) -> None:
    """Restore the caches (`load_cache_state` of each module) that `cache_state` returned."""
    for path, saved in state.items():
        module: Any = model.get_submodule(path)  # a module with `load_cache_state`
        module.load_cache_state(saved)


@TrainerCallback.register("elmo_plugin_exact_recovery")
class ExactRecovery(TrainerCallback):
    """Makes `allennlp train --recover` retrace the interrupted run: the same weights, metrics and
    checkpoints as a run that was never stopped, from an epoch-end or a mid-epoch checkpoint
    (`save_every_num_batches`). Each checkpoint holds the random generators' states at the start
    of every epoch so far and at the checkpoint, the model's running metrics and the epoch's loss
    sums, and the frozen biLM's caches. On `--recover` each replayed epoch's loader starts from
    its epoch's states (so it shuffles as it did), and right before the first batch after the
    checkpoint the generators, metrics and caches are put back; the epoch's `training_loss` (and
    the progress bar's running `loss`) then counts every batch (`metrics_epoch_N.json` is
    rewritten with it), and `training_duration` adds the training time before the checkpoint to
    this process's.

    Assumes one training process, one batch per optimizer step, and a data loader whose draws
    come from Python's, numpy's or torch's global generators in the training process
    (`num_workers: 0`, AllenNLP's default). A checkpoint written without this callback recovers
    as AllenNLP does, with a warning.

    Registered as a `TrainerCallback` with name "elmo_plugin_exact_recovery".
    """

    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        self._epoch_starts: List[Dict[str, Any]] = []  # generator states at each epoch's start
        self._epoch = 0  # the epoch under way (or about to start)
        self._batches = 0  # batches trained in it
        self._resume: Optional[Dict[str, Any]] = None  # the checkpoint's state, until applied
        self._carried: Optional[Dict[str, float]] = None  # a resumed epoch's sums before it
        self._sums = {"loss": 0.0, "reg_loss": 0.0}  # the epoch's loss sums so far
        self._trainer: Any = None
        self._started = monotonic()  # when this process began (or resumed) training
        self._earlier: Optional[float] = None  # seconds trained up to the resumed checkpoint

    def on_start(self, trainer: Any, is_primary: bool = True, **kwargs: Any) -> None:
        super().on_start(trainer, is_primary=is_primary, **kwargs)
        self._trainer = trainer
        self._started = monotonic()
        if getattr(trainer.data_loader, "num_workers", 0):
            logger.warning(
                "The data loader reads in worker processes, whose random draws a checkpoint does "
                "not hold: --recover continues from the checkpoint, but not exactly as before"
            )
        trainer.data_loader = _ReplayingLoader(trainer.data_loader, self)

    def on_batch(
        self,
        trainer: Any,
        batch_inputs: Any,
        batch_outputs: Any,
        batch_metrics: Dict[str, Any],
        epoch: int,
        batch_number: int,
        is_training: bool,
        is_primary: bool = True,
        batch_grad_norm: Optional[float] = None,
        **kwargs: Any,
    ) -> None:
        if not is_training:
            return
        self._batches = batch_number
        # AllenNLP's running `loss` is its sum since the (re)start divided by all the epoch's batches
        carried = self._carried or {}
        for key in self._sums:
            if key in batch_metrics:
                self._sums[key] = carried.get(key, 0.0) + batch_metrics[key] * batch_number
                if self._carried is not None:  # the progress bar shows this dict after us
                    batch_metrics[key] = self._sums[key] / batch_number

    def on_epoch(
        self,
        trainer: Any,
        metrics: Dict[str, Any],
        epoch: int,
        is_primary: bool = True,
        **kwargs: Any,
    ) -> None:
        resumed_epoch = self._carried is not None and self._batches > 0
        if resumed_epoch:
            # AllenNLP divided the sums since the restart by all the epoch's batches
            for key, carried in (self._carried or {}).items():
                if f"training_{key}" in metrics:
                    metrics[f"training_{key}"] += carried / self._batches
        if self._earlier is not None:
            metrics["training_duration"] = str(timedelta(seconds=self._elapsed()))
        if (resumed_epoch or self._earlier is not None) and is_primary and self.serialization_dir:
            path = os.path.join(self.serialization_dir, f"metrics_epoch_{epoch}.json")
            dump_metrics(path, metrics)
        self._epoch = epoch + 1
        self._batches = 0
        self._carried = None
        self._sums = {key: 0.0 for key in self._sums}

    def state_dict(self) -> Dict[str, Any]:
        model = self._trainer.model if self._trainer is not None else None
        return {
            "epoch_starts": self._epoch_starts,
            "epoch": self._epoch,
            "batches": self._batches,
            "rng": rng_state(),
            "sums": dict(self._sums),
            "elapsed": self._elapsed(),
            "metrics": metric_state(model) if model is not None else None,
            "caches": cache_state(model) if model is not None else {},
        }

    def _elapsed(self) -> float:
        """Seconds of training so far, earlier processes included."""
        return (self._earlier or 0.0) + monotonic() - self._started

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        if "epoch_starts" not in state_dict:
            logger.warning(
                "The checkpoint was written without elmo_plugin_exact_recovery: --recover goes on "
                "as AllenNLP does (other random draws, the resumed epoch's metrics partial)"
            )
            return
        self._epoch_starts = list(state_dict["epoch_starts"])
        self._resume = state_dict

    def epoch_starts(self, epoch: int) -> None:
        """Called as the loader starts `epoch`: record or (replaying) restore the generators."""
        self._epoch = epoch
        resume = self._resume
        if resume is not None and epoch == resume["epoch"] == len(self._epoch_starts):
            self._epoch_starts.append(resume["rng"])  # checkpointed at the end of the last epoch
        if epoch == len(self._epoch_starts):
            self._epoch_starts.append(rng_state())
        elif resume is not None:
            set_rng_state(self._epoch_starts[epoch])

    def resume_here(self) -> None:
        """Called right before the first batch after the checkpoint is drawn."""
        state, self._resume = self._resume, None
        assert state is not None
        set_rng_state(state["rng"])
        if state["metrics"] is not None:
            set_metric_state(self._trainer.model, state["metrics"])
        set_cache_state(self._trainer.model, state.get("caches", {}))
        self._carried = dict(state["sums"])
        self._sums = dict(state["sums"])
        if "elapsed" in state:  # absent from checkpoints of earlier versions
            self._earlier, self._started = state["elapsed"], monotonic()  # the replay not counted
        logger.info("Resumed exactly after batch %d of epoch %d", state["batches"], state["epoch"])


class _ReplayingLoader:
    """The trainer's data loader, seen through `ExactRecovery`; every other attribute is the
    loader's own."""

    def __init__(self, loader: Any, recovery: ExactRecovery) -> None:
        self._loader = loader
        self._recovery = recovery
        self._epochs = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def __len__(self) -> int:
        return len(self._loader)

    def __iter__(self) -> Iterator[Any]:
        epoch, self._epochs = self._epochs, self._epochs + 1
        recovery = self._recovery
        recovery.epoch_starts(epoch)
        resume = recovery._resume
        if resume is None or epoch < resume["epoch"]:  # training, or replaying a finished epoch
            yield from self._loader
            return
        batches = iter(self._loader)
        position = 0
        while True:
            if position == resume["batches"]:
                recovery.resume_here()
            try:
                batch = next(batches)
            except StopIteration:
                if recovery._resume is not None:
                    recovery.resume_here()  # the checkpoint came after the epoch's last batch
                return
            position += 1
            yield batch
