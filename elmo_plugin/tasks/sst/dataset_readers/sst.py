"""SST (PTB trees) with phrase-level training and line-numbered errors."""

from typing import Iterable, Optional

from allennlp.common.file_utils import cached_path
from allennlp.data import DatasetReader, Instance
from allennlp_models.classification.dataset_readers.stanford_sentiment_tree_bank import (
    StanfordSentimentTreeBankDatasetReader,
)
from nltk.tree import Tree

from elmo_bilm.files import FormatError


@DatasetReader.register("elmo_plugin_sst")
class ElmoSstReader(StanfordSentimentTreeBankDatasetReader):
    """Stanford Sentiment Treebank trees (fine-grained 0-4 labels on every node), as AllenNLP's
    "sst_tokens", plus `min_phrase_length`: with `use_subtrees`, train on every phrase of at least
    that many tokens (Supplement A.8 uses 4); the whole sentence is always kept. Evaluate at the
    sentence level with a second reader without `use_subtrees` (`validation_dataset_reader`).
    A line that is not a tree stops reading with `FILE:LINE: ...`.

    Registered as a `DatasetReader` with name "elmo_plugin_sst".

    # Parameters

    min_phrase_length : `int`, optional
        Shortest phrase kept with `use_subtrees` (sentences are always kept).
    **kwargs
        As for "sst_tokens" (`token_indexers`, `use_subtrees`, `granularity`, ...).
    """

    def __init__(self, min_phrase_length: Optional[int] = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.min_phrase_length = min_phrase_length

    def _read(self, file_path: str) -> Iterable[Instance]:
        with open(cached_path(file_path), encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                line = line.strip()
                if not line:
                    continue
                try:
                    tree = Tree.fromstring(line)
                except ValueError as error:
                    raise FormatError(
                        f"{file_path}:{line_number}: not a PTB tree ({error})"
                    ) from error
                phrases = tree.subtrees() if self._use_subtrees else [tree]
                for phrase in phrases:
                    leaves = phrase.leaves()
                    if (
                        phrase is not tree
                        and self.min_phrase_length
                        and len(leaves) < self.min_phrase_length
                    ):
                        continue
                    instance = self.text_to_instance(leaves, phrase.label())
                    if instance is not None:
                        yield instance
