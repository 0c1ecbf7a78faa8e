"""Moved to `elmo_bilm.dropins.allennlp`: this path is that same module."""

import sys

from elmo_bilm.dropins import allennlp

sys.modules[__name__] = allennlp
