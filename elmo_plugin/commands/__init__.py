from elmo_plugin.commands.elmo_embed import ElmoEmbed
