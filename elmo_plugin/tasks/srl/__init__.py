"""CoNLL-2012 SRL (Supplement A.5): allennlp-models' `srl` model (He et al. 2017)."""

import allennlp_models.structured_prediction  # noqa: F401  (srl)

from elmo_plugin.tasks.srl.dataset_readers.srl import SrlTaskReader  # noqa: F401
from elmo_plugin.tasks.srl.predictors.srl import OfflineSrlPredictor  # noqa: F401
