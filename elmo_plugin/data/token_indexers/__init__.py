"""Token indexers the task configs name."""

from elmo_plugin.data.token_indexers.capped_characters import CappedCharactersIndexer
