"""`elmo-convert`: a bilm-tf TensorFlow training checkpoint to bilm-tf `options.json` +
`weights.hdf5`, without TensorFlow.

The output is what bilm-tf's own `dump_weights` (bilm/training.py, bin/dump_weights.py) writes:
the biLM's variables (scope `lm/`) under its names (`lm/RNN_0/rnn/multi_rnn_cell/cell_0/
lstm_cell/kernel` becomes `RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0`), float32, the softmax left
out. The softmax, which fine-tuning needs (with the training `vocab.txt`, in its line order), is
kept in a side file `softmax.hdf5` (`softmax/W`, `softmax/b`), which `read_softmax` reads.
Optimiser slots (`.../Adagrad`) and `global_step` are not model weights and are left out.

The files are written as a set (`elmo_bilm.utils.file_sets.output_set`): into a hidden staging
folder in the output folder, swapped in as one only once all of them are complete, so that a
failed or killed conversion leaves the folder as it was, the old files of `--overwrite`
included (a staging folder of a killed run is undone and removed by the next).
"""

import logging
import os
import re
import shutil
from typing import Any, Dict, List, Optional, Tuple

import h5py
import numpy

from elmo_bilm.formats.bilm_tf import read_options, weight_shapes
from elmo_bilm.formats.tf_checkpoint import CheckpointReader
from elmo_bilm.utils.file_sets import output_set
from elmo_bilm.utils.files import FormatError, PathLike

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


def check_dump_name(target: str, tf_name: str, index_file: str) -> None:
    """Refuse a dataset name that HDF5 cannot hold as a dataset of its own: empty (`lm/`, `lm/m`:
    `dump_name` strips them to nothing), a `.` or `..` part (`lm/.` names the file's root
    group), an empty part (`a//b`) or a NUL byte."""
    parts = target.split("/")
    if not target or "\0" in target or any(part in ("", ".", "..") for part in parts):
        raise FormatError(
            f"{index_file}: tensor {tf_name!r} becomes {target!r} under bilm-tf's dump_weights "
            "names, not a valid HDF5 dataset name; not a bilm-tf checkpoint?"
        )


def _check_nesting(targets: Dict[str, str], index_file: str) -> None:
    """Refuse a dataset name that is the group of another (`a` and `a/b`): HDF5 cannot make `a`
    both a dataset and a group."""
    for target, name in targets.items():
        parts = target.split("/")
        for cut in range(1, len(parts)):
            group = "/".join(parts[:cut])
            if group in targets:
                raise FormatError(
                    f"{index_file}: tensors {targets[group]!r} and {name!r} become {group!r} "
                    f"and {target!r}: one would have to be a dataset and a group"
                )


def softmax_shapes(options: Dict[str, Any]) -> Dict[str, Tuple[Optional[int], ...]]:
    """The shapes bilm-tf's training gives its softmax (`softmax/W` [n_tokens_vocab, the LSTM's
    output width], `softmax/b` [n_tokens_vocab]); None where the options do not say
    (`n_tokens_vocab` is a training key, not always kept)."""
    lstm = options["lstm"]
    width = lstm.get("projection_dim") or lstm["dim"]
    vocab = options.get("n_tokens_vocab") or None
    return {"softmax/W": (vocab, width), "softmax/b": (vocab,)}


def _check_softmax(
    reader: CheckpointReader,
    name: str,
    target: str,
    options: Dict[str, Any],
    options_file: PathLike,
) -> None:
    """Refuse a softmax tensor whose declared shape the options do not imply, before any of it
    is read (a 416 KB sparse data file declared a 5 GiB softmax: numpy's MemoryError)."""
    expected = softmax_shapes(options).get(target)
    shape = reader.entry(name).shape
    if expected is None:
        return
    if len(shape) != len(expected) or any(
        want is not None and want != got for want, got in zip(expected, shape)
    ):
        implied = ["n_tokens_vocab" if want is None else want for want in expected]
        raise FormatError(
            f"{reader.index_file}: tensor {name!r} (the softmax) has shape {list(shape)} but "
            f"{options_file} implies {implied}; damaged, or the options of another model?"
        )


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
    The outputs are written as one set (`output_set`: the old ones kept on any failure);
    existing ones are refused unless `overwrite`.
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
        check_dump_name(target, name, reader.index_file)
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
        if kind == "softmax":
            _check_softmax(reader, name, target, options, options_file)
    _check_nesting({**outputs["weights"], **outputs["softmax"]}, reader.index_file)
    for target, shape in expected.items():
        if target not in outputs["weights"]:
            raise FormatError(
                f"{reader.index_file}: no tensor for {target!r} (shape {list(shape)}, implied "
                f"by {options_file}); a checkpoint of another model?"
            )
    out_dir = os.fspath(out_dir)
    # its parents made; the folder itself appears with the complete set (`output_set`)
    os.makedirs(os.path.dirname(os.path.abspath(out_dir)), exist_ok=True)
    paths = {
        "options": os.path.join(out_dir, "options.json"),
        "weights": os.path.join(out_dir, "weights.hdf5"),
    }
    if outputs["softmax"]:
        paths["softmax"] = os.path.join(out_dir, "softmax.hdf5")
    weights = dict(outputs["weights"])
    if softmax_in_weights:
        weights.update(outputs["softmax"])
    with output_set(paths, overwrite) as staged:  # all of them or none, old ones kept
        _write_hdf5(reader, weights, staged["weights"])
        if "softmax" in paths:
            _write_hdf5(reader, outputs["softmax"], staged["softmax"])
        shutil.copyfile(options_file, staged["options"])
    return paths


def _write_hdf5(reader: CheckpointReader, tensors: Dict[str, str], path: str) -> None:
    """Write `tensors` ({dataset name: checkpoint name}) as dump_weights does: one float32
    dataset each, contiguous, uncompressed; a tensor with NaN or infinite values (after the
    float32 conversion: a float64 beyond float32's range is infinite there) is refused."""
    with h5py.File(path, "w") as out:
        for target, name in tensors.items():
            with numpy.errstate(over="ignore"):  # beyond float32's range: refused just below
                value = reader.read(name).astype(numpy.float32, copy=False)
            if not numpy.isfinite(value).all():
                data_file = reader.data_file(reader.entry(name).shard)
                raise FormatError(
                    f"{data_file}: tensor {name!r} holds NaN or infinite values (as float32); "
                    "not usable weights, nothing written"
                )
            dataset = out.create_dataset(target, value.shape, dtype="float32")
            dataset[...] = value
