"""SQuAD 1.1 (Supplement A.4): Clark and Gardner's BiDAF + self-attention."""

import allennlp_models.rc  # noqa: F401  (reading_comprehension predictor)

from elmo_plugin.tasks.squad.dataset_readers.squad import SquadTaskReader  # noqa: F401
from elmo_plugin.tasks.squad.models.bidaf_self_attention import BidafSelfAttention  # noqa: F401
