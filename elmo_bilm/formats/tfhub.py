"""TF-Hub's ELMo module (`google/elmo/3`) as a biLM format: the `variables/` checkpoint of a hub
module's folder (the extracted `?tf-hub-format=compressed` archive; its graph, `tfhub_module.pb`,
is not read), read with the TensorFlow checkpoint reader of `elmo_bilm.formats.tf_checkpoint`.

A hub checkpoint is told from a bilm-tf training checkpoint by its variables: the biLM under
the scope `bilm` (`bilm/char_embed`, ...) where bilm-tf's training graph has `lm`. The biLM's
options are not stored in a hub module; they are derived from the variables' shapes: the
character embedding's width from `bilm/char_embed`, the filters (width, count) from the
`bilm/CNN/W_cnn_i` kernels `[1, width, char_dim, count]`, the highway layers from how many
`bilm/CNN_high_k` there are, the projection from `bilm/CNN_proj/W_proj`, the LSTM cell size from
the kernels `[2 * projection, 4 * cell]` and the layers from how many `Cell{l}` there are. What
no shape says is the published ELMo's: ReLU activation, cell and projection clipping at 3, skip
connections between LSTM layers. A bilm-tf `options.json` may be named instead, its shapes then
checked against the variables. Besides the biLM, a module holds its trainable mix of the layers,
`aggregation/weights` and `aggregation/scaling` (`read_tfhub` returns them for
`elmo_bilm.tfhub.ElmoModule`).

Every tensor's presence, dtype and shape, and the data files' sizes against what the index
declares, are checked before anything is allocated; the reader checks the index and each
tensor's checksum; no value may be NaN or infinite.
"""

import io
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

import h5py
import numpy
import torch

from elmo_bilm.formats.bilm_tf import (
    OPTION_CHECKS,
    _copy_weights,
    _lookup,
    read_options,
    weight_shapes,
)
from elmo_bilm.formats.tf_checkpoint import CheckpointReader
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.utils.files import FormatError

__all__ = ["TfHubBilm", "hub_name", "hub_options", "is_tfhub_checkpoint", "read_tfhub"]

PathLike = Union[str, "os.PathLike[str]"]
FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
# what no variable's shape says: the values of every published ELMo (bilm-tf's options.json)
PUBLISHED = {"activation": "relu", "cell_clip": 3, "proj_clip": 3, "use_skip_connections": True}
# the variable that makes a checkpoint a hub module's (bilm-tf's training graph has `lm/...`)
HUB_MARKER = "bilm/char_embed"


@dataclass
class TfHubBilm:
    """A hub module's biLM, its options and its mix of the layers (`weights`, `scaling`)."""

    bilm: BiLm
    options: Dict[str, Any]
    weights: numpy.ndarray
    scaling: float


def hub_name(dump_name: str) -> str:
    """The hub module's variable for a bilm-tf `weights.hdf5` dataset: bilm-tf's graph puts the
    biLM under the scope `bilm` and names the LSTM variables as TensorFlow's `LSTMCell` does
    (the inverse of `_pretrained_initializer`'s map in bilm/model.py)."""
    match = re.fullmatch(r"(RNN_\d+/RNN/MultiRNNCell/Cell\d+)/LSTMCell/(W_0|B|W_P_0)", dump_name)
    if match:
        part = {"W_0": "kernel", "B": "bias", "W_P_0": "projection/kernel"}[match.group(2)]
        return f"bilm/{match.group(1)}/rnn/lstm_cell/{part}"
    return f"bilm/{dump_name}"


def is_tfhub_checkpoint(reader: CheckpointReader) -> bool:
    """Whether the checkpoint holds a hub module's variables (the biLM under `bilm/`)."""
    return HUB_MARKER in reader.entries


def _lstm(layer: int, part: str) -> str:
    return f"bilm/RNN_0/RNN/MultiRNNCell/Cell{layer}/rnn/lstm_cell/{part}"


def _shape(reader: CheckpointReader, name: str) -> Tuple[int, ...]:
    """The shape of float tensor `name`, which must be in the checkpoint."""
    entry = reader.entry(name)  # a missing tensor: one line naming the index and the tensor
    if entry.dtype_name not in FLOAT_DTYPES:
        raise FormatError(f"{reader.index_file}: tensor {name!r} is {entry.dtype_name}")
    return tuple(entry.shape)


def _count(names: Sequence[str], pattern: str) -> int:
    """How many of `pattern.format(0)`, `pattern.format(1)`, ... are in `names`, from 0 on."""
    present, count = set(names), 0
    while pattern.format(count) in present:
        count += 1
    return count


def hub_options(reader: CheckpointReader) -> Dict[str, Any]:
    """bilm-tf options for the biLM of a hub module's checkpoint, derived from its variables'
    shapes (see the module's docstring), checked as an options.json is."""
    where = reader.index_file
    if not is_tfhub_checkpoint(reader):
        raise FormatError(
            f"{where}: no tensor {HUB_MARKER!r}; not a TF-Hub ELMo module's variables? It "
            f"holds {', '.join(reader.names()[:5]) or 'nothing'}"
        )
    embed = _shape(reader, HUB_MARKER)
    if len(embed) != 2 or embed[0] not in (261, 262):
        raise FormatError(
            f"{where}: {HUB_MARKER!r} has shape {list(embed)}; expected [262, dim] (or "
            "bilm-tf's [261, dim])"
        )
    char_dim = embed[1]
    filters: List[List[int]] = []
    for i in range(_count(reader.names(), "bilm/CNN/W_cnn_{}")):
        shape = _shape(reader, f"bilm/CNN/W_cnn_{i}")
        if len(shape) != 4 or shape[0] != 1 or shape[2] != char_dim:
            raise FormatError(
                f"{where}: 'bilm/CNN/W_cnn_{i}' has shape {list(shape)}; expected "
                f"[1, width, {char_dim}, n_filters]"
            )
        filters.append([shape[1], shape[3]])
    projection = _shape(reader, "bilm/CNN_proj/W_proj")
    kernel = _shape(reader, _lstm(0, "kernel"))
    if len(projection) != 2 or len(kernel) != 2 or kernel[1] % 4:
        raise FormatError(
            f"{where}: 'bilm/CNN_proj/W_proj' {list(projection)} and {_lstm(0, 'kernel')!r} "
            f"{list(kernel)}; expected [n_filters, projection] and [2 * projection, 4 * cell]"
        )
    options = {
        "char_cnn": {
            "activation": PUBLISHED["activation"],
            "embedding": {"dim": char_dim},
            "filters": filters,
            "n_highway": _count(reader.names(), "bilm/CNN_high_{}/W_carry"),
            "max_characters_per_token": 50,
            "n_characters": 262,
        },
        "lstm": {
            "cell_clip": PUBLISHED["cell_clip"],
            "proj_clip": PUBLISHED["proj_clip"],
            "dim": kernel[1] // 4,
            "n_layers": _count(reader.names(), _lstm(0, "kernel").replace("Cell0", "Cell{}")),
            "projection_dim": projection[1],
            "use_skip_connections": PUBLISHED["use_skip_connections"],
        },
    }
    for key, (valid, expected) in OPTION_CHECKS.items():
        present, value = _lookup(options, key)
        if present and not valid(value):
            raise FormatError(f"{where}: its variables imply {key} = {value}; expected {expected}")
    return options


def read_tfhub(
    checkpoint: PathLike, options_file: Optional[PathLike] = None, dropout: float = 0.0
) -> TfHubBilm:
    """The biLM of a hub module's checkpoint (a prefix, its `.index` or the `variables/` folder),
    with its options (derived from the shapes, or `options_file`'s, checked against them) and
    its mix. Every tensor's presence and shape, and the data files' sizes, are checked before
    anything is allocated."""
    reader = CheckpointReader(checkpoint)
    options = read_options(options_file) if options_file is not None else hub_options(reader)
    where = reader.index_file
    shapes = weight_shapes(options)
    declared = 0
    for name, shape in shapes.items():
        hub = hub_name(name)
        if hub not in reader.entries:
            raise FormatError(f"{where}: no tensor {hub!r} (shape {list(shape)})")
        found = _shape(reader, hub)
        allowed = {shape, (shape[0] + 1,) + shape[1:]} if name == "char_embed" else {shape}
        if found not in allowed:
            raise FormatError(
                f"{where}: tensor {hub!r} has shape {list(found)}; the biLM's options imply "
                f"{list(shape)}"
            )
        declared += reader.entry(hub).size
    available = sum(
        os.path.getsize(reader.data_file(shard))
        for shard in range(reader.num_shards)
        if os.path.isfile(reader.data_file(shard))
    )
    if declared > available:
        raise FormatError(
            f"{where}: declares {declared:,} bytes of biLM weights, its data files hold "
            f"{available:,}; truncated or damaged"
        )
    n_outputs = options["lstm"]["n_layers"] + 1
    weights = _read(reader, "aggregation/weights", {(n_outputs,)})
    scaling = _read(reader, "aggregation/scaling", {(), (1,)})
    with h5py.File(io.BytesIO(), "w") as staged, torch.no_grad():
        for name in shapes:
            value = _read(reader, hub_name(name), None)
            if name == "char_embed" and value.shape[0] == shapes[name][0] + 1:
                value = value[1:]  # the graph's padding row 0 (bilm-tf's file has none)
            staged.create_dataset(name, data=value)
        bilm = BiLm(options, dropout=dropout, initialise=False)
        _copy_weights(bilm, staged, where)
    return TfHubBilm(bilm, options, weights, float(scaling.reshape(())))


def _read(
    reader: CheckpointReader, name: str, shapes: Optional[Set[Tuple[int, ...]]]
) -> numpy.ndarray:
    """Tensor `name` as float32, refused where missing, of another shape than `shapes` (when
    given) or not finite."""
    if name not in reader.entries:
        raise FormatError(
            f"{reader.index_file}: no tensor {name!r}; not a TF-Hub ELMo module's variables?"
        )
    if shapes is not None and _shape(reader, name) not in shapes:
        expected = " or ".join(str(list(shape)) for shape in sorted(shapes))
        raise FormatError(
            f"{reader.index_file}: tensor {name!r} has shape {list(_shape(reader, name))}; "
            f"expected {expected}"
        )
    with numpy.errstate(over="ignore"):
        value = reader.read(name).astype(numpy.float32)
    if not numpy.isfinite(value).all():
        raise FormatError(
            f"{reader.data_file(reader.entry(name).shard)}: tensor {name!r} holds NaN or "
            "infinite values; not usable weights"
        )
    return value
