"""elmo_plugin."""
