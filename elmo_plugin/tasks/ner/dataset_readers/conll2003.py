"""CoNLL-2003 NER with line-numbered errors for malformed records."""

from typing import Iterable

from allennlp.common.file_utils import cached_path
from allennlp.data import DatasetReader, Instance, Token
from allennlp.data.dataset_readers.conll2003 import Conll2003DatasetReader
from allennlp.data.dataset_readers.dataset_reader import PathOrStr

from elmo_bilm.utils.files import FormatError
from elmo_plugin.data.conll2003 import conll2003_sentences


@DatasetReader.register("elmo_plugin_conll2003")
class Conll2003TaskReader(Conll2003DatasetReader):
    """AllenNLP's "conll2003" reader (4-column IOB1 files with `-DOCSTART-`, tags converted to
    `convert_to_coding_scheme`), but every line is checked: a line without exactly four columns, or
    with a chunk/NER tag that is not IOB, stops reading with `FILE:LINE: ...`.

    Registered as a `DatasetReader` with name "elmo_plugin_conll2003". Same parameters as
    "conll2003".
    """

    def _read(self, file_path: PathOrStr) -> Iterable[Instance]:
        read = 0
        for sentence in self.shard_iterable(conll2003_sentences(cached_path(file_path))):
            tokens, pos, chunks, ner = (
                list(column) for column in zip(*(fields for _, fields in sentence))
            )
            read += 1
            yield self.text_to_instance([Token(t) for t in tokens], pos, chunks, ner)
        if read == 0:
            raise FormatError(f"{file_path}: no sentences")
