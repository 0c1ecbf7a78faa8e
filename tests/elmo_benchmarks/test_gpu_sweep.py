"""The GPU benchmark's batch-size sweep and the device preparation, exercised on the CPU (CI has
no GPU): tiny sizes, every row's schema."""

import subprocess
from pathlib import Path
from unittest import mock

import pytest
import torch

from elmo_benchmarks import gpu_sweep
from elmo_benchmarks.tools import device_prep


@pytest.mark.slow
def test_sweep_measures_inference_and_training_at_each_batch_size(capsys):
    rows = gpu_sweep.main(
        [
            "--device",
            "cpu",
            "--config",
            "tiny",
            "--batch-sizes",
            "2",
            "4",
            "--batches",
            "1",
            "--num-samples",
            "0",
        ]
    )
    assert [(r["mode"], r["batch"]) for r in rows] == [
        ("inference", 2), ("training", 2), ("inference", 4), ("training", 4)
    ]  # fmt: skip
    assert all(r["tokens"] > 0 and r["memory"] > 0 and 0 < r["fraction"] < 1 for r in rows)
    assert "| inference | 4 |" in capsys.readouterr().out


@pytest.mark.slow
def test_the_bf16_sweep_runs_under_autocast_and_measures_the_bf16_matmul_rate():
    # the ceiling is measured in the asked dtype (a bf16 matmul on a CPU without bf16 units takes
    # minutes at the benchmark's 2048 x 2048, so it is replaced here by a fixed rate)
    peaks, autocast = [], []
    real_autocast = torch.autocast

    def recording_autocast(device_type, dtype):
        autocast.append(dtype)
        return real_autocast(device_type, dtype=dtype)

    with (
        mock.patch.object(gpu_sweep, "matmul_peak", lambda d, dtype: peaks.append(dtype) or 1e12),
        mock.patch.object(torch, "autocast", recording_autocast),
    ):
        rows = gpu_sweep.main(
            ["--device", "cpu", "--config", "tiny", "--batch-sizes", "2", "--batches", "1"]
            + ["--num-samples", "0", "--dtype", "bfloat16"]
        )
    assert peaks == [torch.bfloat16]
    assert autocast and set(autocast) == {torch.bfloat16}
    assert [r["mode"] for r in rows] == ["inference", "training"] and rows[1]["tokens"] > 0


def test_device_prep_carries_the_pins_the_image_lacks_in_groups_under_the_limit(tmp_path):
    wanted = device_prep.needed(device_prep.pins())
    assert "allennlp" in wanted and "transformers" in wanted  # missing / another version there
    assert "torch" not in wanted and "gensim" not in wanted  # in the image / not needed there
    sizes = {"a": 30, "b": 20, "c": 15, "d": 10}
    wheels = []
    for name, size in sizes.items():
        (tmp_path / f"{name}.whl").write_bytes(b"x" * size)
        wheels.append(tmp_path / f"{name}.whl")
    groups = device_prep.split(wheels, budget=40)
    assert sorted(w.name for g in groups for w in g) == sorted(f"{n}.whl" for n in sizes)
    assert all(sum(w.stat().st_size for w in g) <= 40 for g in groups) and len(groups) == 2


@pytest.mark.slow
def test_vectors_trimmed_to_a_tasks_words_give_allennlp_the_same_embedding(tmp_path):
    from allennlp.common import Params
    from allennlp.modules.token_embedders import Embedding
    from allennlp.training.util import make_vocab_from_params

    from elmo_plugin.analysis import table1

    words = device_prep.task_words("sst")
    params = Params.from_file(str(table1.CONFIG_DIR / table1.TASKS["sst"].config))
    vocab = make_vocab_from_params(params, str(tmp_path / "vocab"), print_statistics=False)
    assert words == set(vocab.get_token_to_index_vocabulary("tokens")) and "good" in words
    # a vectors file of the task's words (a third of them) and as many others, in mixed order
    generator = torch.Generator().manual_seed(0)
    inside = sorted(words)[::3]
    outside = [f"zz{k}" for k in range(len(inside))] + ["Good", "GOOD"]  # other casings too
    lines = [
        word + " " + " ".join(f"{v:.6f}" for v in torch.randn(4, generator=generator).tolist())
        for pair in zip(inside, outside)
        for word in pair
    ]
    whole = tmp_path / "whole.txt"
    whole.write_text("\n".join(lines) + "\n")
    kept = device_prep.trim_vectors(str(whole), tmp_path / "trimmed.txt.gz", words)
    assert kept == len(inside)

    def embedding(path) -> torch.Tensor:
        torch.manual_seed(1)  # the words the file lacks are drawn at random
        return Embedding(4, vocab=vocab, pretrained_file=str(path)).weight.detach()

    assert torch.equal(embedding(whole), embedding(tmp_path / "trimmed.txt.gz"))


def test_the_printed_table1_calls_train_the_scale_rows_and_seeds_asked_within_the_tools_limit():
    call = device_prep.table1_call(["snli", "coref"], [1, 2, 3], "cpu_long", ["baseline", "elmo"])
    wait = device_prep.table1_wait_call(["snli", "coref"], [1, 2, 3], "cpu_long")
    for command in (call, wait):
        assert len(command) <= 2000  # the device tool's limit on a command
        assert subprocess.run(["bash", "-n", "-c", command]).returncode == 0
        assert (
            "SNLI_WORD_VECTORS=/tmp/vec/" in command and "COREF_WORD_VECTORS=/tmp/vec/" in command
        )
        assert "-s /tmp/runs_cpu_long --scale cpu_long" in command
        assert "--no-train --tasks snli coref --seeds 1 2 3 --output-dir $OUT/table1" in command
    runs = [f"{t}:{r}:{s}" for t in ("snli", "coref") for r in ("baseline", "elmo") for s in "123"]
    assert f"for run in {' '.join(runs)}; do" in call and "--rows $r" in call
    assert "OMP_NUM_THREADS=1 " in call  # 12 runs share 16 cores
    # the runs outlive the call (a new session), each bounded; the call waits for them
    assert "setsid bash -c 'for run in snli:" in call and "timeout 520 " in call
    assert call.index("touch /tmp/t1_done") < call.index("[ -e /tmp/t1_done ]")
    assert "--cuda-device 0" not in wait and "setsid" not in wait
    default = device_prep.table1_call(["sst"], [3], seconds=700)
    assert "--scale cpu " in default and "for run in sst:elmo:3;" in default
    assert "OMP_NUM_THREADS=16 " in default and "timeout 700 " in default
    assert "--runs-from" not in default
    # earlier records reach every run (which then skips a recorded run) and the tabulation
    recorded = "docs/table1_long/snli_coref_baselines_h200.json"
    for command in (
        device_prep.table1_call(["coref"], [4], "cpu_long", ["baseline"], runs_from=[recorded]),
        device_prep.table1_wait_call(["coref"], [4], "cpu_long", runs_from=[recorded]),
    ):
        assert command.count(f"--include-package elmo_plugin --runs-from {recorded}") == (
            2 if "setsid" in command else 1
        )


def test_device_prep_passes_its_table1_options_to_the_printed_calls(tmp_path, monkeypatch, capsys):
    """`--scale`, `--rows`, `--seeds`, `--run-seconds`, `--runs-from` and `--bilm` reach the
    calls `main` prints or the payload, and only the tasks' data is packed (the downloads, the
    packing and the trimming stubbed: their parts are tested above)."""
    (tmp_path / ".git").mkdir()
    monkeypatch.setattr(device_prep, "REPO_ROOT", tmp_path)  # .git/info/exclude goes there
    monkeypatch.setattr(device_prep, "pins", lambda: {})
    monkeypatch.setattr(device_prep, "travelling_bytes", lambda: 0)
    carried, packed = [], []
    monkeypatch.setattr(
        device_prep,
        "table1_payload",
        lambda tasks, budget, bilm: carried.append(bilm) or [["vectors"]],
    )
    monkeypatch.setattr(
        device_prep, "pack_data", lambda target, folders=("all",): packed.append(folders) or 0
    )
    monkeypatch.setattr(device_prep, "needed", lambda pins: {})
    monkeypatch.setattr(device_prep, "download", lambda packages, folder: set())
    monkeypatch.setattr(device_prep, "into_folders", lambda files, budget, prefix: [[]])
    monkeypatch.setattr(device_prep, "folder_bytes", lambda folder: 2**20)
    argv = ["device_prep", "--keep-large-weights", "--table1", "snli", "--seeds", "2"]
    argv += ["--scale", "cpu_long", "--rows", "baseline", "--run-seconds", "700"]
    old = tmp_path / "old.json"
    old.write_text('{"runs": {"snli": [{"placement": "none", "seed": 1}]}}')
    argv += ["--bilm", "wikipedia_1024", "--runs-from", str(old)]
    monkeypatch.setattr("sys.argv", argv)
    device_prep.main()
    printed = capsys.readouterr().out
    assert carried == ["wikipedia_1024"] and packed == [["snli_eval"]]
    assert printed.count(f"--runs-from {old}") == 3
    assert (
        "timeout 700 python3 -m allennlp elmo-table1 -s /tmp/runs_cpu_long --scale cpu_long"
        in printed
    )
    assert "for run in snli:baseline:2; do" in printed
    # 4 MiB fit one call: the wheels, data, biLM and vectors travel with the launch
    (call,) = [line for line in printed.splitlines() if "setsid" in line]
    assert call.startswith('  carry [".whl1", ".devdata", ".devbilm", ".devvec1"]: ')
    assert ".devvec2" not in printed and "gpu_check" not in printed
    monkeypatch.setattr("sys.argv", argv[:-4] + ["--scale", "huge"])
    with pytest.raises(SystemExit):
        device_prep.main()
    assert "--scale huge: not one of" in capsys.readouterr().err


def test_carried_folders_travel_in_the_fewest_calls_the_launch_last(tmp_path):
    """First fit, largest first, within the budget; the launch ends the last call unless that
    call would pass the tool's 2,000 characters; a failed step ends its call before the launch."""
    sizes = {".whl1": 50, ".whl2": 48, ".devdata": 1, ".devbilm": 45, ".devvec1": 11}
    steps = {tmp_path / name: f"put {name}" for name in sizes}
    calls = device_prep.merged_calls(steps, 64, "launch", lambda folder: sizes[folder.name])
    assert [carry for carry, _ in calls] == [
        [".whl1", ".devvec1", ".devdata"], [".whl2"], [".devbilm"]
    ]  # fmt: skip
    assert calls[-1][1] == "put .devbilm || exit 1; launch"
    assert calls[0][1] == "put .whl1 && put .devvec1 && put .devdata"
    long = device_prep.merged_calls(steps, 64, "x" * 1990, lambda folder: sizes[folder.name])
    assert len(long) == 4 and long[-1] == ([], "x" * 1990)
    for _, command in calls:
        assert subprocess.run(["bash", "-n", "-c", command]).returncode == 0
    assert device_prep.task_data_folders(["coref", "squad"]) == ["litbank", "squad"]
    assert device_prep.task_data_folders(["ner", "srl"]) == ["conll2003", "propbank_ewt"]


def test_the_table1_launch_call_runs_and_tabulates_with_its_environment(tmp_path):
    """The launch call, run by bash with a stand-in `python3` that records what it was given:
    every run and the tabulation after them see the exports (an and-list before the call's `&`
    once sent the exports into the background with the runs, and the tabulation found no
    AllenNLP on the device); a run on record is not started; `at_once=1` starts each run after
    the last one ended, with all the cores."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "calls.txt"
    fake = bin_dir / "python3"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "start $PYTHONPATH|$ELMO_OPTIONS_FILE|$OMP_NUM_THREADS|$*" >> {record}\n'
        f'sleep 0.2; echo "end $*" >> {record}\n'
    )
    fake.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    old = tmp_path / "old.json"
    old.write_text('{"runs": {"snli": [{"placement": "none", "seed": 5}]}}')
    call = device_prep.table1_call(
        ["snli"], [4, 5, 6], "cpu_long", ["baseline"], seconds=30, runs_from=[str(old)], at_once=1
    )
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(out), "HOME": str(tmp_path)}
    try:
        subprocess.run(["bash", "-c", call], env=env, cwd=tmp_path, timeout=60, check=False)
        calls = record.read_text().splitlines()
    finally:
        for name in ("t1_done", "t1_snlibaseline4.log", "t1_snlibaseline6.log"):
            Path("/tmp", name).unlink(missing_ok=True)
    runs = [line for line in calls if "--cuda-device 0" in line]
    starts = [line for line in runs if line.startswith("start")]
    tables = [line for line in calls if line.startswith("start") and "--no-train" in line]
    assert len(starts) == 2 and "--rows baseline --tasks snli --seeds 4" in starts[0]
    assert "--seeds 6" in starts[1]
    assert [line.split()[0] for line in runs] == ["start", "end", "start", "end"]
    assert len(tables) == 1 and f"--output-dir {out}/table1" in tables[0]
    for line in starts + tables:
        assert line.startswith("start /tmp/site:") and "|/tmp/bilm/options.json|" in line
    assert all("|16|" in line for line in starts)
