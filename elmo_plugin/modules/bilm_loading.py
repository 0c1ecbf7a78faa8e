"""One place that turns the user's choice of biLM (bilm-tf files, a plugin archive, or nothing:
the shipped biLM) into a `BiLm`; the ELMo components and the biLM language model both use it."""

import logging
from typing import Any, Optional

from elmo_bilm.bilm import BiLm
from elmo_bilm.bilm_tf import load_bilm_tf
from elmo_bilm.shipped import DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE, SHIPPED_DIR

logger = logging.getLogger(__name__)


def load_bilm_archive(archive_file: str) -> Any:
    """The `elmo_plugin_bilm` model inside a `model.tar.gz` (its biLM, softmax and vocabulary)."""
    from allennlp.models.archival import load_archive

    model = load_archive(archive_file).model
    if not isinstance(getattr(model, "bilm", None), BiLm):
        raise ValueError(f"{archive_file}: not an elmo_plugin_bilm archive (no biLM inside)")
    return model


def load_bilm(
    options_file: Optional[str] = None,
    weight_file: Optional[str] = None,
    archive_file: Optional[str] = None,
    dropout: float = 0.0,
) -> BiLm:
    """bilm-tf `options_file` + `weight_file`, or an `elmo_plugin_bilm` `model.tar.gz`, or (neither)
    the biLM shipped in `elmo_bilm/pretrained`; with `dropout` on its LSTM inputs in training mode
    (whatever the source was trained with)."""
    if archive_file is not None:
        if options_file is not None or weight_file is not None:
            raise ValueError("give either archive_file or options_file + weight_file, not both")
        bilm = load_bilm_archive(archive_file).bilm
    else:
        if (options_file is None) != (weight_file is None):
            raise ValueError("options_file and weight_file go together")
        if options_file is None:
            logger.info("No biLM given: using the shipped biLM in %s", SHIPPED_DIR)
            options_file, weight_file = str(DEFAULT_OPTIONS_FILE), str(DEFAULT_WEIGHT_FILE)
        bilm = load_bilm_tf(options_file, weight_file)
    bilm.set_dropout(dropout)
    return bilm
