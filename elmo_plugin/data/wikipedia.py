"""Raw Wikipedia (WikiExtractor output) -> one tokenised sentence per line, for biLM pretraining."""

import gzip
import logging
import os
from typing import Dict, Iterator, List, Sequence, Tuple

from elmo_bilm.utils.files import FormatError, atomic_output, expand_paths, numbered_lines
from elmo_bilm.utils.progress import progress_bar
from elmo_plugin.data.tokenizers.sentence_tokenizer import SentenceTokenizer

logger = logging.getLogger(__name__)


def wikiextractor_paragraphs(path: str) -> Iterator[str]:
    """The paragraphs (non-empty lines) of every `<doc ...>` ... `</doc>` block of `path` (plain or
    gzip), without the title line that opens each block."""
    inside = False
    title_pending = False
    for line_number, line in numbered_lines(path):
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


def corpus_inputs(inputs: Sequence[str]) -> List[Tuple[str, str]]:
    """`(file, output name)` for WikiExtractor inputs: files, globs, or folders searched
    recursively (WikiExtractor writes `text/AA/wiki_00`, `text/AB/wiki_00`, ...). Each file is
    named by its path below the inputs' common folder (a folder input counts as itself, a file
    as the folder it is in), `.gz` dropped: `text` and `text/AA text/AB` (the shell's `text/*`)
    both name `text/AA/wiki_00` `AA_wiki_00`. Two files with one name are an error before any
    work."""
    found: List[Tuple[str, str]] = []  # (file, the folder its name starts below)
    for item in inputs:
        if os.path.isdir(item):
            files = sorted(
                os.path.join(root, name)
                for root, folders, names in os.walk(item)
                for name in names
                if not name.startswith(".")
            )
            if not files:
                raise FileNotFoundError(f"{item}: no files in that folder or below it")
            found += [(path, item) for path in files]
        else:
            found += [(path, os.path.dirname(path)) for path in expand_paths(item)]
    common = os.path.commonpath([os.path.abspath(folder) for _, folder in found])
    named: List[Tuple[str, str]] = []
    seen: Dict[str, str] = {}
    for path, _ in found:
        name = os.path.relpath(os.path.abspath(path), common).replace(os.sep, "_")
        name = name[: -len(".gz")] if name.endswith(".gz") else name
        if name in seen:
            raise FormatError(f"{seen[name]} and {path} would both write {name}.txt.gz")
        seen[name] = path
        named.append((path, name))
    return named


def prepare_corpus(inputs: Sequence[str], output_dir: str, overwrite: bool = False) -> List[str]:
    """Write `OUTPUT_DIR/<name>.txt.gz` (one space-separated sentence per line) for each
    WikiExtractor file of `inputs` (named as `corpus_inputs` says). An existing output is kept (so
    an interrupted run resumes where it stopped) unless `overwrite`; each output appears only when
    complete (written as `.partial`, then renamed). Returns the output paths."""
    files = corpus_inputs(inputs)
    os.makedirs(output_dir, exist_ok=True)
    tokenizer = SentenceTokenizer()
    outputs = []
    for path, name in progress_bar(files, desc="sentence-splitting and tokenising"):
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
