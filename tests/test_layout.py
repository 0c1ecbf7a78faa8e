"""The tests' layout: `tests/PACKAGE/` for each of the checkout's packages (`elmo_bilm`, `elmo_plugin`,
`elmo_benchmarks`), each folder in it for a folder of that package, each benchmark's test for a
benchmark; at `tests/`'s root only the tests that cross packages (docs, hooks, bad inputs, wheels)."""

from pathlib import Path

TESTS = Path(__file__).parent
REPO = TESTS.parent
PACKAGES = {"elmo_bilm", "elmo_plugin", "elmo_benchmarks"}


def _folders(path: Path) -> set:
    return {p.name for p in path.iterdir() if p.is_dir() and p.name != "__pycache__"}


def test_one_tests_folder_per_package() -> None:
    assert _folders(TESTS) == PACKAGES
    assert all((TESTS / name / "__init__.py").is_file() for name in PACKAGES)


def test_the_plugins_tests_mirror_its_folders() -> None:
    """`tests/elmo_plugin/NAME/` for `elmo_plugin/NAME/`, each a package holding tests."""
    folders = _folders(TESTS / "elmo_plugin")
    packages = {p.name for p in (REPO / "elmo_plugin").iterdir() if (p / "__init__.py").is_file()}
    assert folders and folders <= packages, folders - packages
    for name in folders:
        assert (TESTS / "elmo_plugin" / name / "__init__.py").is_file(), name
        assert list((TESTS / "elmo_plugin" / name).rglob("test_*.py")), name
    assert not list((TESTS / "elmo_plugin").glob("test_*.py"))


def test_each_benchmark_test_names_its_module() -> None:
    """`tests/elmo_benchmarks/[tools/]test_NAME.py` tests `elmo_benchmarks/[tools/]NAME.py`."""
    for test in (TESTS / "elmo_benchmarks").rglob("test_*.py"):
        relative = test.relative_to(TESTS / "elmo_benchmarks")
        module = REPO / "elmo_benchmarks" / relative.parent / (test.name[len("test_") :])
        assert module.is_file(), f"{test}: no {module}"
