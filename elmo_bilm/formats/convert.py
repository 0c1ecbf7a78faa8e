"""`elmo-convert`: a bilm-tf TensorFlow training checkpoint to bilm-tf `options.json` +
`weights.hdf5`, without TensorFlow.

The output is what bilm-tf's own `dump_weights` (bilm/training.py, bin/dump_weights.py) writes:
the biLM's variables (scope `lm/`) under its names (`lm/RNN_0/rnn/multi_rnn_cell/cell_0/
lstm_cell/kernel` becomes `RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0`), float32, the softmax left
out. The softmax, which fine-tuning needs (with the training `vocab.txt`, in its line order), is
kept in a side file `softmax.hdf5` (`softmax/W`, `softmax/b`), which `read_softmax` reads.
Optimiser slots (`.../Adagrad`) and `global_step` are not model weights and are left out.
"""

import logging
import os
import re
import shutil
from typing import Dict, List, Optional

import h5py
import numpy

from elmo_bilm.formats.bilm_tf import read_options, weight_shapes
from elmo_bilm.formats.tf_checkpoint import CheckpointReader
from elmo_bilm.utils.files import FormatError, PathLike, atomic_output

logger = logging.getLogger(__name__)

SCOPE = "lm/"  # bilm-tf's train() and dump_weights() build the model under variable scope "lm"
FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")


def dump_name(tf_name: str) -> str:
    """The weights.hdf5 name bilm-tf's `dump_weights` gives a TF variable (`_get_outname`), with
    its quirk kept: `lstrip('lm/')` strips any leading 'l', 'm' and '/' characters, not the
    prefix (harmless for bilm-tf's own names, which start with C, R or c after `lm/`)."""
    name = re.sub(":0$", "", tf_name)
    name = name.lstrip("lm/")
    name = re.sub("/rnn/", "/RNN/", name)
    name = re.sub("/multi_rnn_cell/", "/MultiRNNCell/", name)
    name = re.sub("/cell_", "/Cell", name)
    name = re.sub("/lstm_cell/", "/LSTMCell/", name)
    if "/RNN/" in name:
        if "projection" in name:
            name = re.sub("projection/kernel", "W_P_0", name)
        else:
            name = re.sub("/kernel", "/W_0", name)
            name = re.sub("/bias", "/B", name)
    return name


def model_variables(reader: CheckpointReader) -> List[str]:
    """The checkpoint's biLM variables: every tensor under `lm/` except optimiser slots (a slot
    is named after its variable: `lm/char_embed/Adagrad`, `.../Adam_1`)."""
    names = [name for name in reader.names() if name.startswith(SCOPE)]
    present = set(names)
    return [
        name
        for name in names
        if not any(name[:cut] in present for cut in _slashes(name))  # a slot of another tensor
    ]


def _slashes(name: str) -> List[int]:
    return [i for i, char in enumerate(name) if char == "/"]


def convert_checkpoint(
    checkpoint: PathLike,
    out_dir: PathLike,
    options_file: Optional[PathLike] = None,
    overwrite: bool = False,
    softmax_in_weights: bool = False,
) -> Dict[str, str]:
    """Write `out_dir/options.json`, `weights.hdf5` (and `softmax.hdf5` where the checkpoint has
    a softmax) from a bilm-tf checkpoint (a prefix, its `.index`, or its folder). The options
    default to the `options.json` beside the checkpoint (where bilm-tf's training writes it).
    Every output is written atomically; existing ones are refused unless `overwrite`.
    `softmax_in_weights` also puts the softmax into weights.hdf5 (as `elmo-export` does; bilm-tf
    readers ignore it), where the plugin's biLM fine-tuning reads it. Returns the paths written,
    by kind."""
    reader = CheckpointReader(checkpoint)
    if options_file is None:
        options_file = os.path.join(os.path.dirname(reader.prefix) or ".", "options.json")
        if not os.path.isfile(options_file):
            raise FileNotFoundError(
                f"{options_file}: no options.json beside the checkpoint; name bilm-tf's "
                "options with --options-file"
            )
    options = read_options(options_file)
    expected = weight_shapes(options)
    names = model_variables(reader)
    if not names:
        raise FormatError(
            f"{reader.index_file}: no variables under {SCOPE!r} (bilm-tf's training scope); "
            f"not a bilm-tf checkpoint? It holds {', '.join(reader.names()[:5]) or 'nothing'}"
        )
    outputs: Dict[str, Dict[str, str]] = {"weights": {}, "softmax": {}}
    for name in names:
        entry = reader.entry(name)
        if entry.dtype_name not in FLOAT_DTYPES:
            raise FormatError(f"{reader.index_file}: tensor {name!r} is {entry.dtype_name}")
        target = dump_name(name)
        kind = "softmax" if "softmax" in name else "weights"  # dump_weights' own test
        if target in outputs[kind]:
            raise FormatError(
                f"{reader.index_file}: tensors {outputs[kind][target]!r} and {name!r} both "
                f"become {target!r}"
            )
        outputs[kind][target] = name
        if kind == "weights" and target in expected and entry.shape != expected[target]:
            raise FormatError(
                f"{reader.index_file}: tensor {name!r} has shape {list(entry.shape)} but "
                f"{options_file} implies {list(expected[target])}"
            )
    for target, shape in expected.items():
        if target not in outputs["weights"]:
            raise FormatError(
                f"{reader.index_file}: no tensor for {target!r} (shape {list(shape)}, implied "
                f"by {options_file}); a checkpoint of another model?"
            )
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    paths = {
        "options": os.path.join(out_dir, "options.json"),
        "weights": os.path.join(out_dir, "weights.hdf5"),
    }
    if outputs["softmax"]:
        paths["softmax"] = os.path.join(out_dir, "softmax.hdf5")
    for path in paths.values():  # all refused before any is written
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(f"{path} exists; not overwriting it (--overwrite replaces it)")
    weights = dict(outputs["weights"])
    if softmax_in_weights:
        weights.update(outputs["softmax"])
    _write_hdf5(reader, weights, paths["weights"], overwrite)
    if "softmax" in paths:
        _write_hdf5(reader, outputs["softmax"], paths["softmax"], overwrite)
    with atomic_output(paths["options"], overwrite) as partial:
        shutil.copyfile(options_file, partial)
    return paths


def _write_hdf5(
    reader: CheckpointReader, tensors: Dict[str, str], path: str, overwrite: bool
) -> None:
    """Write `tensors` ({dataset name: checkpoint name}) as dump_weights does: one float32
    dataset each, contiguous, uncompressed."""
    with atomic_output(path, overwrite) as partial, h5py.File(partial, "w") as out:
        for target, name in tensors.items():
            value = reader.read(name)
            dataset = out.create_dataset(target, value.shape, dtype="float32")
            dataset[...] = value.astype(numpy.float32, copy=False)
