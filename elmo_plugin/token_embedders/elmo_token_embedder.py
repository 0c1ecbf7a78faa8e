"""ELMo at the input of any AllenNLP model."""
from typing import List, Optional

import torch
from allennlp.modules.token_embedders import TokenEmbedder

from elmo_plugin.modules.bilm_loading import load_bilm
from elmo_plugin.modules.elmo import ElmoRepresentations


@TokenEmbedder.register("elmo_plugin_token_embedder")
class ElmoPluginTokenEmbedder(TokenEmbedder):
    """ELMo (Eq. 1 of Peters et al. 2018) from a bilm-tf biLM, as a drop-in TokenEmbedder.

    Pair it with AllenNLP's `elmo_characters` token indexer (its output key `elmo_tokens` is this
    embedder's input). Unlike AllenNLP's `elmo_token_embedder`, the biLM is stateless (a sentence's
    vectors do not depend on the batches before it) and `l2_coefficient` (the paper's `lambda`) is
    added to the training loss by the Trainer, with no `regularizer` block needed.

    Registered as a `TokenEmbedder` with name "elmo_plugin_token_embedder".

    # Parameters

    options_file : `str`, optional
        bilm-tf `options.json` (with `weight_file`).
    weight_file : `str`, optional
        bilm-tf `weights.hdf5`.
    archive_file : `str`, optional
        A `model.tar.gz` trained with the plugin's `elmo_plugin_bilm` model, instead of the two files.
        With none of the three, the small biLM shipped with the plugin is used.
    do_layer_norm : `bool`, optional (default = `False`)
        Layer-normalise each biLM layer (masked) before mixing.
    dropout : `float`, optional (default = `0.5`)
        Dropout on the ELMo vectors.
    l2_coefficient : `float`, optional (default = `0.0`)
        `lambda` in `lambda * ||w||^2` on the raw mixing weights.
    scalar_mix_parameters : `List[float]`, optional
        Fixed raw mixing weights (then not trained), e.g. `[-9e10, -9e10, 1]` for the top layer.
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the biLM's weights with the task (frozen by default, as in the paper).
    cache_activations : `bool`, optional (default = `True`)
        Cache each sentence's frozen biLM layers in memory so epochs after the first skip the
        biLM (exact: mixing and dropout still run every time). Ignored with `requires_grad`.
    cache_size_mb : `float`, optional (default = `2048`)
        Memory bound of the cache; sentences beyond it are recomputed.
    """

    def __init__(
        self,
        options_file: Optional[str] = None,
        weight_file: Optional[str] = None,
        archive_file: Optional[str] = None,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        l2_coefficient: float = 0.0,
        scalar_mix_parameters: Optional[List[float]] = None,
        requires_grad: bool = False,
        cache_activations: bool = True,
        cache_size_mb: float = 2048.0,
    ) -> None:
        super().__init__()
        self.elmo = ElmoRepresentations(
            load_bilm(options_file, weight_file, archive_file),
            num_output_representations=1,
            do_layer_norm=do_layer_norm,
            dropout=dropout,
            l2_coefficient=l2_coefficient,
            scalar_mix_parameters=scalar_mix_parameters,
            requires_grad=requires_grad,
            cache_activations=cache_activations,
            cache_size_mb=cache_size_mb,
        )

    def get_output_dim(self) -> int:
        return self.elmo.get_output_dim()

    def forward(self, elmo_tokens: torch.Tensor) -> torch.Tensor:
        """`elmo_tokens` (batch, T, 50) character ids -> `(batch, T, 2 * projection_dim)`."""
        return self.elmo(elmo_tokens)["elmo_representations"][0]
