from elmo_bilm.bilm import BiLm
from elmo_bilm.bilm_tf import FormatError, export_bilm_tf, load_bilm_tf, read_options
from elmo_bilm.characters import ELMoCharacterMapper
from elmo_bilm.elmo import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_OPTIONS_FILE,
    DEFAULT_WEIGHT_FILE,
    Elmo,
    ElmoEmbedder,
    batch_to_ids,
)
from elmo_bilm.parquet import read_embeddings
