"""The one embedding loop (`elmo_bilm.runtime.engine`): batches by length bounded by a sentence
count and by padded tokens; the spaCy component embeds through it and its fixed mix is Eq. (1)
as everywhere else."""

import contextlib
from typing import List

import h5py
import numpy
import pytest
import spacy
import torch

from elmo_bilm import ElmoEmbedder
from elmo_bilm.formats.bilm_tf import load_bilm_tf
from elmo_bilm.integrations.spacy import mix_layers
from elmo_bilm.model import derived, onednn
from elmo_bilm.runtime import engine
from elmo_bilm.runtime.engine import Layers, embed_file, length_batches
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


def lengths(batches: List[List[List[str]]]) -> List[List[int]]:
    return [[len(s) for s in batch] for batch in batches]


def test_batches_are_bounded_by_count_and_padded_tokens() -> None:
    sentences = [["w"] * n for n in (3, 1, 8, 2, 30, 5)]
    batches = list(length_batches(sentences, list, batch_size=3, max_tokens=None))
    assert lengths(batches) == [[1, 2, 3], [5, 8, 30]]
    batches = list(length_batches(sentences, list, batch_size=100, max_tokens=20))
    # rows x (longest + 2) <= 20, a sentence beyond the budget alone
    assert lengths(batches) == [[1, 2, 3], [5, 8], [30]]
    for batch in batches[:-1]:
        assert len(batch) * (max(map(len, batch)) + 2) <= 20
    assert sorted(map(len, sum(batches, []))) == sorted(map(len, sentences))


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="max_tokens must be a whole number >= 1"):
        list(length_batches([["a"]], list, 1, 0))
    with pytest.raises(ValueError, match="batch_size must be a whole number >= 1"):
        list(length_batches([["a"]], list, 0, 10))


def test_the_token_budget_changes_no_vector_beyond_float32_rounding() -> None:
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=False)
    sentences = [["word"] * n for n in (1, 40, 3, 7, 120, 2)]
    unbounded = list(embedder.embed_sentences(sentences, batch_size=64, max_tokens=None))
    bounded = list(embedder.embed_sentences(sentences, batch_size=64, max_tokens=16))
    for a, b in zip(unbounded, bounded):
        numpy.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)  # float32, other batch shapes


@pytest.mark.parametrize("layers", ["all", "top", "average", [0.2, -1.0, 3.0]])
def test_spacy_vectors_equal_elmo_embedders_with_every_layers_setting(layers: object) -> None:
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "elmo",
        config={
            "model": str(OPTIONS_FILE),
            "weights": str(WEIGHT_FILE),
            "layers": layers,
            "set_tensor": True,
            "max_tokens": 8,
        },
    )
    texts = ["The cat sat on the mat .", "A much longer sentence with more words than that", "x"]
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=False)
    for doc in nlp.pipe(texts):
        expected = embedder.embed_sentence([t.text for t in doc])  # (3, T, dim)
        numpy.testing.assert_allclose(doc._.elmo, expected, rtol=1e-5, atol=1e-6)
        if isinstance(layers, list):  # Eq. (1): softmax(w), gamma 1
            weights = torch.softmax(torch.tensor(layers), 0).numpy()
            mixed = numpy.tensordot(weights, expected, axes=1)
        else:
            mixed = Layers(layers).select(torch.from_numpy(expected)[None])[0].numpy()
            if layers == "all":
                mixed = expected.transpose(1, 0, 2).reshape(len(doc), -1)
        numpy.testing.assert_allclose(doc.tensor, mixed, rtol=1e-5, atol=1e-6)
        numpy.testing.assert_allclose(mix_layers(expected, layers), mixed, rtol=1e-5, atol=1e-6)


def budget_seen(monkeypatch: pytest.MonkeyPatch) -> List[object]:
    """The `max_tokens` each `length_batches` call got (the batching itself unchanged)."""
    from elmo_bilm.runtime import batching, engine

    seen: List[object] = []
    real = engine.length_batches

    def spy(items, words, batch_size=128, max_tokens=engine.DEFAULT_MAX_TOKENS):  # type: ignore[no-untyped-def]
        seen.append(max_tokens)
        return real(items, words, batch_size, max_tokens)

    monkeypatch.setattr(engine, "length_batches", spy)
    monkeypatch.setattr(batching, "length_batches", spy)  # the batching rules' home
    return seen


def test_every_max_tokens_setting_reaches_the_batching(tmp_path, monkeypatch) -> None:
    """--max-tokens of elmo-embed, ElmoEmbedder's and the spaCy component's max_tokens: each
    reaches `length_batches` (ignoring one fails here)."""
    from elmo_bilm.cli.embed import main

    seen = budget_seen(monkeypatch)
    (tmp_path / "in.txt").write_text("The cat sat .\n")
    files = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    assert (
        main([str(tmp_path / "in.txt"), str(tmp_path / "o.hdf5"), "--max-tokens", "77", *files])
        == 0
    )
    assert seen == [77]
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=False)
    list(embedder.embed_sentences([["a", "b"]], max_tokens=55))
    embedder.embed_file(str(tmp_path / "in.txt"), str(tmp_path / "p.hdf5"), max_tokens=66)
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "elmo", config={"model": str(OPTIONS_FILE), "weights": str(WEIGHT_FILE), "max_tokens": 33}
    )
    nlp("The cat sat .")
    assert seen == [77, 55, 66, 33]


def test_embed_file_checks_the_weights_once_a_run(tmp_path, monkeypatch) -> None:
    """`embed_file` owns its biLM for the run (`derived.fixed_weights`): the derived copies are
    checked against the weights at the first batch, not at each of the four."""
    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0)  # oneDNN's packs at the fixture's size
    source = tmp_path / "in.txt"
    source.write_text("".join(" ".join(["word"] * n) + f" w{n}\n" for n in range(1, 13)))
    bilm = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE)
    fingerprints: List[int] = []
    fingerprint = derived.fingerprint

    def counted(tensor: torch.Tensor) -> torch.Tensor:
        fingerprints.append(tensor.numel())
        return fingerprint(tensor)

    monkeypatch.setattr(derived, "fingerprint", counted)
    embed_file(bilm, str(source), str(tmp_path / "run.hdf5"), batch_size=3)  # 4 batches
    in_a_run = len(fingerprints)
    fingerprints.clear()
    monkeypatch.setattr(engine, "fixed_weights", lambda module: contextlib.nullcontext())
    embed_file(bilm, str(source), str(tmp_path / "each.hdf5"), batch_size=3)
    assert in_a_run > 0 and len(fingerprints) == 4 * in_a_run
    with h5py.File(tmp_path / "run.hdf5") as run, h5py.File(tmp_path / "each.hdf5") as each:
        assert sorted(run) == sorted(each) and len(run) == 13  # 12 sentences and the index
        for name in run:
            assert numpy.array_equal(run[name][...], each[name][...])
