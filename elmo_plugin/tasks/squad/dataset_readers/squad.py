"""SQuAD 1.1 with offline tokenisation, answer-mapping counts and located errors."""

import json
import logging
import re
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from allennlp.common.file_utils import cached_path
from allennlp.data import DatasetReader, Instance
from allennlp.data.tokenizers import Tokenizer
from allennlp_models.rc.dataset_readers import utils
from allennlp_models.rc.dataset_readers.squad import SquadReader

from elmo_bilm.utils.files import FormatError
from elmo_plugin.data.tokenizers import SpacyBlankTokenizer
from elmo_plugin.tasks.common.slices import split_slice

logger = logging.getLogger(__name__)


@DatasetReader.register("elmo_plugin_squad")
class SquadTaskReader(SquadReader):
    """SQuAD 1.1 json (`data[].paragraphs[].{context, qas[].{id, question, answers[]}}`): one
    instance per question, passage and question tokenised offline (spaCy's rule-based English
    tokenizer by default), each answer's character offsets mapped to a token span.

    An answer is *unmappable* when its text is not at `answer_start` in the context, when it lies
    beyond `passage_length_limit`, or when its ends fall inside tokens. Unmappable answers are
    skipped and counted; a question left with no answer is skipped too (with `skip_unmappable`,
    the default, for training). With `skip_unmappable: false` (evaluation), an answer whose ends
    fall inside tokens keeps the covering token span, so every question with its answer text in
    the passage is scored; official EM/F1 compare answer *texts*. A path may end in
    `[START:END]` to read that slice of its articles (`data[START:END]`, 0-based, END excluded):
    the split of the bundled dev set that the configs default to. The counts are in `counts` and
    logged after each read. Invalid JSON or a missing field stops reading with
    `FILE:LINE: data[i].paragraphs[j]...: ...` (LINE of the record's question id when it has one).

    Registered as a `DatasetReader` with name "elmo_plugin_squad".

    # Parameters

    tokenizer : `Tokenizer`, optional (default = `elmo_plugin_spacy_blank`)
    skip_unmappable : `bool`, optional (default = `True`)
    token_indexers, passage_length_limit, question_length_limit
        As allennlp-models' "squad".
    """

    def __init__(
        self, tokenizer: Optional[Tokenizer] = None, skip_unmappable: bool = True, **kwargs
    ) -> None:
        super().__init__(tokenizer=tokenizer or SpacyBlankTokenizer(), **kwargs)
        self.skip_unmappable = skip_unmappable
        self.counts: Counter = Counter()

    def _read(self, file_path: str) -> Iterable[Instance]:
        self.counts = Counter()
        file_path, first, last = split_slice(file_path)
        raw = Path(cached_path(file_path)).read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            line = raw[: error.start].count(b"\n") + 1
            raise FormatError(f"{file_path}:{line}: not UTF-8 text ({error.reason})") from error
        try:
            dataset = json.loads(text)
        except json.JSONDecodeError as error:
            raise FormatError(f"{file_path}:{error.lineno}: invalid JSON ({error.msg})") from error
        id_lines: Dict[str, int] = {}  # question id -> its line, for error messages
        line, position = 1, 0
        for match in re.finditer(r'"id"\s*:\s*"([^"]*)"', text):
            line += text.count("\n", position, match.start())
            position = match.start()
            id_lines[match.group(1)] = line

        def fail(path: str, record: Any, message: str) -> FormatError:
            ids = (
                re.findall(r"'id': '([^']*)'", repr(record))
                if isinstance(record, (dict, list))
                else []
            )
            line = id_lines.get(ids[0], 1) if ids else 1
            return FormatError(f"{file_path}:{line}: {path}: {message}")

        def field(record: Any, key: str, kind: type, path: str) -> Any:
            if not isinstance(record, dict) or not isinstance(record.get(key), kind):
                raise fail(path, record, f"missing or not a {kind.__name__}: {key!r}")
            return record[key]

        articles = field(dataset, "data", list, "top level")
        read = 0
        for a in range(len(articles))[first:last]:
            article = articles[a]
            for p, paragraph in enumerate(field(article, "paragraphs", list, f"data[{a}]")):
                where = f"data[{a}].paragraphs[{p}]"
                context = field(paragraph, "context", str, where)
                passage_tokens = self._tokenizer.tokenize(context)
                if self.passage_length_limit is not None:
                    passage_tokens = passage_tokens[: self.passage_length_limit]
                offsets = [(token.idx, token.idx + len(token.text)) for token in passage_tokens]
                for q, qa in enumerate(self.shard_iterable(field(paragraph, "qas", list, where))):
                    instance = self._question(
                        qa, f"{where}.qas[{q}]", context, passage_tokens, offsets, field
                    )
                    if instance is not None:
                        read += 1
                        yield instance
        if read == 0:
            raise FormatError(
                f"{file_path}: no question with an answer in its passage "
                f"({self.counts['unmappable']} answers unmappable)"
            )
        logger.info(
            "%s: %d answers mapped to token spans, %d unmappable skipped, %d mapped inexactly, "
            "%d questions skipped (no mappable answer)",
            file_path,
            self.counts["mapped"],
            self.counts["unmappable"],
            self.counts["inexact"],
            self.counts["skipped_questions"],
        )

    def _question(self, qa, where, context, passage_tokens, offsets, field) -> Optional[Instance]:
        question = field(qa, "question", str, where).strip().replace("\n", "")
        question_id = field(qa, "id", str, where)
        answers = field(qa, "answers", list, where)
        texts: List[str] = []
        spans: List[Tuple[int, int]] = []
        for n, answer in enumerate(answers):
            answer_text = field(answer, "text", str, f"{where}.answers[{n}]")
            start = field(answer, "answer_start", int, f"{where}.answers[{n}]")
            texts.append(answer_text)
            end = start + len(answer_text)
            if context[start:end] != answer_text or not offsets or end > offsets[-1][1]:
                self.counts["unmappable"] += 1
                continue
            span, inexact = utils.char_span_to_token_span(offsets, (start, end))
            if inexact and self.skip_unmappable:
                self.counts["unmappable"] += 1
                continue
            self.counts["inexact" if inexact else "mapped"] += 1
            spans.append(span)
        if answers and not spans:
            self.counts["skipped_questions"] += 1
            return None
        question_tokens = self._tokenizer.tokenize(question)
        if self.question_length_limit is not None:
            question_tokens = question_tokens[: self.question_length_limit]
        metadata: Dict[str, Any] = {"id": question_id}
        return utils.make_reading_comprehension_instance(
            question_tokens,
            passage_tokens,
            self._token_indexers,
            context,
            spans or None,
            texts,
            metadata,
        )
