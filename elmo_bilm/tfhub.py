"""Moved to `elmo_bilm.dropins.tfhub`: this path is that same module."""

import sys

from elmo_bilm.dropins import tfhub

sys.modules[__name__] = tfhub
