"""Moved to `elmo_bilm.dropins.flair`: this path is that same module."""

import sys

from elmo_bilm.dropins import flair

sys.modules[__name__] = flair
