"""CoNLL-2012 semantic role labelling, one instance per predicate (He et al. 2017)."""

from typing import Iterable

from allennlp.data import DatasetReader, Instance
from allennlp.data.tokenizers import Token
from allennlp_models.structured_prediction.dataset_readers.srl import SrlReader

from elmo_bilm.utils.files import FormatError
from elmo_plugin.tasks.common.conll2012 import (
    conll2012_files,
    conll2012_sentences,
    span_column_to_bio,
)

PREDICATES = ("verbal", "all")


@DatasetReader.register("elmo_plugin_srl")
class SrlTaskReader(SrlReader):
    """Span SRL from CoNLL-2012 `*gold_conll` columns (OntoNotes 5.0, or PropBank on the English
    Web Treebank): one instance per predicate, as allennlp-models' "srl" reader (tokens, a binary
    predicate indicator, BIO tags), read row by row from the word, POS and argument columns
    (the parse column is not read: words such as `:)` that OntoNotes would escape are fine).

    Each argument column holds one predicate's spans, `(V*)` marking it; `C-V` (the rest of a
    split predicate, as in PropBank's `make ... up`) is a tag to predict, not the indicator.
    `predicates: "verbal"` keeps predicates tagged `VB*` (He et al. 2017 on CoNLL-2012; the
    nominal and adjectival predicates of newer PropBank releases are skipped), `"all"` every one.
    Sentences without a kept predicate give no instance. A malformed row stops reading with
    `FILE:LINE: ...`.

    Registered as a `DatasetReader` with name "elmo_plugin_srl".

    # Parameters

    predicates : `str`, optional (default = `"verbal"`)
        `"verbal"` or `"all"`.
    token_indexers, domain_identifier
        As allennlp-models' "srl" (`domain_identifier`: only files under a folder of that name).
    """

    def __init__(self, predicates: str = "verbal", **kwargs) -> None:
        super().__init__(**kwargs)
        if predicates not in PREDICATES:
            raise ValueError(f"predicates must be one of {PREDICATES}, got {predicates!r}")
        self.predicates = predicates

    def _read(self, file_path: str) -> Iterable[Instance]:
        read = 0
        for conll_file in conll2012_files(file_path):
            if self._domain_identifier is not None and (
                f"/{self._domain_identifier}/" not in conll_file
            ):
                continue
            for _, line, rows in conll2012_sentences(conll_file):
                tokens = [Token(row[3]) for row in rows]
                for column in range(11, len(rows[0]) - 1):
                    where = f"{conll_file}:{line}: argument column {column + 1}"
                    tags = span_column_to_bio([row[column] for row in rows], where)
                    verbs = [i for i, tag in enumerate(tags) if tag == "B-V"]
                    if len(verbs) != 1:
                        raise FormatError(f"{where}: {len(verbs)} (V*) predicate spans, not 1")
                    if self.predicates == "verbal" and not rows[verbs[0]][4].startswith("VB"):
                        continue
                    indicator = [0] * len(tokens)
                    indicator[verbs[0]] = 1
                    read += 1
                    yield self.text_to_instance(tokens, indicator, tags)
        if read == 0:
            raise FormatError(f"{file_path}: no {self.predicates} predicates")
