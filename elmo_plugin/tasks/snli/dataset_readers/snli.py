"""SNLI with offline tokenisation and line-numbered errors."""

import json
from typing import Iterable, Iterator, List, Optional, Tuple

from allennlp.common.file_utils import cached_path
from allennlp.data import DatasetReader, Instance
from allennlp.data.tokenizers import WhitespaceTokenizer
from allennlp_models.pair_classification.dataset_readers.snli import SnliReader

from elmo_bilm.files import FormatError


def _parse_tokens(parse: str) -> List[str]:
    """Tokens of SNLI's `sentenceN_binary_parse`: `( ( A person ) ... )` -> `A person ...`."""
    return [piece for piece in parse.split() if piece not in ("(", ")")]


@DatasetReader.register("elmo_plugin_snli")
class ElmoSnliReader(SnliReader):
    """SNLI 1.0 jsonl (`sentence1`, `sentence2`, `gold_label`), skipping `-` gold labels, for the
    ESIM baseline. Tokens come from the Stanford parser's tokenisation in `sentenceN_binary_parse`
    (offline; what ESIM used), or from whitespace when a record has no parse. Invalid JSON or a
    missing field stops reading with `FILE:LINE: ...`.

    Registered as a `DatasetReader` with name "elmo_plugin_snli". Parameters as AllenNLP's "snli",
    except that the tokenizer is fixed.
    """

    def __init__(self, **kwargs) -> None:
        kwargs.pop("tokenizer", None)
        super().__init__(tokenizer=WhitespaceTokenizer(), **kwargs)

    def _records(self, file_path: str) -> Iterator[Tuple[str, str, Optional[str]]]:
        with open(cached_path(file_path), encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    example = json.loads(line)
                except json.JSONDecodeError as error:
                    raise FormatError(
                        f"{file_path}:{line_number}: invalid JSON ({error.msg})"
                    ) from error
                missing = [key for key in ("sentence1", "sentence2") if key not in example]
                if missing:
                    raise FormatError(f"{file_path}:{line_number}: missing {', '.join(missing)}")
                label = example.get("gold_label")
                if label == "-":
                    continue
                sentences = [
                    " ".join(_parse_tokens(example[f"{key}_binary_parse"]))
                    if f"{key}_binary_parse" in example
                    else example[key]
                    for key in ("sentence1", "sentence2")
                ]
                yield sentences[0], sentences[1], label

    def _read(self, file_path: str) -> Iterable[Instance]:
        for premise, hypothesis, label in self.shard_iterable(self._records(file_path)):
            yield self.text_to_instance(premise, hypothesis, label)
