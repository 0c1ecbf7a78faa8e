"""Moved to `elmo_bilm.dropins.simple_elmo`: this path is that same module."""

import sys

from elmo_bilm.dropins import simple_elmo

sys.modules[__name__] = simple_elmo
