"""Every ```python and ```bash block of README.md and docs/*.md runs as printed, as a user runs it.

A block is skipped only when the line before its fence is `<!-- not-run: REASON -->` (an HTML
comment, invisible on the rendered page, visible in the source): long training runs, installs from
the network, blocks that need a GPU or earlier runs' outputs, usage synopses. Each block runs in a
fresh process, in a fresh empty folder outside the checkout, as a user who installed the packages
and works elsewhere (the README's "an installed plugin needs no checkout"): this venv's commands
first on PATH (its editable install; tests/test_wheel.py installs the wheels in a fresh venv), HOME
an empty folder (no `~/.allennlp/plugins`), no `.allennlp_plugins` beside it, and none of the test
suite's settings (its data folder, its fixture biLM, its word vector switches). A block gets the
data folder (`ELMO_PLUGIN_DATA`) or the checkout's fixtures (`ELMO_PLUGIN_FIXTURES`) only when its
text names that variable, i.e. where the text says it uses one. Python blocks run via `exec` (with
`__name__` not `"__main__"`) in a fresh interpreter, bash blocks in `bash -euo pipefail`. Blocks in
other languages (jsonnet fragments, outputs) are not executed. `--8<-- "FILE"` lines
(pymdownx.snippets) stand for FILE's text, as on the site.
"""

import importlib
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest
import tomllib

from elmo_plugin.common.config_env import data_defaults
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


# what a block may name to be given the suite's value: where its text says it uses a data folder
# (`$ELMO_PLUGIN_DATA/...`) or the checkout's fixtures ("in a checkout")
NAMED_ONLY = ("ELMO_PLUGIN_DATA", "ELMO_PLUGIN_FIXTURES")
# runs a block's code (from stdin) as a script would, but without its `if __name__ == "__main__"`
PYTHON_RUNNER = (
    "import sys; code = sys.stdin.read(); "
    "exec(compile(code, sys.argv[1], 'exec'), {'__name__': '__doc_example__'})"
)


def _set_by_the_suite(name: str) -> bool:
    """A variable tests/conftest.py (or a data default) sets that a user's shell does not have."""
    data = set(data_defaults(Path("unused")))
    return name.startswith("ELMO_") or name.endswith("_WORD_VECTORS") or name in data


def user_environment(block: Block, home: Path) -> Dict[str, str]:
    """The environment a user who installed the packages runs `block` in: the venv's commands
    first on PATH, `home` as HOME, none of the suite's settings but the variables the block names."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not _set_by_the_suite(name) and name not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env["HOME"] = str(home)
    for name in NAMED_ONLY:
        if name in block.code and name in os.environ:
            env[name] = os.environ[name]
    return env


def run_block(block: Block, folder: Path) -> None:
    """Run one block in `folder` (empty: the block's working folder; HOME is a sibling) as a user
    runs it; fails the test, with the block's output, when it exits non-zero."""
    folder.mkdir(parents=True, exist_ok=True)
    assert not any(folder.iterdir()), f"{folder} is not empty"
    home = folder.parent / f"{folder.name}-home"
    home.mkdir(exist_ok=True)
    if block.language == "python":
        command = [sys.executable, "-c", PYTHON_RUNNER, block.id]
    else:
        command = ["bash", "-euo", "pipefail", "-s"]
    result = subprocess.run(
        command,
        input=block.code,
        cwd=folder,
        env=user_environment(block, home),
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
    run_block(block, tmp_path / "work")


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


def test_the_readme_first_run_after_make_install_needs_no_data_folder() -> None:
    """The README's commands before its data-folder section work on a fresh clone with no data
    folder beside it; the first training run is the smoke scale, through `elmo-plugin` (no
    plugins file needed), naming no data."""
    set_up = ("make install", "make wheels")  # the set-up and the install from wheels
    readme = [b for b in blocks(REPO_ROOT / "README.md") if b.language == "bash"]
    smoke = next(b for b in readme if "elmo-table1" in b.code)
    assert smoke.code.split("#")[0].split() == [
        *"elmo-plugin elmo-table1 -s runs/smoke --scale smoke --seeds 1".split()
    ], smoke.id
    before = [b for b in readme if b.line <= smoke.line and not any(s in b.code for s in set_up)]
    assert before and all("ELMO_PLUGIN_DATA" not in b.code for b in before)


# every entry point the README's table must name, each by a string its row holds
ENTRY_POINTS = {
    "AllenNLP configs": "elmo_plugin_token_embedder",
    "AllenNLP code": "from elmo_bilm import Elmo, batch_to_ids",
    "PyTorch / AllenNLP 0.9": "from elmo_bilm import ElmoEmbedder",
    "elmo-embed": "elmo-embed IN OUT",
    "spaCy": 'nlp.add_pipe("elmo")',
    "flair": "from elmo_bilm.flair import ELMoEmbeddings",
    "ELMoForManyLangs": "from elmo_bilm.elmoformanylangs import Embedder",
    "simple_elmo": "from elmo_bilm.simple_elmo import ElmoModel",
    "SeqVec / bio_embeddings": "from elmo_bilm.bio_embeddings import SeqVecEmbedder",
    "TF-Hub": "from elmo_bilm.tfhub import ElmoModule",
    "Hub names": "hf://",
    "elmo-convert": "elmo-convert SOURCE OUT_DIR",
    "the corpus on Ray": "elmo-embed-corpus",
}


def test_the_readme_first_screen_holds_the_examples_and_the_entry_point_table() -> None:
    """The README's first 60 lines: the set-up, three examples the suite runs (a command, PyTorch,
    an AllenNLP config), and a row for every entry point whose imports and commands exist."""
    lines = (REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    first = [b for b in blocks(REPO_ROOT / "README.md") if b.line <= 60]
    assert any("make install" in b.code and "make test" in b.code for b in first)
    run = [b for b in first if b.not_run is None and b.language in LANGUAGES]
    assert any(b.language == "bash" and "elmo-embed " in b.code for b in run)
    assert any(b.language == "python" and "from elmo_bilm import Elmo" in b.code for b in run)
    assert any(b.language == "python" and "elmo_plugin_token_embedder" in b.code for b in run)
    table = [line for line in lines[:60] if line.startswith("| ")]
    for name, text in ENTRY_POINTS.items():
        assert any(text in row for row in table), f"no row of the table names {name} ({text})"
    scripts = set()
    for path in ("pyproject.toml", "packaging/elmo-bilm/pyproject.toml"):
        scripts |= set(tomllib.loads((REPO_ROOT / path).read_text())["project"]["scripts"])
    for row in table:
        for module, names in re.findall(r"from ([\w.]+) import ([\w, ]+)", row):
            imported = importlib.import_module(module)
            for name in names.split(","):
                assert hasattr(imported, name.strip()), (module, name)
        for command in re.findall(r"`(elmo-[\w-]+)", row):
            assert command in scripts, command


def heading_slug(heading: str) -> str:
    """The anchor mkdocs (Python-Markdown's `toc`) gives a heading."""
    text = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def test_every_row_of_the_readme_table_links_its_docs_page() -> None:
    """Each row of the "you use X today" table links a page of docs/ that exists, at a heading
    it has where it names one (flair's section, not spaCy's page top)."""
    lines = (REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    table = [line for line in lines[:60] if line.startswith("| ")][2:]
    assert len(table) >= len(ENTRY_POINTS) - 2
    for row in table:
        links = re.findall(r"\]\((docs/[\w./-]+\.md)(?:#([\w-]+))?\)", row)
        assert links, f"the row links no docs page: {row}"
        for page, anchor in links:
            text = (REPO_ROOT / page).read_text(encoding="utf-8")
            headings = re.findall(r"^#+ (.+)$", text, flags=re.M)
            assert not anchor or anchor in map(heading_slug, headings), (page, anchor)
    flair = next(row for row in table if "ELMoEmbeddings" in row)
    assert "docs/spacy.md#flair" in flair


def test_a_failing_block_fails(tmp_path: Path) -> None:
    """The runner fails for a broken python block and for a broken bash block."""
    broken = Block("README.md", 1, "python", "Elmo(options_file)\n", None)
    with pytest.raises(AssertionError, match="(?s)exited 1.*NameError: name 'Elmo'"):
        run_block(broken, tmp_path / "python")
    with pytest.raises(AssertionError, match="exited 2"):
        run_block(Block("README.md", 1, "bash", "ls no-such-file\n", None), tmp_path / "bash")


def test_a_block_runs_as_a_user_outside_the_checkout(tmp_path: Path) -> None:
    """No checkout, plugins file or suite setting reaches a block: the plugin's subcommands are
    not found by plain `allennlp` (as for a user with no plugins file), and the suite's data
    folder reaches only a block that names it."""
    probe = (
        'test ! -e .allennlp_plugins && test ! -e "$HOME/.allennlp/plugins"\n'
        f'case "$(pwd -P)/" in "$(cd {REPO_ROOT} && pwd -P)/"*) exit 4;; esac\n'
        "env | grep -e '^ELMO_' -e '_WORD_VECTORS=' >&2 && exit 5\n"
        "exit 3\n"
    )
    with pytest.raises(AssertionError, match="exited 3"):
        run_block(Block("README.md", 1, "bash", probe, None), tmp_path / "probe")
    named = Block("README.md", 1, "bash", 'test -d "$ELMO_PLUGIN_DATA"\n', None)
    if Path(os.environ["ELMO_PLUGIN_DATA"]).is_dir():
        run_block(named, tmp_path / "named")
    elmo_config = Block("README.md", 1, "bash", "allennlp elmo-config\n", None)
    with pytest.raises(AssertionError, match="invalid choice: 'elmo-config'"):
        run_block(elmo_config, tmp_path / "plain")


def written_outputs(block: Block) -> List[str]:
    """What a bash block's commands write that a second write refuses: `elmo-embed` and
    `elmo-export-onnx` outputs without `--overwrite`, `elmo-convert` folders without it, and
    `train -s` folders (AllenNLP refuses a non-empty one)."""
    outputs = []
    for line in block.code.replace("\\\n", " ").splitlines():
        try:
            words = shlex.split(line.split(" #", 1)[0])
        except ValueError:
            continue
        for index, word in enumerate(words):
            rest = words[index + 1 :]
            positional = [arg for arg in rest if not arg.startswith("-")]
            if word in ("elmo-embed", "elmo-convert", "elmo-export-onnx"):
                if "--overwrite" not in rest and len(positional) >= 2:
                    outputs.append(os.path.normpath(positional[1]))
            if word == "train" and "-s" in rest and "--recover" not in rest and "-f" not in rest:
                outputs.append(os.path.normpath(rest[rest.index("-s") + 1]))
    return outputs


def test_blocks_run_in_order_in_one_folder_write_no_output_twice() -> None:
    """Run top to bottom in one folder (README, then docs/ in the site's order of files), no
    block writes where an earlier one wrote a file the command then refuses to replace."""
    seen: Dict[str, str] = {}
    for block in BLOCKS:
        if block.not_run is not None or block.language != "bash":
            continue
        for output in written_outputs(block):
            assert output not in seen, f"{block.id} writes {output}, as {seen[output]} does"
            seen[output] = block.id
    assert seen  # the extractor finds the README's outputs
    readme = written_outputs(Block("README.md", 1, "bash", "elmo-embed a.txt b.hdf5 --all\n", None))
    assert readme == ["b.hdf5"]
