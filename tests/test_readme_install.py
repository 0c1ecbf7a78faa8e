"""The README's install from wheels names files that exist, the wheels `make wheels` builds, and
the pins this suite's venv was installed with (tests/test_wheel.py installs and runs the wheels)."""

import importlib.metadata
import re
import shlex

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO_ROOT
from tests.test_docs_examples import blocks


def install_block() -> str:
    (block,) = [b for b in blocks(REPO_ROOT / "README.md") if "make wheels" in b.code]
    assert block.not_run is not None and "tests/test_wheel.py" in block.not_run
    return block.code


def test_the_wheel_install_names_existing_files_and_the_built_wheels():
    lines = [shlex.split(line.split("#", 1)[0]) for line in install_block().splitlines()]
    pip = [line for line in lines if line and line[0].endswith("/pip")]
    files = [line[line.index("-r") + 1] for line in pip if "-r" in line]
    assert files == ["requirements.txt", "requirements-allennlp.txt"]
    assert all((REPO_ROOT / name).is_file() for name in files)
    assert "--no-deps" in pip[1] and "--no-deps" in pip[2]  # AllenNLP's stale metadata
    projects = [
        tomllib.loads((REPO_ROOT / path).read_text())["project"]
        for path in ("pyproject.toml", "packaging/elmo-bilm/pyproject.toml")
    ]
    versions = {project["name"].replace("-", "_"): project["version"] for project in projects}
    wheels = [arg for arg in pip[2] if arg.endswith(".whl")]
    # the core's wheel is platform-specific (the fused LSTM cell, compiled), the plugin's pure
    assert wheels == [
        f"dist/elmo_bilm-{versions['elmo_bilm']}-*.whl",
        f"dist/elmo_plugin-{versions['elmo_plugin']}-py3-none-any.whl",
    ]
    last = [line for line in lines if line][-1]
    assert last[0].endswith("/bin/elmo-plugin") and last[1:] == ["elmo-config"]


def test_the_named_requirement_files_pin_what_this_venv_runs():
    for name in ("requirements.txt", "requirements-allennlp.txt"):
        for line in (REPO_ROOT / name).read_text().splitlines():
            line = re.sub(r"\s*#.*", "", line).strip()
            if not line:
                continue
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate():
                continue
            installed = importlib.metadata.version(canonicalize_name(requirement.name))
            assert requirement.specifier.contains(installed, prereleases=True), (line, installed)


def test_every_install_line_in_the_docs_works_as_printed():
    """Each `pip install` the README and docs/ print installs what exists before a release: a
    wheel `make wheels` builds (`dist/...`), the checkout's requirement files, a pinned
    third-party package; the package-index form of this project (`elmo-bilm[...]`) only where the
    sentence says it is for after a release."""
    ours = re.compile(
        r"pip install[^`\n]*?[\"']?elmo[-_]bilm(?:-wikipedia[-\w]*)?(?:\[|[\"'\s`]|$)"
    )
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
    wrong = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for match in ours.finditer(text):
            paragraph = text[text.rfind("\n\n", 0, match.start()) : match.start()]
            if "after a release" not in paragraph.lower():
                wrong.append(f"{page.relative_to(REPO_ROOT)}: {match.group(0)}")
    assert wrong == []


def test_the_install_line_of_an_extra_names_the_built_wheel_and_a_declared_extra():
    from elmo_bilm.utils.errors import install_extra

    project = tomllib.loads((REPO_ROOT / "packaging/elmo-bilm/pyproject.toml").read_text())
    project = project["project"]
    for extra in ("ray", "onnx", "hub", "spacy", "flair"):
        assert extra in project["optional-dependencies"]
        # the core's wheel is named for its platform (the compiled fused cell): the shell finds it
        wheel = f"$(ls dist/elmo_bilm-{project['version']}-*.whl)[{extra}]"
        assert install_extra(extra).startswith(f'pip install "{wheel}"'), extra
