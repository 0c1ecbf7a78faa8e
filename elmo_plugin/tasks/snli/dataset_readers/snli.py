"""SNLI with offline tokenisation and line-numbered errors, from jsonl or the bundled
`s1.SPLIT` / `s2.SPLIT` / `labels.SPLIT` line files."""

import itertools
import json
import os
from typing import Iterable, Iterator, List, Optional, Tuple

from allennlp.common.file_utils import cached_path
from allennlp.data import DatasetReader, Instance
from allennlp.data.tokenizers import Tokenizer, WhitespaceTokenizer
from allennlp_models.pair_classification.dataset_readers.snli import SnliReader

from elmo_bilm.utils.files import FormatError, numbered_lines
from elmo_plugin.tasks.common.slices import split_slice

LABELS = ("entailment", "neutral", "contradiction")


def _line_files(file_path: str) -> Optional[Tuple[str, str, str]]:
    """`(s1, s2, labels)` files when `file_path` is `DIR/SPLIT` of the line format, else None."""
    folder, split = os.path.split(file_path)
    files = tuple(os.path.join(folder, f"{name}.{split}") for name in ("s1", "s2", "labels"))
    return files if split and os.path.isfile(files[0]) else None  # type: ignore[return-value]


def _parse_tokens(parse: str) -> List[str]:
    """Tokens of SNLI's `sentenceN_binary_parse`: `( ( A person ) ... )` -> `A person ...`."""
    return [piece for piece in parse.split() if piece not in ("(", ")")]


@DatasetReader.register("elmo_plugin_snli")
class SnliTaskReader(SnliReader):
    """SNLI 1.0 pairs for ESIM, from either format:

    - jsonl (`sentence1`, `sentence2`, `gold_label`), skipping `-` gold labels; tokens from the
      Stanford parser's tokenisation in `sentenceN_binary_parse` (offline; what ESIM used), or from
      whitespace when a record has no parse;
    - the bundled line format: a data path `DIR/SPLIT` reads `DIR/s1.SPLIT` (premises),
      `DIR/s2.SPLIT` (hypotheses) and `DIR/labels.SPLIT`, one tokenised sentence or label a line.

    A path may end in `[START:END]` to read that slice of its pairs (e.g. `.../snli_eval/test[:4912]`
    and `.../snli_eval/test[4912:]`: two disjoint halves). Invalid JSON, a missing field, an empty
    sentence, an unknown label or files of different lengths stop reading with `FILE:LINE: ...`.

    Registered as a `DatasetReader` with name "elmo_plugin_snli". Parameters as AllenNLP's "snli";
    `tokenizer` splits each sentence, by default on whitespace (the parse tokens and the line
    files are tokenised already; AllenNLP's default, spaCy, would need a downloaded model).
    """

    def __init__(self, tokenizer: Optional[Tokenizer] = None, **kwargs) -> None:
        super().__init__(tokenizer=tokenizer or WhitespaceTokenizer(), **kwargs)

    def _records(self, file_path: str) -> Iterator[Tuple[str, str, Optional[str]]]:
        path, start, end = split_slice(file_path)
        line_files = _line_files(path)
        records = self._line_records(*line_files) if line_files else self._jsonl_records(path)
        return itertools.islice(records, start, end)

    @staticmethod
    def _line_records(*files: str) -> Iterator[Tuple[str, str, Optional[str]]]:
        streams = [(line for _, line in numbered_lines(name)) for name in files]
        for line_number, lines in enumerate(itertools.zip_longest(*streams), start=1):
            for name, line in zip(files, lines):
                if line is None:
                    longer = next(n for n, other in zip(files, lines) if other is not None)
                    raise FormatError(f"{name}:{line_number}: file ends, but {longer} goes on")
                if not line.strip():
                    raise FormatError(f"{name}:{line_number}: empty line")
            premise, hypothesis, label = (line.strip() for line in lines)
            if label not in LABELS:
                raise FormatError(
                    f"{files[2]}:{line_number}: unknown label {label!r}; one of {LABELS}"
                )
            yield premise, hypothesis, label

    @staticmethod
    def _jsonl_records(file_path: str) -> Iterator[Tuple[str, str, Optional[str]]]:
        for line_number, line in numbered_lines(cached_path(file_path)):
            if not line.strip():
                continue
            try:
                example = json.loads(line)
            except json.JSONDecodeError as error:
                raise FormatError(
                    f"{file_path}:{line_number}: invalid JSON ({error.msg})"
                ) from error
            where = f"{file_path}:{line_number}"
            if not isinstance(example, dict):
                raise FormatError(f"{where}: expected a JSON object, got {line.strip()[:40]!r}")
            missing = [key for key in ("sentence1", "sentence2") if key not in example]
            if missing:
                raise FormatError(f"{where}: missing {', '.join(missing)}")
            label = example.get("gold_label")
            if label == "-":
                continue
            if label is not None and label not in LABELS:
                raise FormatError(f"{where}: unknown gold_label {label!r}; one of {LABELS} or '-'")
            sentences = [
                " ".join(_parse_tokens(example[f"{key}_binary_parse"]))
                if isinstance(example.get(f"{key}_binary_parse"), str)
                else example[key]
                for key in ("sentence1", "sentence2")
            ]
            for key, sentence in zip(("sentence1", "sentence2"), sentences):
                if not isinstance(sentence, str) or not sentence.split():
                    raise FormatError(f"{where}: {key} is empty or not a string")
            yield sentences[0], sentences[1], label

    def _read(self, file_path: str) -> Iterable[Instance]:
        read = 0
        labelled = None
        for premise, hypothesis, label in self.shard_iterable(self._records(file_path)):
            if labelled is not None and (label is not None) != labelled:
                raise FormatError(f"{file_path}: some pairs have a gold_label and some have none")
            labelled = label is not None
            read += 1
            yield self.text_to_instance(premise, hypothesis, label)
        if read == 0:
            raise FormatError(f"{file_path}: no sentence pairs")
