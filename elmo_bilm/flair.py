"""`elmo_bilm.flair`, the documented import path of `elmo_bilm.integrations.flair` (the same module)."""

import sys

from elmo_bilm.integrations import flair as _module

sys.modules[__name__] = _module
