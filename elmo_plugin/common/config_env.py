"""Default values for the environment variables that the configs in `training_config/` read.

AllenNLP passes the environment to jsonnet as `std.extVar`s, and jsonnet has no default for a
missing one; so on import the plugin sets each variable below that the user has *not* set, pointing
at the bundled data (`../shared/data` beside the repository) and fixtures. A user's own value
always wins. `ELMO_PLUGIN_DATA` moves every data default at once. `ELMO_PROJECTION_DIM` (needed
for encoder input sizes) is read from whichever options file `ELMO_OPTIONS_FILE` names.
"""
import json
import os
from pathlib import Path
from typing import Dict

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "fixtures"


def config_defaults() -> Dict[str, str]:
    """The variables and their defaults, given the current `ELMO_PLUGIN_DATA`."""
    data = Path(os.environ.get("ELMO_PLUGIN_DATA", REPO_ROOT.parent / "shared" / "data"))
    shipped = REPO_ROOT / "elmo_plugin" / "pretrained" / "small"
    return {
        "ELMO_PLUGIN_DATA": str(data),
        "ELMO_PLUGIN_FIXTURES": str(FIXTURES),
        # the small biLM shipped with the plugin (see README)
        "ELMO_OPTIONS_FILE": str(shipped / "options.json"),
        "ELMO_WEIGHT_FILE": str(shipped / "weights.hdf5"),
        "CONLL2003_TRAIN": str(data / "conll2003" / "eng.train"),
        "CONLL2003_DEV": str(data / "conll2003" / "eng.testa"),
        "CONLL2003_TEST": str(data / "conll2003" / "eng.testb"),
        "SST_TRAIN": str(data / "sst" / "train.txt"),
        "SST_DEV": str(data / "sst" / "dev.txt"),
        "SST_TEST": str(data / "sst" / "test.txt"),
        "SNLI_TRAIN": str(data / "format_samples" / "snli.jsonl"),
        "SNLI_DEV": str(data / "format_samples" / "snli.jsonl"),
        "SNLI_TEST": str(data / "format_samples" / "snli.jsonl"),
        # SQuAD 1.1: no training split here (format sample); the bundled dev set.
        "SQUAD_TRAIN": str(data / "format_samples" / "squad.json"),
        "SQUAD_DEV": str(data / "squad" / "dev-v1.1.json"),
        # CoNLL-2012 (OntoNotes 5.0) is not here: the format samples.
        "SRL_TRAIN": str(data / "format_samples" / "srl_example.gold_conll"),
        "SRL_DEV": str(data / "format_samples" / "srl_example.gold_conll"),
        "SRL_TEST": str(data / "format_samples" / "srl_example.gold_conll"),
        "COREF_TRAIN": str(data / "format_samples" / "coref.gold_conll"),
        "COREF_DEV": str(data / "format_samples" / "coref.gold_conll"),
        "COREF_TEST": str(data / "format_samples" / "coref.gold_conll"),
        # Optional pretrained word vectors (GloVe/Senna): empty = trained from scratch.
        "WORD_VECTORS": "",
        # biLM pretraining: comma-separated FORMAT::PATH lists (see LmCorpusReader), vocab.txt or "".
        "BILM_TRAIN": ",".join(
            [
                f"wikitext::{data / 'wikitext' / 'wiki.valid.tokens'}",
                f"conll2003::{data / 'conll2003' / 'eng.train'}",
                f"ptb_trees::{data / 'sst' / 'train.txt'}",
            ]
        ),
        "BILM_DEV": f"wikitext::{data / 'wikitext' / 'wiki.test.tokens'}",
        "BILM_VOCAB": "",
        "BILM_PRETRAINED_ARCHIVE": "",
        "FINETUNE_TRAIN": f"conll2003::{data / 'conll2003' / 'eng.train'}",
        "FINETUNE_DEV": f"conll2003::{data / 'conll2003' / 'eng.testa'}",
    }


def set_config_defaults() -> None:
    """`os.environ.setdefault` for every variable of `config_defaults()` and `ELMO_PROJECTION_DIM`."""
    for name, value in config_defaults().items():
        os.environ.setdefault(name, value)
    options_file = Path(os.environ["ELMO_OPTIONS_FILE"])
    if "ELMO_PROJECTION_DIM" not in os.environ and options_file.is_file():
        with open(options_file) as handle:
            os.environ["ELMO_PROJECTION_DIM"] = str(json.load(handle)["lstm"]["projection_dim"])
