"""The biLM trained here on the bundled Wikipedia in one call on a lent GPU (1024 LSTM cells with
256-d projections, 512-d ELMo vectors; see the project's docs/bilm.md), as a distribution of its
own so that the core wheel stays small. Installed, it is the published name `wikipedia_1024_256`
wherever a biLM is named (`Elmo.from_pretrained("wikipedia_1024_256")`,
`elmo-embed --options-file wikipedia_1024_256`, `ELMO_OPTIONS_FILE=wikipedia_1024_256`)."""

from pathlib import Path

BILM_DIR = Path(__file__).resolve().parent
