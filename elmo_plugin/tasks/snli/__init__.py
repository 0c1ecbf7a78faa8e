"""SNLI (Supplement A.3): allennlp-models' ESIM with the plugin's reader."""

import allennlp_models.pair_classification  # noqa: F401  (esim)

from elmo_plugin.tasks.snli.dataset_readers.snli import ElmoSnliReader  # noqa: F401
