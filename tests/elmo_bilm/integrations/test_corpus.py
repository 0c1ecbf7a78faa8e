"""`elmo-embed-corpus` on a local Ray (2 CPUs) and Parquet output: equal to `elmo-embed`, resumed
after a kill, a dead worker retried, float16, malformed lines, the missing extra."""

import importlib.metadata
import json
import logging
import os
import subprocess
import sys
import threading
import time

import h5py
import numpy
import pytest

from elmo_bilm import read_embeddings
from elmo_bilm.cli.embed_corpus import main
from elmo_bilm.formats.bilm_tf import load_bilm_tf
from elmo_bilm.integrations.corpus import embed_corpus, plan
from elmo_bilm.runtime.engine import Layers, embed_file
from elmo_bilm.utils.files import FormatError
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

ray = pytest.importorskip("ray")

WORDS = "the cat sat on a mat while dogs ran far away from home".split()


def write_corpus(folder, files=2, lines=23):
    """Sentences of 1 to 13 tokens (different lengths batch differently from the file order)."""
    folder.mkdir()
    for f in range(files):
        rows = [" ".join(WORDS[: 1 + (7 * i + f) % len(WORDS)]) for i in range(lines)]
        (folder / f"part{f}.txt").write_text("\n".join(rows) + "\n")
    return folder


@pytest.fixture(scope="module")
def local_ray():
    # the local Ray on the loopback address: no test reaches beyond 127.0.0.1
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    yield
    ray.shutdown()


def by_key(path):
    return {(os.path.basename(r.file), r.line): r for r in read_embeddings(str(path))}


@pytest.mark.slow
def test_the_corpus_equals_elmo_embed_and_float16_stays_within_its_rounding(tmp_path, local_ray):
    corpus = write_corpus(tmp_path / "in")
    out = tmp_path / "out"
    options = {"options_file": OPTIONS_FILE, "weight_file": WEIGHT_FILE}
    summary = embed_corpus([str(corpus)], str(out), **options, shard_lines=5, num_workers=2)
    assert (summary["shards"], summary["sentences"], summary["embedded_shards"]) == (10, 46, 10)
    rows = by_key(out)
    bilm = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE)
    for f in range(2):
        source = corpus / f"part{f}.txt"
        embed_file(bilm, str(source), str(tmp_path / f"{f}.hdf5"), batch_size=7)
        with h5py.File(tmp_path / f"{f}.hdf5", "r") as reference:
            for line in range(1, 24):
                row = rows[(source.name, line)]
                assert row.tokens == source.read_text().splitlines()[line - 1].split()
                assert_float32_close(row.embeddings, reference[str(line - 1)][()], NETWORK)
    # float16: each value within half a float16 unit in the last place of the float32 one
    half = tmp_path / "half"
    embed_corpus([str(corpus)], str(half), **options, shard_lines=5, dtype="float16")
    for key, row in by_key(half).items():
        assert row.embeddings.dtype == numpy.float16
        exact = rows[key].embeddings
        assert numpy.all(numpy.abs(row.embeddings - exact) <= numpy.spacing(exact.astype("f2")))
    # a fixed Eq. (1) mix is gamma * softmax(w) . layers
    mixed = tmp_path / "mixed"
    layers = Layers(mix=(0.0, 1.0, 2.0), gamma=0.5)
    embed_corpus([str(corpus)], str(mixed), **options, shard_lines=50, layers=layers)
    weights = numpy.exp([0.0, 1.0, 2.0]) / numpy.exp([0.0, 1.0, 2.0]).sum()
    for key, row in by_key(mixed).items():
        expected = 0.5 * numpy.tensordot(weights, rows[key].embeddings, axes=1)
        assert_float32_close(row.embeddings, expected.astype("f4"), NETWORK)


def kill_every_process_of(marker: str) -> None:
    """SIGKILL every process whose environment holds `ELMO_TEST_RUN=marker` and wait for them:
    the command and what it started, Ray's workers too, which run in process groups of their
    own (one that outlives the command can still finish a shard)."""
    import psutil

    marked = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("ELMO_TEST_RUN") == marker:
                process.kill()
                marked.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    psutil.wait_procs(marked, timeout=60)


@pytest.mark.slow
def test_a_killed_run_resumes_with_the_missing_shards_only(tmp_path):
    """Kill the command and every process it started (SIGKILL) after its first shards, re-run
    it: the finished shards are kept as they were, the rest done, and the result equals an
    uninterrupted run's."""
    corpus = write_corpus(tmp_path / "in", files=1, lines=600)
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    arguments = [str(corpus), "--shard-lines", "10", "--batch-size", "4"]
    arguments += ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    command = [sys.executable, "-m", "elmo_bilm.cli.embed_corpus", *arguments]
    process = subprocess.Popen(
        [*command, str(resumed)],
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ELMO_TEST_RUN": str(tmp_path)},
    )
    deadline = time.time() + 240
    while time.time() < deadline and len(list(resumed.glob("*.parquet"))) < 3:
        time.sleep(0.05)
    kill_every_process_of(str(tmp_path))
    process.wait()
    kept = {p.name: p.stat().st_ino for p in resumed.glob("*.parquet")}
    assert 3 <= len(kept) < 60, "the kill came too late to test a resume"
    assert main([*arguments[:1], str(resumed), *arguments[1:]]) == 0
    summary = json.loads((resumed / "_summary.json").read_text())
    assert summary["embedded_shards"] == 60 - len(kept)
    assert {p.name: p.stat().st_ino for p in resumed.glob("*.parquet") if p.name in kept} == kept
    assert not list(resumed.glob("*.partial"))
    assert main([*arguments[:1], str(whole), *arguments[1:]]) == 0
    first, second = by_key(whole), by_key(resumed)
    assert first.keys() == second.keys() and len(first) == 600
    for key, row in first.items():
        # to float32 rounding: the killed run's workers ran in another process environment
        assert_float32_close(row.embeddings, second[key].embeddings, NETWORK)
    # a resume with other arguments is refused, naming them
    with pytest.raises(ValueError, match="other dtype"):
        embed_corpus(
            [str(corpus)],
            str(resumed),
            options_file=OPTIONS_FILE,
            weight_file=WEIGHT_FILE,
            dtype="float16",
        )


@pytest.mark.slow
def test_a_worker_that_dies_is_restarted_and_its_shard_redone(tmp_path, local_ray):
    """SIGKILL a biLM actor once its first shard is written: Ray restarts it, its shard is done
    again, and the run completes with every shard, equal to a run nobody killed."""
    import psutil

    corpus = write_corpus(tmp_path / "in", files=1, lines=400)
    options = {"options_file": OPTIONS_FILE, "weight_file": WEIGHT_FILE, "batch_size": 4}
    out, killed = tmp_path / "out", []

    def kill_a_worker() -> None:
        deadline = time.time() + 240
        while time.time() < deadline and not list(out.glob("*.parquet")):
            time.sleep(0.05)
        for process in psutil.process_iter(["cmdline"]):
            if "ShardEmbedder" in " ".join(process.info["cmdline"] or []):
                process.kill()
                killed.append(process.pid)
                return

    watcher = threading.Thread(target=kill_a_worker)
    watcher.start()
    summary = embed_corpus([str(corpus)], str(out), **options, shard_lines=10, num_workers=2)
    watcher.join()
    assert killed, "no worker was found to kill"
    assert len(list(out.glob("*.parquet"))) == summary["shards"] == 40
    assert not list(out.glob("*.partial"))
    reference = tmp_path / "reference"
    embed_corpus([str(corpus)], str(reference), **options, shard_lines=50)
    first, second = by_key(reference), by_key(out)
    assert first.keys() == second.keys() and len(first) == 400
    for key, row in first.items():
        assert_float32_close(row.embeddings, second[key].embeddings, NETWORK)


def test_a_malformed_line_is_named_or_skipped_and_counted(tmp_path):
    corpus = tmp_path / "in"
    corpus.mkdir()
    (corpus / "a.txt").write_bytes(b"one two\n\nthree\n\xff\xfe bad\nfour five\n")
    with pytest.raises(FormatError, match=r"a.txt:2: empty line"):
        plan([str(corpus)], 2)
    shards, skipped = plan([str(corpus)], 2, skip_bad_lines=True)
    assert skipped == 2 and [s.skipped for s in shards] == [[2], [4], []]
    assert [s.tokens for s in shards] == [2, 1, 2]
    (corpus / "a.txt").write_bytes(b"one\n\xff\n")
    with pytest.raises(FormatError, match=r"a.txt:2: not UTF-8"):
        plan([str(corpus)], 10)


def test_the_missing_extra_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    (tmp_path / "a.txt").write_text("one two\n")
    assert main([str(tmp_path / "a.txt"), str(tmp_path / "out")]) == 1
    version = importlib.metadata.version("elmo-bilm")
    assert capsys.readouterr().err.strip() == (
        "elmo-embed-corpus: error: elmo-embed-corpus needs Ray Data: pip install "
        f'"$(ls dist/elmo_bilm-{version}-*.whl)[ray]" (the wheel `make wheels` builds in the '
        "checkout, named for its platform; `make install` there installs every extra)"
    )


def test_elmo_embed_writes_parquet_equal_to_its_hdf5(tmp_path):
    source = tmp_path / "s.txt"
    source.write_text("the cat sat\na dog ran far away\nhome\n")
    bilm = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE)
    embed_file(bilm, str(source), str(tmp_path / "o.hdf5"), batch_size=2)
    embed_file(
        bilm, str(source), str(tmp_path / "o.parquet"), batch_size=2, output_format="parquet"
    )
    rows = list(read_embeddings(str(tmp_path / "o.parquet")))
    assert sorted(r.line for r in rows) == [1, 2, 3]
    with h5py.File(tmp_path / "o.hdf5", "r") as reference:
        for row in rows:
            numpy.testing.assert_array_equal(row.embeddings, reference[str(row.line - 1)][()])


def test_elmo_embed_flags_reach_the_output(tmp_path):
    """--format parquet, --dtype float16, --mix/--gamma and --top change what is written."""
    from elmo_bilm.cli.embed import main as embed_main

    source = tmp_path / "s.txt"
    source.write_text("the cat sat\na dog ran far away\n")
    files = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    everything, mixed = tmp_path / "all.parquet", tmp_path / "mix.parquet"
    assert embed_main([str(source), str(everything), "--format", "parquet", *files]) == 0
    flags = ["--format", "parquet", "--dtype", "float16", "--mix", "0", "1", "2", "--gamma", "0.5"]
    assert embed_main([str(source), str(mixed), *flags, *files]) == 0
    weights = numpy.exp([0.0, 1.0, 2.0]) / numpy.exp([0.0, 1.0, 2.0]).sum()
    layers = {row.line: row.embeddings for row in read_embeddings(str(everything))}
    for row in read_embeddings(str(mixed)):
        assert row.embeddings.dtype == numpy.float16 and row.embeddings.ndim == 2
        expected = 0.5 * numpy.tensordot(weights, layers[row.line], axes=1)
        assert numpy.allclose(row.embeddings, expected, rtol=1e-3, atol=1e-3)  # float16: 2**-11
    top = tmp_path / "top.hdf5"
    assert embed_main([str(source), str(top), "--top", "--dtype", "float16", *files]) == 0
    with h5py.File(top, "r") as out:
        assert out["0"].dtype == numpy.float16
        numpy.testing.assert_allclose(out["0"][()], layers[1][-1], rtol=1e-3, atol=1e-3)


@pytest.mark.slow
def test_a_small_corpus_is_split_for_the_workers_and_ray_noise_filtered(
    tmp_path, local_ray, capfd, caplog
):
    """30 lines, `--num-workers 2` (one 1,000-line shard before): two shards of 15, one line
    saying so; Ray Data's actor-pool line from its C++ core and its INFO lines filtered."""
    caplog.set_level(logging.INFO, logger="elmo_bilm.integrations.corpus")
    corpus = write_corpus(tmp_path / "in", files=1, lines=30)
    arguments = [str(corpus), str(tmp_path / "out"), "--num-workers", "2", "--top"]
    arguments += ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    assert main(arguments) == 0
    summary = json.loads((tmp_path / "out" / "_summary.json").read_text())
    assert (summary["shards"], summary["sentences"]) == (2, 30)
    err = capfd.readouterr().err
    assert "30 lines in 2 shards of 15 (not 1000) so that 2 workers get work" in caplog.text
    for noise in ("core_worker.cc", "Starting execution", "Progress bars disabled", "minimum"):
        assert noise not in err, err
    # a resume with another worker count keeps the run's shards
    assert main([*arguments[:3], "1", *arguments[4:]]) == 0
    assert json.loads((tmp_path / "out" / "_summary.json").read_text())["embedded_shards"] == 0


def test_lines_for_workers_gives_each_worker_a_shard(tmp_path):
    from elmo_bilm.integrations.corpus import lines_for_workers

    one = write_corpus(tmp_path / "one", files=1, lines=30)
    two = write_corpus(tmp_path / "two", files=2, lines=23)
    tiny = write_corpus(tmp_path / "tiny", files=1, lines=3)
    assert lines_for_workers(plan([str(one)], 1000)[0], 1000, 2) == 15
    assert lines_for_workers(plan([str(one)], 1000)[0], 10, 2) == 10  # never above --shard-lines
    size = lines_for_workers(plan([str(two)], 1000)[0], 1000, 5)  # each file sharded on its own
    assert size == 9 and len(plan([str(two)], size)[0]) == 6
    assert lines_for_workers(plan([str(tiny)], 1000)[0], 1000, 4) == 1  # fewer lines than workers


def run_options(**extra):
    return {"options_file": OPTIONS_FILE, "weight_file": WEIGHT_FILE, "shard_lines": 10, **extra}


@pytest.mark.slow
def test_a_truncated_shard_is_named_by_read_embeddings_and_redone_on_resume(
    tmp_path, local_ray, caplog
):
    """A shard cut short (a copy that stopped midway): `read_embeddings` says which file in one
    line (not pyarrow's ArrowInvalid), and a resume checks each shard's footer and row count
    against the manifest and redoes it."""
    corpus = write_corpus(tmp_path / "in", files=1, lines=20)
    out = tmp_path / "out"
    assert embed_corpus([str(corpus)], str(out), **run_options())["embedded_shards"] == 2
    whole = by_key(out)
    shard = out / "part0.txt-00001.parquet"
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"part0.txt-00001.parquet: .*truncated") as error:
        list(read_embeddings(str(out)))
    assert "\n" not in str(error.value)
    summary = embed_corpus([str(corpus)], str(out), **run_options())
    assert summary["embedded_shards"] == 1
    assert "part0.txt-00001.parquet: truncated or damaged" in caplog.text
    assert "embedding it again" in caplog.text
    again = by_key(out)
    assert again.keys() == whole.keys()
    for key, row in whole.items():
        assert_float32_close(row.embeddings, again[key].embeddings, NETWORK)


@pytest.mark.slow
def test_a_resume_over_other_inputs_or_another_bilm_is_refused(tmp_path, local_ray, monkeypatch):
    """The manifest records what the shards were computed from: biLM files replaced at the same
    paths, an input edited (same line count), the same relative input path from another working
    folder: each resume refused in one line naming what changed and `--overwrite`; with it, the
    run starts over."""
    import shutil

    from elmo_bilm.sources.shipped import SHIPPED_OPTIONS_FILE, SHIPPED_WEIGHT_FILE

    bilm = tmp_path / "bilm"
    bilm.mkdir()
    shutil.copy(OPTIONS_FILE, bilm / "options.json")
    shutil.copy(WEIGHT_FILE, bilm / "weights.hdf5")
    files = {"options_file": str(bilm / "options.json"), "weight_file": str(bilm / "weights.hdf5")}
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    write_corpus(first / "in", files=1, lines=12)
    write_corpus(second / "in", files=1, lines=12)
    (second / "in" / "part0.txt").write_text("another corpus here\n" * 12)
    out = tmp_path / "out"
    monkeypatch.chdir(first)
    assert embed_corpus(["in/part0.txt"], str(out), shard_lines=10, **files)["shards"] == 2
    # (c) the same relative path from another working folder: another corpus
    monkeypatch.chdir(second)
    with pytest.raises(ValueError, match=r"other inputs .*second/in/part0.txt.*--overwrite"):
        embed_corpus(["in/part0.txt"], str(out), shard_lines=10, **files)
    # (b) an input edited, the same line count
    monkeypatch.chdir(first)
    text = (first / "in" / "part0.txt").read_text()
    (first / "in" / "part0.txt").write_text(text.replace("cat", "dog", 1))
    with pytest.raises(ValueError, match=r"other inputs .*first/in/part0.txt.*--overwrite"):
        embed_corpus(["in/part0.txt"], str(out), shard_lines=10, **files)
    (first / "in" / "part0.txt").write_text(text)
    # (a) the biLM's files replaced at the same paths
    shutil.copy(SHIPPED_OPTIONS_FILE, bilm / "options.json")
    shutil.copy(SHIPPED_WEIGHT_FILE, bilm / "weights.hdf5")
    with pytest.raises(ValueError, match=r"other biLM .*--overwrite") as error:
        embed_corpus(["in/part0.txt"], str(out), shard_lines=10, **files)
    assert "\n" not in str(error.value)
    # --overwrite starts over: every shard from the new biLM
    arguments = ["in/part0.txt", str(out), "--shard-lines", "10", "--overwrite", "--top"]
    arguments += ["--options-file", files["options_file"], "--weight-file", files["weight_file"]]
    assert main(arguments) == 0
    summary = json.loads((out / "_summary.json").read_text())
    assert summary["embedded_shards"] == 2
    assert all(row.embeddings.ndim == 2 for row in read_embeddings(str(out)))


@pytest.mark.timeout(300)  # Ray itself would wait forever; 5x a quiet start
def test_ray_requests_the_cluster_cannot_meet_are_one_line(tmp_path, local_ray, capfd):
    """On the 2-CPU local Ray without a GPU: `--gpus-per-worker 1`, and `--cpus-per-worker 4
    --num-workers 2`, are one line each naming what was asked and what the cluster has (Ray
    itself waits forever)."""
    corpus = write_corpus(tmp_path / "in", files=1, lines=4)
    arguments = [str(corpus), str(tmp_path / "out"), "--options-file", str(OPTIONS_FILE)]
    arguments += ["--weight-file", str(WEIGHT_FILE)]
    assert main([*arguments, "--gpus-per-worker", "1"]) == 1
    err = capfd.readouterr().err.strip().splitlines()[-1]
    assert err == (
        "elmo-embed-corpus: error: --gpus-per-worker 1 asks for 1 GPU per worker; "
        "the Ray cluster has no GPU (2 CPUs)"
    )
    arguments[1] = str(tmp_path / "out2")
    assert main([*arguments, "--cpus-per-worker", "4", "--num-workers", "2"]) == 1
    err = capfd.readouterr().err.strip().splitlines()[-1]
    assert err == (
        "elmo-embed-corpus: error: --cpus-per-worker 4 --num-workers 2 asks for 8 CPUs "
        "(4 per worker); the Ray cluster has 2 CPUs (no GPU)"
    )


def test_corpus_options_are_one_checked_object_the_command_and_keywords_fill(tmp_path):
    """`CorpusOptions` checks its fields when made (a bad dtype or size is one `UsageError`,
    keyword overrides to `embed_corpus` too), keeps the biLM's paths as str (the manifest's JSON),
    and is what the command's flags parse into; a path where the options object goes is refused."""
    import argparse
    from pathlib import Path

    from elmo_bilm.cli.embed_corpus import add_arguments, options_of
    from elmo_bilm.integrations.corpus import CorpusOptions
    from elmo_bilm.utils.files import UsageError

    assert CorpusOptions(options_file=Path("o.json")).options_file == "o.json"
    assert CorpusOptions(options_file="").options_file is None
    with pytest.raises(UsageError, match="dtype must be one of"):
        CorpusOptions(dtype="int8")
    for field in ("batch_size", "shard_lines", "num_workers", "cpus_per_worker"):
        with pytest.raises(UsageError, match=f"{field} must be a whole number >= 1"):
            CorpusOptions(**{field: 0})
    with pytest.raises(UsageError, match="gpus_per_worker must be a finite number >= 0"):
        CorpusOptions(gpus_per_worker=-1)
    with pytest.raises(UsageError, match="whole number >= 1"):  # before any input is read
        embed_corpus([str(tmp_path / "none.txt")], str(tmp_path / "out"), shard_lines=0)
    with pytest.raises(TypeError, match="options_file= and weight_file="):
        embed_corpus([str(tmp_path / "none.txt")], str(tmp_path / "out"), OPTIONS_FILE)
    flags = ["in", "out", "--top", "--dtype", "float16", "--batch-size", "3", "--max-tokens", "9"]
    flags += ["--shard-lines", "7", "--num-workers", "2", "--cpus-per-worker", "4"]
    flags += ["--gpus-per-worker", "0.5", "--address", "auto", "--skip-bad-lines", "--overwrite"]
    flags += ["--precision", "int8", "--options-file", "o.json", "--weight-file", "w.hdf5"]
    parsed = options_of(add_arguments(argparse.ArgumentParser()).parse_args(flags))
    assert parsed == CorpusOptions(
        options_file="o.json",
        weight_file="w.hdf5",
        layers=Layers("top"),
        dtype="float16",
        batch_size=3,
        max_tokens=9,
        shard_lines=7,
        num_workers=2,
        cpus_per_worker=4,
        gpus_per_worker=0.5,
        address="auto",
        skip_bad_lines=True,
        precision="int8",
        overwrite=True,
    )
    assert options_of(add_arguments(argparse.ArgumentParser()).parse_args(["in", "out"])) == (
        CorpusOptions()
    )
