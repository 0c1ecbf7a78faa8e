"""NLPL's simple_elmo API (issue 68): `elmo_bilm.simple_elmo.ElmoModel` loads the tiny bilm-tf
fixture packed as an NLPL model (an unzipped folder and the ZIP archive: `options.json`,
`model.hdf5`, `vocab.txt`) and returns what `ElmoEmbedder` gives, in simple_elmo's shapes: zero
padded, "average" / "top" / "all" layers, and unit-length text averages; a script in the style of
its README runs with only the import line switched."""

import difflib
import runpy
import shutil
import sys
import zipfile
from pathlib import Path
from typing import List

import numpy
import pytest

from elmo_bilm import ElmoEmbedder
from elmo_bilm.dropins.simple_elmo import ElmoModel, divide_chunks
from elmo_bilm.utils.files import UsageError
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, ONE_REDUCTION, assert_float32_close

TEXTS: List[List[str]] = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Dogs", "bark"],
    ["A", "very", "long", "sentence", "about", "nothing", "much", "at", "all", "!"],
    ["one"],
]
DIM, N_LAYERS = 32, 3


def _nlpl_folder(root: Path) -> Path:
    """The fixture laid out as an NLPL model folder."""
    folder = root / "nlpl_model"
    folder.mkdir()
    shutil.copy(OPTIONS_FILE, folder / "options.json")
    shutil.copy(WEIGHT_FILE, folder / "model.hdf5")
    (folder / "vocab.txt").write_text("<S>\n</S>\n<UNK>\nthe\ncat\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def nlpl(tmp_path_factory) -> Path:
    return _nlpl_folder(tmp_path_factory.mktemp("simple_elmo"))


@pytest.fixture(scope="module")
def model(nlpl) -> ElmoModel:
    """Stateless: its vectors are the first batch's whatever ran before (the stateful default,
    simple_elmo's, is tests/elmo_bilm/dropins/test_stateful.py's)."""
    elmo = ElmoModel()
    assert elmo.load(str(nlpl), cuda_device=-1, stateful=False) == "The model is now loaded."
    return elmo


@pytest.fixture(scope="module")
def reference() -> List[numpy.ndarray]:
    """Each text's `(3, n_tokens, dim)` layers from `ElmoEmbedder` on the bilm-tf files."""
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), cuda_device=-1, stateful=False)
    return [embedder.embed_sentence(text) for text in TEXTS]


def test_load_sets_its_attributes(model):
    assert model.batch_size == 32 and model.max_chars == 50
    assert model.vector_size == DIM and model.n_layers == N_LAYERS


@pytest.mark.parametrize("layers", ["average", "top"])
def test_get_elmo_vectors(model, reference, layers):
    vectors = model.get_elmo_vectors(TEXTS, layers=layers)
    longest = max(len(text) for text in TEXTS)
    assert vectors.shape == (len(TEXTS), longest, DIM) and vectors.dtype == numpy.float64
    for row, (text, layered) in enumerate(zip(TEXTS, reference)):
        expected = layered.mean(axis=0) if layers == "average" else layered[-1]
        assert_float32_close(vectors[row, : len(text)], expected, NETWORK, f"text {row}")
        assert not vectors[row, len(text) :].any(), f"text {row}: padding not zero"


def test_the_default_layers_are_the_average(model):
    numpy.testing.assert_array_equal(
        model.get_elmo_vectors(TEXTS), model.get_elmo_vectors(TEXTS, layers="average")
    )


def test_get_elmo_vectors_all_layers(model, reference):
    vectors = model.get_elmo_vectors(TEXTS, layers="all")
    longest = max(len(text) for text in TEXTS)
    assert vectors.shape == (len(TEXTS), N_LAYERS, longest, DIM)
    for row, (text, layered) in enumerate(zip(TEXTS, reference)):
        assert_float32_close(vectors[row, :, : len(text)], layered, NETWORK, f"text {row}")
        assert not vectors[row, :, len(text) :].any()


@pytest.mark.parametrize("layers", ["average", "top", "all"])
def test_get_elmo_vector_average(model, reference, layers):
    """The text's token vectors' mean over its length, divided by its L2 (for "all": Frobenius)
    norm, as simple_elmo scales it."""
    averages = model.get_elmo_vector_average(TEXTS, layers=layers)
    shape = (len(TEXTS), N_LAYERS, DIM) if layers == "all" else (len(TEXTS), DIM)
    assert averages.shape == shape and averages.dtype == numpy.float64
    for row, layered in enumerate(reference):
        kept = {"average": layered.mean(axis=0), "top": layered[-1], "all": layered}[layers]
        mean = kept.astype(numpy.float64).mean(axis=-2)
        expected = mean / numpy.linalg.norm(mean)
        assert_float32_close(averages[row], expected, NETWORK, f"text {row}")
        assert abs(numpy.linalg.norm(averages[row]) - 1.0) < ONE_REDUCTION * 2**-23


def test_the_zip_archive_equals_the_folder(model, nlpl, tmp_path, monkeypatch):
    """NLPL's ZIP (files at its root, as the repository serves them) loads through the resolver,
    unpacked once into the cache."""
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    archive = tmp_path / "223.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        for name in ("options.json", "model.hdf5", "vocab.txt"):
            packed.write(nlpl / name, name)
    zipped = ElmoModel()
    assert zipped.load(str(archive), max_batch_size=2, cuda_device=-1, stateful=False) == (
        "The model is now loaded."
    )
    assert zipped.batch_size == 2
    for layers in ("average", "top", "all"):
        assert_float32_close(
            zipped.get_elmo_vectors(TEXTS, layers=layers),
            model.get_elmo_vectors(TEXTS, layers=layers),
            NETWORK,
            layers,
        )


def test_warmup_and_batches_do_not_change_the_vectors(model):
    """Stateless (`stateful=False`): `warmup` changes nothing; neither do batch boundaries."""
    first = model.get_elmo_vectors(TEXTS, warmup=True)
    numpy.testing.assert_array_equal(model.get_elmo_vectors(TEXTS, warmup=False), first)
    model.batch_size = 1
    try:
        assert_float32_close(model.get_elmo_vectors(TEXTS), first, NETWORK)
    finally:
        model.batch_size = 32


def test_empty_inputs(model):
    assert model.get_elmo_vectors([]).shape == (0, 0, DIM)
    assert model.get_elmo_vector_average([]).shape == (0, DIM)
    averages = model.get_elmo_vector_average([[], ["one"]])
    assert not averages[0].any() and abs(numpy.linalg.norm(averages[1]) - 1.0) < 1e-6


def test_session_is_accepted_and_ignored(model):
    """Stateless: no states to keep in a session (the stateful default keeps them per session,
    tests/elmo_bilm/dropins/test_stateful.py)."""
    numpy.testing.assert_array_equal(
        model.get_elmo_vectors(TEXTS, session=object()), model.get_elmo_vectors(TEXTS)
    )


def test_bad_calls(model, nlpl, tmp_path):
    with pytest.raises(UsageError, match="layers"):
        model.get_elmo_vectors(TEXTS, layers="bottom")
    with pytest.raises(TypeError, match="text 1 is the string"):
        model.get_elmo_vectors([["a"], "a text"])
    with pytest.raises(TypeError):
        model.get_elmo_vector_average("a text")
    with pytest.raises(UsageError, match="load"):
        ElmoModel().get_elmo_vectors(TEXTS)
    with pytest.raises(UsageError, match="full=True"):
        ElmoModel().load(str(nlpl), full=True)
    with pytest.raises(UsageError, match="max_batch_size"):
        ElmoModel().load(str(nlpl), max_batch_size=0)
    with pytest.raises(OSError):
        ElmoModel().load(str(tmp_path / "missing"))


def test_divide_chunks():
    assert list(divide_chunks([1, 2, 3, 4, 5], 2)) == [[1, 2], [3, 4], [5]]


# A script written for simple_elmo the way its README documents the API: load a model folder or
# ZIP, get padded token vectors (cut back to each sentence's length) and one vector per text.
PUBLIC_SCRIPT = """\
import sys
import numpy as np
from simple_elmo import ElmoModel

sentences = [line.split() for line in ["the cat sat on the mat", "dogs bark", "a cat"]]
model = ElmoModel()
print(model.load(sys.argv[1], max_batch_size=2))
elmo_vectors = model.get_elmo_vectors(sentences, layers="average")
print(elmo_vectors.shape)
cropped = [vect[: len(sent), :] for vect, sent in zip(elmo_vectors, sentences)]
print([c.shape[0] for c in cropped])
top = model.get_elmo_vectors(sentences, layers="top")
every = model.get_elmo_vectors(sentences, layers="all")
print(top.shape, every.shape)
text_vectors = model.get_elmo_vector_average(sentences)
print(text_vectors.shape, round(float(np.dot(text_vectors[0], text_vectors[0])), 5))
"""


@pytest.mark.parametrize("packed", ["folder", "zip"])
def test_a_public_script_runs_with_the_import_line_switched(
    nlpl, tmp_path, monkeypatch, capsys, packed
):
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    ours = PUBLIC_SCRIPT.replace(
        "from simple_elmo import ElmoModel", "from elmo_bilm.dropins.simple_elmo import ElmoModel"
    )
    changed = [
        line
        for line in difflib.unified_diff(PUBLIC_SCRIPT.splitlines(), ours.splitlines(), n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert len(changed) == 2, changed  # one line out, one line in
    path = str(nlpl)
    if packed == "zip":
        path = str(tmp_path / "model.zip")
        with zipfile.ZipFile(path, "w") as archive:
            for name in ("options.json", "model.hdf5", "vocab.txt"):
                archive.write(nlpl / name, name)
    script = tmp_path / "vectors.py"
    script.write_text(ours, encoding="utf-8")
    monkeypatch.setattr(sys, "argv", [str(script), path])
    runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.splitlines() == [
        "The model is now loaded.",
        f"(3, 6, {DIM})",
        "[6, 2, 2]",
        f"(3, 6, {DIM}) (3, {N_LAYERS}, 6, {DIM})",
        f"(3, {DIM}) 1.0",
    ]


# ---- careless values (issue 80's sweep)


@pytest.mark.parametrize("stateful", [True, False])
def test_texts_given_as_a_generator_are_embedded_not_consumed_by_the_checks(nlpl, stateful):
    # the string check read the generator up, then `len(texts)` failed: "object of type
    # 'generator' has no len()"
    elmo = ElmoModel()
    elmo.load(str(nlpl), cuda_device=-1, stateful=stateful)
    expected = elmo.get_elmo_vectors(TEXTS)
    assert numpy.array_equal(elmo.get_elmo_vectors(text for text in TEXTS), expected)
    assert numpy.array_equal(elmo.get_elmo_vectors(iter(TEXTS)), expected)
    average = elmo.get_elmo_vector_average(TEXTS)
    assert numpy.array_equal(elmo.get_elmo_vector_average(iter(TEXTS)), average)
    assert elmo.get_elmo_vectors(iter([])).shape == (0, 0, DIM)


@pytest.mark.parametrize("size", [numpy.int64(2), numpy.int32(2), 2.0])
def test_max_batch_size_of_numpy_or_a_whole_float_is_read(nlpl, size):
    # numpy.int64(2) was "must be a whole number of at least 1"
    elmo = ElmoModel()
    elmo.load(str(nlpl), max_batch_size=size, cuda_device=numpy.int64(-1), stateful=False)
    assert elmo.batch_size == 2 and type(elmo.batch_size) is int


@pytest.mark.parametrize("size", [0, -1, 2.5, float("nan"), "2", None, True])
def test_a_bad_max_batch_size_is_still_one_line(nlpl, size):
    with pytest.raises(UsageError, match="max_batch_size must be a whole number"):
        ElmoModel().load(str(nlpl), max_batch_size=size)
