import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules.elmo import batch_to_ids
from allennlp.modules.token_embedders import TokenEmbedder

from elmo_bilm import load_bilm_tf
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import ONE_REDUCTION, assert_float32_close

pytestmark = pytest.mark.numerics  # compared across rounding paths: make test reruns it on AVX2


def build(**overrides) -> TokenEmbedder:
    params = {
        "type": "elmo_plugin_token_embedder",
        "options_file": str(OPTIONS_FILE),
        "weight_file": str(WEIGHT_FILE),
        "dropout": 0.0,
        **overrides,
    }
    return TokenEmbedder.from_params(Params(params))


def test_output_is_eq1_mix_of_bilm_layers(fixture_sentences):
    embedder = build(scalar_mix_parameters=[0.0, 1.0, -1.0]).eval()
    char_ids = batch_to_ids(fixture_sentences[1][:4])
    output = embedder(char_ids)
    assert output.shape == (4, char_ids.shape[1], 32) and embedder.get_output_dim() == 32
    bilm = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()
    with torch.no_grad():
        layers = bilm(char_ids)["activations"]
    weights = torch.softmax(torch.tensor([0.0, 1.0, -1.0]), 0)
    assert_float32_close(output, sum(w * h for w, h in zip(weights, layers)), ONE_REDUCTION)


def test_top_layer_only_and_layer_norm(fixture_sentences):
    char_ids = batch_to_ids(fixture_sentences[2][:3])
    top = build(scalar_mix_parameters=[-9e10, -9e10, 1.0]).eval()(char_ids)
    bilm = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()
    with torch.no_grad():
        assert_float32_close(top, bilm(char_ids)["activations"][-1], ONE_REDUCTION)
    # layer norm: each layer standardised over all real tokens of the batch and all dimensions
    # (mean and variance of bilm-tf / AllenNLP's ScalarMix), then mixed with equal weights
    normed = build(do_layer_norm=True).eval()(char_ids)
    mask = (char_ids > 0).any(-1)
    with torch.no_grad():
        layers = [layer[mask] for layer in bilm(char_ids)["activations"]]
    expected = sum((h - h.mean()) / torch.sqrt(h.var(unbiased=False) + 1e-12) for h in layers) / 3
    assert_float32_close(normed[mask], expected, ONE_REDUCTION)


def test_biLM_frozen_by_default_and_mix_trained():
    embedder = build(l2_coefficient=0.1).train()
    char_ids = batch_to_ids([["a", "b", "c"], ["d"]])
    embedder(char_ids).sum().backward()
    bilm_params = list(embedder.elmo.bilm.parameters())
    assert all(not p.requires_grad and p.grad is None for p in bilm_params)
    mix = embedder.elmo.scalar_mixes[0]
    assert mix.gamma.grad is not None
    assert all(p.grad is not None for p in mix.scalar_parameters)


def test_requires_grad_fine_tunes_the_biLM():
    embedder = build(requires_grad=True).train()
    embedder(batch_to_ids([["a", "b", "c"]])).sum().backward()
    assert embedder.elmo.bilm.char_cnn.projection.weight.grad is not None


def test_dropout_applies_in_training_only():
    embedder = build(dropout=0.5)
    char_ids = batch_to_ids([["some", "words", "here"]])
    embedder.eval()
    assert torch.equal(embedder(char_ids), embedder(char_ids))
    embedder.train()
    assert (embedder(char_ids) == 0).float().mean() > 0.2


def test_bad_scalar_mix_parameters():
    with pytest.raises(ConfigurationError, match="3 layers"):
        build(scalar_mix_parameters=[1.0, 2.0])


def test_allennlps_projection_dim_and_vocab_to_cache():
    sentences = [["a", "b"], ["c"]]
    plain = build()
    projected = build(projection_dim=7, vocab_to_cache=["@@PADDING@@", "a", "b", "c"])
    assert projected.get_output_dim() == 7
    words = torch.tensor([[1, 2], [3, 0]])
    by_words, by_chars = projected(None, word_inputs=words), projected(batch_to_ids(sentences))
    assert by_words.shape == (2, 2, 7)
    assert_float32_close(by_words, by_chars, ONE_REDUCTION)
    expected = projected.projection(plain(batch_to_ids(sentences)))
    assert_float32_close(by_chars, expected, ONE_REDUCTION)
    with pytest.raises(ConfigurationError, match="vocab_to_cache"):
        plain(None, word_inputs=words)


def test_integer_mix_parameters_from_a_config(fixture_sentences):
    """`scalar_mix_parameters: [1, 1, 1]` (integers, as configs and scripts for AllenNLP write
    them) crashed at the first forward pass; equal weights here, as AllenNLP's float cast."""
    embedder = build(scalar_mix_parameters=[1, 1, 1]).eval()
    char_ids = batch_to_ids(fixture_sentences[0][:3])
    bilm = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()
    with torch.no_grad():
        expected = torch.stack(bilm(char_ids)["activations"]).mean(0)
    assert_float32_close(embedder(char_ids), expected, ONE_REDUCTION)
