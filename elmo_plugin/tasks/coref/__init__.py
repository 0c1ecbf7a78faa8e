"""CoNLL-2012 coreference (Supplement A.6): Lee et al. 2017."""

from elmo_plugin.tasks.coref.dataset_readers.coref import CorefTaskReader  # noqa: F401
from elmo_plugin.tasks.coref.models.coref_lee2017 import Lee2017Coreference  # noqa: F401
from elmo_plugin.tasks.coref.predictors.coref import OfflineCorefPredictor  # noqa: F401
