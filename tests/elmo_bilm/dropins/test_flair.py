"""flair's ELMoEmbeddings without AllenNLP (elmo_bilm.integrations.flair), on the tiny fixture biLM."""

import shutil

import numpy
import pytest
import torch

flair = pytest.importorskip("flair")

from flair.data import Dictionary, Sentence  # noqa: E402
from flair.embeddings import StackedEmbeddings  # noqa: E402
from flair.models import SequenceTagger  # noqa: E402

from elmo_bilm import ElmoEmbedder  # noqa: E402
from elmo_bilm.dropins.flair import ELMoEmbeddings, bilm_files  # noqa: E402
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE  # noqa: E402

TAGGED = [
    ("The cat sat on the mat .", "DT NN VBD IN DT NN ."),
    ("Birds fly .", "NNS VBP ."),
]


def fixture_embeddings(mode: str = "all", **kwargs) -> ELMoEmbeddings:
    return ELMoEmbeddings(
        options_file=str(OPTIONS_FILE), weight_file=str(WEIGHT_FILE), embedding_mode=mode, **kwargs
    )


def test_vectors_as_flair_computes_them():
    tokens = "The cat sat on the mat .".split()
    layers = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE)).embed_sentence(tokens)
    expected = {
        "all": numpy.concatenate(list(layers), axis=1),  # flair: torch.cat of the three layers
        "top": layers[-1],
        "average": layers.mean(axis=0),
    }
    for mode, vectors in expected.items():
        embeddings = fixture_embeddings(mode)
        assert embeddings.name == f"elmo-original-{mode}" and embeddings.static_embeddings
        assert embeddings.embedding_length == vectors.shape[1]
        sentence = Sentence(tokens)
        embeddings.embed(sentence)
        got = numpy.stack([token.get_embedding().numpy() for token in sentence])
        numpy.testing.assert_allclose(got, vectors, atol=1e-6)
    with pytest.raises(ValueError, match="embedding_mode"):
        fixture_embeddings("sum")


def test_model_names():
    assert bilm_files("original", None, None) == ("original", None)
    assert bilm_files("5.5B", None, None) == ("original_5.5b", None)
    assert bilm_files("pubmed", None, None)[0].endswith("_options.json")
    assert bilm_files("small", "o.json", "w.hdf5") == ("o.json", "w.hdf5")
    with pytest.raises(ValueError, match="unknown ELMo model"):
        bilm_files("klingon", None, None)


def test_stateful_by_default_as_flairs_through_allennlp_09():
    """flair's class embeds through AllenNLP 0.9's stateful `ElmoEmbedder`: batch after batch
    (sizes changing), the vectors are that embedder's (this package's, stateful by default:
    test_dropin_defaults.py checks it against AllenNLP); `stateful=False` repeats itself."""
    batches = [["The cat sat .", "Birds fly ."], ["The cat sat .", "A dog", "Hi !"]]
    embeddings = fixture_embeddings("top")
    reference = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE))
    assert embeddings.stateful and embeddings.to_params()["stateful"]
    for texts in batches:
        sentences = [Sentence(text.split()) for text in texts]
        embeddings.embed(sentences)
        expected = reference.embed_batch([text.split() for text in texts])
        for sentence, layers in zip(sentences, expected):
            got = numpy.stack([token.get_embedding().numpy() for token in sentence])
            numpy.testing.assert_allclose(got, layers[-1], atol=1e-6)
    first = Sentence(batches[0][0].split())
    assert numpy.abs(first_vectors(embeddings, first) - expected[0][-1]).max() > 1e-3
    stateless = fixture_embeddings("top", stateful=False)
    once = first_vectors(stateless, Sentence(batches[0][0].split()))
    numpy.testing.assert_array_equal(
        once, first_vectors(stateless, Sentence(batches[0][0].split()))
    )


def first_vectors(embeddings: ELMoEmbeddings, sentence: Sentence) -> numpy.ndarray:
    embeddings.embed(sentence)
    return numpy.stack([token.get_embedding().numpy() for token in sentence])


def test_sequence_tagger_step_save_and_load(tmp_path):
    """A SequenceTagger on StackedEmbeddings([ELMoEmbeddings]): one training step moves its
    weights, not the biLM's; saved and loaded with the biLM files gone, it tags the same.
    Stateless (`stateful=False`, kept through the save), so that the two taggers' vectors do
    not depend on what each embedded before."""
    torch.manual_seed(0)
    source = tmp_path / "bilm"
    source.mkdir()
    options, weights = shutil.copy(OPTIONS_FILE, source), shutil.copy(WEIGHT_FILE, source)
    sentences = []
    tags = Dictionary(add_unk=False)
    for text, labels in TAGGED:
        sentence = Sentence(text.split())
        for token, label in zip(sentence, labels.split()):
            token.add_label("pos", label)
            tags.add_item(label)
        sentences.append(sentence)
    embeddings = StackedEmbeddings(
        [ELMoEmbeddings(options_file=options, weight_file=weights, stateful=False)]
    )
    tagger = SequenceTagger(
        hidden_size=8, embeddings=embeddings, tag_dictionary=tags, tag_type="pos", use_crf=False
    )
    bilm_before = {k: v.clone() for k, v in tagger.state_dict().items() if "elmo_bilm" in k}
    assert bilm_before  # the biLM is part of the tagger's state
    trainable = [p for p in tagger.parameters() if p.requires_grad]
    start = [p.detach().clone() for p in trainable]
    optimizer = torch.optim.SGD(trainable, lr=0.1)
    loss, count = tagger.forward_loss(sentences)
    (loss / count).backward()
    optimizer.step()
    assert any(not torch.equal(a, b.detach()) for a, b in zip(start, trainable))
    for key, value in tagger.state_dict().items():
        if "elmo_bilm" in key:
            assert torch.equal(value, bilm_before[key])
    tagger.eval()
    test = Sentence("The bird sat .".split())
    tagger.predict(test)
    tagger.save(tmp_path / "tagger.pt")
    shutil.rmtree(source)
    loaded = SequenceTagger.load(tmp_path / "tagger.pt")
    again = Sentence("The bird sat .".split())
    loaded.predict(again)
    assert [t.get_label("pos").value for t in again] == [t.get_label("pos").value for t in test]
    embedded = Sentence("The bird sat .".split())
    loaded.embeddings.embed(embedded)
    reference = Sentence("The bird sat .".split())
    fixture_embeddings(stateful=False).embed(reference)
    for a, b in zip(embedded, reference):
        torch.testing.assert_close(a.get_embedding(), b.get_embedding())


def test_a_named_model_offline_suggests_the_shipped_one(tmp_path, monkeypatch):
    """`ELMoEmbeddings()` (flair's default, `original`) offline: one line naming what to do,
    with the shipped biLM as `ElmoEmbedder()`'s line suggests it; that one then loads."""
    from elmo_bilm.sources import published
    from tests.conftest import free_port

    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(published, "BASE_URL", f"http://127.0.0.1:{free_port()}/models/elmo")
    with pytest.raises(OSError) as caught:
        ELMoEmbeddings()
    message = str(caught.value)
    assert "\n" not in message and "ELMoEmbeddings('original')" in message
    assert "ELMoEmbeddings('wikipedia')" in message and "127.0.0.1" in message
    assert ELMoEmbeddings("wikipedia").embedding_length > 0
