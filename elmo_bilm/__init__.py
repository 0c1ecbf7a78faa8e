"""The torch-only ELMo core: the biLM, AllenNLP's `Elmo` / `ElmoEmbedder` API without AllenNLP,
bilm-tf's files in and out, and embeddings read back from Parquet."""

from elmo_bilm.elmo import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_OPTIONS_FILE,
    DEFAULT_WEIGHT_FILE,
    Elmo,
    ElmoEmbedder,
    batch_to_ids,
)
from elmo_bilm.formats.bilm_tf import FormatError, export_bilm_tf, load_bilm_tf, read_options
from elmo_bilm.formats.parquet import read_embeddings
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.characters import ELMoCharacterMapper
