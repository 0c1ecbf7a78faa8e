"""The console scripts of the core."""
