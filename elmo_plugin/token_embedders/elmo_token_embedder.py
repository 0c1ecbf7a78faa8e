"""ELMo at the input of any AllenNLP model."""

import torch
from allennlp.modules.token_embedders import TokenEmbedder

from elmo_plugin.modules.elmo import ElmoRepresentations
from elmo_plugin.modules.elmo_options import check_options, takes_elmo_options


@TokenEmbedder.register("elmo_plugin_token_embedder")
class ElmoPluginTokenEmbedder(TokenEmbedder):
    """ELMo (Eq. 1 of Peters et al. 2018) from a bilm-tf biLM, as a drop-in TokenEmbedder.

    Pair it with AllenNLP's `elmo_characters` token indexer (its output key `elmo_tokens` is this
    embedder's input). Unlike AllenNLP's `elmo_token_embedder`, the biLM is stateless (a sentence's
    vectors do not depend on the batches before it) and `l2_coefficient` (the paper's `lambda`) is
    added to the training loss by the Trainer, with no `regularizer` block needed.

    Registered as a `TokenEmbedder` with name "elmo_plugin_token_embedder".

    # Parameters

    The ELMo options (`elmo_plugin.modules.elmo_options.ElmoOptions`), as keys of this embedder:
    `options_file`, `weight_file`, `archive_file`, `do_layer_norm`, `dropout`, `l2_coefficient`,
    `layers`, `gamma`, `scalar_mix_parameters`, `requires_grad`, `cache_activations`, `cache_size_mb`.
    """

    @takes_elmo_options
    def __init__(self, **elmo_options) -> None:
        super().__init__()
        self.elmo = ElmoRepresentations(check_options(elmo_options), placements=["input"])

    def get_output_dim(self) -> int:
        return self.elmo.get_output_dim()

    def forward(self, elmo_tokens: torch.Tensor) -> torch.Tensor:
        """`elmo_tokens` (batch, T, 50) character ids -> `(batch, T, 2 * projection_dim)`."""
        return self.elmo(elmo_tokens)["elmo_representations"][0]
