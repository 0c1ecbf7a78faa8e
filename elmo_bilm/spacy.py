"""Moved to `elmo_bilm.integrations.spacy`: this path is that same module."""

import sys

from elmo_bilm.integrations import spacy

sys.modules[__name__] = spacy
