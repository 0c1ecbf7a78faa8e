"""Load and export the original bilm-tf format: `options.json` + `weights.hdf5`.

The conversions (all inverted exactly by the exporter):
- `char_embed` has 261 rows; ours has a zero padding row in front (ids are shifted by one).
- Convolutions `CNN/W_cnn_i` are `[1, width, char_dim, n_filters]`; torch's Conv1d wants
  `[n_filters, char_dim, width]`.
- Dense matrices are stored `[in, out]`; `nn.Linear` keeps `[out, in]`.
- LSTM `W_0` is `[in + proj, 4 * dim]` over `[x; h]` with TF's gate order `i, j, f, o`, split here
  into input and recurrent parts; TF's `forget_bias=1.0` is added at run time, as in TF, so the
  stored bias is copied unchanged and a round trip is exact.
"""

import json
import os
import posixpath
from typing import Any, Callable, Dict, Optional, Tuple, Union, cast

import h5py
import numpy
import torch

from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.lstm import ProjectedLstmStack
from elmo_bilm.utils.file_sets import output_set
from elmo_bilm.utils.files import FormatError
from elmo_bilm.utils.tensors import all_finite

PathLike = Union[str, os.PathLike]


HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(minimum: int, maximum: Optional[int] = None) -> Callable[[Any], bool]:
    return lambda value: (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= minimum
        and (maximum is None or value <= maximum)
    )


# Upper bounds on the sizes an options.json may ask for, so that a file from someone else cannot
# make the loader allocate until the machine runs out of memory (10^6 highway layers, 100,000
# filters). Each is about 10x the largest published ELMo (the 5.5B: 16-d character embeddings,
# 7 filter widths up to 7 with 2,048 filters in all, 2 highway layers, 4,096-d LSTM cells, 1,024-d
# projections, 2 layers), far above anything trained, far below a size that cannot be held.
MAX_CHAR_DIM = 256
MAX_FILTER_WIDTH = 50  # max_characters_per_token: a wider filter sees no whole window
MAX_FILTERS = 20480  # all widths together (the highway layers are MAX_FILTERS^2)
MAX_FILTER_WIDTHS = 64
MAX_HIGHWAY = 20
MAX_LSTM_DIM = 40960
MAX_PROJECTION_DIM = 10240
MAX_LAYERS = 20


def _filters(value: Any) -> bool:
    return (
        isinstance(value, list)
        and 0 < len(value) <= MAX_FILTER_WIDTHS
        and all(
            isinstance(pair, list)
            and len(pair) == 2
            and _count(1, MAX_FILTER_WIDTH)(pair[0])
            and _count(1, MAX_FILTERS)(pair[1])
            for pair in value
        )
        and sum(pair[1] for pair in value) <= MAX_FILTERS
    )


# Every option the biLM reads: (check, what a valid value is). `None` where absent is allowed;
# the training keys are bilm-tf's (informational here, but a wrong type still means a damaged
# file).
OPTION_CHECKS: Dict[str, Tuple[Callable[[Any], bool], str]] = {
    "char_cnn.activation": (lambda v: v in ("relu", "tanh"), '"relu" or "tanh"'),
    "char_cnn.embedding.dim": (_count(1, MAX_CHAR_DIM), f"an integer >= 1 and <= {MAX_CHAR_DIM}"),
    "char_cnn.filters": (
        _filters,
        "a non-empty list of [width, n_filters] integer pairs >= 1 (at most "
        f"{MAX_FILTER_WIDTHS} pairs, widths <= {MAX_FILTER_WIDTH}, {MAX_FILTERS} filters in all)",
    ),
    "char_cnn.max_characters_per_token": (
        lambda v: v == 50 and not isinstance(v, bool),
        "50 (the character ids of AllenNLP's elmo_characters, the only width read here)",
    ),
    "char_cnn.n_characters": (lambda v: v in (261, 262), "261 (training) or 262 (prediction)"),
    "char_cnn.n_highway": (_count(0, MAX_HIGHWAY), f"an integer >= 0 and <= {MAX_HIGHWAY}"),
    "lstm.dim": (_count(1, MAX_LSTM_DIM), f"an integer >= 1 and <= {MAX_LSTM_DIM}"),
    "lstm.projection_dim": (
        _count(1, MAX_PROJECTION_DIM),
        f"an integer >= 1 and <= {MAX_PROJECTION_DIM}",
    ),
    "lstm.n_layers": (_count(1, MAX_LAYERS), f"an integer >= 1 and <= {MAX_LAYERS}"),
    "lstm.cell_clip": (lambda v: v is None or (_number(v) and v > 0), "a number > 0 or null"),
    "lstm.proj_clip": (lambda v: v is None or (_number(v) and v > 0), "a number > 0 or null"),
    "lstm.use_skip_connections": (lambda v: isinstance(v, bool), "true or false"),
    "bidirectional": (lambda v: v is True, "true (a biLM has both directions)"),
    "dropout": (lambda v: _number(v) and 0 <= v < 1, "a number in [0, 1)"),
    "n_tokens_vocab": (_count(0), "an integer >= 0"),
    "n_negative_samples_batch": (_count(0), "an integer >= 0"),
    "unroll_steps": (_count(1), "an integer >= 1"),
    "n_epochs": (_count(1), "an integer >= 1"),
    "batch_size": (_count(1), "an integer >= 1"),
    "n_train_tokens": (_count(0), "an integer >= 0"),
    "all_clip_norm_val": (lambda v: v is None or (_number(v) and v > 0), "a number > 0 or null"),
}
REQUIRED_OPTIONS = (
    "char_cnn.embedding.dim",
    "char_cnn.filters",
    "char_cnn.n_highway",
    "lstm.dim",
    "lstm.projection_dim",
    "lstm.n_layers",
)


def _lookup(options: Dict[str, Any], key: str) -> Tuple[bool, Any]:
    value: Any = options
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def read_options(options_file: PathLike) -> Dict[str, Any]:
    """Read a bilm-tf `options.json` and check every option the biLM reads (type and range):
    an error is one line naming the file and the key. A weight file given as options (the two
    swapped) is named as such."""
    try:
        with open(options_file, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        raise FormatError(f"{options_file}: cannot read the options ({error.strerror})") from error
    if raw.startswith(HDF5_SIGNATURE):
        raise FormatError(
            f"{options_file}: an HDF5 file (weights?), not a bilm-tf options.json; are "
            "options_file and weight_file swapped?"
        )
    try:
        options = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        raise FormatError(f"{options_file}: not a JSON text file ({error.reason})") from error
    except json.JSONDecodeError as error:
        raise FormatError(
            f"{options_file}:{error.lineno}: not valid JSON ({error.msg}); truncated?"
        ) from error
    if not isinstance(options, dict):
        raise FormatError(f"{options_file}: not a JSON object of bilm-tf options")
    for section in ("char_cnn", "lstm"):
        if not isinstance(options.get(section), dict):
            raise FormatError(
                f"{options_file}: missing section {section!r} (a bilm-tf biLM with a character "
                "CNN and LSTM layers)"
            )
    for key in REQUIRED_OPTIONS:
        if not _lookup(options, key)[0]:
            raise FormatError(f"{options_file}: missing key {key}")
    for key, (valid, expected) in OPTION_CHECKS.items():
        present, value = _lookup(options, key)
        if present and not valid(value):
            raise FormatError(f"{options_file}: {key} is {json.dumps(value)}; expected {expected}")
    return options


def _dataset(
    weights: h5py.File, name: str, shape: Tuple[int, ...], weight_file: PathLike
) -> h5py.Dataset:
    """The dataset `name`, checked to exist with `shape` (not read yet)."""
    if name not in weights:
        raise FormatError(f"{weight_file}: dataset {name!r} is missing (expected shape {shape})")
    dataset = weights[name]
    if not isinstance(dataset, h5py.Dataset) or dataset.dtype.kind != "f":
        raise FormatError(f"{weight_file}: {name!r} is not a dataset of floating-point numbers")
    if tuple(dataset.shape) != tuple(shape):
        raise FormatError(
            f"{weight_file}: dataset {name!r} has shape {tuple(dataset.shape)} but the options "
            f"imply {tuple(shape)}"
        )
    return dataset


def weight_shapes(options: Dict[str, Any]) -> Dict[str, Tuple[int, ...]]:
    """Every dataset of bilm-tf's layout the biLM reads and its shape, from checked `options`
    (nothing allocated)."""
    cnn, lstm = options["char_cnn"], options["lstm"]
    char_dim, proj = cnn["embedding"]["dim"], lstm["projection_dim"]
    shapes: Dict[str, Tuple[int, ...]] = {"char_embed": (261, char_dim)}
    for i, (width, num) in enumerate(cnn["filters"]):
        shapes[f"CNN/W_cnn_{i}"] = (1, width, char_dim, num)
        shapes[f"CNN/b_cnn_{i}"] = (num,)
    n_filters = sum(num for _, num in cnn["filters"])
    for k in range(cnn["n_highway"]):
        for part in ("transform", "carry"):
            shapes[f"CNN_high_{k}/W_{part}"] = (n_filters, n_filters)
            shapes[f"CNN_high_{k}/b_{part}"] = (n_filters,)
    shapes["CNN_proj/W_proj"] = (n_filters, proj)
    shapes["CNN_proj/b_proj"] = (proj,)
    for layer in range(lstm["n_layers"]):
        for direction in (0, 1):
            prefix = _lstm_prefix(direction, layer)
            shapes[f"{prefix}/W_0"] = (2 * proj, 4 * lstm["dim"])  # [x; h], both proj wide
            shapes[f"{prefix}/B"] = (4 * lstm["dim"],)
            shapes[f"{prefix}/W_P_0"] = (lstm["dim"], proj)
    return shapes


# A weights file may be compressed, but float weights do not shrink 8-fold: a file whose datasets
# declare more than this many times its size (plus 1 MiB for tiny files) holds fill values, not
# weights (a 284 KB file declared a 2.3 GiB LSTM), and is refused before anything is allocated.
MAX_DECLARED_RATIO = 8
DECLARED_SLACK = 1 << 20


def check_declared_size(weight_file: PathLike, declared_bytes: int) -> None:
    """Refuse a file far smaller than the weights it declares (see `MAX_DECLARED_RATIO`)."""
    size = os.path.getsize(weight_file)
    if declared_bytes > MAX_DECLARED_RATIO * size + DECLARED_SLACK:
        raise FormatError(
            f"{weight_file}: declares {declared_bytes / 2**20:.1f} MiB of weights in a file of "
            f"{size / 2**10:.1f} KiB; damaged or inflated, refusing to allocate it"
        )


def check_hdf5_storage(weights: h5py.File, weight_file: PathLike) -> None:
    """Refuse an HDF5 file that reads other files: external links (soft links are followed
    within the file only), datasets with external storage and virtual datasets, naming the file
    and the link or dataset. Weight files are untrusted input."""
    links: Dict[str, Any] = {}

    def note_link(name: str, link: Any) -> None:
        links[name] = link

    weights.visititems_links(note_link)
    for name, link in links.items():
        if isinstance(link, h5py.ExternalLink):
            raise FormatError(
                f"{weight_file}: {name} is an HDF5 external link to {link.filename}:{link.path}; "
                "refusing weights that read other files"
            )
        if not isinstance(link, (h5py.HardLink, h5py.SoftLink)):
            raise FormatError(f"{weight_file}: {name} is an HDF5 link of an unsupported kind")
    for name, link in links.items():
        parent = weights[posixpath.dirname(name) or "/"]
        if isinstance(link, h5py.SoftLink) and parent.get(link.path) is None:
            raise FormatError(
                f"{weight_file}: {name} is an HDF5 soft link to {link.path}, not in the file"
            )

    def check_object(name: str, item: Any) -> None:
        if not isinstance(item, h5py.Dataset):
            return
        if item.external:
            files = ", ".join(str(entry[0]) for entry in item.external)
            raise FormatError(
                f"{weight_file}: dataset {name!r} is stored in other files ({files}); "
                "refusing weights that read other files"
            )
        if item.is_virtual:
            raise FormatError(
                f"{weight_file}: dataset {name!r} is a virtual dataset (it maps other files); "
                "refusing weights that read other files"
            )

    weights.visititems(check_object)


def _read_rows(dataset: h5py.Dataset, rows: slice, target: torch.Tensor) -> None:
    """Read `dataset[rows]` straight into the contiguous CPU tensor `target` (no temporary)."""
    dataset.read_direct(target.detach().numpy(), source_sel=numpy.s_[rows])


def _lstm_prefix(direction: int, layer: int) -> str:
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


def read_softmax(weight_file: PathLike) -> Optional[Tuple[numpy.ndarray, numpy.ndarray]]:
    """The `softmax/W`, `softmax/b` datasets of a weight file written by the plugin, if any
    (checked as `load_bilm_tf` checks the file: no other files read, no inflated sizes)."""
    with h5py.File(weight_file, "r") as weights:
        if SOFTMAX_WEIGHT not in weights:
            return None
        check_hdf5_storage(weights, weight_file)
        w, b = weights[SOFTMAX_WEIGHT], weights[SOFTMAX_BIAS]
        if len(w.shape) != 2 or tuple(b.shape) != (w.shape[0],):
            raise FormatError(
                f"{weight_file}: softmax shapes {tuple(w.shape)} and {tuple(b.shape)} do not "
                "match ([n_vocab, dim] and [n_vocab])"
            )
        check_declared_size(weight_file, w.size * w.dtype.itemsize + b.size * b.dtype.itemsize)
        return w[...], b[...]


def load_bilm_tf(options_file: PathLike, weight_file: PathLike, dropout: float = 0.0) -> BiLm:
    """Build a `BiLm` from bilm-tf files, checking every dataset's presence and shape, and that
    the file reads no other file, before anything is allocated."""
    options = read_options(options_file)
    shapes = weight_shapes(options)
    try:
        with open(weight_file, "rb") as handle:
            start = handle.read(64).lstrip()
        if start.startswith(b"{"):
            raise FormatError(
                f"{weight_file}: a JSON file (options?), not bilm-tf's HDF5 weights; are "
                "options_file and weight_file swapped?"
            )
        check_declared_size(
            weight_file, 4 * sum(int(numpy.prod(shape)) for shape in shapes.values())
        )
        with h5py.File(weight_file, "r") as weights, torch.no_grad():
            check_hdf5_storage(weights, weight_file)
            for name, shape in shapes.items():
                _dataset(weights, name, shape, weight_file)
            bilm = BiLm(options, dropout=dropout, initialise=False)  # every parameter copied
            _copy_weights(bilm, weights, weight_file)
    except OSError as error:  # a truncated or damaged HDF5 file
        raise FormatError(f"{weight_file}: cannot read the HDF5 weights ({error})") from error
    for name, parameter in bilm.named_parameters():
        if not all_finite(parameter):
            raise FormatError(
                f"{weight_file}: NaN or infinite values in {name}: the weights are damaged"
            )
    return bilm


def _copy_weights(bilm: BiLm, weights: h5py.File, weight_file: PathLike) -> None:
    """Copy every dataset of bilm-tf's layout into `bilm`, checking presence and shapes."""
    cnn = bilm.char_cnn
    lstm = bilm.lstm
    char_dim = cnn.char_embedding.embedding_dim
    table = _dataset(weights, "char_embed", (261, char_dim), weight_file)
    cnn.char_embedding.weight[0].zero_()
    _read_rows(table, slice(None), cnn.char_embedding.weight[1:])
    for i, ((width, num), conv) in enumerate(zip(cnn.filters, cnn.conv_layers())):
        w = _dataset(weights, f"CNN/W_cnn_{i}", (1, width, char_dim, num), weight_file)
        b = _dataset(weights, f"CNN/b_cnn_{i}", (num,), weight_file)
        conv.weight.copy_(torch.from_numpy(w[0].transpose(2, 1, 0)))
        _read_rows(b, slice(None), cast(torch.Tensor, conv.bias))
    n_filters = cnn.projection.in_features
    for k, highway in enumerate(cnn.highway_layers()):
        for part in ("transform", "carry"):
            w = _dataset(weights, f"CNN_high_{k}/W_{part}", (n_filters, n_filters), weight_file)
            b = _dataset(weights, f"CNN_high_{k}/b_{part}", (n_filters,), weight_file)
            getattr(highway, part).weight.copy_(torch.from_numpy(w[...].T))
            _read_rows(b, slice(None), getattr(highway, part).bias)
    proj = cnn.projection.out_features
    w = _dataset(weights, "CNN_proj/W_proj", (n_filters, proj), weight_file)
    b = _dataset(weights, "CNN_proj/b_proj", (proj,), weight_file)
    cnn.projection.weight.copy_(torch.from_numpy(w[...].T))
    _read_rows(b, slice(None), cnn.projection.bias)
    copy_lstm_weights(lstm, weights, weight_file)


def copy_lstm_weights(lstm: ProjectedLstmStack, weights: h5py.File, weight_file: PathLike) -> None:
    """Copy bilm-tf's LSTM datasets into `lstm`, checking presence and shapes (`_copy_weights`'
    LSTM part; `ElmoLstm.load_weights` reads a weight file's LSTM alone through it)."""
    dim, proj = lstm.dim, lstm.projection_dim
    for layer in range(lstm.n_layers):
        in_dim = lstm.input_weights[layer].shape[1]
        for direction in (0, 1):
            prefix = _lstm_prefix(direction, layer)
            w = _dataset(weights, f"{prefix}/W_0", (in_dim + proj, 4 * dim), weight_file)
            b = _dataset(weights, f"{prefix}/B", (4 * dim,), weight_file)
            p = _dataset(weights, f"{prefix}/W_P_0", (dim, proj), weight_file)
            _read_rows(w, slice(None, in_dim), lstm.input_weights[layer][direction])
            _read_rows(w, slice(in_dim, None), lstm.recurrent_weights[layer][direction])
            _read_rows(b, slice(None), lstm.biases[layer][direction, 0])
            lstm.projections[layer][direction].copy_(torch.from_numpy(p[...].T))


SOFTMAX_WEIGHT = "softmax/W"
SOFTMAX_BIAS = "softmax/b"


def export_bilm_tf(
    bilm: BiLm,
    options_file: PathLike,
    weight_file: PathLike,
    overwrite: bool = False,
    softmax: Optional[Tuple[numpy.ndarray, numpy.ndarray]] = None,
    compress: bool = False,
) -> None:
    """Write `bilm` as bilm-tf `options.json` + `weights.hdf5` (float32). Refuses to overwrite.

    `softmax`, optional: `(W [n_vocab, proj], b [n_vocab])` in `vocab.txt` line order, stored as
    extra datasets `softmax/W`, `softmax/b` (bilm-tf never saved its softmax; readers that do not
    know these datasets ignore them). They let a fine-tuning run start from the trained softmax.

    `compress`: gzip the datasets (with HDF5's byte shuffle), which every HDF5 reader undoes; it
    pays for weights rounded to fewer bits (float16 values stored as float32 shrink to about
    half), not for full float32 weights.

    The two files are written as one set (`elmo_bilm.utils.file_sets.output_set`): on any
    failure (a full disk: one line saying so) both old files are kept.
    """
    for path in (options_file, weight_file):
        if os.path.lexists(path) and not overwrite:  # a dangling link too
            raise FileExistsError(f"{path} exists; not overwriting it")
    with output_set({"weights": weight_file, "options": options_file}, overwrite) as staged:
        _write_bilm_tf(bilm, staged["weights"], staged["options"], softmax, compress)


def _write_bilm_tf(
    bilm: BiLm,
    weight_file: str,
    options_file: str,
    softmax: Optional[Tuple[numpy.ndarray, numpy.ndarray]],
    compress: bool,
) -> None:
    """`export_bilm_tf`'s two files, written to the paths given."""
    cnn = bilm.char_cnn
    lstm = bilm.lstm

    def array(tensor: torch.Tensor) -> numpy.ndarray:
        return tensor.detach().cpu().to(torch.float32).numpy()

    storage = {"compression": "gzip", "shuffle": True} if compress else {}

    with h5py.File(weight_file, "w") as file:

        def put(name: str, value: numpy.ndarray) -> None:
            file.create_dataset(name, data=value, **storage)

        put("char_embed", array(cnn.char_embedding.weight[1:]))
        for i, conv in enumerate(cnn.conv_layers()):
            put(f"CNN/W_cnn_{i}", array(conv.weight).transpose(2, 1, 0)[None])
            put(f"CNN/b_cnn_{i}", array(cast(torch.Tensor, conv.bias)))
        for k, highway in enumerate(cnn.highway_layers()):
            for part in ("transform", "carry"):
                put(f"CNN_high_{k}/W_{part}", array(getattr(highway, part).weight).T)
                put(f"CNN_high_{k}/b_{part}", array(getattr(highway, part).bias))
        if softmax is not None:
            put(SOFTMAX_WEIGHT, numpy.asarray(softmax[0], dtype=numpy.float32))
            put(SOFTMAX_BIAS, numpy.asarray(softmax[1], dtype=numpy.float32))
        put("CNN_proj/W_proj", array(cnn.projection.weight).T)
        put("CNN_proj/b_proj", array(cnn.projection.bias))
        for layer in range(lstm.n_layers):
            for direction in (0, 1):
                prefix = _lstm_prefix(direction, layer)
                w = numpy.concatenate(
                    [
                        array(lstm.input_weights[layer][direction]),
                        array(lstm.recurrent_weights[layer][direction]),
                    ]
                )
                put(f"{prefix}/W_0", w)
                put(f"{prefix}/B", array(lstm.biases[layer][direction, 0]))
                put(f"{prefix}/W_P_0", array(lstm.projections[layer][direction]).T)
    with open(options_file, "w") as handle:
        json.dump(bilm.options, handle, indent=2)
