"""The console scripts of the core (installed as `elmo_bilm.cli.scripts`' entry points)."""
