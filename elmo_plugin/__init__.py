"""ELMo (Peters et al. 2018) for AllenNLP 2.10: the ELMo components, the biLM language model, the
`allennlp elmo-*` commands and the paper's six task models.

Importing the package registers every component, whichever way it is loaded (`--include-package
elmo_plugin`, a plugins file, or `import elmo_plugin` in a script), and installs the few global
hooks listed in `elmo_plugin.hooks`. The torch-only biLM core (no AllenNLP) is the `elmo_bilm`
package.
"""

from elmo_plugin import hooks

hooks.install()

# Registration: importing these modules registers their components with AllenNLP.
from elmo_plugin import commands, tasks  # noqa: E402,F401
from elmo_plugin.data.subset_reader import SubsetReader  # noqa: E402,F401
from elmo_plugin.data.token_indexers import CappedCharactersIndexer  # noqa: E402,F401
from elmo_plugin.data.tokenizers import SpacyBlankTokenizer  # noqa: E402,F401
from elmo_plugin.lm import BiLmLanguageModel, BilmTfVocabulary, LmCorpusReader  # noqa: E402,F401
from elmo_plugin.modules.seq2seq_encoders import (  # noqa: E402,F401
    OutputElmoEncoder,
    PaddedAlternatingLstmEncoder,
    PaddedGruEncoder,
    PaddedLstmEncoder,
)
from elmo_plugin.modules.text_field_embedders import ElmoPlacementEmbedder  # noqa: E402,F401
from elmo_plugin.token_embedders import ElmoPluginTokenEmbedder  # noqa: E402,F401
from elmo_plugin.training import ReduceOnPlateauScheduler, SafeCheckpointer, ValidateBeforeTraining  # noqa: E402,F401
