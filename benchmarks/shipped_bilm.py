"""Dev perplexity of the shipped biLM (elmo_bilm/pretrained/wikipedia), full softmax."""

import os

import torch
from allennlp.data.data_loaders import MultiProcessDataLoader
from allennlp.data.samplers import BucketBatchSampler
from allennlp.training.util import evaluate

import elmo_plugin  # noqa: F401  (sets BILM_DEV's default)
from benchmarks.common import emit
from elmo_bilm.shipped import (
    DEFAULT_OPTIONS_FILE,
    DEFAULT_WEIGHT_FILE,
)
from elmo_bilm.shipped import (
    SHIPPED_DIR as PRETRAINED_DIR,
)
from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader
from elmo_plugin.lm.models.bilm_language_model import BiLmLanguageModel
from elmo_plugin.lm.vocabulary import BilmTfVocabulary


def main() -> None:
    vocab_file = str(PRETRAINED_DIR / "vocab.txt")
    vocab = BilmTfVocabulary.from_bilm_tf_vocab(vocab_file)
    model = BiLmLanguageModel(
        vocab,
        pretrained_options_file=str(DEFAULT_OPTIONS_FILE),
        pretrained_weight_file=str(DEFAULT_WEIGHT_FILE),
        pretrained_vocab_file=vocab_file,
        dropout=0.0,
    )
    dev = os.environ["BILM_DEV"].split(",")
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
            "dev": ",".join(dev),
            "dev_perplexity": metrics["perplexity"],
            "dev_perplexity_forward": metrics["perplexity_forward"],
            "dev_perplexity_backward": metrics["perplexity_backward"],
        }
    )


if __name__ == "__main__":
    main()
