"""The two distributions: `elmo-bilm` (the torch-only core, packaging/elmo-bilm) and `elmo_plugin`
(depends on it). Built as wheels, the core installs into a fresh virtual environment from a local
wheel folder with `--no-index` and runs there without AllenNLP; installed from the wheels (not
editable), the default TokenEmbedder and `allennlp elmo-embed` work outside the checkout."""

import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path
from typing import Dict, List

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from elmo_plugin.common.config_env import data_defaults

pytestmark = pytest.mark.slow

CORE_DEPENDENCIES = {"torch", "numpy", "h5py", "tqdm"}


def run_ok(command: List[str], **kwargs) -> str:
    """Run `command` (a subprocess, 10 minutes at most), assert it succeeded, return its stdout."""
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def wheels(tmp_path_factory, repo_root) -> Dict[str, Path]:
    """Both wheels, built from a copy of the sources (an in-tree build leaves build/ behind)."""
    out = tmp_path_factory.mktemp("wheels")
    source = out / "source"
    (source / "packaging").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(repo_root / name, source / name)
    # not the checkout's in-place fused cell (`make install`): the wheel build compiles its own
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "_fused_cell_*.so")
    packaging = (
        "packaging/elmo-bilm",
        "packaging/elmo-bilm-wikipedia-1024",
        "packaging/elmo-bilm-wikipedia-1024-256",
    )
    for name in ("elmo_bilm", "elmo_plugin", "training_config", *packaging):
        shutil.copytree(repo_root / name, source / name, ignore=ignore, symlinks=True)
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w"]
    command = [*pip, str(out / "dist"), *(str(source / name) for name in packaging), str(source)]
    run_ok(command, cwd=out)
    (core,) = (out / "dist").glob("elmo_bilm-*.whl")
    (larger,) = (out / "dist").glob("elmo_bilm_wikipedia_1024-*.whl")
    (gpu,) = (out / "dist").glob("elmo_bilm_wikipedia_1024_256-*.whl")
    (plugin,) = (out / "dist").glob("elmo_plugin-*.whl")
    return {"core": core, "larger": larger, "larger_256": gpu, "plugin": plugin}


def metadata(wheel: Path) -> List[str]:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(name).decode().splitlines()


def core_requirements(wheel: Path) -> List[Requirement]:
    """The core wheel's requirements outside its extras."""
    lines = [line.split(":", 1)[1] for line in metadata(wheel) if line.startswith("Requires-Dist:")]
    return [Requirement(line) for line in lines if "extra ==" not in line]


def test_core_wheel_holds_the_core_and_the_shipped_biLM(wheels, repo_root):
    names = set(zipfile.ZipFile(wheels["core"]).namelist())
    for name in ("options.json", "weights.hdf5", "vocab.txt"):
        assert f"elmo_bilm/pretrained/wikipedia/{name}" in names
    # one biLM: the larger one is a distribution of its own, and the core wheel stays small
    assert not any("wikipedia_1024" in name for name in names)
    assert wheels["core"].stat().st_size < 25 * 2**20
    for key, package in (
        ("larger", "elmo_bilm_wikipedia_1024"),
        ("larger_256", "elmo_bilm_wikipedia_1024_256"),
    ):
        larger = set(zipfile.ZipFile(wheels[key]).namelist())
        for name in ("options.json", "weights.hdf5", "vocab.txt", "__init__.py"):
            assert f"{package}/{name}" in larger
        assert "Requires-Dist: elmo-bilm==0.2.0" in metadata(wheels[key])
    assert "elmo_bilm/model/bilm.py" in names and "elmo_bilm/runtime/onnx.py" in names
    # every module of the checkout's core, the mirrored APIs' folder included (the packages are
    # listed by hand in packaging/elmo-bilm/pyproject.toml)
    core = repo_root / "elmo_bilm"
    modules = {
        p.relative_to(repo_root).as_posix()
        for p in core.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert modules <= names, sorted(modules - names)
    assert "elmo_bilm/dropins/allennlp.py" in modules
    assert "elmo_bilm/model/fused_cell.c" in names
    if sys.platform == "linux" and platform.machine() == "x86_64" and shutil.which("cc"):
        # the fused LSTM cell, compiled by the wheel build once per instruction set it runs at
        for variant in ("avx2", "avx512"):
            assert any(
                name.startswith(f"elmo_bilm/model/_fused_cell_{variant}.") and name.endswith(".so")
                for name in names
            ), variant
    assert {
        "elmo_bilm/integrations/spacy_configs/ner_cnn.cfg",
        "elmo_bilm/integrations/spacy_configs/ner_elmo.cfg",
    } <= names
    assert not any(
        name.startswith(("elmo_plugin/", "tests/", "elmo_benchmarks/")) for name in names
    )
    assert {r.name for r in core_requirements(wheels["core"])} == CORE_DEPENDENCIES
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    scripts = zipfile.ZipFile(wheels["core"]).read(entry_points).decode()
    assert "elmo-embed = elmo_bilm.cli.scripts:embed" in scripts
    assert "elmo-export-onnx = elmo_bilm.cli.scripts:export_onnx" in scripts


def test_plugin_wheel_depends_on_the_core_at_the_same_version(wheels, repo_root):
    names = set(zipfile.ZipFile(wheels["plugin"]).namelist())
    assert "elmo_plugin/tasks/sst/models/bcn.py" in names
    # the configs ship with it (the checkout's training_config/, linked as elmo_plugin/configs)
    configs = {n for n in names if n.startswith("elmo_plugin/configs/")}
    shipped = {f"elmo_plugin/configs/{p.name}" for p in (repo_root / "training_config").iterdir()}
    assert configs == shipped and "elmo_plugin/configs/snli_esim_elmo.jsonnet" in configs
    assert not any(name.startswith(("elmo_bilm/", "tests/", "elmo_benchmarks/")) for name in names)
    versions = [
        tomllib.loads(path.read_text())["project"]["version"]
        for path in (repo_root / "pyproject.toml", repo_root / "packaging/elmo-bilm/pyproject.toml")
    ]
    assert versions[0] == versions[1]
    assert f"Requires-Dist: elmo-bilm=={versions[0]}" in metadata(wheels["plugin"])


def installed_closure(names: set) -> List[importlib.metadata.Distribution]:
    """The installed distributions `names` need, their own requirements included."""
    found: Dict[str, importlib.metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        found[name] = importlib.metadata.distribution(name)
        for line in found[name].requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(found.values())


def test_core_wheel_runs_in_a_fresh_venv_without_allennlp(wheels, tmp_path, repo_root):
    """`pip install --no-index --find-links` of the core wheel alone, into a venv that sees only
    the core's dependencies (this venv's copies, linked: nothing is downloaded): `Elmo`,
    `ElmoEmbedder` and the `elmo-embed` script work there, and AllenNLP is absent."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    deps = tmp_path / "deps"
    deps.mkdir()
    for dist in installed_closure(CORE_DEPENDENCIES):
        for top in {Path(str(f)).parts[0] for f in dist.files or [] if ".." not in str(f)}:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (deps / top).exists():
                (deps / top).symlink_to(source)
    site = run_ok(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    ).strip()
    Path(site, "core_dependencies.pth").write_text(f"{deps}\n")
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # --isolated: not this machine's pip configuration (its find-links hold other torch builds);
    # --no-deps: torch's own metadata asks for a newer setuptools than any venv here has, and
    # pip's resolver would then look for other torch versions; the core's declared dependencies
    # are checked against what the venv sees instead
    install = [str(python), "-m", "pip", "--isolated", "install", "--no-index", "--no-deps"]
    install += ["--find-links", str(wheels["core"].parent), "elmo-bilm"]
    run_ok(install, env=clean)
    versions = "import importlib.metadata as m, json, sys; "
    versions += "print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))"
    found = json.loads(run_ok([str(python), "-c", versions, *CORE_DEPENDENCIES], env=clean))
    for requirement in core_requirements(wheels["core"]):
        assert requirement.specifier.contains(found[requirement.name]), (requirement, found)
    code = (
        "import importlib.util, sys\n"
        "assert importlib.util.find_spec('allennlp') is None\n"
        "assert importlib.util.find_spec('elmo_plugin') is None\n"
        "import elmo_bilm\n"
        f"assert elmo_bilm.__file__.startswith({site!r}), elmo_bilm.__file__\n"
        "from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids\n"
        "elmo = Elmo(None, None, 2, dropout=0.0)\n"
        "out = elmo(batch_to_ids([['a', 'fresh', 'venv']]))\n"
        "vectors = ElmoEmbedder('wikipedia').embed_sentence(['a', 'fresh', 'venv'])\n"
        "print(tuple(out['elmo_representations'][1].shape), vectors.shape)\n"
        "assert 'allennlp' not in sys.modules\n"
    )
    stdout = run_ok([str(python), "-c", code], cwd=tmp_path, env=clean)
    assert stdout.split() == ["(1,", "3,", "128)", "(3,", "3,", "128)"]
    (tmp_path / "in.txt").write_text("a fresh venv\n")
    embed = [str(env_dir / "bin" / "elmo-embed"), "in.txt", "out.hdf5"]
    run_ok(embed, cwd=tmp_path, env=clean)
    import h5py

    with h5py.File(tmp_path / "out.hdf5", "r") as out:
        assert out["0"].shape == (3, 3, 128)


def test_installed_wheels_embed_with_the_shipped_biLM(wheels, tmp_path, repo_root):
    target = tmp_path / "site"
    install = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--target",
        str(target),
        str(wheels["core"]),
        str(wheels["plugin"]),
    ]
    run_ok(install)
    environment = {**os.environ, "PYTHONPATH": str(target)}
    for name in data_defaults(Path("unused")):  # as on a machine without the bundled data
        environment.pop(name, None)
    code = (
        "import elmo_bilm, elmo_plugin, torch\n"
        f"assert elmo_plugin.__file__.startswith({str(target)!r}), elmo_plugin.__file__\n"
        f"assert elmo_bilm.__file__.startswith({str(target)!r}), elmo_bilm.__file__\n"
        "from allennlp.common import Params\n"
        "from allennlp.modules.elmo import batch_to_ids\n"
        "from allennlp.modules.token_embedders import TokenEmbedder\n"
        "embedder = TokenEmbedder.from_params(Params({'type': 'elmo_plugin_token_embedder'})).eval()\n"
        "print(tuple(embedder(batch_to_ids([['a', 'shipped', 'biLM']])).shape))\n"
    )
    stdout = run_ok([sys.executable, "-c", code], cwd=tmp_path, env=environment)
    assert stdout.split()[-3:] == ["(1,", "3,", "128)"]
    (tmp_path / "in.txt").write_text("a shipped biLM\n")
    (tmp_path / ".allennlp_plugins").write_text("elmo_plugin\n")
    allennlp = [sys.executable, "-m", "allennlp", "elmo-embed", "in.txt", "out.hdf5"]
    run_ok(allennlp, cwd=tmp_path, env=environment)
    import h5py

    with h5py.File(tmp_path / "out.hdf5", "r") as out:
        assert out["0"].shape == (3, 3, 128) and json.loads(out["sentence_to_index"][0]) == {
            "a shipped biLM": "0"
        }


def fresh_venv_with_this_venvs_packages(root: Path) -> Path:
    """A new virtual environment that sees this one's third-party packages (linked through a
    .pth file: nothing is downloaded), but not elmo_bilm or elmo_plugin; returns its python."""
    venv.create(root / "venv", with_pip=True)
    python = root / "venv" / "bin" / "python"
    ours = ("elmo_bilm", "elmo_plugin", "__editable__", "pip", "setuptools", "_distutils_hack")
    deps = root / "deps"
    deps.mkdir()
    here = Path(next(p for p in sys.path if p.endswith("site-packages")))
    for entry in here.iterdir():
        name = entry.name.lower().replace("-", "_")
        if not name.startswith(ours) and not name.endswith(".pth") and name != "__pycache__":
            (deps / entry.name).symlink_to(entry)
    site = run_ok([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    Path(site.strip(), "this_venvs_packages.pth").write_text(f"{deps}\n")
    return python


def test_the_installed_world(wheels, tmp_path):
    """Both wheels in a fresh venv, run from an empty folder with no checkout beside it: a
    packaged config trains by name on data named by its variables, a plugin subcommand is found
    through ~/.allennlp/plugins and through `elmo-plugin` without one, and elmo-embed runs; the
    package sets no data default."""
    python = fresh_venv_with_this_venvs_packages(tmp_path)
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    clean = {k: v for k, v in clean.items() if not k.startswith(("ELMO", "CONLL2003", "SNLI"))}
    install = [str(python), "-m", "pip", "--isolated", "install", "--no-index", "--no-deps"]
    run_ok([*install, str(wheels["core"]), str(wheels["larger"]), str(wheels["plugin"])], env=clean)
    work, home = tmp_path / "empty", tmp_path / "home"
    work.mkdir()
    (home / ".allennlp").mkdir(parents=True)
    (home / ".allennlp" / "plugins").write_text("elmo_plugin\n")
    env = {**clean, "HOME": str(home)}
    where = run_ok(
        [str(python), "-c", "import elmo_plugin; print(elmo_plugin.__file__)"], cwd=work, env=env
    )
    assert where.startswith(str(tmp_path / "venv")), where
    # no data folder known: the config's first dataset is named
    train = [str(python), "-m", "allennlp", "train", "conll2003_crf_tagger_elmo", "-s", "out"]
    result = subprocess.run(train, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode != 0 and "is not set" in result.stderr.strip().splitlines()[-1]
    conll = Path(os.environ["ELMO_PLUGIN_DATA"]) / "conll2003"
    data = {
        f"CONLL2003_{split}": str(conll / name)
        for split, name in (("TRAIN", "eng.train"), ("DEV", "eng.testa"), ("TEST", "eng.testb"))
    }
    few = {"dataset_reader.max_instances": 16, "data_loader.batch_sampler.batch_size": 8}
    few["trainer.num_epochs"] = 1
    run_ok(
        [*train, "-o", json.dumps(few), "--include-package", "elmo_plugin"],
        cwd=work,
        env={**env, **data},
    )
    metrics = json.loads((work / "out" / "metrics.json").read_text())
    assert "test_f1-measure-overall" in metrics and metrics["training_reg_loss"] > 0
    help_text = run_ok([str(python), "-m", "allennlp", "elmo-table1", "--help"], cwd=work, env=env)
    assert "--baselines-from" in help_text
    # the plugin's console script finds its subcommands with no plugins file (an empty HOME)
    (tmp_path / "bare_home").mkdir()
    bare = {**env, "HOME": str(tmp_path / "bare_home")}
    listed = run_ok(
        [str(tmp_path / "venv" / "bin" / "elmo-plugin"), "elmo-config"], cwd=work, env=bare
    )
    assert "snli_esim_elmo" in listed.split()
    (work / "in.txt").write_text("an installed world\n")
    run_ok(
        [str(tmp_path / "venv" / "bin" / "elmo-embed"), "in.txt", "out.hdf5", "--all"],
        cwd=work,
        env=env,
    )
    import h5py

    with h5py.File(work / "out.hdf5", "r") as out:
        assert out["0"].shape == (3, 3, 128)
    embed = [str(tmp_path / "venv" / "bin" / "elmo-embed"), "in.txt", "big.hdf5", "--top"]
    run_ok([*embed, "--options-file", "wikipedia_1024"], cwd=work, env=env)  # by name
    with h5py.File(work / "big.hdf5", "r") as out:
        assert out["0"].shape == (3, 256)
    assert not (work / "training_config").exists() and not list(work.glob("*.jsonnet"))
