"""SeqVec's stateful default (issue 68): bio_embeddings' `SeqVecEmbedder` wraps AllenNLP 0.9's
`ElmoEmbedder`, whose biLM carries LSTM states from batch to batch, and warms it up in its
constructor by embedding a sample protein `warmup_rounds` times. bio_embeddings itself does not
install here (it pins allennlp 0.9, which needs Python < 3.9 and torch 1.x), so the reference is
what its calls run on AllenNLP 2.10's `_ElmoBiLm`, stateful as 0.9's: the warm-up, then
`embed`, `embed_batch` and `embed_many`'s batches, each one biLM batch, in order.

Tolerance: `NETWORK` float32 units, as for one stateless pass: each batch starts from states
equal to AllenNLP's within the previous batch's rounding, which the forget gate scales down
rather than adds up (tests/elmo_bilm/dropins/test_stateful.py). A missing warm-up or a state not
carried differs by far more (`DIFFERENT`), asserted below so the comparison can fail.
"""

from typing import List, Sequence

import numpy
import pytest
import torch

from elmo_bilm import batch_to_ids
from elmo_bilm.dropins.bio_embeddings import WARMUP_SEQUENCE, SeqVecEmbedder
from elmo_bilm.runtime import engine
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

FILES = (str(OPTIONS_FILE), str(WEIGHT_FILE))
PROTEINS = ["MKTAYIAKQRQISFVKSHFSRQ", "MKV", "GSHMASVQKFPGDANCDGIVDISDAVLIMQTM", "A", "MKTAYIAK"]
# bio_embeddings' `embed_many(PROTEINS, batch_size=40)`: consecutive proteins while their
# residues stay below 40 (22 + 3; 32 + 1; 8)
MANY_BATCHES = [PROTEINS[:2], PROTEINS[2:4], PROTEINS[4:]]
DIFFERENT = 1e-2  # far beyond rounding: a carried state moves values by 0.1 or more


def _reference_calls(warmup_rounds: int) -> List[numpy.ndarray]:
    """bio_embeddings' calls on AllenNLP's stateful biLM: the warm-up, `embed(PROTEINS[0])`,
    `embed_batch(PROTEINS[1:4])`, `embed_many(PROTEINS, batch_size=40)`, then
    `embed_many(PROTEINS[:2])` (one protein a batch): the arrays those calls give, in order."""
    from allennlp.modules.elmo import _ElmoBiLm
    from allennlp.nn.util import remove_sentence_boundaries

    bilm = _ElmoBiLm(*FILES).eval()

    def embed_batch(batch: Sequence[str]) -> List[numpy.ndarray]:
        """AllenNLP 0.9's `ElmoEmbedder.embed_batch` on residue lists."""
        with torch.no_grad():
            output = bilm(batch_to_ids([list(protein) for protein in batch]))
        layers = [remove_sentence_boundaries(x, output["mask"])[0] for x in output["activations"]]
        stacked = torch.stack(layers, dim=1).numpy()
        return [stacked[row, :, : len(protein)] for row, protein in enumerate(batch)]

    for _ in range(warmup_rounds):
        embed_batch([WARMUP_SEQUENCE])
    arrays = embed_batch(PROTEINS[:1]) + embed_batch(PROTEINS[1:4])
    for batch in MANY_BATCHES:
        arrays += embed_batch(batch)
    for protein in PROTEINS[:2]:
        arrays += embed_batch([protein])
    return arrays


def _our_calls(embedder: SeqVecEmbedder) -> List[numpy.ndarray]:
    arrays = [embedder.embed(PROTEINS[0])]
    arrays += list(embedder.embed_batch(PROTEINS[1:4]))
    arrays += list(embedder.embed_many(iter(PROTEINS), batch_size=40))
    arrays += list(embedder.embed_many(PROTEINS[:2]))
    return arrays


def _spy_batches(monkeypatch: pytest.MonkeyPatch) -> List[List[str]]:
    """The proteins of every biLM batch the engine runs (`batch_layers`), in order."""
    batches: List[List[str]] = []
    real = engine.batch_layers

    def spy(bilm, sentences, *args, **kwargs):  # type: ignore[no-untyped-def]
        batches.append(["".join(residues) for residues in sentences])
        return real(bilm, sentences, *args, **kwargs)

    monkeypatch.setattr(engine, "batch_layers", spy)
    return batches


def _gap(ours: List[numpy.ndarray], theirs: List[numpy.ndarray]) -> float:
    return max(float(abs(a - b).max()) for a, b in zip(ours, theirs, strict=True))


@pytest.mark.numerics
def test_the_default_is_bio_embeddings_stateful_embedder_after_its_warm_up(monkeypatch) -> None:
    batches = _spy_batches(monkeypatch)
    embedder = SeqVecEmbedder(options_file=FILES[0], weights_file=FILES[1], device="cpu")
    assert embedder.stateful and embedder.warmup_rounds == 4
    ours = _our_calls(embedder)
    # the warm-up, embed's and embed_batch's own batches, embed_many's batched as
    # bio_embeddings batches, then one protein a batch: every biLM batch bio_embeddings runs
    one_each = [[PROTEINS[0]], [PROTEINS[1]]]
    assert batches == [[WARMUP_SEQUENCE]] * 4 + [
        [PROTEINS[0]],
        PROTEINS[1:4],
        *MANY_BATCHES,
        *one_each,
    ]
    expected = _reference_calls(4)
    assert [a.shape for a in ours] == [b.shape for b in expected]
    for number, (mine, reference) in enumerate(zip(ours, expected)):
        assert_float32_close(mine, reference, NETWORK, f"call output {number}")
    # what makes these the stateful embedder's: without the warm-up, or stateless, the vectors
    # differ from the first protein on
    assert _gap(ours, _reference_calls(0)) > DIFFERENT
    stateless = SeqVecEmbedder(options_file=FILES[0], weights_file=FILES[1], stateful=False)
    assert _gap(_our_calls(stateless), expected) > DIFFERENT


@pytest.mark.numerics
def test_without_warm_up_the_first_protein_starts_from_zero_states() -> None:
    cold = SeqVecEmbedder(0, options_file=FILES[0], weights_file=FILES[1], device="cpu")
    stateless = SeqVecEmbedder(options_file=FILES[0], weights_file=FILES[1], stateful=False)
    assert_float32_close(cold.embed(PROTEINS[0]), stateless.embed(PROTEINS[0]), NETWORK)
    ours = _our_calls(SeqVecEmbedder(0, options_file=FILES[0], weights_file=FILES[1]))
    for number, (mine, reference) in enumerate(zip(ours, _reference_calls(0))):
        assert_float32_close(mine, reference, NETWORK, f"call output {number}")


def test_a_protein_longer_than_the_batch_follows_the_pending_batch(monkeypatch) -> None:
    """bio_embeddings embeds it before the pending batch and yields out of input order; here the
    pending batch goes first and the order holds."""
    embedder = SeqVecEmbedder(0, options_file=FILES[0], weights_file=FILES[1], device="cpu")
    batches = _spy_batches(monkeypatch)
    shapes = [a.shape[1] for a in embedder.embed_many(PROTEINS, batch_size=30)]
    assert shapes == [len(p) for p in PROTEINS]
    assert batches == [PROTEINS[:2], PROTEINS[2:3], PROTEINS[3:]]
