"""CoNLL-2003 NER (Supplement A.7): allennlp-models' `crf_tagger` with the A.7 encoder."""

import allennlp_models.tagging  # noqa: F401  (crf_tagger)

from elmo_plugin.tasks.ner.dataset_readers.conll2003 import Conll2003TaskReader  # noqa: F401
from elmo_plugin.tasks.ner.modules.stacked_bilstm_encoder import StackedBiLstmEncoder  # noqa: F401
