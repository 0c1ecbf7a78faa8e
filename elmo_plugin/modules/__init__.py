from elmo_plugin.modules.elmo import ElmoRepresentations
from elmo_plugin.modules.scalar_mix import ElmoScalarMix
