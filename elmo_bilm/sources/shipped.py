"""Where the biLM shipped with the package lives (the default of every ELMo component)."""

from pathlib import Path

SHIPPED_DIR = Path(__file__).resolve().parents[1] / "pretrained" / "wikipedia"
DEFAULT_OPTIONS_FILE = SHIPPED_DIR / "options.json"
DEFAULT_WEIGHT_FILE = SHIPPED_DIR / "weights.hdf5"
DEFAULT_VOCAB_FILE = SHIPPED_DIR / "vocab.txt"
