"""Moved to `elmo_bilm.runtime.precision`: this path is that same module."""

import sys

from elmo_bilm.runtime import precision

sys.modules[__name__] = precision
