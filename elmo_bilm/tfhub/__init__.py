"""TF-Hub's ELMo module (`hub.Module(".../google/elmo/3")`) as a torch module, without TensorFlow.

A script written for the hub module runs with its import line and constructor switched::

    from elmo_bilm.tfhub import ElmoModule  # was: import tensorflow_hub as hub

    elmo = ElmoModule("/path/to/elmo_3", trainable=True)  # was: hub.Module(url, trainable=True)
    embeddings = elmo(["the cat is on the mat", "dogs are in the fog"],
                      signature="default", as_dict=True)["elmo"]

`ElmoModule(path, trainable=False)` reads a hub module's folder (the extracted
`?tf-hub-format=compressed` archive: `variables/variables.index` and its data file; the graph,
`tfhub_module.pb`, is not read) through the TensorFlow checkpoint reader of
`elmo_bilm.formats.tf_checkpoint`. `path` may also name the `variables/` folder or the checkpoint
prefix. Calls, as the hub module's signatures take them:

- `module(sentences, signature="default", as_dict=...)`: a batch (list) of strings, each split
  on spaces as the module's `tf.string_split` does (on " " only, runs of spaces giving no empty
  tokens), padded to the longest sentence;
- `module(inputs={"tokens": ..., "sequence_len": ...}, signature="tokens", as_dict=...)`: a
  rectangular batch of token lists padded with "" and each row's number of tokens; the outputs
  are as wide as the token rows, the tokens after a row's length ignored.

`as_dict=True` gives the hub's outputs: `word_emb` (batch, T, 512), the character CNN's token
vectors; `lstm_outputs1`, `lstm_outputs2` (batch, T, 1024), each LSTM layer's [forward;
backward] outputs; `elmo` (batch, T, 1024), the learned mix `scaling * sum_j softmax(weights)_j
* layer_j` over layer 0 = [word_emb; word_emb] and the LSTM layers (bilm-tf's `weight_layers`
without layer norm; its `+ 1/3` inside the softmax changes nothing); `default` (batch, 1024), the
mean of `elmo` over each sentence's tokens; the default signature also gives `sequence_len`
(batch,), the number of tokens of each sentence, as the hub's does. `as_dict=False` gives the
`default` output alone, as `hub.Module` does. Widths are the checkpoint's (the hub's module: 512
and 1024); a deeper biLM gives `lstm_outputs3`, ...

`trainable=True` makes the mix, `aggregation.weights` and `aggregation.scaling`, trainable
`nn.Parameter`s initialised from the checkpoint's `aggregation/weights` and
`aggregation/scaling` (the hub module's four trainable scalars); the biLM stays frozen, as in
the hub's module.

The biLM's options are not stored in a hub module; they are derived from the variables'
shapes: the character embedding's width from `bilm/char_embed`, the filters (width, count) from
the `bilm/CNN/W_cnn_i` kernels `[1, width, char_dim, count]`, the highway layers from how many
`bilm/CNN_high_k` there are, the projection from `bilm/CNN_proj/W_proj`, the LSTM cell size from
the kernels `[2 * projection, 4 * cell]` and the layers from how many `Cell{l}` there are. What
no shape says is the published ELMo's: ReLU activation, cell and projection clipping at 3, skip
connections between LSTM layers. `options_file=` (keyword) names a bilm-tf `options.json` to use
instead, its shapes checked against the variables.

The graph computed is bilm-tf's `BidirectionalLanguageModel` (bilm/model.py): each sentence is
wrapped in `<S>` ... `</S>` and those positions dropped from the outputs; every sentence starts
from zero LSTM states. Differences, on purpose:

- every output is zero after a sentence's last token (bilm-tf's graph leaves the character
  CNN's vectors of its padding there in the token layer, and so in `elmo`; they are padding,
  which the hub's users mask with `sequence_len`);
- an empty sentence has a zero `default` (the hub's divides zero by zero);
- a single string where a batch belongs is a `UsageError` (the hub's: "input must be a vector").
"""

import io
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import h5py
import numpy
import torch
from torch import nn

from elmo_bilm.formats.bilm_tf import (
    OPTION_CHECKS,
    _copy_weights,
    _lookup,
    read_options,
    weight_shapes,
)
from elmo_bilm.formats.tf_checkpoint import CheckpointReader
from elmo_bilm.model.bilm import BiLm, frozen
from elmo_bilm.utils.files import FormatError, UsageError

__all__ = ["ElmoModule", "hub_options", "hub_name"]

PathLike = Union[str, "os.PathLike[str]"]
SIGNATURES = ("default", "tokens")
FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
# what no variable's shape says: the values of every published ELMo (bilm-tf's options.json)
PUBLISHED = {"activation": "relu", "cell_clip": 3, "proj_clip": 3, "use_skip_connections": True}


def hub_name(dump_name: str) -> str:
    """The hub module's variable for a bilm-tf `weights.hdf5` dataset: bilm-tf's graph puts the
    biLM under the scope `bilm` and names the LSTM variables as TensorFlow's `LSTMCell` does
    (the inverse of `_pretrained_initializer`'s map in bilm/model.py)."""
    match = re.fullmatch(r"(RNN_\d+/RNN/MultiRNNCell/Cell\d+)/LSTMCell/(W_0|B|W_P_0)", dump_name)
    if match:
        part = {"W_0": "kernel", "B": "bias", "W_P_0": "projection/kernel"}[match.group(2)]
        return f"bilm/{match.group(1)}/rnn/lstm_cell/{part}"
    return f"bilm/{dump_name}"


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
    if "bilm/char_embed" not in reader.entries:
        raise FormatError(
            f"{where}: no tensor 'bilm/char_embed'; not a TF-Hub ELMo module's variables? It "
            f"holds {', '.join(reader.names()[:5]) or 'nothing'}"
        )
    rows, char_dim = (_shape(reader, "bilm/char_embed") + (0, 0))[:2]
    if len(_shape(reader, "bilm/char_embed")) != 2 or rows not in (261, 262):
        raise FormatError(
            f"{where}: 'bilm/char_embed' has shape {list(_shape(reader, 'bilm/char_embed'))}; "
            "expected [262, dim] (or bilm-tf's [261, dim])"
        )
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


def _checkpoint(path: PathLike) -> CheckpointReader:
    """The reader of a hub module folder's `variables/` checkpoint (or of the checkpoint `path`
    names)."""
    text = os.fspath(path)
    if "://" in text:
        raise UsageError(
            f"{text}: a URL; ElmoModule reads a TF-Hub module's folder: download the module "
            "(its ?tf-hub-format=compressed archive), extract it and give the folder"
        )
    if os.path.isdir(os.path.join(text, "variables")):
        text = os.path.join(text, "variables")
    elif os.path.isdir(text) and not any(name.endswith(".index") for name in os.listdir(text)):
        raise FileNotFoundError(
            f"{text}: no variables/ folder and no checkpoint (a TF-Hub module's folder holds "
            "variables/variables.index)"
        )
    return CheckpointReader(text)


def load_hub_bilm(
    reader: CheckpointReader, options: Dict[str, Any]
) -> Tuple[BiLm, numpy.ndarray, float]:
    """The biLM of a hub module's checkpoint, and its mix (`aggregation/weights`, `scaling`).
    Every tensor's presence and shape is checked before anything is allocated."""
    where = reader.index_file
    shapes = weight_shapes(options)
    declared = 0
    for name, shape in shapes.items():
        hub, found = hub_name(name), None
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
        bilm = BiLm(options, initialise=False)
        _copy_weights(bilm, staged, where)
    return bilm, weights, float(scaling.reshape(()))


def _read(
    reader: CheckpointReader,
    name: str,
    shapes: Optional[set],  # type: ignore[type-arg]
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


class Aggregation(nn.Module):
    """The hub module's mix of the biLM's layers: `scaling * sum_j softmax(weights)_j * layer_j`
    (bilm-tf's `weight_layers` without layer norm)."""

    def __init__(self, weights: numpy.ndarray, scaling: float, trainable: bool) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.tensor(weights), requires_grad=trainable)
        self.scaling = nn.Parameter(torch.tensor(scaling), requires_grad=trainable)

    def forward(self, layers: List[torch.Tensor]) -> torch.Tensor:
        mix = torch.softmax(self.weights, dim=0)
        return self.scaling * sum(w * layer for w, layer in zip(mix, layers))


def _text(value: Any, what: str) -> str:
    """A string of the input (TensorFlow's strings are bytes: UTF-8 decoded)."""
    if isinstance(value, (bytes, numpy.bytes_)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as error:
            raise UsageError(f"{what}: bytes that are not UTF-8 ({error.reason})") from None
    if isinstance(value, str):
        return str(value)
    raise UsageError(f"{what}: expected a string, got {type(value).__name__}")


def _batch(value: Any, what: str) -> List[Any]:
    """The items of a batch (a list, tuple or numpy array, not a string)."""
    if isinstance(value, (str, bytes)):
        raise UsageError(
            f"{what}: one string where a batch (a list) of them belongs; wrap it in a list "
            "(the hub's module: 'input must be a vector')"
        )
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    if isinstance(value, numpy.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise UsageError(f"{what}: expected a list, got {type(value).__name__}")
    return list(value)


class ElmoModule(nn.Module):
    """TF-Hub's ELMo module read from its folder and called as `hub.Module` is (see the module's
    docstring): `module(inputs, signature="default", as_dict=False)`."""

    def __init__(
        self,
        path: PathLike,
        trainable: bool = False,
        *,
        options_file: Optional[PathLike] = None,
    ) -> None:
        super().__init__()
        reader = _checkpoint(path)
        options = read_options(options_file) if options_file is not None else hub_options(reader)
        bilm, weights, scaling = load_hub_bilm(reader, options)
        for parameter in bilm.parameters():
            parameter.requires_grad_(False)
        self.bilm = bilm.eval()
        self.aggregation = Aggregation(weights, scaling, trainable)
        self.trainable = trainable

    def forward(
        self, inputs: Any, signature: str = "default", as_dict: bool = False
    ) -> Union[torch.Tensor, Dict[str, torch.Tensor]]:
        if signature not in SIGNATURES:
            raise UsageError(
                f"signature {signature!r}: the ELMo module has {', '.join(map(repr, SIGNATURES))}"
            )
        if signature == "default":
            if isinstance(inputs, Mapping):
                inputs = inputs.get("default", inputs)
            sentences = [
                [token for token in _text(s, f"sentence {i}").split(" ") if token]
                for i, s in enumerate(_batch(inputs, "sentences"))
            ]
            width = max((len(tokens) for tokens in sentences), default=0)
        else:
            sentences, width = self._tokens(inputs)
        outputs = self._outputs(sentences, width)
        if signature == "default":
            outputs["sequence_len"] = torch.tensor(
                [len(tokens) for tokens in sentences],
                dtype=torch.int32,
                device=outputs["default"].device,
            )
        return outputs if as_dict else outputs["default"]

    @staticmethod
    def _tokens(inputs: Any) -> Tuple[List[List[str]], int]:
        """The sentences and padded width of the tokens signature's inputs."""
        if not isinstance(inputs, Mapping) or set(inputs) != {"tokens", "sequence_len"}:
            got = sorted(inputs) if isinstance(inputs, Mapping) else type(inputs).__name__
            raise UsageError(
                f"the tokens signature takes inputs={{'tokens': ..., 'sequence_len': ...}}, got "
                f"{got}"
            )
        rows = [
            _batch(row, f"tokens row {i}")
            for i, row in enumerate(_batch(inputs["tokens"], "tokens"))
        ]
        lengths = _batch(inputs["sequence_len"], "sequence_len")
        width = len(rows[0]) if rows else 0
        if any(len(row) != width for row in rows):
            raise UsageError(
                f"tokens: rows of {sorted({len(row) for row in rows})} tokens; pad every row "
                'to the same width with ""'
            )
        if len(lengths) != len(rows):
            raise UsageError(f"sequence_len has {len(lengths)} lengths for {len(rows)} rows")
        sentences = []
        for i, (row, length) in enumerate(zip(rows, lengths)):
            if isinstance(length, bool) or not isinstance(length, (int, numpy.integer)):
                raise UsageError(f"sequence_len[{i}] is {length!r}; expected a whole number")
            if not 0 <= length <= width:
                raise UsageError(f"sequence_len[{i}] is {length}; the rows have {width} tokens")
            sentences.append([_text(t, f"tokens[{i}][{j}]") for j, t in enumerate(row[:length])])
        return sentences, width

    def _outputs(self, sentences: List[List[str]], width: int) -> Dict[str, torch.Tensor]:
        """The hub's outputs for tokenised `sentences`, padded to `width` tokens."""
        device = self.aggregation.weights.device
        proj, dim = self.bilm.projection_dim, self.bilm.get_output_dim()
        batch = len(sentences)
        if batch and any(sentences):
            with frozen(self.bilm):
                result = self.bilm(self.bilm.batch_to_ids(sentences).to(device))
            pad = width - result["mask"].shape[1]
            layers = [nn.functional.pad(layer, (0, 0, 0, pad)) for layer in result["activations"]]
            mask = nn.functional.pad(result["mask"], (0, pad)).to(layers[0].dtype)
        else:  # no tokens at all: no biLM run
            layers = [torch.zeros(batch, width, dim, device=device)] * self.bilm.num_layers
            mask = torch.zeros(batch, width, device=device)
        elmo = self.aggregation(layers) * mask[..., None]
        counts = mask.sum(dim=1, keepdim=True).clamp(min=1)
        outputs = {"word_emb": layers[0][..., :proj]}
        for i, layer in enumerate(layers[1:], start=1):
            outputs[f"lstm_outputs{i}"] = layer
        outputs["elmo"] = elmo
        outputs["default"] = elmo.sum(dim=1) / counts
        return outputs
