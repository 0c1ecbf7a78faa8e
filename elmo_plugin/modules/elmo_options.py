"""The ELMo options, defined once: every ELMo component takes exactly these names.

`elmo_plugin_token_embedder` and `elmo_plugin_placement` take them as top-level keys (through
`takes_elmo_options`), `elmo_plugin_bcn` as its `elmo` object, and `training_config/elmo.libsonnet`
writes the same names.
"""

import dataclasses
import inspect
from typing import Any, Callable, List, Optional, TypeVar

from allennlp.common import FromParams
from allennlp.common.checks import ConfigurationError

from elmo_bilm.runtime.layers import Layers

_Init = TypeVar("_Init", bound=Callable[..., None])

LAYER_MODES = ("all", "top")


@dataclasses.dataclass(frozen=True)
class ElmoOptions(FromParams):
    """Which biLM, and how its layers become ELMo vectors (Eq. 1 of Peters et al. 2018).

    # Parameters

    options_file : `str`, optional
        bilm-tf `options.json` (with `weight_file`).
    weight_file : `str`, optional
        bilm-tf `weights.hdf5`.
    archive_file : `str`, optional
        A `model.tar.gz` trained with the plugin's `elmo_plugin_bilm` model, instead of the two
        files. With none of the three, the biLM shipped with the plugin is used.
    do_layer_norm : `bool`, optional (default = `False`)
        Layer-normalise each biLM layer (masked) before mixing.
    dropout : `float`, optional (default = `0.5`)
        Dropout on each ELMo vector.
    l2_coefficient : `float`, optional (default = `0.0`)
        The paper's `lambda` in `lambda * ||w||^2` on the raw mixing weights, added to the
        training loss by the Trainer (see `elmo_plugin.hooks`).
    layers : `str`, optional (default = `"all"`)
        Eq. (1) over `"all"` biLM layers with trained weights `s`, or the `"top"` layer only
        (Table 2's "last only"; no `s` to train, so no `lambda` penalty).
    gamma : `bool`, optional (default = `True`)
        Train the scale `gamma`; `False` fixes it at 1 (Supplement A.2's "no gamma").
    scalar_mix_parameters : `List[float]`, optional
        Fixed raw mixing weights `w` (then not trained; `gamma` still follows `gamma`), e.g.
        `[1, 0, 0]`; only with `layers` "all".
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the biLM with the task (frozen by default, as in the paper).
    cache_activations : `bool`, optional (default = `True`)
        With a frozen biLM, keep each sentence's biLM layers in memory so that epochs after the
        first skip the biLM (exact: mixing and dropout still run every time). Ignored with
        `requires_grad`.
    cache_size_mb : `float`, optional (default = `2048`)
        Memory bound of that cache; sentences beyond it are recomputed.
    """

    options_file: Optional[str] = None
    weight_file: Optional[str] = None
    archive_file: Optional[str] = None
    do_layer_norm: bool = False
    dropout: float = 0.5
    l2_coefficient: float = 0.0
    layers: str = "all"
    gamma: bool = True
    scalar_mix_parameters: Optional[List[float]] = None
    requires_grad: bool = False
    cache_activations: bool = True
    cache_size_mb: float = 2048.0

    def __post_init__(self) -> None:
        if self.layers not in LAYER_MODES:
            raise ConfigurationError(f"layers must be one of {LAYER_MODES}, got {self.layers!r}")
        if self.layers == "top" and self.scalar_mix_parameters is not None:
            raise ConfigurationError(
                'scalar_mix_parameters fixes the mix itself; use it with layers "all"'
            )
        number = isinstance(self.dropout, (int, float)) and not isinstance(self.dropout, bool)
        if not (number and 0.0 <= self.dropout < 1.0):  # "0.5" was a bare TypeError
            raise ConfigurationError(f"dropout must be in [0, 1), got {self.dropout!r}")

    def layer_choice(self) -> Layers:
        """The core's choice of layers (`ElmoMixes`): "all" with trained `w`, the "top" layer
        alone, or the fixed `scalar_mix_parameters`."""
        if self.scalar_mix_parameters is not None:
            return Layers(mix=tuple(self.scalar_mix_parameters))
        return Layers(self.layers)


def takes_elmo_options(init: _Init) -> _Init:
    """Give a constructor written `__init__(self, <own parameters>, **elmo_options)` the full
    signature with every `ElmoOptions` field as a keyword parameter, so that AllenNLP's
    `from_params`, `inspect.signature` and `help()` see them by name (AllenNLP reads constructor
    signatures). The body receives them in `**elmo_options` and builds `ElmoOptions(**elmo_options)`;
    options the constructor names itself (AllenNLP's positional order) keep their place."""
    signature = inspect.signature(init)
    own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    named = {p.name for p in own}  # options a constructor takes in its own order stay there
    shared = [
        inspect.Parameter(
            field.name, inspect.Parameter.KEYWORD_ONLY, default=field.default, annotation=field.type
        )
        for field in dataclasses.fields(ElmoOptions)
        if field.name not in named
    ]
    init.__signature__ = signature.replace(parameters=own + shared)  # type: ignore[attr-defined]
    return init


def option_names() -> List[str]:
    """The names of `ElmoOptions`' fields, in order."""
    return [field.name for field in dataclasses.fields(ElmoOptions)]


def check_options(kwargs: Any) -> ElmoOptions:
    """`ElmoOptions(**kwargs)` with an error naming any unknown option."""
    unknown = sorted(set(kwargs) - set(option_names()))
    if unknown:
        raise TypeError(f"unknown ELMo option(s) {unknown}; the options are {option_names()}")
    return ElmoOptions(**kwargs)
