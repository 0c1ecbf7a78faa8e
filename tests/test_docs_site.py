"""The docs site as a product: a home page that says what the project is and how to install it,
with three examples that run (tests/test_docs_examples.py runs them) and the Table 1 plot; tables
and code blocks that stay inside the page (checked in headless Chromium at 1280 px)."""

import re

import yaml

from tests.conftest import REPO_ROOT
from tests.test_docs_examples import blocks

DOCS = REPO_ROOT / "docs"


def test_the_home_page_says_what_how_and_shows_three_runnable_examples_and_table_1():
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    assert "## Install" in text and "make install" in text
    runnable = [
        b for b in blocks(DOCS / "index.md") if b.language in ("python", "bash") and not b.not_run
    ]
    assert len(runnable) >= 3
    assert {b.language for b in runnable} == {"python", "bash"}
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert "table1/table1.png" in images and (DOCS / "table1" / "table1.png").is_file()


def test_tables_and_code_blocks_stay_inside_the_page():
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text())
    (css,) = config["extra_css"]
    rules = re.sub(r"/\*.*?\*/", "", (DOCS / css).read_text(), flags=re.S)
    # inline code in a table breaks at spaces, not mid-word; code blocks scroll in their box
    assert re.search(r"table:not\(\[class\]\) code \{[^}]*word-break: normal", rules)
    assert re.search(r"pre > code \{[^}]*overflow-x: auto", rules)
    assert "toc.integrate" in config["theme"]["features"]  # the text column gets the width
