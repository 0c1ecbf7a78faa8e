"""bilm-tf TensorFlow checkpoints without TensorFlow (issue 57 item 3): `elmo_bilm.formats.tf_checkpoint`
reads the checkpoint TensorFlow 2.15 itself wrote with bilm-tf's own model code (fixtures/
tf_checkpoint, made by its make_fixture.py), and `elmo-convert` writes what bilm-tf's own
`dump_weights` wrote from it (recorded in reference.json). TensorFlow is never imported here."""

import hashlib
import json
import shutil
import struct
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import h5py
import numpy
import pytest
import torch

from elmo_bilm import Elmo, FormatError, batch_to_ids
from elmo_bilm.cli.convert import main
from elmo_bilm.formats import tf_checkpoint
from elmo_bilm.formats.bilm_tf import read_softmax
from elmo_bilm.formats.convert import convert_checkpoint, dump_name
from elmo_bilm.formats.tf_checkpoint import (
    TABLE_MAGIC,
    CheckpointReader,
    crc32c,
    crc32c_numpy,
    masked_crc32c,
    resolve_checkpoint,
)
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE

FIXTURE = REPO_ROOT / "fixtures" / "tf_checkpoint"
SAVE_DIR = FIXTURE / "save_dir"
PREFIX = SAVE_DIR / "model.ckpt-3"
DATA_FILE = SAVE_DIR / "model.ckpt-3.data-00000-of-00001"
INDEX_FILE = SAVE_DIR / "model.ckpt-3.index"
REFERENCE = json.loads((FIXTURE / "reference.json").read_text())


def digest(array: numpy.ndarray) -> str:
    return hashlib.sha256(numpy.ascontiguousarray(array).tobytes()).hexdigest()


def datasets(path: Path) -> Dict[str, numpy.ndarray]:
    found: Dict[str, numpy.ndarray] = {}
    with h5py.File(path, "r") as handle:
        handle.visititems(
            lambda name, item: (
                found.__setitem__(name, item[...]) if isinstance(item, h5py.Dataset) else None
            )
        )
    return found


def one_line(error: BaseException, *names: object) -> str:
    message = str(error)
    assert "\n" not in message
    for name in names:
        assert str(name) in message, message
    return message


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("converted")
    convert_checkpoint(SAVE_DIR, out)  # the folder: its `checkpoint` file names model.ckpt-3
    return out


def test_crc32c_matches_the_standard_check_values(monkeypatch: pytest.MonkeyPatch) -> None:
    assert crc32c(b"123456789") == crc32c_numpy(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    rng = numpy.random.default_rng(0)
    for size in (1, 4095, 4096, 4097, 65537, 1 << 20):  # scalar and vectorised paths
        data = rng.integers(0, 256, size, dtype=numpy.uint8)
        assert crc32c_numpy(data) == crc32c(data.tobytes()), size
    expected = crc32c_numpy(data)
    monkeypatch.setattr(tf_checkpoint, "_CHUNK_BYTES", 100_000)  # chunks chained: the same crc
    assert crc32c_numpy(data) == expected
    google_crc32c = pytest.importorskip("google_crc32c")
    assert crc32c_numpy(data) == google_crc32c.value(data.tobytes())


def test_reader_reads_what_tensorflows_own_reader_read() -> None:
    reader = CheckpointReader(PREFIX)
    expected = REFERENCE["checkpoint"]  # TF 2.15's NewCheckpointReader on the same files
    assert reader.names() == sorted(expected)
    for name in reader.names():
        value = reader.read(name)
        assert value.dtype.name == expected[name]["dtype"], name
        assert list(value.shape) == expected[name]["shape"], name
        assert digest(value) == expected[name]["sha256"], name


def test_two_shards_and_half_precision_as_tensorflow_wrote_them() -> None:
    reader = CheckpointReader(FIXTURE / "sharded")  # Saver(sharded=True), two devices
    expected = REFERENCE["sharded"]
    assert reader.num_shards == 2 and {entry.shard for entry in reader.entries.values()} == {0, 1}
    assert reader.names() == sorted(expected)
    for name in reader.names():
        value = reader.read(name)
        assert reader.entries[name].dtype_name == expected[name]["dtype"], name
        assert list(value.shape) == expected[name]["shape"], name
        assert value.ravel().tolist() == expected[name]["values"], name


def test_checkpoint_is_named_by_prefix_index_data_file_or_folder(tmp_path: Path) -> None:
    prefix = str(PREFIX)
    assert resolve_checkpoint(SAVE_DIR) == prefix  # `checkpoint` names /tmp/...: found by name
    assert resolve_checkpoint(PREFIX) == prefix
    assert resolve_checkpoint(INDEX_FILE) == prefix
    assert resolve_checkpoint(DATA_FILE) == prefix
    folder = tmp_path / "moved"
    shutil.copytree(SAVE_DIR, folder)
    (folder / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-9"\n')
    with pytest.raises(FileNotFoundError) as error:
        resolve_checkpoint(folder)
    one_line(error.value, folder / "checkpoint", "model.ckpt-9")
    (folder / "checkpoint").unlink()  # no `checkpoint` file: the single .index
    assert resolve_checkpoint(folder) == str(folder / "model.ckpt-3")
    # a name of a file that is not there is refused with its own name, in every form
    for missing in ("model.ckpt-7", "model.ckpt-7.index", "model.ckpt-7.data-00000-of-00001"):
        with pytest.raises(FileNotFoundError) as error:
            resolve_checkpoint(folder / missing)
        one_line(error.value, folder / missing, "no such checkpoint")


def test_weights_equal_bilm_tfs_own_dump_weights(converted: Path) -> None:
    ours = datasets(converted / "weights.hdf5")
    reference = REFERENCE["dump_weights"]  # bilm-tf's dump_weights on the fixture, by TF 2.15
    assert sorted(ours) == sorted(reference)
    for name, value in ours.items():
        assert value.dtype == numpy.float32, name
        assert list(value.shape) == reference[name]["shape"], name
        assert digest(value) == reference[name]["sha256"], name
    # and value for value: dump_weights wrote the tiny biLM's lm_weights.hdf5 back (recorded)
    assert REFERENCE["dump_weights_equals_lm_weights"]
    original = datasets(WEIGHT_FILE)
    assert sorted(original) == sorted(ours)
    for name, value in original.items():
        assert numpy.array_equal(ours[name], value), name
    assert json.loads((converted / "options.json").read_text()) == json.loads(
        (SAVE_DIR / "options.json").read_text()
    )


def test_dump_names_keep_bilm_tfs_lstrip_quirk() -> None:
    kernel = "lm/RNN_1/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel"
    assert dump_name(kernel) == "RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"
    assert dump_name(kernel.replace("kernel", "projection/kernel")).endswith("LSTMCell/W_P_0")
    assert dump_name("lm/char_embed:0") == "char_embed"
    assert dump_name("lm/lm_head/W") == "_head/W"  # lstrip('lm/'): characters, not a prefix


def test_softmax_kept_in_a_side_file_optimiser_slots_left_out(converted: Path) -> None:
    assert not any("softmax" in name for name in datasets(converted / "weights.hdf5"))
    softmax = datasets(converted / "softmax.hdf5")
    assert sorted(softmax) == ["softmax/W", "softmax/b"]  # no Adagrad slots, no global_step
    for name, value in softmax.items():
        assert digest(value) == REFERENCE["checkpoint"]["lm/" + name]["sha256"], name
    found = read_softmax(converted / "softmax.hdf5")
    assert found is not None
    assert found[0].shape == (32, 16) and found[1].shape == (32,)


def test_converted_elmo_equals_the_reference_biLM(converted: Path, fixture_sentences) -> None:
    sentences = [sentence for group in fixture_sentences for sentence in group][:12]
    ids = batch_to_ids(sentences)
    with torch.no_grad():
        ours = Elmo(str(converted / "options.json"), str(converted / "weights.hdf5"), 2, dropout=0)
        reference = Elmo(str(OPTIONS_FILE), str(WEIGHT_FILE), 2, dropout=0)
        mine, theirs = ours(ids), reference(ids)
    assert torch.equal(mine["mask"], theirs["mask"])
    for a, b in zip(mine["elmo_representations"], theirs["elmo_representations"]):
        assert torch.equal(a, b)


def damaged(tmp_path: Path) -> Path:
    """A copy of the fixture's checkpoint folder to damage."""
    folder = tmp_path / "save_dir"
    shutil.copytree(SAVE_DIR, folder)
    return folder


def test_truncated_or_corrupted_index_is_one_line_naming_it(tmp_path: Path) -> None:
    folder = damaged(tmp_path)
    index = folder / INDEX_FILE.name
    raw = INDEX_FILE.read_bytes()
    index.write_bytes(raw[:-10])
    with pytest.raises(FormatError) as error:
        CheckpointReader(folder)
    one_line(error.value, index, "truncated")
    corrupt = bytearray(raw)
    corrupt[100] ^= 0x40  # a byte of the data block
    index.write_bytes(bytes(corrupt))
    with pytest.raises(FormatError) as error:
        convert_checkpoint(folder, tmp_path / "out")
    one_line(error.value, index, "checksum")
    assert not (tmp_path / "out" / "weights.hdf5").exists()


def test_compressed_block_is_refused_naming_the_file(tmp_path: Path) -> None:
    folder = damaged(tmp_path)
    index = folder / INDEX_FILE.name
    raw = bytearray(INDEX_FILE.read_bytes())
    assert struct.unpack("<Q", raw[-8:])[0] == TABLE_MAGIC
    footer = bytes(raw[-48:-8])
    numbers: List[int] = []
    position = 0
    while len(numbers) < 4:  # metaindex offset, size; index offset, size
        value = shift = 0
        while True:
            byte = footer[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        numbers.append(value)
    end = numbers[2] + numbers[3]  # the index block's trailer: type, then masked crc32c
    raw[end] = 1  # snappy, with a valid checksum
    raw[end + 1 : end + 5] = struct.pack("<I", masked_crc32c(bytes(raw[numbers[2] : end + 1])))
    index.write_bytes(bytes(raw))
    with pytest.raises(FormatError) as error:
        CheckpointReader(folder)
    one_line(error.value, index, "snappy-compressed")


def test_truncated_or_corrupted_data_file_is_one_line_naming_file_and_tensor(
    tmp_path: Path,
) -> None:
    folder = damaged(tmp_path)
    data = folder / DATA_FILE.name
    raw = DATA_FILE.read_bytes()
    data.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(FormatError) as error:
        convert_checkpoint(folder, tmp_path / "out")
    one_line(error.value, data, "truncated", "tensor 'lm/")
    assert not (tmp_path / "out" / "weights.hdf5").exists()
    corrupt = bytearray(raw)
    corrupt[len(raw) // 3] ^= 0x01
    data.write_bytes(bytes(corrupt))
    with pytest.raises(FormatError) as error:
        convert_checkpoint(folder, tmp_path / "out")
    one_line(error.value, data, "checksum mismatch", "tensor 'lm/")
    data.unlink()
    with pytest.raises(FileNotFoundError) as missing:
        CheckpointReader(folder).read("lm/char_embed")
    one_line(missing.value, data, "lm/char_embed")


# --- hand-written indexes: entries TensorFlow would not write -------------------------------


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def field(number: int, value: object) -> bytes:
    if isinstance(value, bytes):
        return varint(number << 3 | 2) + varint(len(value)) + value
    assert isinstance(value, int)
    return varint(number << 3) + varint(value)


def entry(dtype: int, shape: Tuple[int, ...], offset: int, size: int, crc: int) -> bytes:
    dims = b"".join(field(2, field(1, extent)) for extent in shape)
    crc_field = varint(6 << 3 | 5) + struct.pack("<I", crc)
    return field(1, dtype) + field(2, dims) + field(4, offset) + field(5, size) + crc_field


def block(items: List[Tuple[bytes, bytes]]) -> bytes:
    body = b"".join(varint(0) + varint(len(k)) + varint(len(v)) + k + v for k, v in items)
    return body + struct.pack("<II", 0, 1)  # one restart point, at 0


def write_checkpoint(
    prefix: Path,
    tensors: Dict[str, Tuple[int, Tuple[int, ...], bytes]],
    claims: Optional[Dict[str, Tuple[Tuple[int, ...], int]]] = None,
) -> None:
    """A one-shard checkpoint: {name: (dtype, shape, bytes)}, entries as TensorBundle writes
    them, or with the (shape, size) of `claims` instead."""
    data, items, offset = b"", [(b"", field(1, 1) + field(3, field(1, 1)))], 0
    for name, (dtype, shape, raw) in sorted(tensors.items()):
        shape, size = (claims or {}).get(name, (shape, len(raw)))
        items.append((name.encode(), entry(dtype, shape, offset, size, masked_crc32c(raw))))
        data += raw
        offset += len(raw)
    Path(f"{prefix}.data-00000-of-00001").write_bytes(data)
    table = bytearray()

    def add(contents: bytes) -> bytes:
        handle = varint(len(table)) + varint(len(contents))
        table.extend(contents + b"\0" + struct.pack("<I", masked_crc32c(contents + b"\0")))
        return handle

    data_handle = add(block(items))
    meta_handle = add(block([]))
    index_handle = add(block([(items[-1][0] + b"\xff", data_handle)]))
    footer = (meta_handle + index_handle).ljust(40, b"\0") + struct.pack("<Q", TABLE_MAGIC)
    Path(f"{prefix}.index").write_bytes(bytes(table) + footer)


def test_shape_larger_than_the_data_file_is_refused_before_allocating(tmp_path: Path) -> None:
    prefix = tmp_path / "model.ckpt-1"
    ones = numpy.ones(2, numpy.float32).tobytes()
    # a (10^6, 10^6) float32 tensor (4 TB) claimed by the index, 8 bytes in the data file
    write_checkpoint(prefix, {"lm/x": (1, (2,), ones)}, {"lm/x": ((10**6, 10**6), 4 * 10**12)})
    data_file = Path(f"{prefix}.data-00000-of-00001")
    with pytest.raises(FormatError) as error:
        CheckpointReader(prefix).read("lm/x")
    one_line(error.value, data_file, "'lm/x'", "the file has 8")
    # a size that does not match the shape: the index is damaged
    write_checkpoint(prefix, {"lm/x": (1, (2,), ones)}, {"lm/x": ((3,), 8)})
    with pytest.raises(FormatError) as error:
        CheckpointReader(prefix).read("lm/x")
    one_line(error.value, f"{prefix}.index", "'lm/x'", "damaged index")


def test_float16_bfloat16_read_strings_refused(tmp_path: Path) -> None:
    prefix = tmp_path / "model.ckpt-1"
    values = numpy.array([1.5, -2.25, 3.0], numpy.float32)
    bfloat16 = (values.view(numpy.uint32) >> 16).astype("<u2").tobytes()
    write_checkpoint(
        prefix,
        {
            "half": (19, (3,), values.astype("<f2").tobytes()),
            "bf16": (14, (3,), bfloat16),
            "words": (7, (1,), b"\x03abc"),
            "\x00\x01slice": (1, (1,), b"\0\0\0\0"),  # a partitioned variable's slice: binary key
        },
    )
    reader = CheckpointReader(prefix)
    assert reader.names() == ["bf16", "half", "words"]
    assert numpy.array_equal(reader.read("half"), values.astype(numpy.float16))
    assert numpy.array_equal(reader.read("bf16"), values)
    with pytest.raises(FormatError) as error:
        reader.read("words")
    one_line(error.value, f"{prefix}.index", "'words'", "string")


def test_elmo_convert_refuses_an_existing_output_without_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main([str(PREFIX), str(out)]) == 0
    stamp = (out / "weights.hdf5").stat().st_mtime_ns
    with pytest.raises(SystemExit) as refused:
        main([str(PREFIX), str(out)])
    message = str(refused.value.code)
    assert message.startswith("elmo-convert: error: ") and "exists" in message
    assert "\n" not in message and (out / "weights.hdf5").stat().st_mtime_ns == stamp
    assert main([str(PREFIX), str(out), "--overwrite", "--softmax-in-weights"]) == 0
    both = read_softmax(out / "weights.hdf5")  # where the plugin's fine-tuning reads it
    alone = read_softmax(out / "softmax.hdf5")
    assert both is not None and alone is not None and numpy.array_equal(both[0], alone[0])
    # options that do not describe the checkpoint: one line naming the tensor and the options
    options = json.loads((SAVE_DIR / "options.json").read_text())
    options["lstm"]["dim"] = 32
    (tmp_path / "other.json").write_text(json.dumps(options))
    with pytest.raises(SystemExit) as mismatch:
        main([str(SAVE_DIR), str(tmp_path / "x"), "--options-file", str(tmp_path / "other.json")])
    assert "other.json" in str(mismatch.value.code) and "lstm_cell" in str(mismatch.value.code)


def test_missing_options_or_foreign_checkpoint_is_one_line(tmp_path: Path) -> None:
    folder = damaged(tmp_path)
    (folder / "options.json").unlink()
    with pytest.raises(FileNotFoundError) as error:
        convert_checkpoint(folder, tmp_path / "out")
    one_line(error.value, folder / "options.json", "--options-file")
    prefix = tmp_path / "other.ckpt-1"  # a checkpoint of some other model: nothing under lm/
    write_checkpoint(prefix, {"dense/kernel": (1, (1,), numpy.ones(1, numpy.float32).tobytes())})
    with pytest.raises(FormatError) as error:
        convert_checkpoint(prefix, tmp_path / "out", SAVE_DIR / "options.json")
    one_line(error.value, f"{prefix}.index", "dense/kernel")
