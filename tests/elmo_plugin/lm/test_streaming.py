"""The pretraining data pipeline holds a bounded number of sentences whatever the corpus size, and
an epoch sees every sentence exactly once (with and without data-loader workers)."""

import collections
import weakref
from typing import List

import pytest
from allennlp.data import Instance, Vocabulary
from allennlp.data.data_loaders import MultiProcessDataLoader
from allennlp.data.samplers import BucketBatchSampler

from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader

NUM_SENTENCES = 6000
BUFFER = 64
BATCH_SIZE = 16


class _TrackedInstance(Instance):
    __slots__ = ("__weakref__",)  # AllenNLP's Instance has slots and no weak references


class CountingReader(LmCorpusReader):
    """Counts the instances it made that are still alive (a finalizer on each)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.live = 0

    def _died(self) -> None:
        self.live -= 1

    def text_to_instance(self, tokens: List[str]):  # type: ignore[override]
        instance = _TrackedInstance(super().text_to_instance(tokens).fields)
        self.live += 1
        weakref.finalize(instance, self._died)
        return instance


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    for shard in range(3):  # sentence i = "s<i>" followed by 1-9 filler words
        lines = [f"s{i} " + " ".join(["w"] * (1 + i % 9)) for i in range(shard, NUM_SENTENCES, 3)]
        (folder / f"shard-{shard}.txt").write_text("\n".join(lines) + "\n")
    vocab = Vocabulary(non_padded_namespaces=())
    vocab.add_tokens_to_namespace(
        ["<S>", "</S>", "w"] + [f"s{i}" for i in range(NUM_SENTENCES)], "lm_tokens"
    )
    return str(folder), vocab


def _loader(reader, path, vocab, num_workers=0):
    loader = MultiProcessDataLoader(
        reader,
        path,
        batch_sampler=BucketBatchSampler(batch_size=BATCH_SIZE, sorting_keys=["tokens"]),
        max_instances_in_memory=BUFFER,
        num_workers=num_workers,
    )
    loader.index_with(vocab)
    return loader


def _sentence_ids(batch, vocab) -> List[int]:
    ids = batch["tokens"]["lm"]["tokens"][:, 1].tolist()  # the token after <S>
    return [int(vocab.get_token_from_index(i, "lm_tokens")[1:]) for i in ids]


def test_live_instances_stay_bounded_and_every_sentence_is_seen_once(corpus):
    path, vocab = corpus
    reader = CountingReader()
    loader = _loader(reader, path, vocab)
    seen: collections.Counter = collections.Counter()
    most_live = 0
    for batch in loader:
        most_live = max(most_live, reader.live)
        seen.update(_sentence_ids(batch, vocab))
    # the corpus is ~100x the buffer; at most the buffer being batched plus the one being filled
    assert most_live <= 2 * BUFFER, most_live
    assert sorted(seen) == list(range(NUM_SENTENCES)) and set(seen.values()) == {1}


def test_data_loader_workers_each_read_their_share_once(corpus):
    path, vocab = corpus
    seen: collections.Counter = collections.Counter()
    for batch in _loader(LmCorpusReader(), path, vocab, num_workers=2):
        seen.update(_sentence_ids(batch, vocab))
    assert sorted(seen) == list(range(NUM_SENTENCES)) and set(seen.values()) == {1}


def test_buffered_batches_are_bucketed_by_length(corpus):
    path, vocab = corpus
    spreads = []
    for batch in _loader(LmCorpusReader(), path, vocab):
        lengths = (batch["tokens"]["lm"]["tokens"] > 0).sum(-1)
        spreads.append(int(lengths.max() - lengths.min()))
    # sentences of 4-12 tokens; buckets of 16 from 64 sorted sentences span about 2 lengths
    assert sum(spreads) / len(spreads) < 4
