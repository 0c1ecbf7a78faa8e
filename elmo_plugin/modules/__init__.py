"""ELMo's layers for AllenNLP models: the biLM's representations and Eq. (1)'s scalar mix."""

from elmo_plugin.modules.elmo import ElmoRepresentations
from elmo_plugin.modules.scalar_mix import ElmoScalarMix
