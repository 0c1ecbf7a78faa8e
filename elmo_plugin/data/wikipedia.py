"""Raw Wikipedia (WikiExtractor output) -> one tokenised sentence per line, for biLM pretraining."""

import gzip
import logging
import os
from typing import Iterator, List

from allennlp.common.tqdm import Tqdm

from elmo_bilm.files import FormatError, atomic_output, open_text
from elmo_plugin.data.tokenizers.sentence_tokenizer import SentenceTokenizer

logger = logging.getLogger(__name__)


def wikiextractor_paragraphs(path: str) -> Iterator[str]:
    """The paragraphs (non-empty lines) of every `<doc ...>` ... `</doc>` block of `path` (plain or
    gzip), without the title line that opens each block."""
    inside = False
    title_pending = False
    with open_text(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            line = line.strip()
            if line.startswith("<doc ") or line == "<doc>":
                if inside:
                    raise FormatError(f"{path}:{line_number}: <doc> inside an unclosed <doc>")
                inside, title_pending = True, True
            elif line == "</doc>":
                if not inside:
                    raise FormatError(f"{path}:{line_number}: </doc> without <doc>")
                inside = False
            elif line:
                if not inside:
                    raise FormatError(f"{path}:{line_number}: text outside <doc> ... </doc>")
                if title_pending:
                    title_pending = False
                else:
                    yield line
        if inside:
            raise FormatError(f"{path}:{line_number}: end of file inside <doc>")


def prepare_corpus(input_files: List[str], output_dir: str, overwrite: bool = False) -> List[str]:
    """Write `OUTPUT_DIR/<input name>.txt.gz` (one space-separated sentence per line) for each
    WikiExtractor file. An existing output is kept (so an interrupted run resumes where it stopped)
    unless `overwrite`; each output appears only when complete (written as `.partial`, then renamed).
    Returns the output paths."""
    os.makedirs(output_dir, exist_ok=True)
    tokenizer = SentenceTokenizer()
    outputs = []
    for path in Tqdm.tqdm(input_files, desc="sentence-splitting and tokenising"):
        name = os.path.basename(path)
        name = name[: -len(".gz")] if name.endswith(".gz") else name
        output = os.path.join(output_dir, f"{name}.txt.gz")
        outputs.append(output)
        if os.path.exists(output) and not overwrite:
            logger.info("keeping %s", output)
            continue
        count = 0
        with (
            atomic_output(output, overwrite) as partial,
            gzip.open(partial, "wt", encoding="utf-8") as out,
        ):
            for tokens in tokenizer.sentences(wikiextractor_paragraphs(path)):
                out.write(" ".join(tokens) + "\n")
                count += 1
        logger.info("%s: %d sentences -> %s", path, count, output)
    return outputs
