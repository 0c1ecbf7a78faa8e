"""Issue 89: what AllenNLP 2.10's `tests/modules/token_embedders/elmo_token_embedder_test.py`
asserts, of the plugin's `elmo_plugin_token_embedder`: AllenNLP's constructor arguments in
AllenNLP's positional order, the output width (with and without `projection_dim`), character ids
with an extra leading dimension `(batch, n, T, 50)` as AllenNLP's embedder takes them, and
`vocab_to_cache` word ids giving what character ids give; compared with the installed AllenNLP
2.10's `ElmoTokenEmbedder` on the fixture (the first batch: both start from zero states).
Tolerance: `NETWORK` float32 units, as the other comparisons with AllenNLP."""

import inspect

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import ElmoTokenEmbedder

from elmo_bilm import batch_to_ids
from elmo_plugin.token_embedders.elmo_token_embedder import ElmoPluginTokenEmbedder
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

FILES = (str(OPTIONS_FILE), str(WEIGHT_FILE))
ORDER = [
    "options_file",
    "weight_file",
    "do_layer_norm",
    "dropout",
    "requires_grad",
    "projection_dim",
    "vocab_to_cache",
    "scalar_mix_parameters",
]
MIX = [0.3, -0.2, 0.5]
SENTENCES = [["The", "cat", "sat", "."], ["Dogs", "bark"], ["Hi"], ["a", "b", "c"]]


def test_the_positional_order_is_allennlps() -> None:
    theirs = list(inspect.signature(ElmoTokenEmbedder.__init__).parameters)[1:]
    ours = inspect.signature(ElmoPluginTokenEmbedder.__init__).parameters
    positional = [
        name
        for name, p in ours.items()
        if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and name != "self"
    ]
    assert theirs == ORDER == positional
    # the plugin's own options stay keywords
    assert ours["l2_coefficient"].kind is inspect.Parameter.KEYWORD_ONLY


def test_positional_construction_equals_allennlps_embedder() -> None:
    # options_file, weight_file, do_layer_norm, dropout, requires_grad, projection_dim=None,
    # vocab_to_cache=None, scalar_mix_parameters
    arguments = (*FILES, False, 0.0, False, None, None, MIX)
    theirs = ElmoTokenEmbedder(*arguments).eval()
    mine = ElmoPluginTokenEmbedder(*arguments).eval()
    assert mine.get_output_dim() == theirs.get_output_dim() == 32
    ids = batch_to_ids(SENTENCES)
    with torch.no_grad():
        reference, output = theirs(ids), mine(ids)
    assert output.shape == reference.shape == (4, 4, 32)
    assert_float32_close(output, reference, NETWORK)


def test_projection_dim_sets_the_output_width() -> None:
    embedder = ElmoPluginTokenEmbedder(*FILES, projection_dim=20).eval()
    assert embedder.get_output_dim() == 20
    with torch.no_grad():
        assert embedder(batch_to_ids(SENTENCES)).shape == (4, 4, 20)


def test_extra_leading_dimensions_are_kept() -> None:
    embedder = ElmoPluginTokenEmbedder(*FILES, dropout=0.0, scalar_mix_parameters=MIX).eval()
    ids = batch_to_ids(SENTENCES)  # (4, 4, 50)
    nested = ids.view(2, 2, *ids.shape[1:])  # (batch, n, T, 50)
    with torch.no_grad():
        flat, deep = embedder(ids), embedder(nested)
    assert deep.shape == (2, 2, 4, 32)
    assert torch.equal(deep.reshape(flat.shape), flat)
    theirs = ElmoTokenEmbedder(*FILES, dropout=0.0, scalar_mix_parameters=MIX).eval()
    with torch.no_grad():
        reference = theirs(nested)
    assert reference.shape == deep.shape
    assert_float32_close(deep, reference, NETWORK)


def test_vocab_to_cache_word_ids_equal_character_ids() -> None:
    words = ["@@PADDING@@"] + sorted({w for s in SENTENCES for w in s})
    index = {w: i for i, w in enumerate(words)}
    word_ids = torch.zeros(len(SENTENCES), 4, dtype=torch.long)
    for row, sentence in enumerate(SENTENCES):
        word_ids[row, : len(sentence)] = torch.tensor([index[w] for w in sentence])
    options = dict(dropout=0.0, scalar_mix_parameters=MIX)
    cached = ElmoPluginTokenEmbedder(*FILES, vocab_to_cache=words, **options).eval()
    plain = ElmoPluginTokenEmbedder(*FILES, **options).eval()
    ids = batch_to_ids(SENTENCES)
    with torch.no_grad():
        by_word = cached(ids, word_ids)
        by_char = plain(ids)
        deep = cached(ids.view(2, 2, 4, 50), word_ids.view(2, 2, 4))
    assert_float32_close(by_word, by_char, NETWORK)
    assert torch.equal(deep.reshape(by_word.shape), by_word)


@pytest.mark.parametrize(
    "args, message",
    [
        ((False, "0.5"), r"dropout must be in \[0, 1\), got '0.5'"),
        ((False, 0.0, False, 0), "projection_dim must be a whole number >= 1, got 0"),
        ((False, 0.0, False, -3), "projection_dim must be a whole number >= 1, got -3"),
        ((False, 0.0, False, "16"), "projection_dim must be a whole number >= 1, got '16'"),
    ],
)
def test_careless_positional_arguments_are_one_line(args, message) -> None:
    """Strings where numbers go and sizes below one, in AllenNLP's positional order: a
    ConfigurationError naming the argument (a bare TypeError, a RuntimeError, or silently
    zero-width vectors before)."""
    with pytest.raises(ConfigurationError, match=message):
        ElmoPluginTokenEmbedder(*FILES, *args)


def test_an_empty_batch_gives_empty_vectors() -> None:
    """A batch of no sentences (the activation cache's lookup asserted one row)."""
    embedder = ElmoPluginTokenEmbedder(*FILES, False, 0.0)
    out = embedder(torch.zeros(0, 3, 50, dtype=torch.long))
    assert out.shape == (0, 3, embedder.get_output_dim())
