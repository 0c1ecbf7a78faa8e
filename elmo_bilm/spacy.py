"""`elmo_bilm.spacy`, the documented import path of `elmo_bilm.integrations.spacy` (the same module)."""

import sys

from elmo_bilm.integrations import spacy as _module

sys.modules[__name__] = _module
