"""CoNLL-2012 coreference documents with the speaker and genre of Lee et al. (2017)."""

import itertools
import logging
from collections import Counter
from typing import Dict, Iterable, List, Optional, Set, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Instance
from allennlp.data.fields import LabelField, SequenceLabelField
from allennlp_models.coref.dataset_readers.conll import ConllCorefReader

from elmo_bilm.utils.files import FormatError
from elmo_plugin.tasks.common.conll2012 import (
    conll2012_files,
    conll2012_sentences,
    coreference_spans,
)
from elmo_plugin.tasks.coref.genres import GENRES

logger = logging.getLogger(__name__)


def _document_filter(file_path: str) -> Tuple[str, Optional[Set[str]]]:
    """`PATH#IDS`: the documents of PATH whose id (first column) IDS lists, one a line (a `.tsv`
    ending, as in LitBank's fold lists, is dropped); plain `PATH`: every document."""
    if "#" not in file_path:
        return file_path, None
    path, ids_file = file_path.rsplit("#", 1)
    with open(ids_file, encoding="utf-8") as handle:
        ids = {line.strip().removesuffix(".tsv") for line in handle if line.strip()}
    if not ids:
        raise FormatError(f"{ids_file}: no document ids")
    return path, ids


def _speaker_ids(rows: Iterable[List[str]]) -> List[int]:
    """A speaker id per word (ids in order of first appearance; every "-" word is one speaker)."""
    index: Dict[str, int] = {}
    return [index.setdefault(row[9], len(index)) for row in rows]


@DatasetReader.register("elmo_plugin_coref")
class CorefTaskReader(ConllCorefReader):
    """One instance per CoNLL-2012 document, as allennlp-models' "coref" reader (text, candidate
    spans up to `max_span_width`, gold cluster labels), plus the document's `genre` (index into
    `GENRES`) and a `speaker_ids` label per word, for Lee et al.'s same-speaker and genre features.
    Reads a `*gold_conll` file or a directory of them, row by row (word, speaker and coreference
    columns; the POS and parse columns may be `-`, as in LitBank); a malformed row, a mention
    left open or a file without a document stops reading with `FILE:LINE: ...`. Word-level only
    (no wordpiece tokenizer), as the paper's model. A document id's first path part is its genre
    (OntoNotes' `bc/cctv/...`); any other id (LitBank's) gets the one "other" genre. A path
    `PATH#IDS_FILE` reads only the documents IDS_FILE lists (LitBank's folds). After each
    read, `counts` holds the documents, gold mentions, singleton clusters and the gold mentions
    wider than `max_span_width`, which no candidate span can reach (logged too).

    Registered as a `DatasetReader` with name "elmo_plugin_coref".

    # Parameters

    max_span_width : `int`
    token_indexers, max_sentences, remove_singleton_clusters
        As allennlp-models' "coref".
    """

    def __init__(self, max_span_width: int, **kwargs) -> None:
        if kwargs.get("wordpiece_modeling_tokenizer") is not None:
            raise ConfigurationError(
                "elmo_plugin_coref is word-level: no wordpiece_modeling_tokenizer"
            )
        super().__init__(max_span_width=max_span_width, **kwargs)

    def _read(self, file_path: str) -> Iterable[Instance]:
        self.counts: Counter = Counter()
        file_path, wanted = _document_filter(file_path)
        found = set()
        for conll_file in conll2012_files(file_path):
            documents = itertools.groupby(conll2012_sentences(conll_file), key=lambda s: s[0])
            read = 0
            for _, group in documents:
                sentences = [(line, rows) for _, line, rows in group]
                read += 1
                rows = [row for _, sentence in sentences for row in sentence]
                if wanted is not None and rows[0][0] not in wanted:
                    continue
                found.add(rows[0][0])
                clusters = list(coreference_spans(conll_file, sentences).values())
                self._count(clusters)
                genre = rows[0][0].split("/")[0]
                words = [[row[3] for row in sentence] for _, sentence in sentences]
                yield self.text_to_instance(words, clusters, genre, _speaker_ids(rows))
            if read == 0:
                raise FormatError(f"{conll_file}: no documents (no CoNLL-2012 rows)")
        if wanted is not None and wanted - found:
            missing = sorted(wanted - found)
            raise FormatError(
                f"{file_path}: {len(missing)} listed documents not found, e.g. {missing[0]}"
            )
        logger.info(
            "%s: %d documents, %d gold mentions (%d wider than max_span_width %d: unreachable), "
            "%d singleton clusters%s",
            file_path,
            self.counts["documents"],
            self.counts["mentions"],
            self.counts["too_wide"],
            self._max_span_width,
            self.counts["singletons"],
            " (removed)" if self._remove_singleton_clusters else "",
        )

    def _count(self, clusters: List[List[Tuple[int, int]]]) -> None:
        self.counts["documents"] += 1
        self.counts["singletons"] += sum(len(cluster) == 1 for cluster in clusters)
        kept = [c for c in clusters if len(c) > 1 or not self._remove_singleton_clusters]
        self.counts["mentions"] += sum(len(c) for c in kept)
        self.counts["too_wide"] += sum(
            end - start + 1 > self._max_span_width for c in kept for start, end in c
        )

    def text_to_instance(  # type: ignore
        self,
        sentences: List[List[str]],
        gold_clusters: Optional[List[List[Tuple[int, int]]]] = None,
        genre: str = "",
        speakers: Optional[List[int]] = None,
    ) -> Instance:
        """As allennlp-models' "coref"; `speakers` default to one speaker for the whole text."""
        instance = super().text_to_instance(sentences, gold_clusters)
        text = instance["text"]
        speakers = (speakers or [0] * len(text))[: len(text)]  # max_sentences may cut the text
        instance.add_field(
            "genre",
            LabelField(GENRES.index(genre) if genre in GENRES else len(GENRES), skip_indexing=True),
        )
        instance.add_field("speaker_ids", SequenceLabelField(speakers, text))
        return instance
