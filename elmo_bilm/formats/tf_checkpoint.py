"""Read TensorFlow checkpoints (the tensor-bundle format of `tf.train.Saver`) without TensorFlow.

A checkpoint `PREFIX` is `PREFIX.index` plus `PREFIX.data-SSSSS-of-NNNNN` shards. The index is a
LevelDB-format table (an SSTable): a 48-byte footer (the block handles of the metaindex and the
index as varints, then the magic number 0xdb4775248b80fb57), blocks of prefix-compressed keys
with restart points, each block followed by a 5-byte trailer (compression type, masked crc32c).
Its keys are tensor names ("" holds a `BundleHeaderProto`), its values `BundleEntryProto`s (dtype,
shape, shard, offset, size, crc32c), decoded here by a small protobuf reader of the few fields
used. Everything is checked before it is trusted: block checksums, offsets and sizes against the
files' sizes (before anything is allocated) and each tensor's crc32c; an error is one line naming
the file and, where there is one, the tensor.
"""

import errno
import os
import re
import stat
import struct
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import numpy

from elmo_bilm.utils.files import FormatError

PathLike = Union[str, "os.PathLike[str]"]

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48  # two block handles, padded to 40 bytes, then the 8-byte magic number
BLOCK_TRAILER_SIZE = 5  # compression type (1 byte) + masked crc32c (4 bytes)
COMPRESSION_NAMES = {1: "snappy", 2: "zlib", 3: "lz4", 4: "lz4hc", 5: "xpress", 7: "zstd"}
MAX_INDEX_BYTES = 1 << 30  # an index holds ~100 bytes a tensor; 1 GiB is 10 million tensors
MAX_RANK = 32
# TensorFlow's tensor names are short scope paths; a key is materialised in full from its
# prefix-compressed form, so long keys that share all but a byte would make a small index
# gigabytes of names: keys are bounded one by one and in all
MAX_KEY_BYTES = 4096
KEY_BYTES_PER_INDEX_BYTE = 16  # all kept names at most this many times the index's size

# TensorFlow's DataType enum (types.proto) for the dtypes read here; bfloat16 is widened to
# float32 (numpy has no bfloat16).
DTYPES: Dict[int, Tuple[str, str]] = {
    1: ("float32", "f4"),
    2: ("float64", "f8"),
    3: ("int32", "i4"),
    9: ("int64", "i8"),
    14: ("bfloat16", "u2"),
    19: ("float16", "f2"),
}
DTYPE_NAMES = {4: "uint8", 5: "int16", 6: "int8", 7: "string", 8: "complex64", 10: "bool"}


# --- crc32c (Castagnoli), as LevelDB's tables and TensorBundle's entries use it -------------

_POLY = 0x82F63B78  # reflected Castagnoli polynomial


def _make_table() -> List[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (_POLY if crc & 1 else 0)
        table.append(crc)
    return table


_TABLE = _make_table()
_TABLE_NP = numpy.array(_TABLE, dtype=numpy.uint32)
_google_crc32c: Any = None
try:  # an optional fast path, not a dependency: the numpy code below is used without it
    import google_crc32c

    if getattr(google_crc32c, "implementation", "") == "c":
        _google_crc32c = google_crc32c
except ImportError:
    pass
_SCALAR_BYTES = 4096  # below this, a plain Python loop is as fast as the vectorised one


def _crc_scalar(state: int, data: "numpy.ndarray") -> int:
    table = _TABLE
    for byte in data.tolist():
        state = table[(state ^ byte) & 0xFF] ^ (state >> 8)
    return state


def crc32c(data: Union[bytes, bytearray, memoryview, "numpy.ndarray"]) -> int:
    """The crc32c of `data`: google_crc32c's C code where it is installed (GB/s), else numpy."""
    if _google_crc32c is not None:
        view = numpy.frombuffer(data, dtype=numpy.uint8).view()
        view.flags.writeable = False  # google_crc32c takes read-only buffers only
        return int(_google_crc32c.value(view))
    return crc32c_numpy(data)


def crc32c_numpy(data: Union[bytes, bytearray, memoryview, "numpy.ndarray"]) -> int:
    """The crc32c of `data` in numpy (about 30 MB/s: a 1 GB softmax in 35 s; no extension),
    in chunks of `_CHUNK_BYTES` (the lanes below copy their chunk once)."""
    buffer = numpy.frombuffer(data, dtype=numpy.uint8).reshape(-1)
    state = 0xFFFFFFFF
    for start in range(0, buffer.size, _CHUNK_BYTES):
        state = _crc_lanes(state, buffer[start : start + _CHUNK_BYTES])
    return state ^ 0xFFFFFFFF


_CHUNK_BYTES = 64 << 20


def _crc_lanes(state: int, buffer: "numpy.ndarray") -> int:
    """The CRC register after `buffer`, from register `state` (no final inversion).

    The register update is linear in (register, byte), so the data is cut into `k` lanes of `n`
    bytes whose registers advance together, one numpy step per byte position; the lanes'
    registers are then chained with the linear map "advance over n zero bytes" (four 256-entry
    tables), and the last `< n` bytes are added one by one. With n ~ k ~ sqrt(size), 64 MB are
    8,000 numpy steps and 8,000 Python steps.
    """
    size = buffer.size
    if size < _SCALAR_BYTES:
        return _crc_scalar(state, buffer)
    lane = int(numpy.sqrt(size))
    lanes = size // lane
    columns = numpy.zeros((lane, lanes + 32), dtype=numpy.uint8)  # + 32 lanes of zero bytes
    columns[:, :lanes] = buffer[: lanes * lane].reshape(lanes, lane).T
    registers = numpy.zeros(lanes + 32, dtype=numpy.uint32)
    registers[lanes:] = numpy.left_shift(numpy.uint32(1), numpy.arange(32, dtype=numpy.uint32))
    for row in columns:  # the 32 extra lanes carry the unit vectors: the zero-advance map
        registers = _TABLE_NP[(registers ^ row) & 0xFF] ^ (registers >> 8)
    basis = registers[lanes:]
    bits = numpy.arange(256)
    tables = []
    for shift in range(4):
        table = numpy.zeros(256, dtype=numpy.uint32)
        for bit in range(8):
            table[(bits >> bit) & 1 == 1] ^= basis[8 * shift + bit]
        tables.append(table.tolist())
    t0, t1, t2, t3 = tables
    for lane_crc in registers[:lanes].tolist():
        low, high = t0[state & 0xFF] ^ t1[(state >> 8) & 0xFF], t3[state >> 24]
        state = low ^ t2[(state >> 16) & 0xFF] ^ high ^ lane_crc
    return _crc_scalar(state, buffer[lanes * lane :])


def masked_crc32c(data: Union[bytes, bytearray, memoryview, "numpy.ndarray"]) -> int:
    """LevelDB's masked crc32c (rotated right by 15 bits plus a constant), as stored on disk."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


# --- varints and the few protobuf fields read ------------------------------------------------


class _Truncated(Exception):
    """A varint or field running past the end of its buffer (the caller names the file)."""


def _varint(data: bytes, position: int) -> Tuple[int, int]:
    """The unsigned varint at `position` and the position after it."""
    result = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise _Truncated
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _fields(data: bytes) -> Iterator[Tuple[int, int, Union[int, bytes]]]:
    """`(field number, wire type, value)` of a serialised protobuf message."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        value: Union[int, bytes]
        if wire == 0:
            value, position = _varint(data, position)
        elif wire == 1:
            if position + 8 > len(data):
                raise _Truncated
            value = struct.unpack_from("<Q", data, position)[0]
            position += 8
        elif wire == 2:
            length, position = _varint(data, position)
            if position + length > len(data):
                raise _Truncated
            value = data[position : position + length]
            position += length
        elif wire == 5:
            if position + 4 > len(data):
                raise _Truncated
            value = struct.unpack_from("<I", data, position)[0]
            position += 4
        else:
            raise _Truncated  # groups (3, 4) are not in these messages
        yield number, wire, value


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of a checkpoint, as its `BundleEntryProto` describes it."""

    name: str
    dtype: int  # TensorFlow's DataType enum
    shape: Tuple[int, ...]
    shard: int
    offset: int
    size: int
    crc32c: Optional[int]
    sliced: bool  # a partitioned variable (its slices are other entries): not read here

    @property
    def dtype_name(self) -> str:
        """The dtype's name as numpy or TensorFlow spells it (`DataType N` if unknown)."""
        if self.dtype in DTYPES:
            return DTYPES[self.dtype][0]
        return DTYPE_NAMES.get(self.dtype, f"DataType {self.dtype}")


def _entry(name: str, value: bytes) -> TensorEntry:
    dtype = shard = offset = size = 0
    crc: Optional[int] = None
    shape: List[int] = []
    sliced = False
    for number, wire, field in _fields(value):
        if number == 1 and wire == 0:
            dtype = int(field)
        elif number == 2 and wire == 2:
            assert isinstance(field, bytes)
            for dim_number, dim_wire, dim in _fields(field):
                if dim_number == 2 and dim_wire == 2:  # TensorShapeProto.dim
                    assert isinstance(dim, bytes)
                    extent = 0
                    for size_number, size_wire, dim_size in _fields(dim):
                        if size_number == 1 and size_wire == 0:
                            extent = _signed64(int(dim_size))
                    shape.append(extent)
                elif dim_number == 3 and dim_wire == 0 and dim:  # unknown_rank
                    shape.append(-1)
        elif number == 3 and wire == 0:
            shard = int(field)
        elif number == 4 and wire == 0:
            offset = _signed64(int(field))
        elif number == 5 and wire == 0:
            size = _signed64(int(field))
        elif number == 6 and wire == 5:
            crc = int(field)
        elif number == 7:
            sliced = True
    return TensorEntry(name, dtype, tuple(shape), shard, offset, size, crc, sliced)


# --- the table (SSTable) of the .index file --------------------------------------------------


def _block(index: bytes, handle: Tuple[int, int], path: str, what: str) -> bytes:
    """The contents of the block at `handle` (offset, size), its trailer checked."""
    offset, size = handle
    end = offset + size + BLOCK_TRAILER_SIZE
    if end > len(index) - FOOTER_SIZE:
        raise FormatError(
            f"{path}: the {what} block runs past the end of the file (bytes {offset}-{end} of "
            f"{len(index)}); truncated or damaged"
        )
    contents = index[offset : offset + size]
    kind = index[offset + size]
    (stored,) = struct.unpack_from("<I", index, offset + size + 1)
    if masked_crc32c(contents + bytes([kind])) != stored:
        raise FormatError(f"{path}: the {what} block's checksum does not match; damaged file")
    if kind != 0:
        name = COMPRESSION_NAMES.get(kind, f"type {kind}")
        raise FormatError(
            f"{path}: the {what} block is {name}-compressed; TensorFlow's checkpoints are "
            "uncompressed and compressed tables are not read here"
        )
    return contents


def _block_entries(block: bytes, path: str, what: str) -> Iterator[Tuple[bytes, bytes]]:
    """`(key, value)` of a block: prefix-compressed keys, then restart offsets and their count.
    A key longer than `MAX_KEY_BYTES` is refused before it is built."""
    damaged = f"{path}: the {what} block is damaged"
    if len(block) < 4:
        raise FormatError(f"{damaged} (too short)")
    (restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    limit = len(block) - 4 - 4 * restarts
    if restarts < 1 or limit < 0:
        raise FormatError(f"{damaged} ({restarts} restart points)")
    position, key = 0, b""
    try:
        while position < limit:
            shared, position = _varint(block, position)
            unshared, position = _varint(block, position)
            length, position = _varint(block, position)
            if shared > len(key) or position + unshared + length > limit:
                raise _Truncated
            if shared + unshared > MAX_KEY_BYTES:
                raise FormatError(
                    f"{path}: the {what} block holds a key of {shared + unshared} bytes (tensor "
                    f"names are at most {MAX_KEY_BYTES}); damaged or not a checkpoint index"
                )
            key = key[:shared] + block[position : position + unshared]
            position += unshared
            yield key, block[position : position + length]
            position += length
    except _Truncated:
        raise FormatError(f"{damaged} (an entry runs past its end)") from None


def _handle(value: bytes, path: str, what: str) -> Tuple[int, int]:
    try:
        offset, position = _varint(value, 0)
        size, _ = _varint(value, position)
    except _Truncated:
        raise FormatError(f"{path}: a damaged block handle in the {what}") from None
    return offset, size


def resolve_checkpoint(path: PathLike) -> str:
    """The checkpoint prefix that `path` names: a prefix (`.../model.ckpt-N`), its `.index` or
    `.data-*` file, or a folder. In a folder, the latest checkpoint by one rule: the one its
    `checkpoint` file names (`model_checkpoint_path`, looked up in the folder by file name, never
    elsewhere: bilm-tf's Saver wrote the training machine's absolute paths), else the one with the
    highest step number (`model.ckpt-N`), else the folder's only `*.index`."""
    path = os.fspath(path)
    if os.path.isdir(path):
        state = os.path.join(path, "checkpoint")
        if os.path.isfile(state):
            latest = _latest(state)
            name = re.split(r"[/\\]", latest)[-1]
            candidate = os.path.join(path, name)
            if name not in ("", ".", "..") and os.path.isfile(candidate + ".index"):
                return candidate
            raise FileNotFoundError(
                f"{state}: names {latest!r} as the latest checkpoint, but {path} has no "
                f"{name}.index"
            )
        prefixes = sorted(
            name[: -len(".index")] for name in os.listdir(path) if name.endswith(".index")
        )
        steps = {prefix: _step(prefix) for prefix in prefixes}
        if len(prefixes) > 1 and all(step is not None for step in steps.values()):
            return os.path.join(path, max(prefixes, key=lambda prefix: steps[prefix]))  # type: ignore[arg-type, return-value]
        if len(prefixes) == 1:
            return os.path.join(path, prefixes[0])
        raise FormatError(
            f"{path}: no `checkpoint` file and {len(prefixes)} *.index files without step "
            "numbers to order them; name the checkpoint's prefix (.../model.ckpt-N)"
        )
    prefix = checkpoint_file_prefix(path)
    if prefix is None:
        raise FileNotFoundError(
            f"{path}: no such checkpoint (name PREFIX, PREFIX.index, a PREFIX.data-* shard or "
            "their folder)"
        )
    return prefix


def checkpoint_file_prefix(path: str) -> Optional[str]:
    """The checkpoint prefix that the file path `path` names (`PREFIX.index`, a `PREFIX.data-*`
    shard, or `PREFIX` with its `.index` beside it), or None where it names no checkpoint file;
    an index that exists but is not a regular file (a folder, a FIFO) is refused."""
    for index in (path, path + ".index"):
        if index.endswith(".index") and os.path.exists(index) and not os.path.isfile(index):
            raise FormatError(f"{index}: not a regular file (a checkpoint index is one)")
    if path.endswith(".index") and os.path.isfile(path):
        return path[: -len(".index")]
    if ".data-" in os.path.basename(path) and os.path.isfile(path):
        return path[: path.rindex(".data-")]
    if os.path.isfile(path + ".index"):
        return path
    return None


def _step(prefix: str) -> Optional[int]:
    """The step number of a checkpoint prefix `model.ckpt-N`, or None."""
    match = re.search(r"-(\d+)$", prefix)
    return int(match.group(1)) if match else None


# A `checkpoint` state file is a few short lines; more than this is not one
MAX_STATE_BYTES = 1 << 16


def _latest(state: str) -> str:
    """`model_checkpoint_path` of a `checkpoint` text file (a CheckpointState in text format)."""
    if os.path.getsize(state) > MAX_STATE_BYTES:
        raise FormatError(
            f"{state}: {os.path.getsize(state):,} bytes, not a checkpoint state file (at most "
            f"{MAX_STATE_BYTES:,})"
        )
    try:
        with open(state, encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                value = value.strip()
                if key.strip() == "model_checkpoint_path" and len(value) >= 2 and value[0] == '"':
                    return (
                        value[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
                    )
    except UnicodeDecodeError as error:
        raise FormatError(f"{state}: not a text file ({error.reason})") from error
    raise FormatError(f"{state}: no model_checkpoint_path line")


class CheckpointReader:
    """The tensors of a TensorFlow checkpoint (`tf.train.Saver`'s V2 format), read with numpy.

    `CheckpointReader(prefix)` reads and checks the index (names, dtypes, shapes); `read(name)`
    reads one tensor from its data shard, checked against the shard's size and its crc32c.
    """

    def __init__(self, path: PathLike) -> None:
        self.prefix = resolve_checkpoint(path)
        self.index_file = self.prefix + ".index"
        self.num_shards = 1
        self.big_endian = False
        self.entries: Dict[str, TensorEntry] = {}
        self._read_index()

    def _read_index(self) -> None:
        path = self.index_file
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO blocks, /dev/zero never ends
                raise FormatError(f"{path}: not a regular file (a checkpoint index is one)")
            size = os.path.getsize(path)
            if size > MAX_INDEX_BYTES:
                raise FormatError(f"{path}: {size} bytes, too large for a checkpoint index")
            with open(path, "rb") as handle:
                index = handle.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no such checkpoint index") from None
        if len(index) < FOOTER_SIZE:
            raise FormatError(f"{path}: {len(index)} bytes, too short for a checkpoint index")
        (magic,) = struct.unpack_from("<Q", index, len(index) - 8)
        if magic != TABLE_MAGIC:
            raise FormatError(
                f"{path}: not a TensorFlow checkpoint index (no table magic number at its end; "
                "truncated, or a V1 checkpoint?)"
            )
        footer = index[len(index) - FOOTER_SIZE : len(index) - 8]
        try:
            _, position = _varint(footer, 0)  # the metaindex handle (the metaindex is unused)
            _, position = _varint(footer, position)
            index_offset, position = _varint(footer, position)
            index_size, _ = _varint(footer, position)
        except _Truncated:
            raise FormatError(f"{path}: a damaged table footer") from None
        header = None
        key_budget, key_bytes = KEY_BYTES_PER_INDEX_BYTE * len(index), 0
        top = _block(index, (index_offset, index_size), path, "index")
        for _, value in _block_entries(top, path, "index"):
            data = _block(index, _handle(value, path, "index block"), path, "data")
            for raw_key, raw_value in _block_entries(data, path, "data"):
                if raw_key.startswith(b"\x00"):
                    continue  # a slice of a partitioned variable (its key is binary)
                key_bytes += len(raw_key)
                if key_bytes > key_budget:
                    raise FormatError(
                        f"{path}: its tensor names add up to more than {key_budget} bytes, "
                        f"{KEY_BYTES_PER_INDEX_BYTE} times the index's size; damaged or not a "
                        "checkpoint index"
                    )
                key = raw_key.decode("utf-8", "backslashreplace")
                try:
                    if key == "":
                        header = list(_fields(raw_value))
                    elif key in self.entries:
                        raise FormatError(f"{path}: tensor {key!r} is listed twice")
                    else:
                        self.entries[key] = _entry(key, raw_value)
                except _Truncated:
                    raise FormatError(f"{path}: tensor {key!r}: a damaged entry") from None
        if header is None:
            raise FormatError(f"{path}: no bundle header (not a TensorFlow V2 checkpoint index)")
        for number, wire, field in header:
            if number == 1 and wire == 0:
                self.num_shards = int(field)
            elif number == 2 and wire == 0:
                self.big_endian = field == 1
        if not 1 <= self.num_shards <= 1 << 16:
            raise FormatError(f"{path}: {self.num_shards} data shards in its header; damaged")

    def names(self) -> List[str]:
        """Every tensor name, sorted (as the index stores them)."""
        return sorted(self.entries)

    def data_file(self, shard: int) -> str:
        """The path of data shard `shard` (`PREFIX.data-0000S-of-0000N`)."""
        return f"{self.prefix}.data-{shard:05d}-of-{self.num_shards:05d}"

    def entry(self, name: str) -> TensorEntry:
        """The entry of tensor `name`, its dtype, shape and extent checked."""
        if name not in self.entries:
            raise FormatError(f"{self.index_file}: no tensor {name!r} in the checkpoint")
        entry = self.entries[name]
        where = f"{self.index_file}: tensor {name!r}"
        if entry.sliced:
            raise FormatError(f"{where} is a partitioned variable (slices); not read here")
        if entry.dtype not in DTYPES:
            raise FormatError(f"{where} has dtype {entry.dtype_name}; only numbers are read")
        if len(entry.shape) > MAX_RANK or any(extent < 0 for extent in entry.shape):
            raise FormatError(f"{where} has an invalid shape {list(entry.shape)}")
        if not 0 <= entry.shard < self.num_shards or entry.offset < 0:
            raise FormatError(f"{where}: shard {entry.shard} offset {entry.offset}; damaged")
        itemsize = numpy.dtype(DTYPES[entry.dtype][1]).itemsize
        expected = itemsize * int(numpy.prod(entry.shape, dtype=object))
        if entry.size != expected:
            raise FormatError(
                f"{where}: shape {list(entry.shape)} of {entry.dtype_name} is {expected} bytes "
                f"but its entry says {entry.size}; damaged index"
            )
        return entry

    def read(self, name: str) -> numpy.ndarray:
        """Tensor `name` as a numpy array (bfloat16 widened to float32), its bytes checked
        against the data file's size before they are allocated, and against its crc32c."""
        entry = self.entry(name)
        data_file = self.data_file(entry.shard)
        try:
            available = os.path.getsize(data_file)
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{data_file}: no such data file (tensor {name!r} is in shard {entry.shard})"
            ) from None
        if entry.offset + entry.size > available:
            raise FormatError(
                f"{data_file}: tensor {name!r} needs bytes {entry.offset}-"
                f"{entry.offset + entry.size} but the file has {available}; truncated or damaged"
            )
        try:
            raw = numpy.empty(entry.size, dtype=numpy.uint8)
        except MemoryError:
            raise OSError(
                errno.ENOMEM,
                f"{data_file}: tensor {name!r} declares {entry.size:,} bytes, more memory than "
                "this machine can give it",
            ) from None
        with open(data_file, "rb") as handle:
            handle.seek(entry.offset)
            if handle.readinto(raw.data) != entry.size:
                raise FormatError(f"{data_file}: tensor {name!r}: short read; truncated")
        if entry.crc32c is not None and masked_crc32c(raw) != entry.crc32c:
            raise FormatError(
                f"{data_file}: tensor {name!r}: checksum mismatch; the data file is damaged"
            )
        code = DTYPES[entry.dtype][1]
        array = raw.view(numpy.dtype((">" if self.big_endian else "<") + code))
        if entry.dtype == 14:  # bfloat16: the top half of a float32
            return (array.astype(numpy.uint32) << 16).view(numpy.float32).reshape(entry.shape)
        if self.big_endian:
            array = array.astype(array.dtype.newbyteorder("="))
        return array.reshape(entry.shape)
