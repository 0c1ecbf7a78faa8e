"""One place that turns the user's choice of biLM (bilm-tf files, a plugin archive, or nothing:
the shipped small biLM) into a `BiLm`."""
import logging
from pathlib import Path
from typing import Optional

from elmo_plugin.bilm.bilm import BiLm
from elmo_plugin.bilm.bilm_tf import load_bilm_tf

logger = logging.getLogger(__name__)

PRETRAINED_DIR = Path(__file__).resolve().parents[1] / "pretrained" / "small"
DEFAULT_OPTIONS_FILE = PRETRAINED_DIR / "options.json"
DEFAULT_WEIGHT_FILE = PRETRAINED_DIR / "weights.hdf5"


def load_bilm(
    options_file: Optional[str] = None,
    weight_file: Optional[str] = None,
    archive_file: Optional[str] = None,
) -> BiLm:
    """bilm-tf `options_file` + `weight_file`, or an `elmo_plugin_bilm` `model.tar.gz`, or (neither)
    the small biLM shipped in `elmo_plugin/pretrained/small`."""
    if archive_file is not None:
        if options_file is not None or weight_file is not None:
            raise ValueError("give either archive_file or options_file + weight_file, not both")
        from allennlp.models.archival import load_archive

        model = load_archive(archive_file).model
        bilm = getattr(model, "bilm", None)
        if not isinstance(bilm, BiLm):
            raise ValueError(f"{archive_file}: not an elmo_plugin_bilm archive (no biLM inside)")
        return bilm
    if (options_file is None) != (weight_file is None):
        raise ValueError("options_file and weight_file go together")
    if options_file is None:
        logger.info("No biLM given: using the shipped small biLM in %s", PRETRAINED_DIR)
        options_file, weight_file = str(DEFAULT_OPTIONS_FILE), str(DEFAULT_WEIGHT_FILE)
    return load_bilm_tf(options_file, weight_file)
