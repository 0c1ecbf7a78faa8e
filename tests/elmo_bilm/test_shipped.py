"""The biLMs shipped under `elmo_bilm/pretrained/`: each loads, and its softmax matches its vocabulary."""

import json

import h5py
import pytest

from elmo_bilm import load_bilm_tf
from elmo_bilm.shipped import SHIPPED_DIR

SHIPPED = sorted(SHIPPED_DIR.parent.iterdir())


def test_the_default_is_among_the_shipped_biLMs():
    assert SHIPPED_DIR in SHIPPED and len(SHIPPED) >= 2


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda path: path.name)
def test_every_shipped_biLM_loads_with_a_softmax_over_its_vocabulary(folder):
    options = json.loads((folder / "options.json").read_text())
    bilm = load_bilm_tf(str(folder / "options.json"), str(folder / "weights.hdf5"))
    assert bilm.get_output_dim() == 2 * options["lstm"]["projection_dim"]
    words = (folder / "vocab.txt").read_text().splitlines()
    assert words[:3] == ["<S>", "</S>", "<UNK>"] and options["n_tokens_vocab"] == len(words)
    with h5py.File(folder / "weights.hdf5", "r") as weights:
        assert weights["softmax/W"].shape == (len(words), options["lstm"]["projection_dim"])
