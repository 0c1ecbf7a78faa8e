"""Dev perplexity (full softmax) of the default biLM or of an `elmo-export` folder (--bilm-dir).

The default is the shipped elmo_bilm/pretrained/wikipedia; the folder needs the softmax in its
weights.hdf5 (as `elmo-export` writes it) and its vocab.txt.

    [BILM_DEV=FORMAT::PATH] python -m elmo_benchmarks.shipped_bilm [--bilm-dir DIR]
"""

import argparse
import os
from pathlib import Path

import torch
from allennlp.data.data_loaders import MultiProcessDataLoader
from allennlp.data.samplers import BucketBatchSampler
from allennlp.training.util import evaluate

from elmo_benchmarks.common import emit
from elmo_bilm.sources.shipped import SHIPPED_DIR
from elmo_plugin.common.config_env import config_defaults
from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader
from elmo_plugin.lm.models.bilm_language_model import BiLmLanguageModel
from elmo_plugin.lm.vocabulary import BilmTfVocabulary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--bilm-dir",
        type=Path,
        default=SHIPPED_DIR,
        help="options.json, weights.hdf5 (with the softmax) and vocab.txt",
    )
    bilm_dir = parser.parse_args().bilm_dir
    vocab_file = str(bilm_dir / "vocab.txt")
    vocab = BilmTfVocabulary.from_bilm_tf_vocab(vocab_file)
    model = BiLmLanguageModel(
        vocab,
        pretrained_options_file=str(bilm_dir / "options.json"),
        pretrained_weight_file=str(bilm_dir / "weights.hdf5"),
        pretrained_vocab_file=vocab_file,
        dropout=0.0,
    )
    # the configs' default (WikiText-test under $ELMO_PLUGIN_DATA) unless set
    dev = (os.environ.get("BILM_DEV") or config_defaults()["BILM_DEV"]).split(",")
    loader = MultiProcessDataLoader(
        LmCorpusReader(max_sentence_length=50),
        dev,
        batch_sampler=BucketBatchSampler(64, shuffle=False),
    )
    loader.index_with(vocab)
    with torch.no_grad():
        metrics = evaluate(model, loader)
    emit(
        {
            "bench": "shipped_bilm",
            "bilm": str(bilm_dir),
            "dev": ",".join(dev),
            "dev_perplexity": metrics["perplexity"],
            "dev_perplexity_forward": metrics["perplexity_forward"],
            "dev_perplexity_backward": metrics["perplexity_backward"],
        }
    )


if __name__ == "__main__":
    main()
