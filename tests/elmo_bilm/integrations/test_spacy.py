"""The spaCy 3 component `elmo` and the architecture `elmo_bilm.ElmoTok2Vec.v1` (elmo_bilm.integrations.spacy),
on the tiny fixture biLM."""

import os
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import List

import numpy
import pytest
import spacy
import torch
from spacy.tokens import DocBin

from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

TEXTS = [
    "The cat sat on the mat .",
    "",
    "Hello  world !",  # two spaces: a whitespace token
    "   ",
    "A much longer sentence , with more tokens than the others have in it .",
    "One\n\ntwo",
    "x",
]


@pytest.fixture(scope="module")
def embedder() -> ElmoEmbedder:
    return ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=False)  # as spaCy's


def blank(**config) -> spacy.language.Language:
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": str(OPTIONS_FILE), "weights": str(WEIGHT_FILE), **config})
    return nlp


def words(doc) -> List[int]:
    """The tokens the biLM sees: all but whitespace."""
    return [token.i for token in doc if not token.is_space]


def test_attributes_against_elmo_embedder(embedder):
    doc = blank()("The cat  sat on\n the mat .")
    kept = words(doc)
    assert len(kept) < len(doc)  # whitespace tokens are there
    layers = doc._.elmo
    assert layers.dtype == numpy.float32 and layers.shape == (3, len(doc), 32)
    expected = embedder.embed_sentence([doc[i].text for i in kept])
    numpy.testing.assert_allclose(layers[:, kept], expected, atol=1e-6)
    for token in doc:  # whitespace tokens: zero rows, not fed to the biLM
        if token.is_space:
            assert not token._.elmo.any()
    numpy.testing.assert_array_equal(doc[1]._.elmo, layers[:, 1])
    numpy.testing.assert_array_equal(doc[1:4]._.elmo, layers[:, 1:4])
    assert doc.tensor.size == 0  # no set_tensor: spaCy's tensor untouched


def softmax(weights: List[float]) -> numpy.ndarray:
    return torch.softmax(torch.tensor(weights), 0).numpy()


def test_tensor_and_hooks(embedder):
    text = "The cat  sat on the mat ."
    layers = blank()(text)._.elmo
    kept = [i for i in range(layers.shape[1]) if layers[:, i].any()]
    for how, expected in (
        ("all", layers.transpose(1, 0, 2).reshape(layers.shape[1], -1)),
        ("top", layers[-1]),
        ("average", layers.mean(axis=0)),
        ([0.2, 0.3, 0.5], numpy.tensordot(softmax([0.2, 0.3, 0.5]), layers, axes=1)),
    ):
        doc = blank(set_tensor=True, layers=how)(text)
        numpy.testing.assert_allclose(doc.tensor, expected, atol=1e-6)
    # fixed weights are Eq. (1)'s raw w_j, as everywhere: Elmo with them and gamma 1 agrees
    elmo = Elmo(
        str(OPTIONS_FILE),
        str(WEIGHT_FILE),
        1,
        dropout=0.0,
        scalar_mix_parameters=[0.2, 0.3, 0.5],
    )
    tokens = [doc[i].text for i in kept]
    with torch.no_grad():
        mixed = elmo(batch_to_ids([tokens]))["elmo_representations"][0][0].numpy()
    numpy.testing.assert_allclose(doc.tensor[kept], mixed, atol=1e-5)
    # vectors: the tensor's rows, means over the non-whitespace tokens; similarity: the cosine
    numpy.testing.assert_array_equal(doc[1].vector, doc.tensor[1])
    numpy.testing.assert_allclose(doc.vector, doc.tensor[kept].mean(axis=0), atol=1e-6)
    numpy.testing.assert_allclose(doc[1:4].vector, doc.tensor[[1, 3]].mean(axis=0), atol=1e-6)
    assert doc[2].is_space and not doc[2].vector.any()
    a, b = doc[0].vector, doc[1].vector
    cosine = a @ b / numpy.linalg.norm(a) / numpy.linalg.norm(b)
    assert doc[0].similarity(doc[1]) == pytest.approx(cosine, abs=1e-6)
    assert doc.similarity(doc) == pytest.approx(1.0, abs=1e-6)
    assert doc[0:2].similarity(doc[0:2]) == pytest.approx(1.0, abs=1e-6)
    assert doc.has_vector and doc[0].has_vector


def test_pipe_equals_one_by_one_and_elmo_embedder(embedder):
    nlp = blank(batch_size=2, set_tensor=True, layers="top")
    piped = list(nlp.pipe(TEXTS * 2, batch_size=3))
    assert [doc.text for doc in piped] == TEXTS * 2  # input order
    for doc in piped:
        alone = nlp(doc.text)
        numpy.testing.assert_allclose(doc._.elmo, alone._.elmo, atol=1e-5)
        numpy.testing.assert_allclose(doc.tensor, alone.tensor, atol=1e-5)
    sentences = [[doc[i].text for i in words(doc)] for doc in piped]
    for doc, expected in zip(piped, embedder.embed_sentences(sentences, batch_size=4)):
        numpy.testing.assert_allclose(doc._.elmo[:, words(doc)], expected, atol=1e-5)


def test_empty_and_whitespace_docs():
    nlp = blank(set_tensor=True)
    empty = nlp("")
    assert empty._.elmo.shape == (3, 0, 32) and empty.tensor.shape == (0, 96)
    assert empty.vector.shape == (96,) and not empty.vector.any()
    spaces = nlp("   \n ")
    assert len(spaces) and spaces._.elmo.shape == (3, len(spaces), 32)
    assert not spaces._.elmo.any() and not spaces.vector.any()
    assert spaces.similarity(empty) == 0.0
    assert [doc._.elmo.shape[1] for doc in nlp.pipe(["", "  ", ""])] == [0, 1, 0]


def test_precision_setting_runs_the_biLM_as_elmo_embedder_does():
    text = "The cat sat on the mat ."
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), precision="int8")
    layers = blank(precision="int8")(text)._.elmo
    numpy.testing.assert_array_equal(layers, embedder.embed_sentence(text.split()))
    with pytest.raises(ValueError, match="precision must be one of"):
        blank(precision="fp8")


def test_bad_settings_fail_early():
    with pytest.raises(ValueError, match="layers must be"):
        blank(layers="bottom")
    with pytest.raises(ValueError, match="2 layer weights for a biLM of 3 layers"):
        blank(layers=[0.5, 0.5]).initialize()
    with pytest.raises(ValueError, match="device must be the CPU or a CUDA device, got .gpu:x."):
        blank(device="gpu:x")
    with pytest.raises(ValueError, match="batch_size"):
        blank(batch_size=0)


def test_sentences_are_fed_alone(embedder):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("elmo", config={"model": str(OPTIONS_FILE), "weights": str(WEIGHT_FILE)})
    doc = nlp("The cat sat . It was on the mat .")
    assert len(list(doc.sents)) == 2
    for sentence in doc.sents:
        expected = embedder.embed_sentence([token.text for token in sentence])
        numpy.testing.assert_allclose(sentence._.elmo, expected, atol=1e-6)
    whole = blank(sentences=False)
    whole.add_pipe("sentencizer", first=True)
    expected = embedder.embed_sentence([token.text for token in doc])
    numpy.testing.assert_allclose(whole(doc.text)._.elmo, expected, atol=1e-6)


def test_docs_pickle_and_docbin_keep_the_layers():
    """A doc travels with its layers: pickled (the hooks too: module-level functions), and
    in a DocBin with user data (neither hooks nor `doc.tensor`: spaCy's DocBin keeps neither)."""
    nlp = blank(set_tensor=True)
    doc = nlp("The cat sat .")
    copy = pickle.loads(pickle.dumps(doc))
    numpy.testing.assert_array_equal(copy._.elmo, doc._.elmo)
    assert copy[0].similarity(copy[1]) == doc[0].similarity(doc[1])
    docs = DocBin(store_user_data=True, docs=[doc]).to_bytes()
    [restored] = DocBin().from_bytes(docs).get_docs(nlp.vocab)
    numpy.testing.assert_array_equal(restored._.elmo, doc._.elmo)  # (a DocBin keeps no tensor)


def test_to_disk_and_load_without_the_original_files(tmp_path):
    source = tmp_path / "bilm"
    source.mkdir()
    options, weights = shutil.copy(OPTIONS_FILE, source), shutil.copy(WEIGHT_FILE, source)
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "elmo",
        config={"model": options, "weights": weights, "set_tensor": True, "layers": "average"},
    )
    before = nlp("The cat sat on the mat .")
    nlp.to_disk(tmp_path / "pipeline")
    shutil.rmtree(source)
    assert sorted(p.name for p in (tmp_path / "pipeline" / "elmo").iterdir()) == [
        "cfg",
        "options.json",
        "weights.hdf5",
    ]
    loaded = spacy.load(tmp_path / "pipeline")
    after = loaded("The cat sat on the mat .")
    numpy.testing.assert_array_equal(after._.elmo, before._.elmo)
    numpy.testing.assert_array_equal(after.tensor, before.tensor)
    # saved again from the loaded pipeline (its files are the folder's own), and through bytes
    loaded.to_disk(tmp_path / "again")
    again = spacy.load(tmp_path / "again")
    numpy.testing.assert_array_equal(again("The cat sat on the mat .")._.elmo, before._.elmo)
    component = spacy.blank("en").add_pipe("elmo")
    component.from_bytes(loaded.get_pipe("elmo").to_bytes())
    numpy.testing.assert_array_equal(component(nlp.make_doc(before.text))._.elmo, before._.elmo)


def test_named_bilm_is_kept_by_name(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")  # the shipped biLM, by name: not loaded, not copied
    nlp.to_disk(tmp_path)
    assert sorted(p.name for p in (tmp_path / "elmo").iterdir()) == ["cfg"]
    assert spacy.load(tmp_path).get_pipe("elmo").cfg["model"] == "wikipedia"


def test_registered_by_entry_points_and_core_free_of_spacy():
    """spaCy finds the factory and the architecture without an import of elmo_bilm.integrations.spacy; the
    core imports no spaCy, the component no AllenNLP."""
    code = (
        "import sys, elmo_bilm\n"
        "assert 'spacy' not in sys.modules and 'thinc' not in sys.modules\n"
        "import spacy\n"
        "assert 'elmo_bilm.integrations.spacy' not in sys.modules\n"
        "assert spacy.registry.architectures.get('elmo_bilm.ElmoTok2Vec.v1')\n"
        "assert spacy.blank('en').add_pipe('elmo').cfg['model'] == 'wikipedia'\n"
        "assert 'allennlp' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent)


# -- the trainable Eq. (1): elmo_bilm.ElmoTok2Vec.v1 -----------------------------------------

TRAIN_CONFIG = """
[paths]
train = null
dev = null
options = null
weights = null

[system]
seed = 0
gpu_allocator = null

[nlp]
lang = "en"
pipeline = ["elmo", "tagger"]
batch_size = 8

[components]

[components.elmo]
factory = "elmo"
model = ${paths.options}
weights = ${paths.weights}

[components.tagger]
factory = "tagger"

[components.tagger.model]
@architectures = "spacy.Tagger.v2"
nO = null

[components.tagger.model.tok2vec]
@architectures = "elmo_bilm.ElmoTok2Vec.v1"
l2_coefficient = 0.001
dropout = 0.1

[components.tagger.model.tok2vec.embed]
@architectures = "spacy.HashEmbedCNN.v2"
pretrained_vectors = null
width = 16
depth = 1
embed_size = 200
window_size = 1
maxout_pieces = 2
subword_features = true

[corpora]

[corpora.train]
@readers = "spacy.Corpus.v1"
path = ${paths.train}

[corpora.dev]
@readers = "spacy.Corpus.v1"
path = ${paths.dev}

[training]
seed = ${system.seed}
gpu_allocator = ${system.gpu_allocator}
dev_corpus = "corpora.dev"
train_corpus = "corpora.train"
frozen_components = ["elmo"]
annotating_components = ["elmo"]
max_steps = 2
eval_frequency = 1
dropout = 0.1

[training.batcher]
@batchers = "spacy.batch_by_sequence.v1"
size = 4

[training.optimizer]
@optimizers = "Adam.v1"
learn_rate = 0.05

[initialize]
"""

TAGGED = [
    ("The cat sat on the mat .", "DT NN VBD IN DT NN ."),
    ("A dog ran to the park .", "DT NN VBD IN DT NN ."),
    ("Birds fly .", "NNS VBP ."),
    ("The old man smiled .", "DT JJ NN VBD ."),
]


def mixes(nlp, pipe: str = "tagger") -> list:
    from elmo_bilm.integrations.spacy import ElmoMix

    return [node for node in nlp.get_pipe(pipe).model.walk() if isinstance(node, ElmoMix)]


def test_mix_gradient_matches_finite_differences():
    """ElmoMix's backward pass: d/dw and d/dgamma of `sum(Y * R)` (+ lambda * ||w||^2)."""
    from elmo_bilm.integrations.spacy import ElmoMix

    mix = ElmoMix(l2_coefficient=0.1)  # (also registers doc._.elmo)
    rng = numpy.random.default_rng(0)
    nlp = spacy.blank("en")
    docs = [nlp.make_doc("a b c"), nlp.make_doc("d e")]
    for doc in docs:
        doc._.elmo = rng.normal(size=(3, len(doc), 4)).astype(numpy.float32)
    mix.initialize(X=docs)
    mix.set_param("w", numpy.array([0.3, -0.2, 0.5], dtype=numpy.float32))
    mix.set_param("gamma", numpy.array([1.5], dtype=numpy.float32))
    targets = [rng.normal(size=(len(doc), 4)).astype(numpy.float32) for doc in docs]

    def loss() -> float:
        outputs = mix.predict(docs)
        w = mix.get_param("w").astype(numpy.float64)
        return sum(float((y * r).sum()) for y, r in zip(outputs, targets)) + 0.1 * (w**2).sum()

    _, backprop = mix.begin_update(docs)
    backprop(targets)
    for name in ("w", "gamma"):
        analytic = mix.get_grad(name).copy()
        value = mix.get_param(name).astype(numpy.float64)
        for i in range(len(value)):
            numeric = []
            for step in (1e-3, -1e-3):
                moved = value.copy()
                moved[i] += step
                mix.set_param(name, moved.astype(numpy.float32))
                numeric.append(loss())
            mix.set_param(name, value.astype(numpy.float32))
            assert analytic[i] == pytest.approx((numeric[0] - numeric[1]) / 2e-3, rel=1e-2)


def test_spacy_train_learns_the_mix(tmp_path):
    """Two steps of `spacy train` (the CLI's function) with the elmo component annotating and a
    tagger on elmo_bilm.ElmoTok2Vec.v1 (+ a hash embedding): the mix weights and gamma move
    from their start (w = 0, gamma = 1), and the trained pipeline loads and tags."""
    from spacy.cli.train import train

    nlp = spacy.blank("en")
    bin = DocBin()
    for text, tags in TAGGED:
        doc = nlp.make_doc(text)
        for token, tag in zip(doc, tags.split()):
            token.tag_ = tag
        bin.add(doc)
    bin.to_disk(tmp_path / "train.spacy")
    (tmp_path / "config.cfg").write_text(TRAIN_CONFIG)
    paths = {
        "paths.train": str(tmp_path / "train.spacy"),
        "paths.dev": str(tmp_path / "train.spacy"),
        "paths.options": str(OPTIONS_FILE),
        "paths.weights": str(WEIGHT_FILE),
    }
    train(tmp_path / "config.cfg", tmp_path / "out", overrides=paths)
    trained = spacy.load(tmp_path / "out" / "model-last")
    [mix] = mixes(trained)
    assert mix.upstream is trained.get_pipe("elmo")  # linked to the loaded component
    w, gamma = mix.get_param("w"), mix.get_param("gamma")
    assert numpy.abs(w).min() > 1e-3, w
    assert abs(float(gamma[0]) - 1.0) > 1e-3, gamma
    assert not numpy.allclose(mix.weights(), 1 / 3)
    doc = trained("The dog sat .")
    assert doc._.elmo.shape == (3, 4, 32) and all(token.tag_ for token in doc)


def test_the_shipped_ner_configs_train(tmp_path):
    """`ner_cnn` and `ner_elmo` (the NER comparison's configs) fill, train 2 steps on CoNLL-style
    docs and tag; `ner_elmo` is `ner_cnn` plus the elmo component and ElmoTok2Vec."""
    from spacy.cli.train import train
    from spacy.tokens import Span

    from elmo_bilm.integrations.spacy import training_config

    nlp = spacy.blank("en")
    bin = DocBin()
    for text in ("John lives in Paris .", "Mary visited Berlin and Rome ."):
        doc = nlp.make_doc(text)
        doc.ents = [Span(doc, 0, 1, "PER"), Span(doc, 3, 4, "LOC")]
        bin.add(doc)
    bin.to_disk(tmp_path / "train.spacy")
    overrides = {
        "paths.train": str(tmp_path / "train.spacy"),
        "paths.dev": str(tmp_path / "train.spacy"),
        "training.max_steps": 2,
        "training.eval_frequency": 1,
    }
    for name in ("ner_cnn", "ner_elmo"):
        extra = {"paths.elmo": str(OPTIONS_FILE), "components.elmo.weights": str(WEIGHT_FILE)}
        train(
            training_config(name),
            tmp_path / name,
            overrides={**overrides, **(extra if name == "ner_elmo" else {})},
        )
        trained = spacy.load(tmp_path / name / "model-last")
        assert trained.pipe_names == (["elmo", "ner"] if name == "ner_elmo" else ["tok2vec", "ner"])
        assert trained("Anna met Tom .").has_annotation("ENT_IOB")
    assert len(mixes(spacy.load(tmp_path / "ner_elmo" / "model-last"), "ner")) == 1
    with pytest.raises(ValueError, match="one of ner_cnn, ner_elmo"):
        training_config("ner")


def test_spacy_package_builds_an_installable_pipeline(tmp_path):
    """`spacy package --build wheel` of a saved pipeline: the wheel requires elmo-bilm (spaCy
    finds it through the entry point) and, installed elsewhere, loads with the biLM inside it."""
    source = tmp_path / "bilm"
    source.mkdir()
    options, weights = shutil.copy(OPTIONS_FILE, source), shutil.copy(WEIGHT_FILE, source)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": options, "weights": weights})
    nlp.meta["name"], nlp.meta["version"] = "elmo_test", "0.0.1"
    nlp.to_disk(tmp_path / "pipeline")
    shutil.rmtree(source)
    (tmp_path / "out").mkdir()
    package = [sys.executable, "-m", "spacy", "package", "pipeline", "out", "--build", "wheel"]
    subprocess.run(package, check=True, cwd=tmp_path, capture_output=True)
    [wheel] = (tmp_path / "out").glob("*/dist/*.whl")
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read("en_elmo_test-0.0.1.dist-info/METADATA").decode()
    assert "Requires-Dist: elmo-bilm" in metadata
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*install, "--target", str(tmp_path / "site"), str(wheel)], check=True)
    code = (
        "import en_elmo_test\n"
        "nlp = en_elmo_test.load()\n"
        "assert nlp('a b c')._.elmo.shape == (3, 3, 32)\n"
        "assert nlp.get_pipe('elmo').cfg['model'].startswith(en_elmo_test.__path__[0])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, env=env)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_the_mix_lambda_is_the_cores_check(bad):
    """λ ≥ 0 through `elmo_bilm.utils.checks.finite_number` (NaN passed `< 0` before)."""
    from elmo_bilm.integrations.spacy import ElmoMix
    from elmo_bilm.utils.errors import UsageError

    with pytest.raises(UsageError, match=r"l2_coefficient \(lambda\) must be a finite number >= 0"):
        ElmoMix(l2_coefficient=bad)
