"""Sequences longer than the token budget (issue 81): run in exact pieces with the LSTM states
carried in each direction (`elmo_bilm.model.chunked`) and written a piece at a time, for every
output path (HDF5 by slices, Parquet by rows, FASTA, the corpus worker, `ElmoEmbedder`,
`SeqVecEmbedder`), every precision and the stateful mode.

Tolerance: "equal to the uncut run" is 1e-5 of the largest magnitude (at least 1), about 84
float32 units: the pieces change only how the products are blocked, so each value is the uncut
one up to the rounding of a whole biLM pass (tests/numerics.py: `NETWORK`, 128 units, is that
depth with headroom; the fixture gives at most 2 units). A wrong carry (a direction restarting
from zeros at a piece's edge, the backward direction started at a piece's end instead of the
true end, a boundary lost) moves values by 1e-2 or more (`test_the_carried_states_are_what_makes_the_pieces_exact`).
"""

import random
import threading
from pathlib import Path
from typing import Dict, List

import h5py
import numpy
import pytest
import torch

from elmo_bilm import ElmoEmbedder, read_embeddings
from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder
from elmo_bilm.formats.bilm_tf import load_bilm_tf
from elmo_bilm.integrations.corpus.plan import Shard
from elmo_bilm.integrations.corpus.worker import ShardEmbedder
from elmo_bilm.model import chunked, onednn
from elmo_bilm.model.bilm import BiLm, frozen
from elmo_bilm.model.char_cnn import CharCnnEncoder
from elmo_bilm.model.lstm import ProjectedLstmStack
from elmo_bilm.runtime import engine
from elmo_bilm.runtime.engine import (
    batch_layers,
    embed_fasta,
    embed_file,
    embed_sorted,
    sequence_layers,
)
from elmo_bilm.runtime.precision import _prepare
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

WORDS = "the of and to in a is that for it as was with be by on not he this are".split()
CPU = torch.device("cpu")


def line(tokens: int, seed: int = 81) -> List[str]:
    rng = random.Random(seed)
    return [rng.choice(WORDS) for _ in range(tokens)]


def protein(residues: int, seed: int = 81) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(residues))


def of_scale(actual: numpy.ndarray, expected: numpy.ndarray) -> float:
    """The largest difference over the largest magnitude (at least 1)."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    scale = max(1.0, float(numpy.abs(expected).max()))
    return float(numpy.abs(actual.astype(numpy.float64) - expected).max()) / scale


def assert_uncut(actual: numpy.ndarray, expected: numpy.ndarray) -> None:
    assert of_scale(actual, expected) <= 1e-5


def fixture_bilm() -> BiLm:
    return load_bilm_tf(str(OPTIONS_FILE), str(WEIGHT_FILE))


def test_pieces_cover_every_position_once() -> None:
    assert chunked.piece_bounds(5, 3) == [(0, 3), (3, 6), (6, 7)]
    assert chunked.piece_bounds(1, 1) == [(0, 1), (1, 2), (2, 3)]
    assert chunked.needs_chunks(3, 4) and not chunked.needs_chunks(2, 4)
    assert not chunked.needs_chunks(10**6, None)


def test_each_piece_holds_its_own_positions_and_no_more() -> None:
    """A piece's layers own exactly their storage (not a view of the whole piece's stacked
    layers with the boundaries, nor of per-layer copies): what the caller holds while it writes
    a piece is that piece."""
    bilm, words = fixture_bilm(), line(100)
    with frozen(bilm):
        pieces = list(chunked.chunked_layers(bilm, words, 16))
    assert [start for start, _ in pieces] == list(range(0, 100, 16)[:1]) + list(range(15, 100, 16))
    for _, layers in pieces:
        assert layers.is_contiguous() and layers.dtype == torch.float32
        assert layers.untyped_storage().nbytes() == layers.numel() * layers.element_size()


@pytest.mark.parametrize("budget", [1, 2, 5, 64])
@pytest.mark.parametrize("packed", [False, True], ids=["bmm", "onednn"])
def test_a_line_in_pieces_equals_the_uncut_run(budget, packed, monkeypatch) -> None:
    # bmm: the route of a GPU and of small biLMs; onednn: the CPU's at the paper size
    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0 if packed else 2**62)
    bilm, words = fixture_bilm(), line(300)
    uncut = batch_layers(bilm, [words], CPU)[0]
    pieces = sequence_layers(bilm, words, "all", budget)
    assert pieces.shape == uncut.shape == (3, 300, 32)
    assert_uncut(pieces, uncut)


@pytest.mark.parametrize("threads", [1, 2])
def test_every_backward_run_of_a_long_line_is_in_one_thread(threads, monkeypatch) -> None:
    """Both passes' backward runs in the backward direction's thread when the directions run in
    threads (one allocator arena for them, not the caller's too), else in the caller's."""
    seen = []
    backward = chunked._backward

    def recorded(*args):  # type: ignore[no-untyped-def]
        seen.append(threading.current_thread().name)
        return backward(*args)

    monkeypatch.setattr(chunked, "_backward", recorded)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        sequence_layers(fixture_bilm(), line(120), "all", 16)
        assert torch.get_num_threads() == threads  # the caller's setting kept
    finally:
        torch.set_num_threads(before)
    assert len(seen) == 2 * 8  # 122 positions in pieces of 16: each piece twice
    expected = "elmo-bilm-direction-1_0" if threads == 2 else threading.main_thread().name
    assert set(seen) == {expected}


@pytest.mark.parametrize("threads", [1, 2])
def test_both_directions_run_at_once_in_pieces_too(threads) -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        bilm, words = fixture_bilm(), line(120)
        assert_uncut(sequence_layers(bilm, words, "all", 16), batch_layers(bilm, [words], CPU)[0])
    finally:
        torch.set_num_threads(before)


def test_the_carried_states_are_what_makes_the_pieces_exact(monkeypatch) -> None:
    """Pieces that forget the states at their edges differ far beyond the tolerance: the
    comparisons above can fail."""
    bilm, words = fixture_bilm(), line(200)
    uncut = batch_layers(bilm, [words], CPU)[0]
    run_direction = ProjectedLstmStack.run_direction

    def forgetful(self, d, inputs, distinct=None, starts=None):  # type: ignore[no-untyped-def]
        return run_direction(self, d, inputs, distinct, None)

    monkeypatch.setattr(ProjectedLstmStack, "run_direction", forgetful)
    assert of_scale(sequence_layers(bilm, words, "all", 50), uncut) > 1e-2


def sizes_seen(monkeypatch: pytest.MonkeyPatch) -> Dict[str, List[int]]:
    """The positions each LSTM recurrence and each char CNN call get."""
    seen: Dict[str, List[int]] = {"lstm": [], "char_cnn": []}
    recurrence, distinct_words = ProjectedLstmStack._recurrence, CharCnnEncoder.distinct_words

    def spy_recurrence(self, streams, layer, active, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen["lstm"].append(sum(active))
        return recurrence(self, streams, layer, active, *args, **kwargs)

    def spy_words(self, char_ids, mask):  # type: ignore[no-untyped-def]
        seen["char_cnn"].append(char_ids.shape[0] * char_ids.shape[1])
        return distinct_words(self, char_ids, mask)

    monkeypatch.setattr(ProjectedLstmStack, "_recurrence", spy_recurrence)
    monkeypatch.setattr(CharCnnEncoder, "distinct_words", spy_words)
    return seen


def write_lines(path: Path, sentences: List[List[str]]) -> None:
    path.write_text("".join(" ".join(words) + "\n" for words in sentences), encoding="utf-8")


def test_no_batch_the_biLM_sees_exceeds_the_budget(tmp_path, monkeypatch) -> None:
    """The memory bound: every product, state and output is sized by the positions the char CNN
    and the LSTM see at once; with pieces they stay within `max_tokens`, uncut they are the line."""
    text = tmp_path / "in.txt"
    write_lines(text, [line(1000), line(3, seed=1), line(7, seed=2)])
    seen = sizes_seen(monkeypatch)
    embed_file(fixture_bilm(), str(text), str(tmp_path / "out.hdf5"), max_tokens=64)
    assert max(seen["lstm"]) <= 64 and max(seen["char_cnn"]) <= 64
    seen["lstm"].clear()
    embed_file(fixture_bilm(), str(text), str(tmp_path / "uncut.hdf5"), max_tokens=None)
    assert max(seen["lstm"]) >= 1002  # the whole line with its boundaries at once


def test_a_10000_token_line_written_to_hdf5_by_slices_equals_the_uncut_run(tmp_path) -> None:
    text = tmp_path / "in.txt"
    write_lines(text, [line(5, seed=3), line(10_000), line(12, seed=4)])
    bilm = fixture_bilm()
    embed_file(bilm, str(text), str(tmp_path / "pieces.hdf5"))  # the default budget, 4096
    embed_file(bilm, str(text), str(tmp_path / "uncut.hdf5"), max_tokens=None)
    with h5py.File(tmp_path / "pieces.hdf5") as pieces, h5py.File(tmp_path / "uncut.hdf5") as uncut:
        assert set(pieces) == set(uncut) == {"0", "1", "2", "sentence_to_index"}
        assert pieces["1"].shape == (3, 10_000, 32)
        for name in ("0", "1", "2"):
            assert_uncut(pieces[name][()], uncut[name][()])
        assert pieces["sentence_to_index"][0] == uncut["sentence_to_index"][0]


@pytest.mark.parametrize("layers", ["top", "average", "mix"])
def test_every_kept_layers_setting_in_pieces(tmp_path, layers) -> None:
    from elmo_bilm.runtime.engine import Layers

    kept = Layers(mix=(0.2, -1.0, 3.0), gamma=0.5) if layers == "mix" else Layers(layers)
    text = tmp_path / "in.txt"
    write_lines(text, [line(400)])
    bilm = fixture_bilm()
    embed_file(bilm, str(text), str(tmp_path / "p.hdf5"), layers=kept, max_tokens=30)
    embed_file(bilm, str(text), str(tmp_path / "u.hdf5"), layers=kept, max_tokens=None)
    with h5py.File(tmp_path / "p.hdf5") as pieces, h5py.File(tmp_path / "u.hdf5") as uncut:
        assert pieces["0"].shape == (400, 32)
        assert_uncut(pieces["0"][()], uncut["0"][()])


def test_parquet_gets_a_long_line_as_rows_of_pieces(tmp_path) -> None:
    text = tmp_path / "in.txt"
    words = line(700)
    write_lines(text, [line(4, seed=5), words])
    bilm = fixture_bilm()
    for name, budget in (("p.parquet", 256), ("u.parquet", None)):
        embed_file(
            bilm, str(text), str(tmp_path / name), output_format="parquet", max_tokens=budget
        )
    uncut = {row.line: row for row in read_embeddings(str(tmp_path / "u.parquet"))}
    rows = [row for row in read_embeddings(str(tmp_path / "p.parquet")) if row.line == 2]
    # pieces of 256 positions: <S> + 255 tokens, 256, then the rest and </S>
    assert [(row.start, len(row.tokens)) for row in rows] == [(0, 255), (255, 256), (511, 189)]
    assert sum((row.tokens for row in rows), []) == words
    assert uncut[2].start == 0 and uncut[2].tokens == words
    whole = numpy.concatenate([row.embeddings for row in rows], axis=-2)
    assert_uncut(whole, uncut[2].embeddings)


def test_a_long_protein_through_fasta_equals_the_uncut_run(tmp_path) -> None:
    fasta = tmp_path / "in.fasta"
    sequence = protein(900)
    fasta.write_text(f">short\nMKV\n>titin_like x\n{sequence[:450]}\n{sequence[450:]}\n")
    bilm = fixture_bilm()
    for name, budget in (("p.hdf5", 100), ("u.hdf5", None)):
        embed_fasta(bilm, str(fasta), str(tmp_path / name), batch_size=8, max_tokens=budget)
    with h5py.File(tmp_path / "p.hdf5") as pieces, h5py.File(tmp_path / "u.hdf5") as uncut:
        assert pieces["titin_like"].shape == (3, 900, 32)
        assert pieces["titin_like"].attrs["original_id"] == "titin_like"
        for name in ("short", "titin_like"):
            assert_uncut(pieces[name][()], uncut[name][()])


def test_the_corpus_worker_writes_a_long_line_as_rows_of_pieces(tmp_path) -> None:
    text = tmp_path / "in.txt"
    words = line(500)
    write_lines(text, [line(6, seed=6), words, line(2, seed=7)])
    rows: Dict[str, Dict[int, numpy.ndarray]] = {}
    for folder, budget in (("pieces", 64), ("uncut", None)):
        worker = ShardEmbedder(
            str(OPTIONS_FILE),
            str(WEIGHT_FILE),
            {"name": "all"},
            "float32",
            8,
            str(tmp_path / folder),
            1,
            max_tokens=budget,
        )
        (tmp_path / folder).mkdir()
        shard = Shard(name="s0", file=str(text), first_line=1, lines=3, path=str(text))
        assert worker.embed(shard)["sentences"] == 3
        found: Dict[int, List[numpy.ndarray]] = {}
        for row in read_embeddings(str(tmp_path / folder)):
            assert row.start == sum(piece.shape[-2] for piece in found.get(row.line, []))
            found.setdefault(row.line, []).append(row.embeddings)
        rows[folder] = {n: numpy.concatenate(parts, axis=-2) for n, parts in found.items()}
    assert set(rows["pieces"]) == {1, 2, 3}
    assert rows["pieces"][2].shape == (3, 500, 32)
    for n in (1, 2, 3):
        assert_uncut(rows["pieces"][n], rows["uncut"][n])


def test_embed_sorted_puts_a_long_line_together(monkeypatch) -> None:
    bilm = fixture_bilm()
    sentences = [line(3, seed=8), line(250), line(9, seed=9)]
    seen = sizes_seen(monkeypatch)
    pieces = dict(
        (tuple(batch[0]), host[0])
        for batch, host in embed_sorted(bilm, sentences, list, 4, CPU, "all", 32)
        if len(batch) == 1
    )
    assert max(seen["lstm"]) <= 32
    uncut = batch_layers(bilm, [sentences[1]], CPU)[0]
    assert_uncut(pieces[tuple(sentences[1])], uncut)


def test_elmo_embedder_embeds_a_long_sentence_in_pieces(monkeypatch) -> None:
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), max_tokens=40)
    reference = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), max_tokens=None)
    words = line(333)
    seen = sizes_seen(monkeypatch)
    vectors = embedder.embed_sentence(words)
    assert max(seen["lstm"]) <= 40
    assert_uncut(vectors, reference.embed_sentence(words))
    # embed_sentences: batches by length, the long one in pieces
    many = list(embedder.embed_sentences([line(5, seed=10), words], max_tokens=40))
    assert_uncut(many[1], vectors)


def test_the_stateful_mode_carries_the_uncut_states_through_pieces() -> None:
    """Call after call, a stateful embedder with pieces gives the uncut stateful numbers (each
    call starts from the states the previous one left); the stateless embedder differs from the
    second call on, which shows the states matter here."""
    pieces = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=True, max_tokens=23)
    uncut = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=True, max_tokens=None)
    stateless = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=False, max_tokens=23)
    calls = [[line(150)], [line(4, seed=11), line(9, seed=12)], [line(120, seed=13)], [line(60)]]
    for call, batch in enumerate(calls):
        got, expected = pieces.embed_batch(batch), uncut.embed_batch(batch)
        for a, b in zip(got, expected):
            assert_uncut(a, b)
        if call > 0 and len(batch) == 1:
            assert of_scale(stateless.embed_batch(batch)[0], expected[0]) > 1e-2


def test_seqvec_embeds_a_long_protein_in_pieces_stateful_or_not(monkeypatch) -> None:
    sequences = [protein(400), "MKTAYIAKQR", protein(260, seed=14)]
    for stateful in (True, False):
        made = [
            SeqVecEmbedder(
                1,
                options_file=str(OPTIONS_FILE),
                weights_file=str(WEIGHT_FILE),
                device="cpu",
                stateful=stateful,
                max_amino_acids=budget,
            )
            for budget in (50, 10**6)
        ]
        seen = sizes_seen(monkeypatch)
        for sequence in sequences:
            got = made[0].embed(sequence)
            assert max(seen["lstm"]) <= 50
            assert_uncut(got, made[1].embed(sequence))
            seen["lstm"].clear()


@pytest.mark.parametrize("precision", ["bfloat16", "int8"])
def test_reduced_precisions_keep_their_meaning_in_pieces(precision) -> None:
    """The pieces run the precision's products: as far from float32 as the uncut run in that
    precision is (bfloat16's error, int8's quantization of each product's input with a scale
    of its own), and not float32 (farther from it than float32 rounding)."""
    bilm, words = fixture_bilm(), line(300)
    float32 = batch_layers(bilm, [words], CPU)[0]
    _prepare(bilm, precision, precision)
    uncut = batch_layers(bilm, [words], CPU)[0]
    pieces = sequence_layers(bilm, words, "all", 37)
    error = of_scale(uncut, float32)
    assert error > 1e-4  # the precision's own error, far above float32's rounding
    assert of_scale(pieces, float32) <= 2 * error
    assert of_scale(pieces, float32) > 1e-4


class RecordedBar:
    """`tqdm`'s surface that `elmo-embed` uses, keeping its total, unit and updates."""

    bars: List["RecordedBar"] = []

    def __init__(self, total: int, unit: str, **_: object) -> None:
        self.total, self.unit, self.updates = total, unit, []  # type: ignore[var-annotated]
        RecordedBar.bars.append(self)

    def update(self, n: int) -> None:
        self.updates.append(n)

    def close(self) -> None:
        pass


def test_the_progress_bar_moves_with_each_piece_of_a_long_line(tmp_path, monkeypatch) -> None:
    """Counted in tokens (residues), not sentences: a line in pieces moves the bar piece by
    piece (an ETA within the line), and the bar ends at the file's tokens."""
    monkeypatch.setattr(engine, "progress_bar", RecordedBar)
    RecordedBar.bars = []
    text = tmp_path / "in.txt"
    write_lines(text, [line(300), line(3, seed=1), line(7, seed=2)])
    embed_file(fixture_bilm(), str(text), str(tmp_path / "out.hdf5"), max_tokens=64)
    fasta = tmp_path / "in.fasta"
    fasta.write_text(f">short\nMKV\n>long\n{protein(200)}\n")
    embed_fasta(fixture_bilm(), str(fasta), str(tmp_path / "p.hdf5"), batch_size=8, max_tokens=64)
    words, residues = RecordedBar.bars
    assert (words.total, words.unit, residues.total, residues.unit) == (
        310,
        " tokens",
        203,
        " residues",
    )
    # the short lines are one batch (10 tokens); the 300 tokens and their two boundaries are
    # pieces of 64 positions: 63 tokens after `<S>`, then 64 a piece, the last 45 before `</S>`
    assert sorted(words.updates) == sorted([10, 63, 64, 64, 64, 45])
    assert sorted(residues.updates) == sorted([3, 63, 64, 64, 9])


def test_the_progress_bar_ends_at_its_total_with_lines_left_out(tmp_path, monkeypatch) -> None:
    """Lines left out (`skip_bad_lines`) count neither in the total nor in the updates; a
    Parquet output and kept layers "top" count the same tokens."""
    monkeypatch.setattr(engine, "progress_bar", RecordedBar)
    RecordedBar.bars = []
    text = tmp_path / "in.txt"
    text.write_bytes(b"a cat sat\n\n\xff\xfe bad\n" + " ".join(line(150)).encode() + b"\nthe\n")
    for name, output_format in (("out.hdf5", "hdf5"), ("out.parquet", "parquet")):
        embed_file(
            fixture_bilm(),
            str(text),
            str(tmp_path / name),
            layers="top",
            max_tokens=40,
            skip_bad_lines=True,
            output_format=output_format,
        )
    for bar in RecordedBar.bars:
        assert bar.total == sum(bar.updates) == 3 + 150 + 1
