"""`elmo_bilm.precision`, the documented import path of `elmo_bilm.runtime.precision` (the same module)."""

import sys

from elmo_bilm.runtime import precision as _module

sys.modules[__name__] = _module
