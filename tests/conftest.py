"""Shared test set-up: offline Hugging Face, paths to the bundled data (never copied into the repo)."""

import json
import os
import shutil
import sys
from pathlib import Path
from typing import List

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Tests run on the CPU even where a GPU is visible (AllenNLP would train on it, and CUDA's
# nondeterministic kernels and TF32 break the exact comparisons); the GPU check is `make gpu-check`.
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The bundled data beside the checkout (this project's machines keep it at ../shared/data) is the
# test suite's default, not the package's: the configs read their data through ELMO_PLUGIN_DATA.
os.environ.setdefault(
    "ELMO_PLUGIN_DATA", str(Path(__file__).resolve().parents[1].parent / "shared" / "data")
)
_DATA = Path(os.environ["ELMO_PLUGIN_DATA"])
# Tests run the configs on the tiny bilm-tf fixture biLM, not the shipped default.
os.environ["ELMO_OPTIONS_FILE"] = str(_DATA / "elmo_fixture" / "options.json")
os.environ["ELMO_WEIGHT_FILE"] = str(_DATA / "elmo_fixture" / "lm_weights.hdf5")
# the width the configs read from it (the plugin passes it to jsonnet at each config load; tests
# compute expected sizes from it)
os.environ["ELMO_PROJECTION_DIM"] = "16"

# ... and train their word embeddings from scratch (the baseline vectors are built from the whole
# bundled Wikipedia; tests/elmo_plugin/data/test_word_vectors.py covers the vectors themselves)
for _variable in ("SNLI", "SQUAD", "SRL", "COREF", "CONLL2003", "SST"):
    os.environ[f"{_variable}_WORD_VECTORS"] = ""

REPO_ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("ELMO_PLUGIN_FIXTURES", str(REPO_ROOT / "fixtures"))

import elmo_plugin  # noqa: E402,F401  (registers components)

DATA = _DATA
ELMO_FIXTURE = DATA / "elmo_fixture"
OPTIONS_FILE = ELMO_FIXTURE / "options.json"
WEIGHT_FILE = ELMO_FIXTURE / "lm_weights.hdf5"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove the folder `allennlp.common.testing` makes when imported: its test cases remove it
    in their teardown only, so a process that imported it and ran none of them (one of xdist's
    workers, say) left an empty folder in the temporary directory at every run."""
    module = sys.modules.get("allennlp.common.testing.test_case")
    if module is not None:
        shutil.rmtree(module.TEST_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def fixture_sentences() -> List[List[List[str]]]:
    """The 3 lists of 10 tokenised sentences bilm-tf's reference activations were computed on."""
    with open(ELMO_FIXTURE / "sentences.json") as handle:
        return [[sentence.split() for sentence in group] for group in json.load(handle)]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


def free_port() -> int:
    """A TCP port nothing listens on now (for a distributed process group)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
