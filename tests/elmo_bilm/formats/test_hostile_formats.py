"""Hostile ELMoForManyLangs folders and TensorFlow checkpoints (issue 67, file-format cases): each
is one line naming the file and the problem, allocates no more than the file holds, and leaves
nothing half-written. Every hostile input is written small into the test's tmp_path."""

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import h5py
import numpy
import pytest
import torch

from elmo_bilm import FormatError
from elmo_bilm.cli.convert import main as elmo_convert
from elmo_bilm.formats import convert
from elmo_bilm.formats.convert import convert_checkpoint
from elmo_bilm.formats.manylangs import load_manylangs
from elmo_bilm.formats.tf_checkpoint import (
    MAX_KEY_BYTES,
    TABLE_MAGIC,
    CheckpointReader,
    masked_crc32c,
)
from tests.conftest import REPO_ROOT
from tests.elmo_bilm.formats.test_tf_checkpoint import (
    PREFIX,
    SAVE_DIR,
    block,
    entry,
    field,
    varint,
    write_checkpoint,
)

MANYLANGS = REPO_ROOT / "fixtures" / "elmoformanylangs"
MEMBERS = (
    "config.json",
    "architecture.json",
    "char.dic",
    "word.dic",
    "token_embedder.pkl",
    "encoder.pkl",
)
WORD_TABLE = "word_emb_layer.embedding.weight"


def one_line(error: object, *names: object) -> str:
    message = str(error)
    assert "\n" not in message, message
    for name in names:
        assert str(name) in message, message
    return message


def manylangs_copy(tmp_path: Path, name: str = "word8") -> Path:
    folder = tmp_path / name
    shutil.copytree(MANYLANGS / name, folder)
    return folder


def refused(folder: Path, file_name: str, *words: str) -> str:
    """The one-line FormatError of loading `folder`, naming `folder/file_name` and `words`."""
    with pytest.raises(FormatError) as error:
        load_manylangs(str(folder))
    return one_line(error.value, folder / file_name, *words)


# --- ELMoForManyLangs: tensors that declare more than their file stores ---------------------


def _wide_word_table(folder: Path, table: torch.Tensor) -> None:
    """Make `folder`'s architecture and projection fit a word table of `table`'s width and store
    `table` as the word embedding (every other check then passes: only its storage is wrong)."""
    architecture = json.loads((folder / "architecture.json").read_text("utf-8"))
    architecture["token_embedder"]["word_dim"] = table.shape[1]
    (folder / "architecture.json").write_text(json.dumps(architecture), "utf-8")
    state = torch.load(folder / "token_embedder.pkl", weights_only=True)
    n_filters = sum(n for _, n in architecture["token_embedder"]["filters"])
    state["projection.weight"] = torch.zeros(8, table.shape[1] + n_filters)
    state[WORD_TABLE] = table
    torch.save(state, folder / "token_embedder.pkl")


# The probe's own peak is VmHWM (its memory's high-water mark, new at `exec`), not ru_maxrss:
# Linux starts a child's ru_maxrss at the peak of the process that started it (this test's).
_PEAK = """
import json, sys
from elmo_bilm.formats.manylangs import load_manylangs
def high_water_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
before = high_water_kib()
try:
    load_manylangs(sys.argv[1])
    error = None
except Exception as caught:
    error = f"{type(caught).__name__}: {caught}"
print(json.dumps({"error": error, "grew_kib": high_water_kib() - before}))
"""


def test_a_stride_0_word_table_is_refused_without_allocating_it(tmp_path):
    """A (10^6, 512) word table stored as one float (stride 0): 4 bytes in the file, 2 GB once
    checked or copied. Refused naming the file and the tensor; the loading process's peak memory
    grows by far less than the table (measured in a fresh process: its peak is its own)."""
    folder = manylangs_copy(tmp_path)
    wide = torch.zeros(1).expand(10**6, 512)
    assert wide.stride() == (0, 0)
    _wide_word_table(folder, wide)
    assert (folder / "token_embedder.pkl").stat().st_size < 64 << 10
    saved = torch.load(folder / "token_embedder.pkl", weights_only=True)[WORD_TABLE]
    assert saved.stride() == (0, 0) and saved.untyped_storage().nbytes() == 4  # as written
    refused(folder, "token_embedder.pkl", WORD_TABLE, "strided view", "(0, 0)")
    child = subprocess.run(
        [sys.executable, "-c", _PEAK, str(folder)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,
        check=True,
    )
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result["error"] and "FormatError" in result["error"] and WORD_TABLE in result["error"]
    assert result["grew_kib"] < 100 << 10  # the table is 2 GB, its bool isfinite mask 512 MB


def test_an_overlapping_view_is_refused(tmp_path):
    """Rows that overlap (strides (1, 1)): 10^4 x 512 values declared over 10^4 + 511 stored."""
    folder = manylangs_copy(tmp_path)
    base = torch.zeros(10**4 + 511)
    _wide_word_table(folder, base.as_strided((10**4, 512), (1, 1)))
    refused(folder, "token_embedder.pkl", WORD_TABLE, "(1, 1)")


def test_a_word_table_larger_than_its_dictionary_is_refused(tmp_path):
    """ELMoForManyLangs' tables have one row per dictionary entry: more rows are refused (the
    dictionary bounds what is built, not only the stored bytes)."""
    folder = manylangs_copy(tmp_path)
    state = torch.load(folder / "token_embedder.pkl", weights_only=True)
    state[WORD_TABLE] = torch.zeros(4096, 8)
    torch.save(state, folder / "token_embedder.pkl")
    refused(folder, "token_embedder.pkl", "4096 word embeddings", str(folder / "word.dic"))


# --- ELMoForManyLangs: symbolic links out of the folder ------------------------------------


@pytest.mark.parametrize("member", MEMBERS)
def test_a_member_linked_outside_the_folder_is_refused(tmp_path, member):
    folder = manylangs_copy(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.move(str(folder / member), outside / member)  # the same content: only the link differs
    (folder / member).symlink_to(outside / member)
    message = refused(folder, member, "symbolic link", "outside the model folder")
    assert str(outside / member) in message


def test_a_link_inside_the_folder_loads(tmp_path):
    folder = manylangs_copy(tmp_path)
    (folder / "weights").mkdir()
    shutil.move(str(folder / "encoder.pkl"), folder / "weights" / "encoder.pkl")
    (folder / "encoder.pkl").symlink_to(Path("weights") / "encoder.pkl")
    load_manylangs(str(folder))


# --- ELMoForManyLangs: a byte-order mark ---------------------------------------------------


def test_dictionaries_with_a_byte_order_mark_load_as_without(tmp_path):
    """Saved by a Windows editor: a UTF-8 BOM before the first entry (`<oov>` in word.dic, whose
    absence was reported) is not part of the token."""
    folder = manylangs_copy(tmp_path)
    plain = load_manylangs(str(folder))
    for name in ("word.dic", "char.dic"):
        raw = (folder / name).read_bytes()
        (folder / name).write_bytes(b"\xef\xbb\xbf" + raw)
    assert (folder / "word.dic").read_text("utf-8").startswith("\ufeff<oov>\t")
    marked = load_manylangs(str(folder))
    assert marked.vocabulary.words == plain.vocabulary.words
    assert marked.vocabulary.chars == plain.vocabulary.chars
    sentences = [["the", "cat", "<", "zebra"]]
    assert torch.equal(marked.batch_to_ids(sentences), plain.batch_to_ids(sentences))


# --- TensorFlow checkpoints: keys ------------------------------------------------------------


def write_index(prefix: Path, items: List[Tuple[bytes, bytes]]) -> Path:
    """A `.index` of one data block whose keys are prefix-compressed against the previous one
    (as LevelDB writes them), after the bundle header; returns its path."""
    body, previous = bytearray(), b""
    for key, value in [(b"", field(1, 1)), *items]:
        shared = 0
        while shared < min(len(key), len(previous)) and key[shared] == previous[shared]:
            shared += 1
        body += varint(shared) + varint(len(key) - shared) + varint(len(value))
        body += key[shared:] + value
        previous = key
    data_block = bytes(body) + struct.pack("<II", 0, 1)
    table = bytearray()

    def add(contents: bytes) -> bytes:
        handle = varint(len(table)) + varint(len(contents))
        table.extend(contents + b"\0" + struct.pack("<I", masked_crc32c(contents + b"\0")))
        return handle

    data_handle = add(data_block)
    meta_handle = add(block([]))
    index_handle = add(block([(previous + b"\xff", data_handle)]))
    footer = (meta_handle + index_handle).ljust(40, b"\0") + struct.pack("<Q", TABLE_MAGIC)
    path = Path(f"{prefix}.index")
    path.write_bytes(bytes(table) + footer)
    return path


def test_a_64_kib_key_is_refused_before_it_is_built(tmp_path):
    prefix = tmp_path / "model.ckpt-1"
    tensor = entry(1, (1,), 0, 4, 0)
    index = write_index(prefix, [(b"lm/" + b"a" * (64 << 10), tensor)])
    with pytest.raises(FormatError) as error:
        CheckpointReader(prefix)
    message = one_line(error.value, index, "holds a key of", f"at most {MAX_KEY_BYTES}")
    assert int(message.split("a key of ")[1].split()[0]) > 64 << 10


def test_prefix_compressed_names_are_bounded_in_all(tmp_path):
    """Keys of 4,000 bytes sharing all but two: 2,000 of them are a 14 KB index and 8 MB of
    names (64 KiB keys in a 1 MB index were 64 GB): refused once they pass 16 times the index."""
    prefix = tmp_path / "model.ckpt-1"
    stem = b"lm/" + b"a" * 3995
    items = [(stem + struct.pack(">H", i), b"") for i in range(2000)]
    index = write_index(prefix, items)
    assert index.stat().st_size < 20_000
    with pytest.raises(FormatError) as error:
        CheckpointReader(prefix)
    one_line(error.value, index, "tensor names add up to more than")
    short = write_index(prefix, [(b"lm/x" + struct.pack(">H", i), b"") for i in range(2000)])
    assert len(CheckpointReader(prefix).names()) == 2000  # the same count of short names reads
    assert short.stat().st_size < 20_000


# --- TensorFlow checkpoints: conversion ------------------------------------------------------


def fixture_tensors() -> Dict[str, Tuple[int, Tuple[int, ...], numpy.ndarray]]:
    """The fixture checkpoint's tensors: {name: (dtype, shape, array)}."""
    reader = CheckpointReader(PREFIX)
    return {
        name: (reader.entries[name].dtype, reader.entries[name].shape, reader.read(name))
        for name in reader.names()
    }


def rewritten(tmp_path: Path, tensors: Dict[str, Tuple[int, Tuple[int, ...], numpy.ndarray]]):
    """The fixture's model as a hand-written checkpoint `tmp_path/ckpt/model.ckpt-1` of
    `tensors`, bilm-tf's options beside it."""
    folder = tmp_path / "ckpt"
    folder.mkdir(exist_ok=True)
    shutil.copyfile(SAVE_DIR / "options.json", folder / "options.json")
    raw = {
        name: (dtype, shape, numpy.ascontiguousarray(array).tobytes())
        for name, (dtype, shape, array) in tensors.items()
    }
    write_checkpoint(folder / "model.ckpt-1", raw)
    return folder / "model.ckpt-1"


def test_the_rewritten_fixture_converts(tmp_path):
    """The test's own checkpoint writer, unmodified tensors: converts (the cases below each
    change one thing)."""
    prefix = rewritten(tmp_path, fixture_tensors())
    convert_checkpoint(prefix, tmp_path / "out")
    assert sorted(os.listdir(tmp_path / "out")) == ["options.json", "softmax.hdf5", "weights.hdf5"]


@pytest.mark.parametrize("name", ["lm/", "lm/m", "lm/.", "lm/q/../x", "lm/a//b", "lm/a\x00b"])
def test_names_that_are_no_hdf5_dataset_are_refused(tmp_path, name):
    tensors = fixture_tensors()
    tensors[name] = (1, (1,), numpy.ones(1, numpy.float32))
    prefix = rewritten(tmp_path, tensors)
    with pytest.raises(FormatError) as error:
        convert_checkpoint(prefix, tmp_path / "out")
    one_line(error.value, f"{prefix}.index", repr(name), "not a valid HDF5 dataset name")
    assert not (tmp_path / "out").exists()


def test_a_dataset_that_would_also_be_a_group_is_refused(tmp_path):
    """`lm/lx` becomes `x` (bilm-tf's `lstrip('lm/')`) and `lm/x/y` becomes `x/y`."""
    tensors = fixture_tensors()
    tensors["lm/lx"] = tensors["lm/x/y"] = (1, (1,), numpy.ones(1, numpy.float32))
    prefix = rewritten(tmp_path, tensors)
    with pytest.raises(FormatError) as error:
        convert_checkpoint(prefix, tmp_path / "out")
    one_line(error.value, f"{prefix}.index", "'lm/lx'", "'lm/x/y'", "a dataset and a group")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 1e300])
def test_non_finite_weights_are_refused_naming_the_tensor(tmp_path, bad):
    """NaN, infinity, and a float64 beyond float32's range (infinite once written as float32)."""
    tensors = fixture_tensors()
    dtype, shape, value = tensors["lm/char_embed"]
    value = value.astype(numpy.float64)
    value.flat[7] = bad
    tensors["lm/char_embed"] = (2, shape, value)  # float64
    prefix = rewritten(tmp_path, tensors)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exited:  # the command: one line, exit status 1
        elmo_convert([str(prefix), str(out)])
    message = str(exited.value.code)
    assert message.startswith("elmo-convert: error: ")
    one_line(exited.value.code, f"{prefix}.data-00000-of-00001", "'lm/char_embed'", "NaN")
    assert not out.exists()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_failure_midway_leaves_no_file_and_no_partial(tmp_path, monkeypatch):
    """The softmax fails after weights.hdf5 was written (into the staging folder): no output,
    no partial, no staging folder is left; a dead run's leftovers are cleared as well."""
    out = tmp_path / "out"
    out.mkdir()
    dead = _dead_pid()
    leftovers = [out / f"weights.hdf5.{dead}.partial", out / f".elmo-convert.{dead}.partial"]
    leftovers[0].write_bytes(b"half a file of a killed run")
    leftovers[1].mkdir()
    (leftovers[1] / "weights.hdf5").write_bytes(b"half")
    real = convert._write_hdf5
    written: List[str] = []

    def fails_second(reader, tensors, path, *rest):
        if written:
            raise OSError(28, "No space left on device (simulated)")
        real(reader, tensors, path, *rest)
        written.append(path)
        assert h5py.is_hdf5(path)

    monkeypatch.setattr(convert, "_write_hdf5", fails_second)
    with pytest.raises(OSError, match="simulated"):
        convert_checkpoint(PREFIX, out)
    assert written and os.listdir(out) == []
    monkeypatch.setattr(convert, "_write_hdf5", real)
    convert_checkpoint(PREFIX, out)
    assert sorted(os.listdir(out)) == ["options.json", "softmax.hdf5", "weights.hdf5"]


def test_a_softmax_declaring_more_than_the_options_imply_is_refused_before_it_is_read(
    tmp_path, monkeypatch
):
    """Issue 79: a softmax declaring 5 GiB in a sparse data file (416 KB on disk) ended in a
    numpy MemoryError traceback; its shape is now checked against the options like the other
    tensors', one line naming the index and the tensor, before a byte of it is read."""
    tensors = fixture_tensors()
    dtype, shape, value = tensors["lm/softmax/W"]
    rows = 5 * 2**30 // (4 * shape[1])
    prefix = rewritten(tmp_path, tensors)
    write_checkpoint(
        prefix,
        {name: (d, s, numpy.ascontiguousarray(a).tobytes()) for name, (d, s, a) in tensors.items()},
        {"lm/softmax/W": ((rows, shape[1]), rows * shape[1] * 4)},
    )
    data_file = Path(f"{prefix}.data-00000-of-00001")
    os.truncate(data_file, data_file.stat().st_size + 5 * 2**30)  # sparse: holes, no disk
    read = CheckpointReader.read

    def no_softmax_read(self, name):
        assert "softmax" not in name, "the softmax was read before its shape was checked"
        return read(self, name)

    monkeypatch.setattr(CheckpointReader, "read", no_softmax_read)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exited:
        elmo_convert([str(prefix), str(out)])
    message = one_line(exited.value.code, f"{prefix}.index", "'lm/softmax/W'", "(the softmax)")
    assert message.startswith("elmo-convert: error: ") and f"[{rows}, 16]" in message
    assert "implies [32, 16]" in message
    assert not out.exists()


def test_a_tensor_larger_than_memory_is_one_line(tmp_path, monkeypatch):
    """Where the options cannot bound a tensor, a failed allocation is one line naming the
    file and tensor, not a MemoryError traceback."""
    empty = numpy.empty

    def no_memory(size, *args, **kwargs):
        if isinstance(size, int) and size > 1000:
            raise MemoryError(f"Unable to allocate {size} bytes (simulated)")
        return empty(size, *args, **kwargs)

    monkeypatch.setattr(numpy, "empty", no_memory)
    with pytest.raises(OSError) as error:
        CheckpointReader(PREFIX).read("lm/CNN_high_0/W_carry")
    one_line(error.value, f"{PREFIX}.data-00000-of-00001", "'lm/CNN_high_0/W_carry'", "memory")


def test_a_live_conversion_into_the_same_folder_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    script = (  # a live conversion: it holds the folder's lock while it writes
        "import sys\n"
        "from elmo_bilm.utils.file_sets import output_set\n"
        f"with output_set({{'weights': {str(out / 'weights.hdf5')!r}}}):\n"
        "    print('writing', flush=True)\n"
        "    sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as other:
        try:
            assert other.stdout.readline() == "writing\n"
            with pytest.raises(FileExistsError) as error:
                convert_checkpoint(PREFIX, out)
            one_line(error.value, out, f"process {other.pid}")
        finally:
            other.kill()
    assert not (out / "weights.hdf5").exists()
