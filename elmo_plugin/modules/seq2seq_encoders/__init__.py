"""Seq2seq encoders: ELMo at a task model's output, and RNN encoders that skip the padding."""

from elmo_plugin.modules.seq2seq_encoders.output_elmo_encoder import OutputElmoEncoder
from elmo_plugin.modules.seq2seq_encoders.padded_rnn import (
    PaddedAlternatingLstmEncoder,
    PaddedGruEncoder,
    PaddedLstmEncoder,
)
