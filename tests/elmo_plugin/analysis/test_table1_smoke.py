"""`elmo-table1 --scale smoke`: its shipped slices, its data variables reaching the runs, NER only
with CoNLL-2003, the table's label (training stubbed; the measured run is in docs/table1.md)."""

import json
import os
from fnmatch import fnmatch
from pathlib import Path

import pytest
import tomllib

from elmo_plugin.analysis import table1
from tests.conftest import REPO_ROOT
from tests.elmo_plugin.analysis.test_table1 import FakeTraining

SMOKE = table1.SCALES["smoke"]


def _files(value: str) -> list:
    """The files a data variable's value stands for (SNLI's `FOLDER/SPLIT`: its three files)."""
    path = Path(value)
    if path.suffix:
        return [path]
    return [path.parent / f"{prefix}.{path.name}" for prefix in ("s1", "s2", "labels")]


def test_every_smoke_slice_is_shipped_small_and_listed_in_the_readme():
    readme = (table1.SMOKE_DIR / "README.md").read_text()
    globs = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["elmo_plugin"]
    shipped = [p for task in SMOKE.values() for v in task.data.values() for p in _files(v)]
    shipped.append(table1.SMOKE_WIKIPEDIA)
    assert len(shipped) == 5 * 3 + 2 * 3 + 1  # five tasks' splits (SNLI: 3 files each), Wikipedia
    for path in shipped:
        assert path.is_file() and path.stat().st_size > 0, path
        relative = path.relative_to(table1.SMOKE_DIR.parents[1]).as_posix()
        assert any(fnmatch(relative, pattern) for pattern in globs), relative  # in the wheel
        name = path.relative_to(table1.SMOKE_DIR).as_posix()
        assert f"`{name}`" in readme or f"`{name.rsplit('/', 1)[0]}/*.{path.suffix[1:]}`" in readme
    total = sum(p.stat().st_size for p in table1.SMOKE_DIR.rglob("*") if p.is_file())
    assert total < 3_000_000  # a few MB at most
    assert "ner" not in {t for t, s in SMOKE.items() if s.data}  # CoNLL-2003 is not shipped
    assert all(s.overrides["trainer.num_epochs"] == 2 for s in SMOKE.values())


@pytest.fixture
def no_conll2003(monkeypatch):
    for name in ("ELMO_PLUGIN_DATA", *table1.CONLL2003_VARIABLES):
        monkeypatch.delenv(name, raising=False)


def test_ner_joins_the_smoke_table_only_with_conll2003(no_conll2003, monkeypatch):
    assert table1.scale_tasks("smoke") == ["squad", "snli", "srl", "coref", "sst"]
    assert table1.scale_tasks("cpu") == list(table1.TASKS)
    with pytest.raises(ValueError, match="CONLL2003_TRAIN, CONLL2003_DEV, CONLL2003_TEST"):
        table1.scale_tasks("smoke", ["ner"])
    conll = REPO_ROOT.parent / "shared" / "data" / "conll2003"
    if not conll.is_dir():
        pytest.skip("no CoNLL-2003 here")
    for name, split in zip(table1.CONLL2003_VARIABLES, ("eng.train", "eng.testa", "eng.testb")):
        monkeypatch.setenv(name, str(conll / split))
    assert "ner" in table1.scale_tasks("smoke")


def test_the_smoke_runs_read_the_shipped_slices_and_their_own_word_vectors(
    tmp_path, no_conll2003, monkeypatch
):
    built = []

    def vectors(serialization_dir, tasks):
        built.append(list(tasks))
        return {"SST_WORD_VECTORS": str(tmp_path / "w2v_lower_300d.txt.gz")}

    monkeypatch.setattr(table1, "build_smoke_vectors", vectors)
    monkeypatch.setenv("SST_TRAIN", "/elsewhere/train.txt")  # the scale's data wins for its runs
    vectors_before = os.environ.get("SST_WORD_VECTORS")
    seen = []

    def training(run_dir: Path, config_text: str, overrides, env) -> None:
        assert os.environ["SST_TRAIN"] == "/elsewhere/train.txt"  # passed to the run, not set here
        seen.append({k: env.get(k) for k in ("SST_TRAIN", "SST_TEST", "SST_WORD_VECTORS")})
        assert json.loads(overrides) == SMOKE["sst"].overrides
        # FakeTraining checks the cpu scale's SST cap: give it that
        FakeTraining()(run_dir, config_text, json.dumps({"trainer.num_epochs": 12}))

    result = table1.run_table(str(tmp_path / "smoke"), "smoke", [1], ["sst"], train_run=training)
    assert built == [["sst"]] and len(seen) == 2  # both rows
    for env in seen:
        assert env["SST_TRAIN"] == str(table1.SMOKE_DIR / "sst" / "train.txt")
        assert env["SST_TEST"] == str(table1.SMOKE_DIR / "sst" / "test.txt")
        assert env["SST_WORD_VECTORS"] == str(tmp_path / "w2v_lower_300d.txt.gz")
    assert os.environ["SST_TRAIN"] == "/elsewhere/train.txt"  # never changed
    assert os.environ.get("SST_WORD_VECTORS") == vectors_before
    assert result["note"] == table1.SMOKE_NOTE
    assert [row["task"] for row in result["table"]] == ["sst"]
    text = table1.markdown(result["table"], "smoke", result["runs"])
    assert text.startswith(f"**{table1.SMOKE_NOTE}**")
    figure = table1.figure(result["table"], table1.SMOKE_NOTE)
    assert figure.axes[0].get_title() == table1.SMOKE_NOTE
