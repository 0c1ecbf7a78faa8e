"""ELMo (Peters et al. 2018) for AllenNLP 2.10: biLM, Eq. (1) mixes, token embedder, commands.

Importing the package registers its components. It stays light: the `allennlp` subcommands and
the task readers that build on allennlp-models are registered only when `allennlp.commands` /
`allennlp_models` are already loaded (as under the `allennlp` CLI, which imports them before file
plugins), or via `--include-package`, which imports every submodule; the package itself never
imports allennlp-models.
"""
import sys

from elmo_plugin.bilm.vocab import BilmTfVocabulary
from elmo_plugin.common.config_env import set_config_defaults
from elmo_plugin.common.torch_compat import allow_numpy_scalars_in_checkpoints, destroy_process_group_at_exit
from elmo_plugin.data.tokenizers import SpacyBlankTokenizer
from elmo_plugin.dataset_readers import LmCorpusReader
from elmo_plugin.models import BiLmLanguageModel
from elmo_plugin.modules import regularization as _regularization
from elmo_plugin.modules.seq2seq_encoders import OutputElmoEncoder
from elmo_plugin.modules.text_field_embedders import ElmoPlacementEmbedder
from elmo_plugin.token_embedders import ElmoPluginTokenEmbedder
from elmo_plugin.training import ValidateBeforeTraining

_regularization.install()
set_config_defaults()
allow_numpy_scalars_in_checkpoints()
destroy_process_group_at_exit()

if "allennlp.commands" in sys.modules:
    import elmo_plugin.commands  # noqa: F401
if "allennlp_models" in sys.modules:
    import elmo_plugin.dataset_readers.coref  # noqa: F401
    import elmo_plugin.dataset_readers.snli  # noqa: F401
    import elmo_plugin.dataset_readers.squad  # noqa: F401
    import elmo_plugin.dataset_readers.srl  # noqa: F401
    import elmo_plugin.dataset_readers.sst  # noqa: F401
    import elmo_plugin.models.bcn  # noqa: F401
    import elmo_plugin.models.bidaf_self_attention  # noqa: F401
    import elmo_plugin.models.coref_lee2017  # noqa: F401
    import elmo_plugin.predictors.coref  # noqa: F401
    import elmo_plugin.predictors.srl  # noqa: F401
