"""The core's layout: at `elmo_bilm/`'s root `__init__.py` and the one-line modules of the import
paths documented before the folders, the rest in folders (the mirrored APIs in `dropins/`); every
such path (top-level names, `elmo_bilm.elmo`, `elmo_bilm.simple_elmo`, `elmo_bilm.spacy`, ..., the
console scripts and spaCy's entry points) still working, as the same module objects; and the
package importing no torch until a name that needs it is asked for."""

import importlib
from importlib.metadata import entry_points
from pathlib import Path

import elmo_bilm

ROOT = Path(elmo_bilm.__file__).parent


def _alias_file(old: str) -> Path:
    """`elmo_bilm.integrations.flair` -> ROOT/integrations/flair.py."""
    return ROOT.joinpath(*old.split(".")[1:]).with_suffix(".py")


def test_only_the_package_init_and_the_old_paths_at_the_root() -> None:
    modules = sorted(p.name for p in ROOT.glob("*.py"))
    old = sorted(_alias_file(o).name for o in elmo_bilm.ALIASES if o.count(".") == 1)
    assert modules == sorted(["__init__.py", *old]), modules
    assert {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()} == {
        "model",
        "formats",
        "sources",
        "runtime",
        "cli",
        "dropins",
        "integrations",
        "utils",
    }


def test_the_tests_mirror_the_subpackages() -> None:
    """`tests/elmo_bilm/NAME/` for `elmo_bilm/NAME/` (each a package, so that test files of one
    name in two folders do not collide); at the root only this layout's."""
    tests = Path(__file__).parent
    folders = {p.name for p in tests.iterdir() if p.is_dir() and p.name != "__pycache__"}
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert folders and folders <= packages, folders - packages
    assert all((tests / name / "__init__.py").is_file() for name in folders)
    assert all(list((tests / name).glob("test_*.py")) for name in folders)
    at_root = {p.name for p in tests.glob("test_*.py")}
    assert at_root == {"test_layout.py"}, at_root


DOCUMENTED = {
    "elmo_bilm.elmo": ("elmo_bilm.dropins.allennlp", "ElmoEmbedder"),
    "elmo_bilm.elmo_lstm": ("elmo_bilm.dropins.elmo_lstm", "ElmoLstm"),
    "elmo_bilm.elmoformanylangs": ("elmo_bilm.dropins.elmoformanylangs", "Embedder"),
    "elmo_bilm.simple_elmo": ("elmo_bilm.dropins.simple_elmo", "ElmoModel"),
    "elmo_bilm.bio_embeddings": ("elmo_bilm.dropins.bio_embeddings", "SeqVecEmbedder"),
    "elmo_bilm.tfhub": ("elmo_bilm.dropins.tfhub", "ElmoModule"),
    "elmo_bilm.flair": ("elmo_bilm.dropins.flair", "ELMoEmbeddings"),
    "elmo_bilm.integrations.flair": ("elmo_bilm.dropins.flair", "ELMoEmbeddings"),
    "elmo_bilm.spacy": ("elmo_bilm.integrations.spacy", "ElmoComponent"),
    "elmo_bilm.precision": ("elmo_bilm.runtime.precision", "set_precision"),
}


def test_documented_module_paths_are_the_same_modules() -> None:
    assert set(elmo_bilm.ALIASES) == set(DOCUMENTED)
    for old, (new, name) in DOCUMENTED.items():
        module = importlib.import_module(old)
        assert module is importlib.import_module(new) and elmo_bilm.ALIASES[old] == new
        assert module.__name__ == new and module.__spec__.name == new  # one module, its own spec
        exec(f"from {old} import {name}", {})
        # one line of code, no finder: the home under the old name
        code = [
            line
            for line in _alias_file(old).read_text(encoding="utf-8").splitlines()
            if line and not line.startswith(("import sys", '"""'))
        ]
        package, leaf = new.rsplit(".", 1)
        assert code == [f"from {package} import {leaf}", f"sys.modules[__name__] = {leaf}"], code


def test_the_package_and_its_checks_import_no_torch_in_a_fresh_interpreter() -> None:
    """`import elmo_bilm` and `import elmo_bilm.utils.checks` (what the plugin's parsers use)
    import no torch (they did, ~5 s, through the eager `__init__`); the public names still
    import, each from its module, when asked for."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import elmo_bilm, elmo_bilm.utils.checks\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "assert 'Elmo' in dir(elmo_bilm) and 'ALIASES' in dir(elmo_bilm)\n"
        "from elmo_bilm import Elmo\n"
        "assert 'torch' in sys.modules and Elmo.__module__ == 'elmo_bilm.dropins.allennlp'\n"
        "assert elmo_bilm.Elmo is Elmo\n"
        "elmo_bilm.no_such_name\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stderr.strip().splitlines()[-1] == (
        "AttributeError: module 'elmo_bilm' has no attribute 'no_such_name'"
    ), result.stderr


def test_an_alias_imported_first_is_the_home_module_in_a_fresh_interpreter() -> None:
    """`import elmo_bilm.simple_elmo` before anything else of the package: one module under both
    names, its classes' `__module__` the home's (so that pickles name the home)."""
    import subprocess
    import sys

    code = (
        "import sys, pickle\n"
        "import elmo_bilm.simple_elmo as old\n"
        "import elmo_bilm.dropins.simple_elmo as new\n"
        "assert old is new and sys.modules['elmo_bilm.simple_elmo'] is new\n"
        "assert old.ElmoModel.__module__ == 'elmo_bilm.dropins.simple_elmo'\n"
        "from elmo_bilm.elmo import ElmoEmbedder as E\n"
        "assert pickle.loads(pickle.dumps(E)) is E\n"
        "import elmo_bilm.nothing_here\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "No module named 'elmo_bilm.nothing_here'" in result.stderr, result.stderr


def test_top_level_names() -> None:
    for name in (
        "Elmo",
        "ElmoEmbedder",
        "batch_to_ids",
        "BiLm",
        "load_bilm_tf",
        "export_bilm_tf",
        "read_options",
        "FormatError",
        "ELMoCharacterMapper",
        "read_embeddings",
        "DEFAULT_OPTIONS_FILE",
        "DEFAULT_WEIGHT_FILE",
        "DEFAULT_BATCH_SIZE",
    ):
        assert hasattr(elmo_bilm, name), name


def test_console_scripts_and_spacy_entry_points_load() -> None:
    scripts = {
        e.name: e for e in entry_points(group="console_scripts") if e.value.startswith("elmo_bilm")
    }
    assert set(scripts) >= {"elmo-embed", "elmo-export-onnx", "elmo-embed-corpus", "elmo-convert"}
    for entry in scripts.values():
        assert callable(entry.load())
    for group in ("spacy_factories", "spacy_architectures"):
        loaded = [e.load() for e in entry_points(group=group) if e.value.startswith("elmo_bilm")]
        assert loaded and all(callable(f) for f in loaded)


# The layers, lowest first: a module imports only from its own folder or a lower layer (no
# circle between folders, no arrow back up). The root's documented paths sit above their homes.
LAYERS = {
    "utils": 0,
    "model": 1,
    "formats": 2,
    "sources": 3,
    "runtime": 3,
    "integrations": 5,
    "dropins": 5,
    "cli": 6,
    "__init__": 7,
}


def _place(module: str) -> str:
    """`elmo_bilm.sources.resolver` -> "sources"; `elmo_bilm` -> "__init__"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_imports_run_down_the_layers_only() -> None:
    import ast

    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT.parent).with_suffix("")
        module = ".".join(relative.parts).removesuffix(".__init__")
        # the old paths sit with the root, above their homes
        place = _place(module) if module not in {"elmo_bilm", *elmo_bilm.ALIASES} else "__init__"
        assert place in LAYERS, f"{path}: a folder the layers do not know"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                names = [node.module if node.module != "elmo_bilm" else names[1]] if names else []
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if not name.startswith("elmo_bilm.") or _place(name) == place:
                    continue
                target = _place(name)
                if target in LAYERS and LAYERS[target] >= LAYERS[place]:
                    wrong.append(f"{module} ({place}) imports {name} ({target})")
    assert not wrong, "\n".join(wrong)


def test_the_aliases_under_runpy_find_spec_and_reload_in_a_fresh_interpreter() -> None:
    """`python -m OLD` ran into `'_AliasFinder' object has no attribute 'get_code'`; a spec
    found before the import had no origin; every `importlib.reload(elmo_bilm)` appended one
    more finder to `sys.meta_path` (now there is no finder: the old paths are files)."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "elmo_bilm.precision"], capture_output=True, text=True
    )
    assert run.returncode == 0 and run.stderr == "", run.stderr
    code = (
        "import importlib, importlib.util, sys\n"
        "spec = importlib.util.find_spec('elmo_bilm.simple_elmo')\n"
        "assert spec.origin.endswith('simple_elmo.py'), spec.origin\n"
        "assert spec.name == 'elmo_bilm.simple_elmo'\n"
        "import elmo_bilm\n"
        "for _ in range(3):\n"
        "    importlib.reload(elmo_bilm)\n"
        "finders = [f for f in sys.meta_path if type(f).__name__ == '_AliasFinder']\n"
        "assert not finders, finders\n"
        "import elmo_bilm.simple_elmo as old, elmo_bilm.dropins.simple_elmo as new\n"
        "assert old is new and new.__spec__.name == 'elmo_bilm.dropins.simple_elmo'\n"
        "import elmo_bilm.nothing_here\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "No module named 'elmo_bilm.nothing_here'" in result.stderr, result.stderr
