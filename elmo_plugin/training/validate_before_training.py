"""Measure the validation metrics before the first update (Table 7: perplexity before/after tuning)."""

import json
import logging
import os
from typing import Any

from allennlp.training.callbacks.callback import TrainerCallback

logger = logging.getLogger(__name__)

OUTPUT_NAME = "metrics_before_training.json"


@TrainerCallback.register("elmo_plugin_validate_before_training")
class ValidateBeforeTraining(TrainerCallback):
    """Runs one validation pass before training starts and writes the model's metrics (e.g. the
    biLM's dev `perplexity`) to `SERIALIZATION_DIR/metrics_before_training.json`, so a domain
    fine-tuning run reports dev perplexity before and after (the "after" is in `metrics.json`).
    Skipped when resuming a run that already has the file, and for a biLM whose softmax starts
    fresh (published bilm-tf files carry none): its perplexity would measure a random softmax.

    Registered as a `TrainerCallback` with name "elmo_plugin_validate_before_training".
    """

    def on_start(self, trainer: Any, is_primary: bool = True, **kwargs: Any) -> None:
        super().on_start(trainer, is_primary=is_primary, **kwargs)
        path = os.path.join(self.serialization_dir, OUTPUT_NAME)
        if os.path.exists(path) or trainer._validation_data_loader is None:
            return
        if not getattr(trainer.model, "softmax_pretrained", True):
            logger.warning(
                "No perplexity before training: the biLM's softmax starts fresh (bilm-tf files "
                "carry none), so it would measure a random softmax, not the pretrained biLM"
            )
            return
        loss, _, batches = trainer._validation_loss(epoch=-1)
        metrics = {f"validation_{k}": v for k, v in trainer.model.get_metrics(reset=True).items()}
        metrics["validation_loss"] = loss / max(batches, 1)
        logger.info("Before training: %s", metrics)
        if is_primary:
            with open(path, "w") as handle:
                json.dump(metrics, handle, indent=2)
