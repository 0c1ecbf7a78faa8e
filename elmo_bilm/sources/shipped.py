"""Where the biLM shipped with the package lives (the default of every ELMo component)."""

from pathlib import Path

SHIPPED_DIR = Path(__file__).resolve().parents[1] / "pretrained" / "wikipedia"
SHIPPED_OPTIONS_FILE = SHIPPED_DIR / "options.json"
SHIPPED_WEIGHT_FILE = SHIPPED_DIR / "weights.hdf5"
SHIPPED_VOCAB_FILE = SHIPPED_DIR / "vocab.txt"
