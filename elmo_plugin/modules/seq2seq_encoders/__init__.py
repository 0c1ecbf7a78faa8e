from elmo_plugin.modules.seq2seq_encoders.output_elmo_encoder import OutputElmoEncoder
from elmo_plugin.modules.seq2seq_encoders.padded_rnn import (
    PaddedAlternatingLstmEncoder,
    PaddedGruEncoder,
    PaddedLstmEncoder,
)
