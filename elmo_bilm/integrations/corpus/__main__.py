"""`python -m elmo_bilm.integrations.corpus`: the `elmo-embed-corpus` command, as before the
module became a package (the command itself is `elmo_bilm.cli.embed_corpus`)."""

from elmo_bilm.cli.embed_corpus import console

console()
