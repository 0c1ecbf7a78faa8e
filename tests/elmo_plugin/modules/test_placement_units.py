"""Unit checks of the placement pieces' options."""

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.elmo import batch_to_ids
from allennlp.modules.seq2seq_encoders import LstmSeq2SeqEncoder

from elmo_plugin.modules.seq2seq_encoders import OutputElmoEncoder
from elmo_plugin.modules.text_field_embedders import ElmoPlacementEmbedder
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


def embedder(**kwargs):
    return ElmoPlacementEmbedder(
        {}, options_file=str(OPTIONS_FILE), weight_file=str(WEIGHT_FILE), dropout=0.0, **kwargs
    ).eval()


def test_elmo_key_names_the_indexer_output():
    ids = batch_to_ids([["a", "b"]])
    out = embedder(elmo_key="chars")({"chars": {"elmo_tokens": ids}})
    assert out.shape == (1, 2, 32)
    with pytest.raises(ConfigurationError, match="'chars'"):
        embedder(elmo_key="chars")({"elmo": {"elmo_tokens": ids}})


def test_placement_sets_the_number_of_mixes():
    assert embedder(placement="input").get_output_dim() == 32
    assert embedder(placement="both").get_output_dim() == 64
    with pytest.raises(ConfigurationError):
        embedder(placement="middle")


def test_output_encoder_passes_elmo_columns_through():
    encoder = OutputElmoEncoder(LstmSeq2SeqEncoder(4, 3, bidirectional=True), elmo_dim=5)
    inputs = torch.randn(2, 3, 9)
    mask = torch.tensor([[True, True, True], [True, False, False]])
    out = encoder(inputs, mask)
    assert out.shape == (2, 3, 11)
    assert torch.equal(out[..., 6:], inputs[..., 4:] * mask[..., None])
    with pytest.raises(ValueError, match="expects 9 input features"):
        encoder(torch.randn(2, 3, 8), mask)


def test_output_encoder_gives_trailing_model_features_to_the_encoder():
    # SRL appends its predicate-indicator embedding after [x_k; ELMo_out]: [x (4) | elmo (5) | verb (2)]
    inner = LstmSeq2SeqEncoder(6, 3, bidirectional=True)
    encoder = OutputElmoEncoder(inner, elmo_dim=5, trailing_dim=2)
    inputs = torch.randn(2, 3, 11)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    out = encoder(inputs, mask)
    assert encoder.get_input_dim() == 11 and out.shape == (2, 3, 11)
    assert torch.equal(out[..., 6:], inputs[..., 4:9] * mask[..., None])
    expected = inner(torch.cat([inputs[..., :4], inputs[..., 9:]], dim=-1), mask)
    assert torch.allclose(out[..., :6], expected)
