"""CoNLL-2003 NER with line-numbered errors for malformed records."""
import re
from typing import Iterable, Iterator, List, Tuple

from allennlp.common.file_utils import cached_path
from allennlp.data import DatasetReader, Instance, Token
from allennlp.data.dataset_readers.conll2003 import Conll2003DatasetReader
from elmo_bilm.files import FormatError

_TAG = re.compile(r"^(O|[BI]-\S+)$")



@DatasetReader.register("elmo_plugin_conll2003")
class ElmoConll2003Reader(Conll2003DatasetReader):
    """AllenNLP's "conll2003" reader (4-column IOB1 files with `-DOCSTART-`, tags converted to
    `convert_to_coding_scheme`), but every line is checked: a line without exactly four columns, or
    with a chunk/NER tag that is not IOB, stops reading with `FILE:LINE: ...`.

    Registered as a `DatasetReader` with name "elmo_plugin_conll2003". Same parameters as
    "conll2003".
    """

    def _sentences(self, file_path: str) -> Iterator[List[Tuple[int, List[str]]]]:
        sentence: List[Tuple[int, List[str]]] = []
        with open(cached_path(file_path), encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                fields = line.split()
                if not fields or fields[0] == "-DOCSTART-":
                    if sentence:
                        yield sentence
                    sentence = []
                    continue
                if len(fields) != 4:
                    raise FormatError(
                        f"{file_path}:{line_number}: expected 4 columns (token POS chunk NER), got {len(fields)}: {line.rstrip()!r}"
                    )
                for tag in fields[2:]:
                    if not _TAG.match(tag):
                        raise FormatError(f"{file_path}:{line_number}: {tag!r} is not an IOB tag")
                sentence.append((line_number, fields))
        if sentence:
            yield sentence

    def _read(self, file_path: str) -> Iterable[Instance]:
        for sentence in self.shard_iterable(self._sentences(file_path)):
            tokens, pos, chunks, ner = (list(column) for column in zip(*(fields for _, fields in sentence)))
            yield self.text_to_instance([Token(t) for t in tokens], pos, chunks, ner)
