"""Every ```python and ```bash block of README.md and docs/*.md runs as printed.

A block is skipped only when the line before its fence is `<!-- not-run: REASON -->` (an HTML
comment, invisible on the rendered page, visible in the source): long training runs, installs from
the network, blocks that need a GPU or earlier runs' outputs, usage synopses. Python blocks run via
`exec` in a fresh namespace, bash blocks in `bash -euo pipefail` with the venv's commands on PATH,
both in an empty temporary folder (with the `.allennlp_plugins` file a checkout has, so the plugin's
`allennlp` subcommands are found). A block that names no biLM gets the default one. Blocks in other
languages (jsonnet fragments, outputs) are not executed. `--8<-- "FILE"` lines (pymdownx.snippets)
stand for FILE's text, as on the site.
"""

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

from tests.conftest import REPO_ROOT

LANGUAGES = ("python", "bash")
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:(.*?)-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
SNIPPET = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$')


@dataclass
class Block:
    """One fenced code block: where it is, its language and text, and why it is not run."""

    page: str  # relative to the checkout
    line: int  # the opening fence's line, 1-based
    language: str
    code: str
    not_run: Optional[str]  # the marker's reason; None: the block runs

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> List[Path]:
    """README.md and every page of docs/."""
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def _expand_snippets(code: str) -> str:
    """Replace each `--8<-- "FILE"` line with FILE's text (paths relative to the checkout)."""
    lines = []
    for line in code.splitlines():
        match = SNIPPET.match(line)
        lines.append((REPO_ROOT / match.group(1)).read_text() if match else line)
    return "\n".join(lines) + "\n"


def blocks(path: Path) -> Iterator[Block]:
    """The fenced blocks of one Markdown page, in order (every language)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = str(path.relative_to(REPO_ROOT))
    number = 0
    while number < len(lines):
        opening = FENCE.match(lines[number])
        if opening is None:
            number += 1
            continue
        indent, fence, language = opening.groups()
        end = number + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = [
            line[len(indent) :] if line.startswith(indent) else line
            for line in lines[number + 1 : end]
        ]
        marker = NOT_RUN.match(lines[number - 1]) if number > 0 else None
        yield Block(
            page=page,
            line=number + 1,
            language=language.lower(),
            code=_expand_snippets("\n".join(body)),
            not_run=marker.group(1).strip() if marker else None,
        )
        number = end + 1


def runnable_blocks() -> List[Block]:
    """The python and bash blocks of every page."""
    return [block for path in pages() for block in blocks(path) if block.language in LANGUAGES]


BLOCKS = runnable_blocks()


def run_block(block: Block, folder: Path) -> None:
    """Run one block in `folder`; raises (or fails the test) as the block fails."""
    (folder / ".allennlp_plugins").write_text("elmo_plugin\n")
    if block.language == "python":
        cwd = os.getcwd()
        os.chdir(folder)
        try:
            exec(compile(block.code, block.id, "exec"), {"__name__": "__doc_example__"})
        finally:
            os.chdir(cwd)
        return
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (
        f"{block.id} exited {result.returncode}:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    )


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_the_code_block_runs_as_printed(block: Block, tmp_path: Path) -> None:
    if block.not_run is not None:
        pytest.skip(f"not-run: {block.not_run}")
    run_block(block, tmp_path)


def test_every_not_run_marker_gives_a_reason_and_stands_before_a_block() -> None:
    for path in pages():
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if "not-run" not in line or "<!--" not in line:
                continue
            where = f"{path.relative_to(REPO_ROOT)}:{number + 1}"
            match = NOT_RUN.match(line)
            assert match is not None and match.group(1).strip(), f"{where}: no reason given"
            following = lines[number + 1] if number + 1 < len(lines) else ""
            assert FENCE.match(following), f"{where}: the marker is not on the line before a fence"


def test_the_readme_python_example_and_an_elmo_embed_block_are_run() -> None:
    """The extractor finds what it must (a README block that breaks fails the suite)."""
    readme = [block for block in BLOCKS if block.page == "README.md" and block.not_run is None]
    assert any(block.language == "python" and "Elmo(" in block.code for block in readme)
    assert any(block.language == "bash" and "elmo-embed " in block.code for block in readme)


def test_a_failing_block_fails(tmp_path: Path) -> None:
    """The runner raises for a broken python block and fails for a broken bash block."""
    broken = Block("README.md", 1, "python", "Elmo(options_file)\n", None)
    with pytest.raises(NameError, match="Elmo"):
        run_block(broken, tmp_path)
    with pytest.raises(AssertionError, match="exited 2"):
        run_block(Block("README.md", 1, "bash", "ls no-such-file\n", None), tmp_path)
