"""SNLI (Supplement A.3): allennlp-models' ESIM (with the paper's attention dropout) and the plugin's reader."""

from elmo_plugin.tasks.snli.dataset_readers.snli import SnliTaskReader  # noqa: F401
from elmo_plugin.tasks.snli.models.esim import ElmoEsim  # noqa: F401
