"""ELMo in spaCy 3: the pipeline component `elmo` and the architecture `elmo_bilm.ElmoTok2Vec.v1`.

`nlp.add_pipe("elmo")` runs the frozen biLM over each doc and sets `doc._.elmo`, every biLM layer
`(n_layers, len(doc), dim)` (float32, one row per spaCy token; whitespace tokens are not fed to
the biLM and get zero rows), with `span._.elmo` / `token._.elmo` views; with `set_tensor`, also
`doc.tensor` (the `layers` mix) and the user hooks behind `.vector` and `.similarity`.
`elmo_bilm.ElmoTok2Vec.v1` is a tok2vec for `tagger`, `ner`, `textcat`, ... that learns Eq. (1)
over `doc._.elmo` (the paper's ELMo at the input), optionally beside spaCy's own embedding.

Found by spaCy through the entry points of `elmo-bilm[spacy]` (`spacy_factories`,
`spacy_architectures`): the core imports nothing of spaCy, and this module nothing of AllenNLP.
"""

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
import srsly
import torch
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span, Token
from spacy.util import minibatch, registry
from spacy.vocab import Vocab
from thinc.api import Model, chain, concatenate, with_array
from thinc.layers import Dropout
from thinc.types import Floats2d, Floats3d
from torch.func import functional_call

from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.scalar_mix import ScalarMix
from elmo_bilm.runtime.engine import DEFAULT_MAX_TOKENS, embed_sorted
from elmo_bilm.runtime.layers import Layers
from elmo_bilm.runtime.precision import PRECISIONS, set_precision
from elmo_bilm.sources.published import LOCAL, PUBLISHED, names
from elmo_bilm.sources.resolver import ResolvedBilm, resolve_bilm
from elmo_bilm.utils.checks import finite_number, whole_number
from elmo_bilm.utils.devices import torch_device
from elmo_bilm.utils.files import FormatError, UsageError
from elmo_bilm.utils.names import user_path

LayerChoice = Union[str, List[float]]
DEFAULT_CONFIG: Dict[str, Any] = {
    "model": "wikipedia",
    "weights": "",
    "layers": "all",
    "batch_size": 64,
    "max_tokens": DEFAULT_MAX_TOKENS,
    "set_tensor": False,
    "device": "cpu",
    "sentences": True,
    "precision": "float32",
}
OPTIONS_NAME, WEIGHTS_NAME, CFG_NAME = "options.json", "weights.hdf5", "cfg"
MANYLANGS_NAME = "manylangs"  # a saved ELMoForManyLangs biLM's folder
_MANYLANGS_MEMBER = re.compile(rf"{MANYLANGS_NAME}/[A-Za-z0-9_][A-Za-z0-9_.-]*")
CONFIGS_DIR = Path(__file__).resolve().parent / "spacy_configs"


def training_config(name: str) -> Path:
    """A `spacy train` config shipped with the package, by name: `ner_cnn` (spaCy's default CNN
    tok2vec for NER) or `ner_elmo` (the same with ELMo at its input); docs/spacy.md."""
    path = CONFIGS_DIR / f"{name}.cfg"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in CONFIGS_DIR.glob("*.cfg")))
        raise UsageError(f"no shipped spaCy config {name!r}; one of {known}")
    return path


@Language.factory("elmo", default_config=DEFAULT_CONFIG)
def make_elmo(
    nlp: Language,
    name: str,
    model: str,
    weights: str,
    layers: LayerChoice,
    batch_size: int,
    max_tokens: int,
    set_tensor: bool,
    device: Union[str, int],
    sentences: bool,
    precision: str,
) -> "ElmoComponent":
    """The `elmo` factory (see `ElmoComponent`)."""
    return ElmoComponent(
        nlp.vocab,
        name,
        model=model,
        weights=weights,
        layers=layers,
        batch_size=batch_size,
        max_tokens=max_tokens,
        set_tensor=set_tensor,
        device=device,
        sentences=sentences,
        precision=precision,
    )


class ElmoComponent(Pipe):
    """Every layer of a frozen ELMo biLM on each doc, as `doc._.elmo`.

    # Parameters

    model : `str` (default = `"wikipedia"`, the biLM shipped with `elmo_bilm`)
        A biLM's name (`wikipedia`, `wikipedia_1024`, `small`, `medium`, `original`,
        `original_5.5b`), or a bilm-tf `options.json` path or URL with `weights`.
    weights : `str`
        The `weights.hdf5` path or URL that goes with an options file ("" for a name).
    layers : `"all" | "top" | "average" | List[float]` (default = `"all"`)
        What `doc.tensor` holds with `set_tensor`: every layer concatenated (`n_layers * dim`),
        the top layer, the layers' mean, or the fixed Eq. (1) mix `sum_j softmax(w)_j * h_j` of
        the weights `w_j` (one per layer; gamma 1), as everywhere else in the project.
    batch_size : `int` (default = `64`)
        Sequences (docs, or sentences) per biLM pass, length-sorted within each batch of docs
        that `nlp.pipe(texts, batch_size=...)` hands over.
    max_tokens : `int` (default = `4096`)
        At most this many padded tokens (sequences x the longest) per biLM pass, so that memory
        is bounded whatever the lengths (a longer sequence makes a pass of its own).
    set_tensor : `bool` (default = `False`)
        Also set `doc.tensor` and the vector / similarity user hooks.
    device : `str | int` (default = `"cpu"`)
        Where the biLM runs: `"cpu"`, `"cuda"`, `"cuda:1"`, or a GPU id (-1: the CPU).
    sentences : `bool` (default = `True`)
        Feed each sentence to the biLM on its own when the doc has sentence boundaries (a
        `sentencizer` or parser before this component); otherwise the whole doc is one sequence.
    precision : `str` (default = `"float32"`)
        The biLM's arithmetic: `"bfloat16"` or `"int8"` products for cheaper inference
        (`elmo_bilm.runtime.precision`).

    The biLM is loaded when first needed (`initialize`, the first doc, or `from_disk`), so that
    `spacy.load` of a saved pipeline reads the biLM files saved with it, not the original ones.
    It is stateless, as this project's own tools are (unlike the mirrored `Elmo` and
    `ElmoEmbedder`, stateful by default as AllenNLP's): every sequence starts from zero LSTM
    states, so a doc gets the same vectors in any batch.
    """

    def __init__(
        self,
        vocab: Vocab,
        name: str = "elmo",
        *,
        model: str = "wikipedia",
        weights: str = "",
        layers: LayerChoice = "all",
        batch_size: int = 64,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        set_tensor: bool = False,
        device: Union[str, int] = "cpu",
        sentences: bool = True,
        precision: str = "float32",
    ) -> None:
        install_extensions()
        if precision not in PRECISIONS:
            raise UsageError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        batch_size = int(whole_number(batch_size, "batch_size") or 1)
        max_tokens = whole_number(max_tokens, "max_tokens", optional=True)  # type: ignore[assignment]
        # named as everywhere (a Path, `~`); "" or nothing: the shipped biLM
        model = user_path(model, "the elmo component's model") or "wikipedia"
        weights = user_path(weights, "the elmo component's weights") or ""
        if not isinstance(layers, str) and isinstance(layers, (int, numpy.integer)):
            raise UsageError(f'layers must be "all", "top", "average" or weights, got {layers!r}')
        Layers.of(layers)  # a name or weights (one per layer, checked when the biLM is known)
        self.vocab = vocab
        self.name = name
        self.cfg: Dict[str, Any] = {
            "model": model,
            "weights": weights or "",
            "layers": layers if isinstance(layers, str) else [float(w) for w in layers],
            "batch_size": batch_size,
            "max_tokens": max_tokens,
            "set_tensor": set_tensor,
            "device": device,
            "sentences": sentences,
            "precision": precision,
        }
        self.device  # noqa: B018  (a malformed device fails here, not on the first doc)
        self._bilm: Optional[BiLm] = None
        self._source: Optional[ResolvedBilm] = None  # the loaded biLM's files (None: by name)
        self._payload: Optional[Dict[str, bytes]] = None  # its files as `from_bytes` read them
        # spaCy's listener protocol (`find_listeners`): the ElmoMix layers that read doc._.elmo
        self.model: Model = Model("elmo", _identity_forward)
        self.listener_map: Dict[str, List[Model]] = {}

    # -- the biLM ---------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        """The torch device of the `device` setting."""
        return torch_device(self.cfg["device"])

    @property
    def named(self) -> bool:
        """Whether the biLM is named (kept by name on disk) rather than given by files."""
        return not self.cfg["weights"] and self.cfg["model"] in (*LOCAL, *PUBLISHED)

    @property
    def bilm(self) -> BiLm:
        """The biLM, loaded on first use."""
        if self._bilm is None:
            source = resolve_bilm(self.cfg["model"], self.cfg["weights"] or None)
            self._set_bilm(source.load(), None if self.named else source)
        assert self._bilm is not None
        return self._bilm

    def _set_bilm(self, bilm: BiLm, source: Optional[ResolvedBilm]) -> None:
        Layers.of(self.cfg["layers"]).depth(bilm.num_layers)  # weights: one per layer
        self._bilm = set_precision(
            bilm.to(self.device).eval(), self.cfg.get("precision", "float32")
        )
        self._source = source
        self._payload = None
        self._link_dims()

    @property
    def n_layers(self) -> int:
        """The biLM's number of layers (the token layer and each LSTM layer)."""
        return self.bilm.num_layers

    @property
    def dim(self) -> int:
        """The width of each layer's vectors (twice the biLM's projection)."""
        return self.bilm.get_output_dim()

    def initialize(
        self, get_examples: Optional[Callable[[], Iterable[Any]]] = None, *, nlp: Any = None
    ) -> None:
        """Load the biLM now (errors show at `nlp.initialize`, not on the first doc)."""
        self.bilm  # noqa: B018

    # -- annotation -------------------------------------------------------------------------

    def __call__(self, doc: Doc) -> Doc:
        self.annotate([doc])
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        """Docs in input order, annotated `batch_size` docs at a time (`nlp.pipe`'s): their
        sequences length-sorted and run through the biLM the setting `batch_size` at a time, so
        memory stays bounded by the two."""
        for docs in minibatch(stream, size=batch_size):
            self.annotate(docs)
            yield from docs

    def predict(self, docs: Sequence[Doc]) -> List[numpy.ndarray]:
        """Every biLM layer of each doc, `(n_layers, len(doc), dim)` float32; whitespace tokens
        (`token.is_space`) are left out of the biLM's input and get zero rows."""
        units: List[Tuple[int, List[int]]] = []  # (doc, its tokens fed to the biLM as one sequence)
        for row, doc in enumerate(docs):
            split = self.cfg["sentences"] and doc.has_annotation("SENT_START")
            for span in doc.sents if split else [doc[:]]:
                tokens = [token.i for token in span if not token.is_space]
                if tokens:
                    units.append((row, tokens))
        bilm = self.bilm
        arrays = [
            numpy.zeros((bilm.num_layers, len(doc), bilm.get_output_dim()), dtype=numpy.float32)
            for doc in docs
        ]
        batches = embed_sorted(
            bilm,
            units,
            lambda unit: [docs[unit[0]][i].text for i in unit[1]],
            self.cfg["batch_size"],
            self.device,
            max_tokens=self.cfg.get("max_tokens", DEFAULT_MAX_TOKENS),
        )
        for chunk, layers in batches:
            for (row, tokens), activations in zip(chunk, layers):
                arrays[row][:, tokens] = activations[:, : len(tokens)]
        return arrays

    def set_annotations(self, docs: Sequence[Doc], arrays: Sequence[numpy.ndarray]) -> None:
        """`doc._.elmo`; with `set_tensor`, `doc.tensor` and the vector/similarity hooks."""
        for doc, array in zip(docs, arrays):
            doc._.elmo = array
            if self.cfg["set_tensor"]:
                doc.tensor = mix_layers(array, self.cfg["layers"])
                doc.user_hooks["vector"] = doc_vector
                doc.user_hooks["has_vector"] = has_vector
                doc.user_hooks["similarity"] = similarity
                doc.user_span_hooks["vector"] = span_vector
                doc.user_span_hooks["has_vector"] = has_vector
                doc.user_span_hooks["similarity"] = similarity
                doc.user_token_hooks["vector"] = token_vector
                doc.user_token_hooks["has_vector"] = has_vector
                doc.user_token_hooks["similarity"] = similarity

    def annotate(self, docs: Sequence[Doc]) -> None:
        """Predict and set the annotations of `docs`, in place."""
        docs = list(docs)
        if docs:
            self.set_annotations(docs, self.predict(docs))

    # -- listeners (ElmoMix layers of later components) -------------------------------------

    @property
    def listeners(self) -> List[Model]:
        """The `ElmoMix` layers that read this component's output (spacy-transformers' API)."""
        return [layer for layers in self.listener_map.values() for layer in layers]

    @property
    def listening_components(self) -> List[str]:
        """The names of the components whose `ElmoMix` layers listen here."""
        return list(self.listener_map)

    def add_listener(self, listener: Model, component_name: str) -> None:
        """Link `listener` (an `ElmoMix` of `component_name`) to this component and give it the
        biLM's sizes."""
        self.listener_map.setdefault(component_name, [])
        if listener not in self.listener_map[component_name]:
            self.listener_map[component_name].append(listener)
        listener.upstream = self  # type: ignore[attr-defined]
        self._link_dims()

    def remove_listener(self, listener: Model, component_name: str) -> bool:
        """Unlink `listener` from `component_name`; whether it was linked."""
        if listener in self.listener_map.get(component_name, []):
            self.listener_map[component_name].remove(listener)
            if not self.listener_map[component_name]:
                del self.listener_map[component_name]
            return True
        return False

    def find_listeners(self, component: Any) -> None:
        """Link the `ElmoMix` layers in `component`'s model that read this component."""
        model = getattr(component, "model", None)
        if isinstance(model, Model):
            for node in model.walk():
                if isinstance(node, ElmoMix) and node.upstream_name in ("*", self.name):
                    self.add_listener(node, component.name)

    def _link_dims(self) -> None:
        """Tell the linked layers the biLM's depth and width, once it is loaded."""
        if self._bilm is None:
            return
        for listener in self.listeners:
            for dim, value in (("nL", self._bilm.num_layers), ("nO", self._bilm.get_output_dim())):
                if not listener.has_dim(dim):
                    listener.set_dim(dim, value)

    # -- serialization ----------------------------------------------------------------------

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
        """`cfg`, and for a biLM given by files, copies of them (`options.json` and
        `weights.hdf5`, or an ELMoForManyLangs folder as `manylangs/`), so that the saved pipeline
        needs the original files no more."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        cfg = dict(self.cfg)
        if not self.named:
            self.bilm  # noqa: B018  (resolves and checks the files)
            if self._payload is not None:
                _write_payload(path, self._payload)
            else:
                assert self._source is not None
                _copy_files(self._source, path)
            manylangs = (path / MANYLANGS_NAME).is_dir()
            cfg["model"] = MANYLANGS_NAME if manylangs else OPTIONS_NAME
            cfg["weights"] = "" if manylangs else WEIGHTS_NAME
        cfg["files"] = not self.named
        (path / CFG_NAME).write_text(json.dumps(cfg, indent=2))

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> "ElmoComponent":
        """Read what `to_disk` wrote: the biLM from the folder's own files, or by its name (a
        saved `cfg` names nothing else: no other path, no URL). The other settings stay the
        constructor's (the pipeline's config, with its overrides)."""
        path = Path(path)
        cfg = _read_cfg(path / CFG_NAME)
        if not cfg["files"]:
            self.cfg["model"], self.cfg["weights"] = cfg["model"], ""
            self._bilm = self._source = self._payload = None
        elif cfg["model"] == MANYLANGS_NAME:
            self.cfg["model"], self.cfg["weights"] = str(path / MANYLANGS_NAME), ""
            self._bilm = None
            self.bilm  # noqa: B018
        else:
            self.cfg["model"], self.cfg["weights"] = (
                str(path / OPTIONS_NAME),
                str(path / WEIGHTS_NAME),
            )
            self._bilm = None
            self.bilm  # noqa: B018
        return self

    def to_bytes(self, *, exclude: Iterable[str] = ()) -> bytes:
        """`to_disk`'s files as one msgpack message."""
        with tempfile.TemporaryDirectory() as folder:
            self.to_disk(folder)
            files = sorted(p for p in Path(folder).rglob("*") if p.is_file())
            return srsly.msgpack_dumps(
                {p.relative_to(folder).as_posix(): p.read_bytes() for p in files}
            )

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = ()) -> "ElmoComponent":
        """Read what `to_bytes` wrote (through a temporary folder, removed afterwards; the files'
        bytes are kept for a later `to_disk`)."""
        try:
            payload = srsly.msgpack_loads(bytes_data)
        except ValueError as error:
            raise FormatError(
                f"the elmo component's bytes are not what to_bytes writes ({error})"
            ) from None
        if not isinstance(payload, dict) or not all(
            isinstance(name, str) and isinstance(data, bytes) for name, data in payload.items()
        ):
            raise FormatError("the elmo component's bytes are not what to_bytes writes")
        with tempfile.TemporaryDirectory(prefix="elmo_spacy_") as folder:
            _write_payload(Path(folder), payload)
            self.from_disk(folder)
        if self._source is not None:
            self._source = None
            self._payload = {name: data for name, data in payload.items() if name != CFG_NAME}
        return self


def _write_payload(folder: Path, payload: Dict[str, bytes]) -> None:
    """Write `to_bytes`' files into `folder`; a name other than the component's own files is
    refused (nothing outside the folder is written)."""
    for name, data in payload.items():
        if not (
            name in (CFG_NAME, OPTIONS_NAME, WEIGHTS_NAME) or _MANYLANGS_MEMBER.fullmatch(name)
        ):
            raise FormatError(f"the elmo component's bytes hold {name!r}, not one of its files")
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _copy_files(source: ResolvedBilm, folder: Path) -> None:
    """Copy a biLM's files into a saved pipeline's folder."""
    if source.format == "manylangs":
        root = Path(str(source.folder))
        for file in sorted(p for p in root.iterdir() if p.is_file()):
            target = folder / MANYLANGS_NAME / file.name
            target.parent.mkdir(parents=True, exist_ok=True)
            if not (target.exists() and target.samefile(file)):
                shutil.copyfile(file, target)
        return
    files = source.as_bilm_tf()
    for name, path in ((OPTIONS_NAME, files.options_file), (WEIGHTS_NAME, files.weight_file)):
        target = folder / name
        if not (target.exists() and target.samefile(str(path))):
            shutil.copyfile(str(path), target)


def _read_cfg(path: Path) -> Dict[str, Any]:
    """A saved component's `cfg`, checked: a JSON object whose `files` says whether the biLM's
    files are in the folder and whose `model` is then one of them, else a biLM's name."""
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise FormatError(f"{path}: not the elmo component's saved cfg ({error})") from None
    if (
        not isinstance(cfg, dict)
        or not isinstance(cfg.get("files"), bool)
        or not isinstance(cfg.get("model"), str)
    ):
        raise FormatError(f"{path}: not the elmo component's saved cfg (no files / model)")
    if cfg["files"] and cfg["model"] not in (OPTIONS_NAME, MANYLANGS_NAME):
        raise FormatError(f"{path}: model {cfg['model']!r} is not a file the saved folder holds")
    if not cfg["files"] and (cfg["model"] not in names() or cfg.get("weights")):
        raise FormatError(
            f"{path}: model {cfg['model']!r} is not a biLM's name ({', '.join(names())}); a "
            "saved pipeline names a biLM by name or holds its files, never another path or a URL"
        )
    return cfg


def _identity_forward(model: Model, docs: Any, is_train: bool) -> Tuple[Any, Callable]:
    return docs, lambda gradient: gradient


# -- attributes and hooks -------------------------------------------------------------------


def install_extensions() -> None:
    """`doc._.elmo` (set by the component), `span._.elmo` / `token._.elmo` (views of it)."""
    if not Doc.has_extension("elmo"):
        Doc.set_extension("elmo", default=None)
    if not Span.has_extension("elmo"):
        Span.set_extension("elmo", getter=_span_elmo)
    if not Token.has_extension("elmo"):
        Token.set_extension("elmo", getter=_token_elmo)


def _span_elmo(span: Span) -> Optional[numpy.ndarray]:
    layers = span.doc._.elmo
    return None if layers is None else layers[:, span.start : span.end]


def _token_elmo(token: Token) -> Optional[numpy.ndarray]:
    layers = token.doc._.elmo
    return None if layers is None else layers[:, token.i]


def mix_layers(layers: numpy.ndarray, how: LayerChoice) -> numpy.ndarray:
    """`(n_tokens, width)` of `(n_layers, n_tokens, dim)`: `"all"` concatenates the layers,
    `"top"` takes the last, `"average"` their mean, weights the Eq. (1) mix
    `sum_j softmax(w)_j * h_j` (`elmo_bilm.runtime.layers.Layers`, as everywhere else)."""
    return Layers.of(how, flat=True).keep(layers)


def _mean_vector(doc: Doc, start: int, end: int) -> numpy.ndarray:
    """The mean of `doc.tensor` over the non-whitespace tokens of `[start, end)` (zeros if none)."""
    rows = [i for i in range(start, end) if not doc[i].is_space]
    if not rows:
        return numpy.zeros(doc.tensor.shape[1], dtype=numpy.float32)
    return doc.tensor[rows].mean(axis=0)


def doc_vector(doc: Doc) -> numpy.ndarray:
    """`doc.vector`: the mean of the doc's token vectors (whitespace tokens left out)."""
    return _mean_vector(doc, 0, len(doc))


def span_vector(span: Span) -> numpy.ndarray:
    """`span.vector`: the mean of the span's token vectors (whitespace tokens left out)."""
    return _mean_vector(span.doc, span.start, span.end)


def token_vector(token: Token) -> numpy.ndarray:
    """`token.vector`: the token's row of `doc.tensor`."""
    return token.doc.tensor[token.i]


def has_vector(item: Any) -> bool:
    """`has_vector`: always true, every token having its contextual vector."""
    return True


def similarity(item: Any, other: Any) -> float:
    """The cosine of the two vectors (0 where either is zero)."""
    a, b = numpy.asarray(item.vector), numpy.asarray(other.vector)
    norm = float(numpy.linalg.norm(a) * numpy.linalg.norm(b))
    return float(numpy.dot(a, b) / norm) if norm else 0.0


# -- the trainable Eq. (1) for spaCy's components -------------------------------------------


class ElmoMix(Model):
    """Eq. (1), `gamma * sum_j softmax(w)_j * h_j`, over `doc._.elmo` (the biLM frozen): docs
    in, one `(len(doc), dim)` array per doc out. `w` (zeros: equal weights) and `gamma` (1) are
    trained; `l2_coefficient * ||w||^2` (the paper's `lambda`) is added through its gradient,
    `2 * lambda * w`, at every backward pass.

    The `elmo` component named `upstream_name` ("*": any) links itself here (spaCy's listener
    protocol), which gives the biLM's sizes and annotates docs that arrive without `doc._.elmo`
    (the sample docs of `initialize`; in training, put the component in
    `[training] annotating_components` so that it runs once per batch for every listener).
    """

    def __init__(self, upstream_name: str = "elmo", l2_coefficient: float = 0.001) -> None:
        finite_number(l2_coefficient, "l2_coefficient (lambda)", minimum=0)
        install_extensions()
        super().__init__(
            "elmo_mix",
            _mix_forward,
            init=_mix_init,
            dims={"nO": None, "nL": None},
            params={"w": None, "gamma": None},
            attrs={"l2_coefficient": l2_coefficient, "upstream_name": upstream_name},
        )
        self.upstream: Optional[ElmoComponent] = None

    @property
    def upstream_name(self) -> str:
        """The name of the `elmo` component this layer reads from."""
        return str(self.attrs["upstream_name"])

    def layers_of(self, docs: Sequence[Doc]) -> List[Floats3d]:
        """`doc._.elmo` of each doc, annotating those without it through the linked component."""
        missing = [doc for doc in docs if doc._.elmo is None]
        if missing:
            if self.upstream is None:
                raise UsageError(
                    f"docs without doc._.elmo and no '{self.upstream_name}' component linked: add "
                    f"it before this one and to [training] annotating_components"
                )
            self.upstream.annotate(missing)
        return [doc._.elmo for doc in docs]

    def weights(self) -> numpy.ndarray:
        """`softmax(w)`: the weight each layer gets now."""
        w = self.ops.to_numpy(self.get_param("w"))
        e = numpy.exp(w - w.max())
        return e / e.sum()


def _mix_init(model: ElmoMix, X: Optional[Sequence[Doc]] = None, Y: Any = None) -> None:
    if X is not None and len(X):
        layers = model.layers_of(X)[0]
        for dim, value in (("nL", layers.shape[0]), ("nO", layers.shape[2])):
            if not model.has_dim(dim):
                model.set_dim(dim, value)
    if not model.has_dim("nL") and model.upstream is not None:
        model.upstream.bilm  # noqa: B018  (loading it sets the linked layers' sizes)
    n_layers = model.get_dim("nL")
    model.set_param("w", model.ops.alloc1f(n_layers))
    model.set_param("gamma", model.ops.asarray1f([1.0]))


def _mix_forward(
    model: ElmoMix, docs: Sequence[Doc], is_train: bool
) -> Tuple[List[Floats2d], Callable]:
    """The core's Eq. (1) (`ScalarMix`, as `ElmoMixes` mixes) on `w` and `gamma` as torch
    tensors; the backward pass is torch's autograd of it and of `lambda * ||w||^2`."""
    ops = model.ops
    w = torch.tensor(ops.to_numpy(model.get_param("w")), requires_grad=is_train)
    gamma = torch.tensor(ops.to_numpy(model.get_param("gamma")), requires_grad=is_train)
    mix = ScalarMix(len(w))
    parameters = {f"scalar_parameters.{j}": w[j : j + 1] for j in range(len(w))}
    parameters["gamma"] = gamma
    layers = [torch.from_numpy(ops.to_numpy(ops.asarray3f(h))) for h in model.layers_of(docs)]
    with torch.set_grad_enabled(is_train):
        mixed = [functional_call(mix, parameters, (h.unbind(0),)) for h in layers]
    outputs = [ops.asarray2f(y.detach().numpy()) for y in mixed]

    def backprop(d_outputs: List[Floats2d]) -> List[Doc]:
        penalty = model.attrs["l2_coefficient"] * (w**2).sum()
        d_y = [torch.from_numpy(ops.to_numpy(d).astype("float32")) for d in d_outputs]
        d_w, d_gamma = torch.autograd.grad([*mixed, penalty], [w, gamma], [*d_y, torch.ones(())])
        model.inc_grad("w", ops.asarray1f(d_w.tolist()))
        model.inc_grad("gamma", ops.asarray1f(d_gamma.tolist()))
        return []  # the docs take no gradient (the biLM is frozen)

    return outputs, backprop


@registry.architectures("elmo_bilm.ElmoTok2Vec.v1")
def ElmoTok2Vec(
    embed: Optional[Model[List[Doc], List[Floats2d]]] = None,
    l2_coefficient: float = 0.001,
    dropout: float = 0.0,
    upstream: str = "elmo",
) -> Model[List[Doc], List[Floats2d]]:
    """A tok2vec of ELMo's Eq. (1) over the `upstream` component's layers (`ElmoMix`), with
    `dropout` on it, concatenated with `embed` (spaCy's own tok2vec, e.g. `spacy.Tok2Vec.v2` or
    `spacy.HashEmbedCNN.v2`) when given: the ELMo vector beside the task's own, as the paper
    puts ELMo at a task model's input. Width: the biLM's `dim` (+ `embed`'s width)."""
    mix: Model = ElmoMix(upstream, l2_coefficient)
    if dropout:
        mix = chain(mix, with_array(Dropout(dropout)))
    model = concatenate(mix, embed) if embed is not None else mix
    model.set_ref("elmo_mix", mix if isinstance(mix, ElmoMix) else mix.layers[0])
    return model
