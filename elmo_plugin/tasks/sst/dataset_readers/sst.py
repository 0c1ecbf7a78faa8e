"""SST (PTB trees) with phrase-level training and line-numbered errors."""

from typing import Iterable, Optional

from allennlp.common.file_utils import cached_path
from allennlp.data import DatasetReader, Instance
from allennlp_models.classification.dataset_readers.stanford_sentiment_tree_bank import (
    StanfordSentimentTreeBankDatasetReader,
)
from nltk.tree import Tree

from elmo_bilm.utils.files import FormatError, numbered_lines

SENTIMENT_LABELS = ("0", "1", "2", "3", "4")


@DatasetReader.register("elmo_plugin_sst")
class SstTaskReader(StanfordSentimentTreeBankDatasetReader):
    """Stanford Sentiment Treebank trees (fine-grained 0-4 labels on every node), as AllenNLP's
    "sst_tokens", plus `min_phrase_length`: with `use_subtrees`, train on every phrase of at least
    that many tokens (Supplement A.8 uses 4); the whole sentence is always kept. Evaluate at the
    sentence level with a second reader without `use_subtrees` (`validation_dataset_reader`).
    A line that is not a tree, a label outside 0-4, undecodable bytes or an empty file stop
    reading with `FILE:LINE: ...`.

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
        read = 0
        for line_number, line in numbered_lines(cached_path(file_path)):
            line = line.strip()
            if not line:
                continue
            read += 1
            try:
                tree = Tree.fromstring(line)
            except ValueError as error:
                raise FormatError(f"{file_path}:{line_number}: not a PTB tree ({error})") from error
            phrases = tree.subtrees() if self._use_subtrees else [tree]
            for phrase in phrases:
                if phrase.label() not in SENTIMENT_LABELS:
                    raise FormatError(
                        f"{file_path}:{line_number}: sentiment label {phrase.label()!r} is not "
                        "one of SST's 0-4"
                    )
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
        if read == 0:
            raise FormatError(f"{file_path}: no trees (an empty file)")
