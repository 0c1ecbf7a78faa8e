"""Mirrors `allennlp.modules.elmo_lstm`: this path is `elmo_bilm.dropins.elmo_lstm`, the same module."""

import sys

from elmo_bilm.dropins import elmo_lstm

sys.modules[__name__] = elmo_lstm
