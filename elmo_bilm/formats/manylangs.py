"""ELMoForManyLangs' models (HIT-SCIR, 44 languages) as a `BiLm`, without its code.

A model is a folder: `config.json` (its `config_path` names the architecture JSON, in the folder
or one of ELMoForManyLangs' two packaged configs), `char.dic` and `word.dic` (a token and its id a
line, tab-separated), `token_embedder.pkl` and `encoder.pkl` (torch state dicts). Only its `cnn`
token encoder and `elmo` encoder load (the layout of every published model); its `lstm` variants
are refused.

The biLM it builds, `ManyLangsBiLm`, and its ids and token encoder are the model's
(`elmo_bilm.model.manylangs`, issue 80; imported here too, for existing callers). How its weights
map onto this project's biLM: its highway gate carries the input (`g x + (1 - g) f(A x)`),
bilm-tf's gates the non-linear part: the gate's weights are negated; its LSTM gates are ordered
`i, f, g, o` (bilm-tf: `i, j, f, o`) with no constant forget bias; a clip of 0 means no clip.

Its `Embedder.sents2elmo(sents, output_layer=l)` returns layer `l` of `ElmoEmbedder`'s output
(`-1`: the layers' average), equal to float32 rounding (tests/elmo_bilm/formats/test_manylangs.py), for
the first batch it embeds: its encoder carries LSTM states from one batch to the next, this
project's starts every sentence from zero states.
"""

import json
import os
import pickle
import re
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple, cast

import torch

from elmo_bilm.formats.bilm_tf import (
    MAX_CHAR_DIM,
    MAX_FILTER_WIDTHS,
    MAX_FILTERS,
    MAX_HIGHWAY,
    MAX_LAYERS,
    MAX_LSTM_DIM,
    MAX_PROJECTION_DIM,
)
from elmo_bilm.model.manylangs import (
    WORD_ID_BASE,
    CharVocabulary,
    ManyLangsBiLm,
    ManyLangsTokenEncoder,
)
from elmo_bilm.utils.files import FormatError
from elmo_bilm.utils.tensors import all_finite

CONFIG = "config.json"
CHAR_DIC = "char.dic"
WORD_DIC = "word.dic"
TOKEN_EMBEDDER = "token_embedder.pkl"
ENCODER = "encoder.pkl"
SPECIAL_CHARS = ("<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>")
SPECIAL_WORDS = ("<oov>", "<pad>")
MAX_WORD_DIM = 10240
MAX_CHARS_PER_TOKEN = 1000
MAX_VOCABULARY = 1 << 24
# ELMoForManyLangs' packaged architecture (elmoformanylangs/configs/, identical for both names),
# which published models such as its English one name instead of shipping a copy
_PUBLISHED_ARCHITECTURE: Dict[str, Any] = {
    "encoder": {
        "name": "elmo",
        "projection_dim": 512,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 4096,
        "n_layers": 2,
    },
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
        "n_highway": 2,
        "word_dim": 100,
        "char_dim": 50,
        "max_characters_per_token": 50,
    },
    "classifier": {"name": "sampled_softmax", "n_samples": 8192},
    "dropout": 0.1,
}
PACKAGED_CONFIGS = {
    "cnn_50_100_512_4096_sample.json": _PUBLISHED_ARCHITECTURE,
    "cnn_0_100_512_4096_sample.json": _PUBLISHED_ARCHITECTURE,
}


def is_manylangs_folder(path: Optional[str]) -> bool:
    """Whether `path` is a folder holding ELMoForManyLangs' `config.json` and `encoder.pkl`
    (a Hugging Face repository has a `config.json` too)."""
    return isinstance(path, str) and all(
        os.path.isfile(os.path.join(path, name)) for name in (CONFIG, ENCODER)
    )


def _integer(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _clip(value: Any) -> bool:
    return value is None or (
        isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
    )


# (section, key) -> (check, what a valid value is): every entry the biLM reads
_CHECKS = {
    ("token_embedder", "char_dim"): (lambda v: _integer(v, 1, MAX_CHAR_DIM), f"1..{MAX_CHAR_DIM}"),
    ("token_embedder", "word_dim"): (lambda v: _integer(v, 0, MAX_WORD_DIM), f"0..{MAX_WORD_DIM}"),
    ("token_embedder", "n_highway"): (lambda v: _integer(v, 0, MAX_HIGHWAY), f"0..{MAX_HIGHWAY}"),
    ("token_embedder", "activation"): (lambda v: v in ("relu", "tanh"), '"relu" or "tanh"'),
    ("token_embedder", "max_characters_per_token"): (
        lambda v: _integer(v, 3, MAX_CHARS_PER_TOKEN),
        f"3..{MAX_CHARS_PER_TOKEN}",
    ),
    ("encoder", "projection_dim"): (
        lambda v: _integer(v, 1, MAX_PROJECTION_DIM),
        f"1..{MAX_PROJECTION_DIM}",
    ),
    ("encoder", "dim"): (lambda v: _integer(v, 1, MAX_LSTM_DIM), f"1..{MAX_LSTM_DIM}"),
    ("encoder", "n_layers"): (lambda v: _integer(v, 1, MAX_LAYERS), f"1..{MAX_LAYERS}"),
    ("encoder", "cell_clip"): (_clip, "a number >= 0 or null"),
    ("encoder", "proj_clip"): (_clip, "a number >= 0 or null"),
}


def _member(path: Path, folder: Optional[Path] = None) -> Path:
    """`path`, a file of the model folder `folder` (default: its parent), refused when it is a
    symbolic link to a file outside the folder: a model's files are read from its folder only
    (a downloaded folder's `encoder.pkl -> ~/.ssh/id_rsa` would otherwise be read)."""
    folder = path.parent if folder is None else folder
    target = path.resolve()
    if not target.is_relative_to(folder.resolve()):
        raise FormatError(
            f"{path}: a symbolic link to {target}, outside the model folder {folder}; refused "
            "(a model's files are read from its folder only)"
        )
    return path


def _read_json(path: Path, what: str, folder: Optional[Path] = None) -> Dict[str, Any]:
    try:
        data = json.loads(_member(path, folder).read_bytes().decode("utf-8-sig"))
    except OSError as error:
        raise FormatError(f"{path}: cannot read the {what} ({error.strerror})") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FormatError(f"{path}: not a JSON {what} ({error})") from error
    if not isinstance(data, dict):
        raise FormatError(f"{path}: not a JSON object ({what})")
    return data


def read_architecture(folder: Path) -> Tuple[Dict[str, Any], str]:
    """The checked architecture JSON that `config.json`'s `config_path` names and where it was
    found: the path in the folder, else its file name in the folder, else one of
    ELMoForManyLangs' packaged configs (as its `Embedder` looks for it; nothing outside the
    folder is read)."""
    settings = _read_json(folder / CONFIG, "ELMoForManyLangs config.json")
    name = settings.get("config_path")
    if not isinstance(name, str) or not name:
        raise FormatError(f"{folder / CONFIG}: no config_path (the architecture JSON's name)")
    inside = (folder / name).resolve()
    base = os.path.basename(name.replace("\\", "/"))
    if inside.is_relative_to(folder.resolve()) and inside.is_file():
        path = inside
    elif base and (folder / base).is_file():
        path = _member(folder / base, folder)
    elif base in PACKAGED_CONFIGS:
        config, source = PACKAGED_CONFIGS[base], f"ELMoForManyLangs' packaged {base}"
        return check_architecture(config, source), source
    else:
        raise FormatError(
            f"{folder / CONFIG}: its config_path {name!r} is neither in {folder} nor one of "
            f"ELMoForManyLangs' packaged configs ({', '.join(PACKAGED_CONFIGS)})"
        )
    return check_architecture(_read_json(path, "architecture", folder), str(path)), str(path)


def check_architecture(config: Dict[str, Any], source: str) -> Dict[str, Any]:
    """Check every entry of an architecture JSON that the biLM reads (one-line errors naming
    `source` and the key); the `lstm` token encoder and encoder are refused."""
    for section in ("token_embedder", "encoder"):
        if not isinstance(config.get(section), dict):
            raise FormatError(f"{source}: missing section {section!r}")
    for section, expected in (("token_embedder", "cnn"), ("encoder", "elmo")):
        name = config[section].get("name")
        if not isinstance(name, str) or name.lower() != expected:
            raise FormatError(
                f"{source}: {section}.name is {json.dumps(name)}; only ELMoForManyLangs' "
                f'"{expected}" {section} loads here (its "lstm" variants are not supported)'
            )
    for (section, key), (valid, expected) in _CHECKS.items():
        if key not in config[section] and key in ("cell_clip", "proj_clip"):
            continue
        value = config[section].get(key)
        if not valid(value):
            raise FormatError(
                f"{source}: {section}.{key} is {json.dumps(value)}; expected {expected}"
            )
    filters = config["token_embedder"].get("filters")
    width_limit = config["token_embedder"]["max_characters_per_token"]
    if not (
        isinstance(filters, list)
        and 0 < len(filters) <= MAX_FILTER_WIDTHS
        and all(
            isinstance(pair, list)
            and len(pair) == 2
            and _integer(pair[0], 1, width_limit)
            and _integer(pair[1], 1, MAX_FILTERS)
            for pair in filters
        )
        and sum(pair[1] for pair in filters) <= MAX_FILTERS
    ):
        raise FormatError(
            f"{source}: token_embedder.filters is {json.dumps(filters)}; expected a non-empty list "
            f"of [width, n_filters] (widths <= max_characters_per_token, {MAX_FILTERS} in all)"
        )
    return config


def read_dictionary(path: Path) -> Dict[str, int]:
    """A `char.dic` / `word.dic`: `token<TAB>id` a line, read as ELMoForManyLangs reads it (lines
    split as Python's `splitlines`, each stripped; a line left with one field is the id of
    `\\u3000`, the whitespace character that stripping removed; a later line wins). A UTF-8
    byte-order mark at its start is dropped (`utf-8-sig`): editors on Windows write one, and it
    would otherwise glue itself to the first token (`<oov>` read as `\\ufeff<oov>`)."""
    try:
        text = _member(path).read_bytes().decode("utf-8-sig")
    except OSError as error:
        raise FormatError(f"{path}: cannot read the dictionary ({error.strerror})") from error
    except UnicodeDecodeError as error:
        raise FormatError(f"{path}: not UTF-8 text ({error.reason})") from error
    entries: Dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.strip().split("\t")
        if len(fields) == 1:
            fields.insert(0, "\u3000")
        try:
            index = int(fields[1]) if len(fields) == 2 else -1  # int() as its loader parses
        except ValueError:
            index = -1
        if not 0 <= index < MAX_VOCABULARY:
            raise FormatError(f"{path}:{number}: expected TOKEN<TAB>ID (an id from 0 to 2**24 - 1)")
        entries[fields[0]] = index
    return entries


def _check_special(entries: Dict[str, int], names: Sequence[str], path: Path) -> None:
    missing = [name for name in names if name not in entries]
    if missing:
        raise FormatError(f"{path}: lacks {', '.join(missing)} (ELMoForManyLangs' special entries)")


def load_state_dict(path: Path) -> Dict[str, torch.Tensor]:
    """A pickled torch state dict, read with `weights_only=True` (no code of the file runs), each
    tensor's storage checked (`_check_storage`) before anything reads its values."""
    _member(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except OSError as error:
        raise FormatError(f"{path}: cannot read the weights ({error.strerror})") from error
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, TypeError) as error:
        raise FormatError(
            f"{path}: not a plain torch state dict, refused without running any of it "
            f"({_reason(error)})"
        ) from error
    if not isinstance(state, dict) or not all(
        isinstance(key, str) and isinstance(value, torch.Tensor) for key, value in state.items()
    ):
        raise FormatError(f"{path}: not a torch state dict (names -> tensors)")
    for name, tensor in state.items():
        _check_storage(tensor, name, path)
    return state


def _check_storage(tensor: torch.Tensor, name: str, path: Path) -> None:
    """Refuse a tensor that declares more values than its file stores: a pickle gives each tensor
    a shape and strides over a storage, and a stride of 0 (`torch.zeros(1).expand(10**6, 512)`
    saves one float) or overlapping strides make a few stored bytes a table of gigabytes once
    `_take` checks it, converts it or copies it into an `nn.Embedding`. A tensor here must be
    contiguous and lie within its storage, so what it declares is what the file holds."""
    stored = tensor.untyped_storage().nbytes()
    needed = (tensor.storage_offset() + tensor.numel()) * tensor.element_size()
    if tensor.numel() and not tensor.is_contiguous():
        raise FormatError(
            f"{path}: {name} is a strided view (shape {tuple(tensor.shape)}, strides "
            f"{tensor.stride()}) over {stored} stored bytes, not a tensor of its own; refused"
        )
    if needed > stored:
        raise FormatError(
            f"{path}: {name} declares {needed} bytes (shape {tuple(tensor.shape)}) but its "
            f"storage holds {stored}; damaged or hostile file"
        )


def _reason(error: BaseException) -> str:
    """The gist of `torch.load`'s error, on one line (its message spans many, with advice to load
    the file unsafely)."""
    text = str(error)
    found = re.search(r"WeightsUnpickler error:\s*(.+?)(?:\s+Please use|\n\n|$)", text, re.S)
    gist = found.group(1) if found else (text.strip() or type(error).__name__)
    return " ".join(re.sub(r"\x1b\[[0-9;]*m", "", gist).split())[:200]


def _rows(state: Dict[str, torch.Tensor], name: str) -> int:
    """How many rows `state[name]` has (0 when absent or 0-d: `_take` then names the problem)."""
    tensor = state.get(name)
    return int(tensor.shape[0]) if tensor is not None and tensor.dim() > 0 else 0


def _take(
    state: Dict[str, torch.Tensor], name: str, shape: Tuple[int, ...], path: Path
) -> torch.Tensor:
    """`state[name]`, checked for its shape, type and values."""
    if name not in state:
        raise FormatError(f"{path}: {name} is missing (expected shape {shape})")
    tensor = state[name]
    if tuple(tensor.shape) != shape:
        raise FormatError(
            f"{path}: {name} has shape {tuple(tensor.shape)}; the config and dictionaries imply "
            f"{shape}"
        )
    if not tensor.is_floating_point() or not all_finite(tensor):
        raise FormatError(f"{path}: {name} is not finite floating-point weights")
    return tensor.to(torch.float32)


def _gates(weight: torch.Tensor, dim: int) -> torch.Tensor:
    """Rows in ELMoForManyLangs' gate order `i, f, g, o` -> bilm-tf's `i, j, f, o`."""
    i, f, g, o = weight.split(dim, dim=0)
    return torch.cat([i, g, f, o], dim=0)


def load_manylangs(folder: str, dropout: float = 0.0) -> ManyLangsBiLm:
    """Build a `ManyLangsBiLm` from an ELMoForManyLangs model folder, checking the config, the
    dictionaries and every tensor's presence and shape before building (one-line errors naming
    the file); the pickles are read with `weights_only=True`."""
    root = Path(folder)
    config, _ = read_architecture(root)
    embedder, encoder = config["token_embedder"], config["encoder"]
    chars = read_dictionary(root / CHAR_DIC)
    _check_special(chars, SPECIAL_CHARS, root / CHAR_DIC)
    word_dim = embedder["word_dim"]
    words = read_dictionary(root / WORD_DIC) if word_dim else None
    if words is not None:
        _check_special(words, SPECIAL_WORDS, root / WORD_DIC)
    tokens_path, encoder_path = root / TOKEN_EMBEDDER, root / ENCODER
    tokens, lstm = load_state_dict(tokens_path), load_state_dict(encoder_path)
    char_dim, proj = embedder["char_dim"], encoder["projection_dim"]
    filters = [(int(w), int(n)) for w, n in embedder["filters"]]
    n_filters = sum(n for _, n in filters)
    # the dictionaries' ids index the embeddings, which have one row per entry
    char_rows = _rows(tokens, "char_emb_layer.embedding.weight")
    _check_rows(char_rows, chars, "character", root / CHAR_DIC, tokens_path)
    if max(chars.values()) >= char_rows:
        raise FormatError(
            f"{root / CHAR_DIC}: id {max(chars.values())} beyond the {char_rows} character "
            f"embeddings of {tokens_path}"
        )
    char_table = _take(
        tokens, "char_emb_layer.embedding.weight", (char_rows, char_dim), tokens_path
    )
    expected = {"char_emb_layer.embedding.weight", "projection.weight", "projection.bias"}
    word_table = None
    if words is not None:
        word_rows = _rows(tokens, "word_emb_layer.embedding.weight")
        _check_rows(word_rows, words, "word", root / WORD_DIC, tokens_path)
        if max(words.values()) >= word_rows:
            raise FormatError(
                f"{root / WORD_DIC}: id {max(words.values())} beyond the {word_rows} word "
                f"embeddings of {tokens_path}"
            )
        name = "word_emb_layer.embedding.weight"
        word_table = _take(tokens, name, (word_rows, word_dim), tokens_path)
        expected.add(name)
    convs = []
    for i, (width, num) in enumerate(filters):
        convs.append(
            (
                _take(tokens, f"convolutions.{i}.weight", (num, char_dim, width), tokens_path),
                _take(tokens, f"convolutions.{i}.bias", (num,), tokens_path),
            )
        )
        expected |= {f"convolutions.{i}.weight", f"convolutions.{i}.bias"}
    highways = []
    for k in range(embedder["n_highway"]):
        name = f"highways._layers.{k}"
        highways.append(
            (
                _take(tokens, f"{name}.weight", (2 * n_filters, n_filters), tokens_path),
                _take(tokens, f"{name}.bias", (2 * n_filters,), tokens_path),
            )
        )
        expected |= {f"{name}.weight", f"{name}.bias"}
    projection = _take(tokens, "projection.weight", (proj, word_dim + n_filters), tokens_path)
    projection_bias = _take(tokens, "projection.bias", (proj,), tokens_path)
    _check_names(tokens, expected, tokens_path)
    dim = encoder["dim"]
    cells = {}
    expected = set()
    for layer in range(encoder["n_layers"]):
        for direction in ("forward", "backward"):
            prefix = f"{direction}_layer_{layer}"
            shapes = {
                "input_linearity.weight": (4 * dim, proj),
                "state_linearity.weight": (4 * dim, proj),
                "state_linearity.bias": (4 * dim,),
                "state_projection.weight": (proj, dim),
            }
            for part, shape in shapes.items():
                cells[f"{prefix}.{part}"] = _take(lstm, f"{prefix}.{part}", shape, encoder_path)
                expected.add(f"{prefix}.{part}")
    _check_names(lstm, expected, encoder_path)

    bilm = ManyLangsBiLm(config, chars, words)
    cnn, stack = cast(ManyLangsTokenEncoder, bilm.char_cnn), bilm.lstm
    with torch.no_grad():
        cnn.char_embedding.weight[0].zero_()
        cnn.char_embedding.weight[1:].copy_(char_table[: cnn.char_embedding.num_embeddings - 1])
        for conv, (weight, bias) in zip(cnn.conv_layers(), convs):
            conv.weight.copy_(weight)
            cast(torch.Tensor, conv.bias).copy_(bias)
        for highway, (weight, bias) in zip(cnn.highway_layers(), highways):
            highway.transform.weight.copy_(weight[:n_filters])
            highway.transform.bias.copy_(bias[:n_filters])
            highway.carry.weight.copy_(-weight[n_filters:])  # its gate carries the input
            highway.carry.bias.copy_(-bias[n_filters:])
        cnn.projection.weight.copy_(projection[:, word_dim:])
        cnn.projection.bias.copy_(projection_bias)
        if word_table is not None:
            assert cnn.word_embedding is not None and cnn.word_projection is not None
            cnn.word_embedding.weight.copy_(word_table[: cnn.word_embedding.num_embeddings])
            cnn.word_projection.weight.copy_(projection[:, :word_dim])
        for layer in range(encoder["n_layers"]):
            for d, direction in enumerate(("forward", "backward")):
                prefix = f"{direction}_layer_{layer}"
                stack.input_weights[layer][d].copy_(
                    _gates(cells[f"{prefix}.input_linearity.weight"], dim).T
                )
                stack.recurrent_weights[layer][d].copy_(
                    _gates(cells[f"{prefix}.state_linearity.weight"], dim).T
                )
                bias = _gates(cells[f"{prefix}.state_linearity.bias"], dim)
                stack.biases[layer][d, 0].copy_(
                    bias - cast(torch.Tensor, stack.forget_bias)
                )  # TF's +1 at run time
                stack.projections[layer][d].copy_(cells[f"{prefix}.state_projection.weight"])
    bilm.set_dropout(dropout)
    return bilm


def _check_rows(
    rows: int, entries: Dict[str, int], what: str, dictionary: Path, path: Path
) -> None:
    """Refuse an embedding with more rows than its dictionary has entries: ELMoForManyLangs builds
    its tables with one row per entry (`EmbeddingLayer`), so the dictionary bounds the table (and
    the `nn.Embedding` built for it) as much as the stored bytes do."""
    if rows > len(entries):
        raise FormatError(
            f"{path}: {rows} {what} embeddings but {dictionary} has {len(entries)} entries "
            "(ELMoForManyLangs' tables have one row per entry)"
        )


def _check_names(state: Dict[str, torch.Tensor], expected: set, path: Path) -> None:
    """Refuse tensors the config does not account for (another architecture's file)."""
    extra = sorted(set(state) - expected)
    if extra:
        shown = ", ".join(extra[:3]) + (", ..." if len(extra) > 3 else "")
        raise FormatError(f"{path}: unexpected tensors {shown} for the config's architecture")


__all__ = [
    "WORD_ID_BASE",
    "CharVocabulary",
    "ManyLangsBiLm",
    "ManyLangsTokenEncoder",
    "is_manylangs_folder",
    "load_manylangs",
]
