"""ELMo at the input, the output, or both of a task encoder, for any TextFieldEmbedder -> Seq2SeqEncoder model."""

from typing import Dict, List, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder, TextFieldEmbedder
from allennlp.modules.token_embedders import TokenEmbedder

from elmo_plugin.modules.elmo import ElmoRepresentations
from elmo_plugin.modules.elmo_options import check_options, takes_elmo_options
from elmo_plugin.modules.placement import Placement


@TextFieldEmbedder.register("elmo_plugin_placement")
class ElmoPlacementEmbedder(TextFieldEmbedder):
    """The context-independent token vectors `x_k` of `token_embedders`, followed by ELMo vectors
    from one biLM pass (Sec. 3.3, Table 3): `[x_k; ELMo_in]` for `"input"`, `[x_k; ELMo_out]` for
    `"output"`, `[x_k; ELMo_in; ELMo_out]` for `"both"`, each ELMo with its own `s` and `gamma`.

    The `ELMo_out` columns ride along to the encoder, where `elmo_plugin_output_elmo` splits them
    off, runs the task encoder on the rest, and concatenates them to its output `h_k`. The data
    flows through the tensors, so no state is kept between calls: a model that embeds two texts
    (ESIM's premise and hypothesis) gets each text's own ELMo, with shared mix weights and one
    frozen biLM in memory.

    Registered as a `TextFieldEmbedder` with name "elmo_plugin_placement".

    # Parameters

    token_embedders : `Dict[str, TokenEmbedder]`
        The other (non-ELMo) token embedders, as for "basic".
    placement : `str`, optional (default = `"input"`)
        `"input"`, `"output"` or `"both"`.
    elmo_key : `str`, optional (default = `"elmo"`)
        The `elmo_characters` indexer's name in the dataset reader.
    dropped_by_model : `List[str]`, optional (default = `[]`)
        The ELMo vectors (`"input"`, `"output"`) that the task model already drops with its own
        dropout on the embedded text (e.g. ESIM's variational dropout before its LSTM, which the
        output ELMo rides through too): they skip the ELMo `dropout`, so that each ELMo vector is
        dropped once.
    **elmo_options
        The ELMo options (`ElmoOptions`: `options_file`, `weight_file`, `archive_file`,
        `do_layer_norm`, `dropout`, `l2_coefficient`, `layers`, `gamma`, `scalar_mix_parameters`, `requires_grad`,
        `cache_activations`, `cache_size_mb`), as keys of this embedder, for every mix.
    """

    @takes_elmo_options
    def __init__(
        self,
        token_embedders: Dict[str, TokenEmbedder],
        placement: str = "input",
        elmo_key: str = "elmo",
        dropped_by_model: Optional[List[str]] = None,
        **elmo_options,
    ) -> None:
        super().__init__()
        if elmo_key in token_embedders:
            raise ConfigurationError(
                f"{elmo_key!r} is the ELMo key; do not also give it a token embedder"
            )
        self.placement = Placement(placement)
        self.elmo_key = elmo_key
        self.base = BasicTextFieldEmbedder(token_embedders)
        self.elmo = ElmoRepresentations(
            check_options(elmo_options),
            placement=self.placement,
            dropped_by_model=dropped_by_model or [],
        )

    @property
    def elmo_dim(self) -> int:
        """The width of the ELMo representation at each placement."""
        return self.elmo.get_output_dim()

    def get_output_dim(self) -> int:
        return self.base.get_output_dim() + self.elmo_dim * len(self.elmo.scalar_mixes)

    def forward(
        self, text_field_input: TextFieldTensors, num_wrapping_dims: int = 0, **kwargs
    ) -> torch.Tensor:
        if self.elmo_key not in text_field_input:
            raise ConfigurationError(
                f"no {self.elmo_key!r} indexer output; add an elmo_characters indexer named {self.elmo_key!r}"
            )
        others = {key: value for key, value in text_field_input.items() if key != self.elmo_key}
        elmo = self.elmo(text_field_input[self.elmo_key]["elmo_tokens"])["elmo_representations"]
        if not others:  # ELMo alone
            return torch.cat(elmo, dim=-1)
        embedded = self.base(others, num_wrapping_dims=num_wrapping_dims, **kwargs)
        return torch.cat([embedded, *elmo], dim=-1)
