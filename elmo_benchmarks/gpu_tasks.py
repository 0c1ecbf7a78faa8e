"""The six `*_elmo` task configs on a slice of their training data, one epoch each: seconds per
batch and the training loss at the start and the end of the epoch, on a GPU or the CPU.

The configs run as shipped (batch sizes, optimisers, the default biLM) with these overrides only:
`cuda_device`, `dataset_reader.max_instances` (the slice), no validation or test pass (so no
learning-rate schedule, which needs one), no checkpoint. Word vectors come from the
`*_WORD_VECTORS` variables (empty: randomly initialised, which changes no shape and so no time).
The first batch (CUDA start, allocator growth) is not timed; `--batches N` (for a CPU comparison)
trains N batches of the same slice.

    python -m elmo_benchmarks.gpu_tasks --device cuda          # on a lent GPU machine
    python -m elmo_benchmarks.gpu_tasks --device cpu --batches 6
"""

import argparse
import json
import statistics
import tempfile
import time
from typing import Any, Dict, List, Optional

import torch
from allennlp.commands.train import train_model_from_file
from allennlp.training.callbacks.callback import TrainerCallback

import elmo_plugin  # noqa: F401
from elmo_benchmarks.common import REPO_ROOT, emit

# task -> (config, training instances in the slice: sentences, pairs, questions, predicates or
# documents, about 40-60 batches at the config's batch size)
TASKS = {
    "snli": ("snli_esim_elmo", 1600),
    "squad": ("squad_bidaf_selfattn_elmo", 1600),
    "srl": ("srl_he2017_elmo", 3200),
    "coref": ("coref_lee2017_elmo", 40),
    "ner": ("conll2003_crf_tagger_elmo", 1600),
    "sst": ("sst_bcn_elmo", 1600),
}
BATCHES: List[Dict[str, float]] = []


@TrainerCallback.register("benchmark_batch_timer")
class BatchTimer(TrainerCallback):
    """Records every training batch's wall time and loss (reading the loss waits for the device,
    so each time covers that batch's work)."""

    def on_start(self, trainer: Any, is_primary: bool = True, **kwargs: Any) -> None:
        BATCHES.clear()
        self._last = time.perf_counter()

    def on_batch(
        self,
        trainer: Any,
        batch_inputs: List[Dict[str, Any]],
        batch_outputs: List[Dict[str, Any]],
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
        loss = sum(float(output["loss"].detach()) for output in batch_outputs)
        now = time.perf_counter()
        BATCHES.append({"seconds": now - self._last, "loss": loss})
        self._last = now


def run(task: str, cuda_device: int, batches: int) -> Dict[str, Any]:
    config, instances = TASKS[task]
    overrides: Dict[str, Any] = {
        "dataset_reader.max_instances": instances,
        "validation_data_path": None,
        "test_data_path": None,
        "evaluate_on_test": False,
        "trainer.num_epochs": 1,
        "trainer.cuda_device": cuda_device,
        "trainer.callbacks": [{"type": "benchmark_batch_timer"}],
        "trainer.checkpointer": {"save_completed_epochs": False},
        "trainer.validation_metric": "-loss",
        # epoch-level schedules (reduce on plateau) need the validation pass left out here
        "trainer.learning_rate_scheduler": None,
    }
    if batches:
        # a CPU comparison needs a few batches of the same slice (the same vocabulary)
        overrides["data_loader.batches_per_epoch"] = batches
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        path = str(REPO_ROOT / "training_config" / f"{config}.jsonnet")
        train_model_from_file(path, f"{out}/run", overrides=json.dumps(overrides))
    timed = [b["seconds"] for b in BATCHES[1:]]
    losses = [b["loss"] for b in BATCHES]
    k = max(1, len(losses) // 5)
    return {
        "task": task,
        "config": config,
        "device": "cpu" if cuda_device < 0 else torch.cuda.get_device_name(cuda_device),
        "instances": overrides["dataset_reader.max_instances"],
        "batches": len(BATCHES),
        "median_batch_s": statistics.median(timed) if timed else float("nan"),
        "mean_batch_s": statistics.fmean(timed) if timed else float("nan"),
        "loss_first_fifth": statistics.fmean(losses[:k]),
        "loss_last_fifth": statistics.fmean(losses[-k:]),
        "run_s": time.perf_counter() - start,
        "peak_gpu_mb": (
            torch.cuda.max_memory_allocated(cuda_device) / 2**20 if cuda_device >= 0 else 0.0
        ),
    }


def main(argv: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda or cpu")
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=list(TASKS))
    parser.add_argument(
        "--batches", type=int, default=0, help="train this many batches only (0: the whole slice)"
    )
    args = parser.parse_args(argv)
    cuda_device = 0 if args.device.startswith("cuda") else -1
    results = []
    for task in args.tasks:
        if cuda_device >= 0:
            torch.cuda.init()
            torch.cuda.reset_peak_memory_stats(cuda_device)
        result = run(task, cuda_device, args.batches)
        emit({"bench": "gpu_tasks", **result})
        results.append(result)
    print(
        f"{'task':6} {'batches':>7} {'s/batch':>8} {'loss start':>10} {'loss end':>9} {'run s':>6}"
    )
    for r in results:
        print(
            f"{r['task']:6} {r['batches']:7d} {r['median_batch_s']:8.3f} "
            f"{r['loss_first_fifth']:10.3f} {r['loss_last_fifth']:9.3f} {r['run_s']:6.0f}"
        )
    return results


if __name__ == "__main__":
    main()
