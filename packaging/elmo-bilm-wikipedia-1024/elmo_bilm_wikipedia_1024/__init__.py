"""The larger biLM trained here on the bundled Wikipedia (1024 LSTM cells, 256-d ELMo vectors;
see the project's docs/bilm.md), as a distribution of its own so that the core wheel stays small.
Installed, it is the published name `wikipedia_1024` wherever a biLM is named
(`Elmo.from_pretrained("wikipedia_1024")`, `elmo-embed --options-file wikipedia_1024`,
`ELMO_OPTIONS_FILE=wikipedia_1024`)."""

from pathlib import Path

BILM_DIR = Path(__file__).resolve().parent
