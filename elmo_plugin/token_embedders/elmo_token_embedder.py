"""ELMo at the input of any AllenNLP model."""

from typing import List, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import TokenEmbedder
from torch import nn

from elmo_bilm.model.characters import vocabulary_char_ids
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

    AllenNLP's `ElmoTokenEmbedder` arguments, in its order (Python code that builds AllenNLP's
    embedder positionally builds this one): `options_file`, `weight_file`, `do_layer_norm`,
    `dropout`, `requires_grad`, `projection_dim` (a trained linear projection of the ELMo
    vectors to this size), `vocab_to_cache` (`forward` may then take `word_inputs`, ids into
    this vocabulary, 0 = padding, instead of character ids), `scalar_mix_parameters`.

    And the plugin's other ELMo options (`elmo_plugin.modules.elmo_options.ElmoOptions`) as
    keywords: `archive_file`, `l2_coefficient`, `layers`, `gamma`, `cache_activations`,
    `cache_size_mb`.
    """

    @takes_elmo_options
    def __init__(
        self,
        options_file: Optional[str] = None,
        weight_file: Optional[str] = None,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        requires_grad: bool = False,
        projection_dim: Optional[int] = None,
        vocab_to_cache: Optional[List[str]] = None,
        scalar_mix_parameters: Optional[List[float]] = None,
        **elmo_options,
    ) -> None:
        super().__init__()
        named = dict(
            options_file=options_file,
            weight_file=weight_file,
            do_layer_norm=do_layer_norm,
            dropout=dropout,
            requires_grad=requires_grad,
            scalar_mix_parameters=scalar_mix_parameters,
        )
        whole = isinstance(projection_dim, int) and not isinstance(projection_dim, bool)
        if projection_dim is not None and not (whole and projection_dim >= 1):
            raise ConfigurationError(  # 0 gave zero-width vectors, "16" a torch TypeError
                f"projection_dim must be a whole number >= 1, got {projection_dim!r}"
            )
        self.elmo = ElmoRepresentations(check_options({**named, **elmo_options}))
        self.projection = (
            None
            if projection_dim is None
            else nn.Linear(self.elmo.get_output_dim(), projection_dim)
        )
        if vocab_to_cache is not None:
            table = vocabulary_char_ids(vocab_to_cache)
            self.register_buffer("word_char_ids", table, persistent=False)
        else:
            self.word_char_ids = None

    def get_output_dim(self) -> int:
        if self.projection is not None:
            return self.projection.out_features
        return self.elmo.get_output_dim()

    def forward(
        self, elmo_tokens: torch.Tensor, word_inputs: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """`elmo_tokens` (batch, T, 50) character ids (or `word_inputs` (batch, T) with
        `vocab_to_cache`) -> `(batch, T, 2 * projection_dim of the biLM)`, or `projection_dim`.
        Extra leading dimensions, `(batch, n, T, 50)` (or `(batch, n, T)`), are kept in the
        output, as AllenNLP's embedder keeps them."""
        if word_inputs is not None:
            if self.word_char_ids is None:
                raise ConfigurationError("word_inputs need vocab_to_cache")
            elmo_tokens = self.word_char_ids[word_inputs]
        leading = elmo_tokens.shape[:-2]
        output = self.elmo(elmo_tokens.reshape(-1, *elmo_tokens.shape[-2:]))
        vectors = output["elmo_representations"][0]
        vectors = vectors.reshape(*leading, *vectors.shape[1:])
        return vectors if self.projection is None else self.projection(vectors)
