"""The ELMo token embedder (`elmo_plugin_token_embedder`)."""

from elmo_plugin.token_embedders.elmo_token_embedder import ElmoPluginTokenEmbedder
