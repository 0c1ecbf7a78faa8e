"""Which of the biLM's layers to keep: the one layer choice of every entry point (the bulk
outputs, `ElmoEmbedder`, the spaCy component and each mirrored API: flair's `embedding_mode`,
simple_elmo's `layers`, ELMoForManyLangs' `output_layer`), so that "top" or "average" means the
same thing everywhere and is applied once, on the device, before the copy to the host."""

import math
import numbers
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy
import torch

from elmo_bilm.model.scalar_mix import ScalarMix
from elmo_bilm.utils.checks import finite_number
from elmo_bilm.utils.errors import UsageError

# what the files of `elmo-embed` and the corpus run hold: every layer, the top one, their mean
LAYER_CHOICES = ("all", "top", "average")
# besides those: every layer side by side per token (flair's and spaCy's "all", 2-D per text)
NAMES = (*LAYER_CHOICES, "concatenated")

LayerChoice = Union[str, int, Sequence[float], "Layers"]


def _is_weight(value: Any) -> bool:
    """A number a mix takes as a weight: an int or float, numpy's too, not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, numpy.bool_))


def _is_weights(value: Any) -> bool:
    """A sequence of numbers, or a one-dimensional numpy array of them (`numpy.array([1.0, 2.0,
    3.0])`): mixing weights, not bytes."""
    vector = isinstance(value, numpy.ndarray) and value.ndim == 1
    return (
        (isinstance(value, Sequence) or vector)
        and not isinstance(value, (str, bytes, bytearray))
        and all(_is_weight(w) for w in value)
    )


def _weights(mix: Any) -> Tuple[float, ...]:
    """`mix` as a tuple of finite floats, else a one-line `UsageError` (a NaN or infinite
    weight makes every mixed vector NaN)."""
    if isinstance(mix, (str, bytes, bytearray)) or not all(_is_weight(w) for w in mix):
        raise UsageError(f"mixing weights are numbers, one per layer, got {mix!r}")
    weights = tuple(float(w) for w in mix)
    if not all(math.isfinite(w) for w in weights):
        raise UsageError(f"mixing weights must be finite numbers, got {weights!r}")
    return weights


@dataclass(frozen=True)
class Layers:
    """What to keep of the biLM's layers `(n_layers, T, dim)` per sentence: `"all"`, the
    `"top"`, their `"average"`, every layer `"concatenated"` per token `(T, n_layers * dim)`,
    one layer by `index` (counted from 0, or from the top when negative), or with `mix` (one
    weight per layer) a fixed Eq. (1) mix, `gamma * sum_j softmax(mix)_j * h_j`."""

    name: str = "all"
    mix: Optional[Tuple[float, ...]] = None
    gamma: float = 1.0
    index: Optional[int] = None

    def __post_init__(self) -> None:
        if self.mix is not None:
            object.__setattr__(self, "mix", _weights(self.mix))
            object.__setattr__(self, "gamma", finite_number(self.gamma, "gamma"))
            object.__setattr__(self, "name", "mix")
        elif self.index is not None:
            if isinstance(self.index, bool) or not isinstance(self.index, (int, numpy.integer)):
                raise UsageError(f"a layer index is a whole number, got {self.index!r}")
            object.__setattr__(self, "index", int(self.index))
            object.__setattr__(self, "name", "layer")
        elif self.name not in NAMES:
            raise UsageError(f"layers must be one of {NAMES}, got {self.name!r}")

    @classmethod
    def of(cls, layers: LayerChoice, flat: bool = False) -> "Layers":
        """`layers` as a `Layers`: one already, a name, a layer's index, or mixing weights (a
        sequence of numbers). `flat`: for outputs of one vector per token (flair, spaCy's
        `doc.tensor`), where "all" is every layer concatenated."""
        if isinstance(layers, Layers):
            chosen = layers
        elif isinstance(layers, str):
            chosen = cls(layers)
        elif isinstance(layers, (int, numpy.integer)) and not isinstance(layers, bool):
            chosen = cls(index=int(layers))
        elif _is_weights(layers):
            chosen = cls(mix=_weights(layers))
        else:
            raise UsageError(
                f"layers must be one of {NAMES}, a layer's index or mixing weights, got {layers!r}"
            )
        if flat and chosen.name == "all":
            return cls("concatenated")
        return chosen

    @property
    def metadata(self) -> Optional[Dict[str, object]]:
        """What a Parquet file records of a fixed mix (None for the named choices)."""
        return {"mix": self.mix, "gamma": self.gamma} if self.mix is not None else None

    def depth(self, n_layers: int) -> int:
        """The layers kept per sentence (checking a mix's length and an index against the
        biLM's layers)."""
        if self.mix is not None and len(self.mix) != n_layers:
            raise UsageError(f"{len(self.mix)} layer weights for a biLM of {n_layers} layers")
        if self.index is not None and not -n_layers <= self.index < n_layers:
            raise UsageError(
                f"layer {self.index} of a biLM of {n_layers} layers (0 to {n_layers - 1})"
            )
        return n_layers if self.name == "all" else 1

    def select(self, activations: torch.Tensor) -> torch.Tensor:
        """`(batch, n_layers, T, dim)` -> the kept layers (`(batch, T, width)` unless "all")."""
        self.depth(activations.shape[1])
        if self.name == "top":
            return activations[:, -1]
        if self.name == "average":
            return activations.mean(dim=1)
        if self.index is not None:
            return activations[:, self.index]
        if self.name == "concatenated":
            batch, n_layers, steps, dim = activations.shape
            return activations.permute(0, 2, 1, 3).reshape(batch, steps, n_layers * dim)
        if self.mix is not None:  # the core's Eq. (1), with fixed weights and gamma
            mix = ScalarMix(len(self.mix), initial_scalar_parameters=self.mix, trainable=False)
            mix.gamma.data.fill_(self.gamma)
            return mix.to(activations.device)(activations.unbind(dim=1))
        return activations

    def keep(self, layers: numpy.ndarray) -> numpy.ndarray:
        """One sentence's `(n_layers, T, dim)` on the host -> its kept layers, as `select`."""
        return numpy.ascontiguousarray(self.select(torch.from_numpy(layers)[None])[0].numpy())
