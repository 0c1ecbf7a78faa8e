"""ESIM (Chen et al. 2017) with Supplement A.3's dropout after the attention layer."""

from allennlp.models import Model
from allennlp_models.pair_classification.models.esim import ESIM
from torch import nn


@Model.register("elmo_plugin_esim")
class ElmoEsim(ESIM):
    """allennlp-models' ESIM plus dropout on the attention layer's output (the enhanced
    `[a; a~; a - a~; a * a~]` vectors, before the projection feed-forward), which the paper's ELMo
    model adds "due to the increased number of parameters" (Supplement A.3).

    Registered as a `Model` with name "elmo_plugin_esim".

    # Parameters

    attention_dropout : `float`, optional (default = `0.0`)
        Dropout after the attention layer; 0 gives allennlp-models' ESIM exactly.
    **kwargs
        ESIM's parameters.
    """

    def __init__(self, attention_dropout: float = 0.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.attention_dropout = attention_dropout
        if attention_dropout:
            # allennlp-models' ESIM leaves the attribute's type to inference, which mypy cannot do
            projection: nn.Module = self._projection_feedforward  # type: ignore[has-type]
            self._projection_feedforward = nn.Sequential(nn.Dropout(attention_dropout), projection)
