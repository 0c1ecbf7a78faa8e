"""CoNLL-2012 semantic role labelling, one instance per predicate (He et al. 2017)."""

from typing import Iterable, Optional

from allennlp.data import DatasetReader
from allennlp_models.common.ontonotes import Ontonotes, OntonotesSentence
from allennlp_models.structured_prediction.dataset_readers.srl import SrlReader

from elmo_plugin.tasks.common.conll2012 import conll2012_files


@DatasetReader.register("elmo_plugin_srl")
class ElmoSrlReader(SrlReader):
    """allennlp-models' "srl" reader (tokens, binary predicate indicator, BIO tags; one instance
    per predicate, an all-`O` instance for a sentence without one), reading a single `*gold_conll`
    file or a directory of them, and stopping at a malformed row with `FILE:LINE: ...`.

    Registered as a `DatasetReader` with name "elmo_plugin_srl". Parameters as allennlp-models'
    "srl" (`token_indexers`, `domain_identifier`).
    """

    @staticmethod
    def _ontonotes_subset(
        ontonotes_reader: Ontonotes, file_path: str, domain_identifier: Optional[str]
    ) -> Iterable[OntonotesSentence]:
        for conll_file in conll2012_files(file_path):
            if domain_identifier is None or f"/{domain_identifier}/" in conll_file:
                yield from ontonotes_reader.sentence_iterator(conll_file)
