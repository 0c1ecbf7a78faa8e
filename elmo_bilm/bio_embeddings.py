"""Moved to `elmo_bilm.dropins.bio_embeddings`: this path is that same module."""

import sys

from elmo_bilm.dropins import bio_embeddings

sys.modules[__name__] = bio_embeddings
