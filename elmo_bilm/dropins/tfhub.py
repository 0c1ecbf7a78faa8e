"""TF-Hub's ELMo module (`hub.Module(".../google/elmo/3")`) as a torch module, without TensorFlow.

A script written for the hub module runs with its import line and constructor switched::

    from elmo_bilm.dropins.tfhub import ElmoModule  # was: import tensorflow_hub as hub

    elmo = ElmoModule("/path/to/elmo_3", trainable=True)  # was: hub.Module(url, trainable=True)
    embeddings = elmo(["the cat is on the mat", "dogs are in the fog"],
                      signature="default", as_dict=True)["elmo"]

`ElmoModule(spec, trainable=False, name="module", tags=None)` (`hub.Module`'s arguments) takes
the module's handle as `hub.Module` does, `https://tfhub.dev/google/elmo/1` to `3` or their Kaggle
addresses (downloaded once, `HANDLE?tf-hub-format=compressed`, into the resolver's cache and
unpacked there; offline, one line), or reads a hub module's folder (the extracted
`?tf-hub-format=compressed` archive: `variables/variables.index` and its data file; the graph,
`tfhub_module.pb`, is not read). `spec` may also name the `variables/` folder, the checkpoint
prefix or the `.tar.gz` itself: the resolver (`elmo_bilm.sources.resolver`) decides what it is
(format "tfhub") and `elmo_bilm.formats.tfhub` reads it, as for every other entry point
(`ElmoEmbedder(module_folder)` gives the same biLM's layers). Calls, as the hub module's
signatures take them:

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
shapes (`elmo_bilm.formats.tfhub`), with the published ELMo's values for what no shape says.
`options_file=` (keyword) names a bilm-tf `options.json` to use instead, its shapes checked
against the variables.

The graph computed is bilm-tf's `BidirectionalLanguageModel` (bilm/model.py): each sentence is
wrapped in `<S>` ... `</S>` and those positions dropped from the outputs; every sentence starts
from zero LSTM states. Differences, on purpose:

- every output is zero after a sentence's last token (bilm-tf's graph leaves the character
  CNN's vectors of its padding there in the token layer, and so in `elmo`; they are padding,
  which the hub's users mask with `sequence_len`);
- an empty sentence has a zero `default` (the hub's divides zero by zero);
- a single string where a batch belongs is a `UsageError` (the hub's: "input must be a vector").
"""

import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import numpy
import torch
from torch import nn

from elmo_bilm.formats.tfhub import hub_name, hub_options, read_tfhub
from elmo_bilm.model.bilm import frozen
from elmo_bilm.sources.hub import PREFIX as HUB_PREFIX
from elmo_bilm.sources.resolver import load_bilm, resolve_bilm
from elmo_bilm.utils.checks import true_or_false
from elmo_bilm.utils.files import FormatError, UsageError
from elmo_bilm.utils.names import is_url

__all__ = ["ElmoModule", "hub_options", "hub_name"]

PathLike = Union[str, "os.PathLike[str]"]
SIGNATURES = ("default", "tokens")


def module_checkpoint(path: PathLike) -> str:
    """The checkpoint prefix of the hub module that `path` names, as the resolver finds it (a
    module's folder, its `variables/` folder or checkpoint prefix, or a `.tar.gz` of the
    folder); anything else the resolver reads is refused: it has no hub mix to give."""
    text = os.fspath(path)
    checkpoint = _hub_checkpoint(text)
    if checkpoint is None:
        raise FormatError(
            f"{text}: a {resolve_bilm(text).format} biLM, not a TF-Hub ELMo module (its folder "
            "holds variables/variables.index with the module's bilm/ and aggregation/ "
            "variables); ElmoModule(path) runs it with the mix at TF-Hub's initial values"
        )
    return checkpoint


def _hub_checkpoint(text: str) -> Optional[str]:
    """The checkpoint prefix when `text` is a hub module, None when the resolver reads it as
    another biLM (bilm-tf files, a name, a Hub repository, ...)."""
    if "://" in text and not (is_url(text) or text.startswith(HUB_PREFIX)):
        raise UsageError(
            f"{text}: a URL ElmoModule cannot fetch; it reads TF-Hub's ELMo module by its "
            "https://tfhub.dev/google/elmo/N (or Kaggle) address, or a module's folder or archive"
        )
    try:
        source = resolve_bilm(text)
    except FormatError as error:
        raise FormatError(
            f"{text}: not a TF-Hub ELMo module (its folder holds variables/variables.index) "
            f"nor another biLM: {error}"
        ) from error
    return str(source.checkpoint) if source.format == "tfhub" else None


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


def _tag_set(tags: Any) -> frozenset:
    """`hub.Module`'s `tags` as a set of strings: None is the default graph variant, `set()`,
    the one read here (from the variables alone); any other set is refused, as hub refuses a
    graph variant it cannot find, rather than served the default's numbers."""
    if tags is None:
        return frozenset()
    if isinstance(tags, (str, bytes)) or not isinstance(tags, Iterable):
        raise UsageError(f"tags: a set of strings (hub.Module's graph variant), got {tags!r}")
    try:
        tag_set = frozenset(tags)
    except TypeError:  # tags=[["train"]]: a bare "unhashable type: 'list'" before
        raise UsageError(
            f"tags: a set of strings (hub.Module's graph variant), got {tags!r}"
        ) from None
    if tag_set:
        raise UsageError(
            f"tags={set(tag_set)!r}: ElmoModule reads the default graph variant only (tags None "
            "or set()); the trainable mix is asked for with trainable=True"
        )
    return tag_set


class ElmoModule(nn.Module):
    """TF-Hub's ELMo module read from its folder and called as `hub.Module` is (see the module's
    docstring): `module(inputs, signature="default", as_dict=False)`.

    # Parameters

    spec : `str`
        TF-Hub's handle of the module (`https://tfhub.dev/google/elmo/3`, versions 1-3, or
        its Kaggle address; downloaded once), the hub module's folder (or its `variables/`
        folder, checkpoint prefix or `.tar.gz`), as `hub.Module` takes its spec; or any other
        biLM the resolver reads (a name such as `original`, a folder of bilm-tf files, an
        `hf://` repository), run with the module's mix at TF-Hub's initial values (weights 0,
        scaling 1: an equal-weight mean of the layers).
    trainable : `bool`, optional (default = `False`)
        As `hub.Module`'s: the mix's `aggregation.weights` and `aggregation.scaling` train; the
        biLM stays frozen, as in the hub's module.
    name : `str`, optional (default = `"module"`)
        `hub.Module`'s variable scope, which prefixed the TensorFlow names of its variables
        (`module/aggregation/weights`); kept as `self.name`. There is no TensorFlow graph here,
        so it names nothing else (and needs no uniquifying).
    tags : `Set[str]`, optional (default = `None`)
        `hub.Module`'s graph variant: None or `set()`, the default one, read here from the
        variables; any other set is a `UsageError` (hub refuses a variant it cannot find).
    options_file : `str`, optional (keyword only; not hub's)
        A bilm-tf `options.json` to use instead of the options derived from the shapes.
    """

    def __init__(
        self,
        spec: PathLike,
        trainable: bool = False,
        name: str = "module",
        tags: Any = None,
        *,
        options_file: Optional[PathLike] = None,
    ) -> None:
        super().__init__()
        trainable = true_or_false(trainable, "trainable (hub.Module's, a bool)")
        if not isinstance(name, str) or not name:
            raise UsageError(f"name: hub.Module's variable scope, a non-empty string; got {name!r}")
        self.tags = _tag_set(tags)
        self.name = name
        text = os.fspath(spec)
        checkpoint = _hub_checkpoint(text)
        if checkpoint is not None:
            hub = read_tfhub(checkpoint, options_file)
            bilm, weights, scaling = hub.bilm, hub.weights, hub.scaling
        else:  # another biLM: the hub module's mix as TF-Hub initialises it (zeros, 1)
            if options_file is not None:
                raise UsageError(
                    f"{text}: options_file= is for a TF-Hub module's folder; this is another biLM"
                )
            bilm = load_bilm(text)
            weights, scaling = numpy.zeros(bilm.num_layers, dtype=numpy.float32), 1.0
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
