"""This project's biLMs (the core's `wikipedia`, the distributions `elmo-bilm-wikipedia-1024` and
`elmo-bilm-wikipedia-1024-256`): each loads, and its softmax matches its vocabulary."""

import json
from pathlib import Path

import h5py
import pytest

from elmo_bilm import load_bilm_tf
from elmo_bilm.sources.published import LOCAL, local_files
from elmo_bilm.sources.shipped import SHIPPED_DIR

# this project's biLMs, by name: the core's default and the larger ones (distributions of their own)
SHIPPED = [Path(local_files(name)[0]).parent for name in LOCAL]


def test_the_default_is_among_the_shipped_biLMs():
    assert SHIPPED_DIR in SHIPPED and len(SHIPPED) == 3
    assert [path.name for path in SHIPPED_DIR.parent.iterdir()] == ["wikipedia"]  # one in the core


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda path: path.name)
def test_every_shipped_biLM_loads_with_a_softmax_over_its_vocabulary(folder):
    options = json.loads((folder / "options.json").read_text())
    bilm = load_bilm_tf(str(folder / "options.json"), str(folder / "weights.hdf5"))
    assert bilm.get_output_dim() == 2 * options["lstm"]["projection_dim"]
    words = (folder / "vocab.txt").read_text().splitlines()
    assert words[:3] == ["<S>", "</S>", "<UNK>"] and options["n_tokens_vocab"] == len(words)
    with h5py.File(folder / "weights.hdf5", "r") as weights:
        assert weights["softmax/W"].shape == (len(words), options["lstm"]["projection_dim"])
