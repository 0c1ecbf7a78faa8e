"""Task training with a frozen biLM: epoch times of the CoNLL-2003 biLSTM-CRF without ELMo, with
ELMo recomputed every epoch, and with the exact activation cache (epochs after the first).
"""

import argparse
import json
import tempfile
import time
from typing import Any, Dict, List

from allennlp.commands.train import train_model_from_file
from allennlp.training.callbacks.callback import TrainerCallback

import elmo_plugin  # noqa: F401
from elmo_benchmarks.common import REPO_ROOT, emit, random_bilm_tf

CONFIGS = {
    "baseline": str(REPO_ROOT / "training_config" / "conll2003_crf_tagger.jsonnet"),
    "elmo": str(REPO_ROOT / "training_config" / "conll2003_crf_tagger_elmo.jsonnet"),
}
EPOCH_TIMES: List[float] = []


@TrainerCallback.register("benchmark_epoch_timer")
class EpochTimer(TrainerCallback):
    """Records the wall time of every epoch (no validation or checkpoints run in between)."""

    def on_start(self, trainer: Any, is_primary: bool = True, **kwargs: Any) -> None:
        EPOCH_TIMES.clear()
        self._last = time.perf_counter()

    def on_epoch(
        self,
        trainer: Any,
        metrics: Dict[str, Any],
        epoch: int,
        is_primary: bool = True,
        **kwargs: Any,
    ) -> None:
        now = time.perf_counter()
        EPOCH_TIMES.append(now - self._last)
        self._last = now


def run(variant: str, bilm: Dict[str, str], sentences: int, epochs: int) -> List[float]:
    overrides: Dict[str, Any] = {
        "dataset_reader.max_instances": sentences,
        "validation_data_path": None,
        "test_data_path": None,
        "evaluate_on_test": False,
        "trainer.num_epochs": epochs,
        "trainer.callbacks": [{"type": "benchmark_epoch_timer"}],
        "trainer.checkpointer": {"save_completed_epochs": False},
        "trainer.validation_metric": "-loss",
    }
    if variant != "baseline":
        elmo = "model.text_field_embedder"
        projection_dim = json.loads(open(bilm["options_file"]).read())["lstm"]["projection_dim"]
        overrides[f"{elmo}.options_file"] = bilm["options_file"]
        overrides[f"{elmo}.weight_file"] = bilm["weight_file"]
        overrides[f"{elmo}.cache_activations"] = variant == "cached"
        overrides["model.encoder.input_size"] = 50 + 128 + 2 * projection_dim
    config = CONFIGS["baseline" if variant == "baseline" else "elmo"]
    with tempfile.TemporaryDirectory() as out:
        train_model_from_file(config, f"{out}/run", overrides=json.dumps(overrides))
    return list(EPOCH_TIMES)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bilm", choices=["shipped", "small", "paper"], default="shipped")
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    if args.bilm == "shipped":
        from elmo_bilm.sources.shipped import SHIPPED_OPTIONS_FILE, SHIPPED_WEIGHT_FILE

        bilm = {"options_file": str(SHIPPED_OPTIONS_FILE), "weight_file": str(SHIPPED_WEIGHT_FILE)}
    else:
        bilm = random_bilm_tf(args.bilm)
    times = {
        variant: run(variant, bilm, args.sentences, args.epochs)
        for variant in ("baseline", "uncached", "cached")
    }
    later = {variant: sum(t[1:]) / len(t[1:]) for variant, t in times.items()}
    emit(
        {
            "bench": "task_epoch",
            "bilm": args.bilm,
            "sentences": args.sentences,
            "epoch_seconds": times,
            "later_epoch_s": later,
            "cached_over_baseline": later["cached"] / later["baseline"],
            "uncached_over_baseline": later["uncached"] / later["baseline"],
        }
    )


if __name__ == "__main__":
    main()
