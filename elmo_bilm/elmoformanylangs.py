"""Moved to `elmo_bilm.dropins.elmoformanylangs`: this path is that same module."""

import sys

from elmo_bilm.dropins import elmoformanylangs

sys.modules[__name__] = elmoformanylangs
