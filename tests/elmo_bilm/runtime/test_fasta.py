"""`elmo-embed` on FASTA (issue 68): each protein residue by residue, one HDF5 dataset per record
named by its id, batched by residues under --max-tokens; a 10,000-residue protein makes its own
batch. Values equal `ElmoEmbedder`'s on the residue lists."""

import random
import re

import h5py
import pytest

from elmo_bilm import ElmoEmbedder
from elmo_bilm.cli.embed import main
from elmo_bilm.runtime.engine import is_fasta, length_batches, read_fasta
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
BILM = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]


def protein(length, seed):
    rng = random.Random(seed)
    return "".join(rng.choice(AMINO_ACIDS) for _ in range(length))


def write_fasta(path, records, width=60):
    """`records`: (header, sequence); sequences wrapped at `width` residues a line."""
    lines = []
    for header, sequence in records:
        lines.append(f">{header}")
        lines += [sequence[i : i + width] for i in range(0, len(sequence), width)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def contents(path):
    with h5py.File(path, "r") as out:
        return {key: (out[key][()], dict(out[key].attrs)) for key in out}


@pytest.mark.slow
@pytest.mark.numerics
def test_three_proteins_one_of_10000_residues(tmp_path):
    proteins = {"sp|P1|SHORT": protein(76, 1), "long": protein(10_000, 2), "p3": protein(300, 3)}
    source = write_fasta(
        tmp_path / "proteins.fasta", [(f"{k} some description", v) for k, v in proteins.items()]
    )
    output = str(tmp_path / "out.hdf5")
    # a budget of 500 padded residues: two proteins of 76 and 300 pad to 604; the long one alone
    assert main([source, output, *BILM, "--max-tokens", "500"]) == 0
    records = list(read_fasta(source))
    batches = [
        [name for _, name, _ in b] for b in length_batches(records, lambda r: r[2], 128, 500)
    ]
    assert batches == [["sp|P1|SHORT"], ["p3"], ["long"]]
    stored = contents(output)
    assert set(stored) == set(proteins)
    reference = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=False)
    wanted = reference.embed_batch([list(sequence) for sequence in proteins.values()])
    for (name, sequence), want in zip(proteins.items(), wanted):
        data, attrs = stored[name]
        assert data.shape == (3, len(sequence), 32) and attrs == {"original_id": name}
        assert_float32_close(data, want, NETWORK, name)


@pytest.mark.numerics
def test_fasta_is_read_by_name_or_flag_and_keeps_layers(tmp_path):
    records = [("a", "MKTAYIAK"), ("b", "MKV"), ("c", "GSHMASVQKFPGDAN")]
    reference = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=False)
    wanted = {name: reference.embed_sentence(list(seq)) for name, seq in records}
    text = write_fasta(tmp_path / "proteins.txt", records, width=4)  # lines joined
    assert main([text, str(tmp_path / "flag.hdf5"), *BILM, "--fasta", "--batch-size", "2"]) == 0
    for name, (data, _) in contents(tmp_path / "flag.hdf5").items():
        assert_float32_close(data, wanted[name], NETWORK, name)
    fa = write_fasta(tmp_path / "proteins.fa", records)
    assert main([fa, str(tmp_path / "top.hdf5"), *BILM, "--top", "--dtype", "float16"]) == 0
    for name, (data, _) in contents(tmp_path / "top.hdf5").items():
        assert data.dtype == "float16" and data.shape == (len(dict(records)[name]), 32)
        assert_float32_close(data.astype("float32"), wanted[name][-1], 2**14, name)
    assert is_fasta("x.FASTA") and is_fasta("x.faa.gz") and not is_fasta("x.txt")


@pytest.mark.parametrize(
    "text, message",
    [
        ("MKV\n>a\nMK\n", r"in.fasta:1: sequence before the first '>' header"),
        (">a\nMK\n>a\nMKV\n", r"in.fasta:3: id 'a' repeats line 1's"),
        (">a\n\n>b\nMK\n", r"in.fasta:1: record 'a' has no residues"),
        (">a\nMK\n>b\n", r"in.fasta:3: record 'b' has no residues"),
        (">  \nMK\n", r"in.fasta:1: header '>  ': its id cannot name a dataset"),
        (">x/y\nMK\n", r"in.fasta:1: header '>x/y': its id cannot name a dataset"),
        ("\n\n", r"in.fasta: no records"),
    ],
)
def test_malformed_fasta_is_one_line_naming_file_and_line(tmp_path, capsys, text, message):
    (tmp_path / "in.fasta").write_text(text)
    assert main([str(tmp_path / "in.fasta"), str(tmp_path / "out.hdf5"), *BILM]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err
    assert not (tmp_path / "out.hdf5").exists()


@pytest.mark.parametrize("extra", [["--format", "parquet"], ["--use-sentence-keys"]])
def test_options_that_do_not_apply_to_fasta_are_refused(tmp_path, capsys, extra):
    source = write_fasta(tmp_path / "in.fasta", [("a", "MKV")])
    assert main([source, str(tmp_path / "out"), *BILM, *extra]) == 1
    assert "FASTA input is written to HDF5" in capsys.readouterr().err
