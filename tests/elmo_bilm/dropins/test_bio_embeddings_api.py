"""`elmo_bilm.bio_embeddings.SeqVecEmbedder`: bio_embeddings' SeqVec API (issue 68) on any biLM
source, here the tiny bilm-tf fixture, stateless: shapes, values equal to `ElmoEmbedder`'s on the
residue lists, `embed_many`'s residue budget and order, SeqVec's per-protein reduction, the ways
to name the model."""

import os
import shutil

import numpy
import pytest

from elmo_bilm import ElmoEmbedder
from elmo_bilm.dropins.bio_embeddings import DEFAULT_MAX_AMINO_ACIDS, SeqVecEmbedder
from elmo_bilm.runtime import engine
from elmo_bilm.sources.resolver import resolve_bilm
from elmo_bilm.utils.files import FormatError, UsageError
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

PROTEINS = ["MKTAYIAKQRQISFVKSHFSRQ", "MKV", "GSHMASVQKFPGDANCDGIVDISDAVLIMQTM", "A", "MKTAYIAK"]


@pytest.fixture(scope="module")
def seqvec():
    """Stateless: every protein from zero states (the stateful default: test_seqvec_stateful)."""
    return SeqVecEmbedder(
        options_file=str(OPTIONS_FILE), weights_file=str(WEIGHT_FILE), device="cpu", stateful=False
    )


@pytest.fixture(scope="module")
def reference():
    return ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=False)


def test_embed_is_layers_by_residues_by_dim(seqvec, reference):
    embedding = seqvec.embed(PROTEINS[0])
    assert embedding.shape == (3, len(PROTEINS[0]), 32) and embedding.dtype == numpy.float32
    numpy.testing.assert_array_equal(embedding, reference.embed_sentence(list(PROTEINS[0])))
    assert (seqvec.embedding_dimension, seqvec.number_of_layers) == (32, 3)
    assert SeqVecEmbedder.embedding_dimension == 1024  # SeqVec's, as bio_embeddings declares
    assert seqvec.max_amino_acids == DEFAULT_MAX_AMINO_ACIDS == 15_000


@pytest.mark.numerics
def test_embed_batch_and_embed_many_equal_embed_in_order(seqvec, monkeypatch):
    alone = [seqvec.embed(p) for p in PROTEINS]
    for got, want in zip(seqvec.embed_batch(PROTEINS), alone, strict=True):
        assert_float32_close(got, want, NETWORK)
    batches = []
    pieces = []
    real_batch, real_pieces = engine.batch_layers, engine.sequence_pieces

    def spy_batch(bilm, sentences, *args):  # type: ignore[no-untyped-def]
        batches.append(["".join(residues) for residues in sentences])
        return real_batch(bilm, sentences, *args)

    def spy_pieces(bilm, sentence, *args):  # type: ignore[no-untyped-def]
        pieces.append("".join(sentence))
        return real_pieces(bilm, sentence, *args)

    monkeypatch.setattr(engine, "batch_layers", spy_batch)
    monkeypatch.setattr(engine, "sequence_pieces", spy_pieces)
    many = list(seqvec.embed_many(iter(PROTEINS), batch_size=40))
    assert [m.shape[1] for m in many] == [len(p) for p in PROTEINS]  # input order
    for got, want in zip(many, alone):
        assert_float32_close(got, want, NETWORK)
    # stateless, order is free: length-sorted batches of at most 40 padded residues (rows x
    # (the longest + its two boundaries)); the 32-residue one fits alone
    assert batches == [["A", "MKV", "MKTAYIAK"], [PROTEINS[0]], [PROTEINS[2]]]
    batches.clear()
    # each longer than a budget of 1: alone, and in exact pieces of one position
    for got, want in zip(seqvec.embed_many(PROTEINS, batch_size=1), alone, strict=True):
        assert_float32_close(got, want, NETWORK)
    assert batches == [] and pieces == sorted(PROTEINS, key=len)
    pieces.clear()
    list(seqvec.embed_many(PROTEINS))  # max_amino_acids: everything in one batch
    assert batches == [sorted(PROTEINS, key=len)] and pieces == []


def test_reduce_per_protein_is_seqvecs(seqvec):
    embedding = seqvec.embed(PROTEINS[2])
    reduced = SeqVecEmbedder.reduce_per_protein(embedding)
    assert reduced.shape == (32,)
    numpy.testing.assert_allclose(reduced, embedding.sum(axis=0).mean(axis=0))
    numpy.testing.assert_allclose(reduced, embedding.sum(axis=0).sum(axis=0) / 32, rtol=1e-5)


@pytest.mark.numerics
def test_model_directory_in_both_layouts(tmp_path, seqvec):
    want = seqvec.embed("MKV")
    bio = tmp_path / "bio_embeddings"  # bio_embeddings' names, without suffixes
    bio.mkdir()
    shutil.copy(OPTIONS_FILE, bio / "options_file")
    shutil.copy(WEIGHT_FILE, bio / "weights_file")
    unzipped = tmp_path / "uniref50_v2"  # SeqVec's zip, unpacked
    unzipped.mkdir()
    shutil.copy(OPTIONS_FILE, unzipped / "options.json")
    shutil.copy(WEIGHT_FILE, unzipped / "weights.hdf5")
    # the resolver alone reads bio_embeddings' layout: a folder of bilm-tf files
    resolved = resolve_bilm(str(bio))
    assert (resolved.kind, resolved.format) == ("folder", "bilm_tf")
    assert resolved.files == (str(bio / "options_file"), str(bio / "weights_file"))
    for folder in (bio, unzipped):
        embedder = SeqVecEmbedder(0, model_directory=str(folder), device="cpu")
        # to rounding: `seqvec`'s character CNN may serve cached vectors from another batch
        assert_float32_close(embedder.embed("MKV"), want, NETWORK)


@pytest.mark.parametrize("damage", ["no weights", "huge options", "fifo weights"])
def test_a_damaged_model_directory_is_one_line(tmp_path, damage):
    """bio_embeddings' folder is untrusted input: half of it, an options file too large to be
    bilm-tf's (sparse, never read) or weights that are no regular file are refused by name."""
    folder = tmp_path / "seqvec"
    folder.mkdir()
    shutil.copy(OPTIONS_FILE, folder / "options_file")
    if damage == "huge options":
        shutil.copy(WEIGHT_FILE, folder / "weights_file")
        with open(folder / "options_file", "r+b") as handle:
            handle.truncate(2**31)
        match = "options_file: 2,147,483,648 bytes, not bilm-tf options"
    elif damage == "fifo weights":
        os.mkfifo(folder / "weights_file")
        match = "weights_file: not a regular file"
    else:
        match = "has options_file but no weights_file"
    with pytest.raises(FormatError, match=match):
        SeqVecEmbedder(0, model_directory=str(folder), device="cpu")


def test_bad_arguments_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="either model_directory or"):
        SeqVecEmbedder(model_directory=str(tmp_path), options_file=str(OPTIONS_FILE))
    with pytest.raises(UsageError, match="device must be the CPU or a CUDA device"):
        SeqVecEmbedder(options_file=str(OPTIONS_FILE), weights_file=str(WEIGHT_FILE), device="meta")
    with pytest.raises(UsageError, match="max_amino_acids must be a whole number >= 1"):
        SeqVecEmbedder(options_file=str(OPTIONS_FILE), max_amino_acids=0)


# ---- careless values (issue 80's sweep)

MANY = ["MKT", "AC", "", "MKTAYIAKQR"]


def _seqvec(stateful, **kwargs):
    return SeqVecEmbedder(
        0 if stateful else 4,
        options_file=str(OPTIONS_FILE),
        weights_file=str(WEIGHT_FILE),
        device="cpu",
        stateful=stateful,
        **kwargs,
    )


@pytest.mark.parametrize("stateful", [True, False])
def test_embed_many_reads_no_batch_size_as_bio_embeddings_does_in_either_mode(stateful):
    # stateless, batch_size=0 was refused while the stateful mode read it as None
    # (bio_embeddings: `if batch_size`); both now read None and 0 alike
    def run(batch_size):
        embedder = _seqvec(stateful)
        return list(embedder.embed_many(MANY, batch_size))

    expected = run(None)
    for no_size in (0, numpy.int64(0), 0.0):
        for got, want in zip(run(no_size), expected, strict=True):
            assert numpy.array_equal(got, want)


@pytest.mark.parametrize("batch_size", [-1, float("nan"), 5.5, "5", True])
@pytest.mark.parametrize("stateful", [True, False])
def test_embed_many_names_batch_size_when_it_refuses_it(stateful, batch_size):
    # stateful, the error named `max_tokens`, which the caller never passed
    with pytest.raises(UsageError, match="^batch_size must be a whole number"):
        list(_seqvec(stateful).embed_many(MANY, batch_size))


@pytest.mark.parametrize("stateful", [True, False])
def test_one_protein_string_where_a_list_belongs_is_refused(stateful):
    # it embedded each residue as a protein of its own
    embedder = _seqvec(stateful)
    with pytest.raises(TypeError, match="got the string 'MKT'"):
        list(embedder.embed_many("MKT"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got the string 'MKT'"):
        list(embedder.embed_batch("MKT"))  # type: ignore[arg-type]
    assert [a.shape[1] for a in embedder.embed_many(iter(["MKT"]))] == [3]


@pytest.mark.parametrize(
    "argument, value",
    [
        ("max_amino_acids", float("nan")),
        ("max_amino_acids", 2.5),
        ("max_amino_acids", "100"),
        ("max_amino_acids", None),
        ("warmup_rounds", -1),
        ("warmup_rounds", 1.5),
        ("warmup_rounds", "2"),
    ],
)
def test_constructor_sizes_are_one_line_naming_their_argument(argument, value):
    # NaN and 2.5 were refused as `max_tokens`, "100" and None a TypeError of `<`, -1 warm-up
    # rounds ran none silently
    kwargs = {argument: value}
    warmup = kwargs.pop("warmup_rounds", 0)
    with pytest.raises(UsageError, match=f"^{argument} must be a whole number"):
        SeqVecEmbedder(
            warmup,
            options_file=str(OPTIONS_FILE),
            weights_file=str(WEIGHT_FILE),
            device="cpu",
            **kwargs,
        )
    assert (
        SeqVecEmbedder(
            numpy.int64(1),
            options_file=str(OPTIONS_FILE),
            weights_file=str(WEIGHT_FILE),
            device=numpy.int64(-1),
            max_amino_acids=numpy.int64(50),
        ).max_amino_acids
        == 50
    )


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_model_directory_is_refused_not_read_as_the_default_biLM(
    empty, tmp_path, monkeypatch
):
    """Issue 88: `model_directory=""` (a variable left empty) matched any file of the working
    folder and loaded the resolver's default biLM (AllenNLP's English `original`)."""
    (tmp_path / "any_file").write_text("x")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="model_directory: got .* names no biLM") as caught:
        SeqVecEmbedder(model_directory=empty, device="cpu")
    assert "\n" not in str(caught.value)
