"""CoNLL-2012 coreference documents with the speaker and genre of Lee et al. (2017)."""

import collections
from typing import Dict, Iterable, List, Optional, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Instance
from allennlp.data.fields import LabelField, SequenceLabelField
from allennlp_models.common.ontonotes import Ontonotes, OntonotesSentence
from allennlp_models.coref.dataset_readers.conll import ConllCorefReader

from elmo_plugin.tasks.common.conll2012 import conll2012_files
from elmo_plugin.tasks.coref.genres import GENRES


def _document(sentences: List[OntonotesSentence]) -> Tuple[List[List[Tuple[int, int]]], List[int]]:
    """Gold clusters with document-level word offsets, and a speaker id per word (ids in order of
    first appearance; a missing speaker "-" is a speaker of its own)."""
    clusters: Dict[int, List[Tuple[int, int]]] = collections.defaultdict(list)
    speaker_index: Dict[str, int] = {}
    speakers: List[int] = []
    offset = 0
    for sentence in sentences:
        for cluster_id, (start, end) in sentence.coref_spans:
            clusters[cluster_id].append((start + offset, end + offset))
        for speaker in sentence.speakers:
            speakers.append(speaker_index.setdefault(speaker or "-", len(speaker_index)))
        offset += len(sentence.words)
    return list(clusters.values()), speakers


@DatasetReader.register("elmo_plugin_coref")
class ElmoCorefReader(ConllCorefReader):
    """One instance per CoNLL-2012 document, as allennlp-models' "coref" reader (text, candidate
    spans up to `max_span_width`, gold cluster labels), plus the document's `genre` (index into
    `GENRES`) and a `speaker_ids` label per word, for Lee et al.'s same-speaker and genre features.
    Reads a `*gold_conll` file or a directory of them; a malformed row stops reading with
    `FILE:LINE: ...`. Word-level only (no wordpiece tokenizer), as the paper's model.

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
        ontonotes = Ontonotes()
        for conll_file in conll2012_files(file_path):
            for sentences in ontonotes.dataset_document_iterator(conll_file):
                clusters, speakers = _document(sentences)
                genre = sentences[0].document_id.split("/")[0]
                yield self.text_to_instance([s.words for s in sentences], clusters, genre, speakers)

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
