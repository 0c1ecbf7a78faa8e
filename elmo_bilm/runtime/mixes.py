"""ELMo's Eq. (1) as a task model uses it, owned once: one biLM pass, N scalar mixes, dropout.

AllenNLP's `Elmo` (`elmo_bilm.dropins.allennlp`) and the plugin's `ElmoRepresentations` build on
`ElmoMixes`; which layers enter each mix is a `Layers` choice, as everywhere else."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import torch
from torch import nn

from elmo_bilm.model.bilm import BiLm, frozen
from elmo_bilm.model.scalar_mix import ScalarMix
from elmo_bilm.runtime.layers import LayerChoice, Layers
from elmo_bilm.utils.errors import UsageError


def _mix_arguments(layers: Layers, n_layers: int) -> Dict[str, Any]:
    """What `ScalarMix` takes for the choice `layers`: trained weights for "all", fixed ones for
    a `mix`, one layer alone for "top" or an index."""
    layers.depth(n_layers)  # a mix's length and an index checked against the biLM
    if layers.name == "all":
        return {"initial_scalar_parameters": None, "trainable": True}
    if layers.mix is not None:
        return {"initial_scalar_parameters": layers.mix, "trainable": False}
    if layers.name == "top":
        return {"initial_scalar_parameters": None, "trainable": True, "layer": n_layers - 1}
    if layers.index is not None:
        return {"initial_scalar_parameters": None, "trainable": True, "layer": layers.index}
    raise UsageError(
        f'an ELMo mix takes "all", "top", a layer\'s index or weights, got {layers.name!r}'
    )


class ElmoMixes(nn.Module):
    """`BiLm` layers -> one ELMo vector per mix, `dropout(gamma * sum_j s_j * h_j)` (Eq. 1 of
    Peters et al. 2018), each mix with its own `s` and `gamma`, from one biLM pass (frozen, in
    eval mode and without gradient, unless `requires_grad`).

    # Parameters

    bilm : `BiLm`
    dropouts : `Sequence[float]`
        The dropout on each mix's vector, one per mix (their number is the number of mixes).
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the biLM.
    do_layer_norm : `bool`, optional (default = `False`)
    layers : `LayerChoice`, optional (default = `"all"`)
        `"all"` layers with trained weights `s`, the `"top"` layer alone (or one by index), or
        fixed mixing weights (raw `w`, `s = softmax(w)`).
    trainable_gamma : `bool`, optional
        Train `gamma`; default: trained with `"all"`, fixed at 1 with fixed weights, trained with
        one layer.
    scalar_mix : `Callable[..., ScalarMix]`, optional (default = `ScalarMix`)
        The mix's class (the plugin's adds the paper's `lambda * ||w||^2`).
    """

    def __init__(
        self,
        bilm: BiLm,
        dropouts: Sequence[float],
        requires_grad: bool = False,
        do_layer_norm: bool = False,
        layers: LayerChoice = "all",
        trainable_gamma: Optional[bool] = None,
        scalar_mix: Callable[..., ScalarMix] = ScalarMix,
    ) -> None:
        super().__init__()
        self.bilm = bilm
        self.requires_grad = requires_grad
        for parameter in self.bilm.parameters():
            parameter.requires_grad_(requires_grad)
        self.layers = Layers.of(layers)
        arguments = _mix_arguments(self.layers, bilm.num_layers)
        mixes = [
            scalar_mix(
                bilm.num_layers,
                do_layer_norm=do_layer_norm,
                trainable_gamma=trainable_gamma,
                **arguments,
            )
            for _ in dropouts
        ]
        for mix in mixes:
            mix.gamma.data.fill_(self.layers.gamma)  # 1 but for a `Layers` mix given one
        self.scalar_mixes = nn.ModuleList(mixes)
        self.dropouts = nn.ModuleList(nn.Dropout(p) for p in dropouts)

    def get_output_dim(self) -> int:
        """The width of each ELMo vector (twice the biLM's projection)."""
        return self.bilm.get_output_dim()

    def bilm_layers(self, char_ids: torch.Tensor, **kwargs: Any) -> Dict[str, Any]:
        """`BiLm.forward(char_ids, **kwargs)`, frozen unless `requires_grad`."""
        if self.requires_grad:
            return self.bilm(char_ids, **kwargs)
        with frozen(self.bilm):
            return self.bilm(char_ids, **kwargs)

    def mix(
        self,
        layers: List[torch.Tensor],
        mask: torch.Tensor,
        trim: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
    ) -> List[torch.Tensor]:
        """Every mix of the biLM `layers` (`mask`: the layer norm's), each `trim`med (e.g. of
        its sentence boundaries) before its dropout."""
        outputs = []
        for scalar_mix, dropout in zip(self.scalar_mixes, self.dropouts):
            mixed = scalar_mix(layers, mask)
            outputs.append(dropout(mixed if trim is None else trim(mixed)))
        return outputs

    def forward(self, char_ids: torch.Tensor) -> Dict[str, Union[torch.Tensor, List]]:
        """`char_ids` (batch, T, 50) -> `{"elmo_representations": [(batch, T, dim)] * n, "mask"}`
        (the layer norm's statistics over the words, without `<S>` and `</S>`)."""
        output = self.bilm_layers(char_ids)
        mask = output["mask"]
        return {"elmo_representations": self.mix(output["activations"], mask), "mask": mask}
