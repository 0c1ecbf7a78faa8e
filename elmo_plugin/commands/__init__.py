from elmo_plugin.commands.elmo_embed import ElmoEmbed
from elmo_plugin.commands.elmo_export import ElmoExport
