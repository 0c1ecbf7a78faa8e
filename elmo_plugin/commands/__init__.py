from elmo_plugin.commands.analysis import ElmoLayerWeights, ElmoNeighbours, ElmoProbe, ElmoSweep
from elmo_plugin.commands.elmo_config import ElmoConfig
from elmo_plugin.commands.elmo_embed import ElmoEmbed
from elmo_plugin.commands.elmo_export import ElmoExport
from elmo_plugin.commands.elmo_prepare_corpus import ElmoPrepareCorpus
from elmo_plugin.commands.elmo_table1 import ElmoTable1
from elmo_plugin.commands.elmo_vocab import ElmoVocab
from elmo_plugin.commands.elmo_word_vectors import ElmoWordVectors
