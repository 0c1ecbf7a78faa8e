"""The text field embedder that puts ELMo at a task model's input, output or both."""

from elmo_plugin.modules.text_field_embedders.elmo_placement_embedder import ElmoPlacementEmbedder
