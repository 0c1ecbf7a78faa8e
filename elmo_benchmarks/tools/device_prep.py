"""Prepare this checkout for a lent GPU machine, so that a lease starts measuring at once.

The device machine has no package index and receives the working tree (tracked files and
untracked ones git does not ignore) up to 64 MiB per call; its `/tmp` stays while the machine is
warm (30 s after a call), a folder in the tree does not. This script:

1. removes the tracked biLM weight files from the working tree (46 MB `wikipedia_1024`, 48 MB
   `wikipedia_1024_256`, 17 MB shipped `wikipedia`; `git checkout -- elmo_bilm/pretrained
   packaging` restores them), so that
   wheels travel beside a 2 MiB tree. **Runs that read these weights from this checkout (the
   editable install) fail to start meanwhile**: start none until they are back;
2. downloads, as Python 3.12 manylinux wheels, every package of this project's pins and their
   dependencies that the device image lacks (`DEVICE_IMAGE`, read from the device tool's
   KINDS.md, 2026-11-17) or holds in another version that matters (`DEVICE_VERSIONS`), except
   what no GPU check needs (`NOT_ON_DEVICE`), and splits them into folders `.whl1/`, `.whl2/`, ...
   (ignored by git through `.git/info/exclude`) that each travel within the limit;
3. packs the bundled data the checks and the task configs read (with `--table1`, the tasks'
   data alone) into `.devdata/data.tar.xz`;
4. prints the device calls: each installs one folder into `/tmp/siteK` and merges it into
   `/tmp/site` (`pip --target` skips a folder that exists, so two installs into one target lose
   the second's part of a namespace package such as `google`); the last also runs `gpu_check`
   and the sweeps; then, with the shipped weights restored here, `gpu_tasks`. With `--table1`
   instead: the wheels, the data, the biLM and the vectors in as few calls as fit the limit, the
   last one starting the runs (in a new process session, which outlives a call while the
   machine stays warm) and waiting for them, then the call that waits again if they go on.

    python -m elmo_benchmarks.tools.device_prep            # then call the device tool with the printed commands
"""

import argparse
import gzip
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Sequence, Set, Tuple

from elmo_benchmarks.common import DATA, REPO_ROOT
from elmo_bilm.sources import published

# the task configs' word-vector variables: empty there (random vectors of the same shapes)
TASK_PREFIXES = ("CONLL2003", "SST", "SNLI", "SQUAD", "SRL", "COREF")

# The device image's packages (the device tool's KINDS.md, "Python packages already there").
DEVICE_IMAGE = set(
    """absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs
    botorch build certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage
    cuda-bindings cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn
    einops equinox etils execnet filelock flatbuffers flax fonttools formulaic frozenlist fsspec
    gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna imageio
    iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib
    kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml
    markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack
    multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda
    numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
    nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse
    nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13
    nvidia-nvtx onnx onnx-ir onnxruntime onnxscript opencv-python-headless optax opt-einsum
    opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy
    portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments
    pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock
    pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich
    sacrebleu safetensors scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece
    sentence-transformers setuptools shellingham simplejson six sortedcontainers statsmodels sympy
    tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm
    tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm
    transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop
    wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp""".split()
)
# Image versions that differ from the pins in a way that breaks AllenNLP 2.10 (its code imports
# transformers' AdamW, removed in 4.50; huggingface-hub >= 1.0 dropped HfFolder).
DEVICE_VERSIONS = {"transformers": "5.17.0", "tokenizers": "0.23.2", "huggingface-hub": "1.33.0"}
# gensim serves only elmo-word-vectors (the Table 1 baselines' vectors), not the GPU checks
NOT_ON_DEVICE = {"gensim"}
LARGE_TRACKED = (
    REPO_ROOT
    / "packaging"
    / "elmo-bilm-wikipedia-1024"
    / "elmo_bilm_wikipedia_1024"
    / "weights.hdf5",
    REPO_ROOT
    / "packaging"
    / "elmo-bilm-wikipedia-1024-256"
    / "elmo_bilm_wikipedia_1024_256"
    / "weights.hdf5",
    REPO_ROOT / "elmo_bilm" / "pretrained" / "wikipedia" / "weights.hdf5",
)
LIMIT = 64 * 2**20
DEVICE_CORES = 16  # the device machines' CPU cores, shared by the runs of one call
# the bundled data folders gpu_check, gpu_sweep and gpu_tasks read (ELMO_PLUGIN_DATA there)
DATA_FOLDERS = (
    "elmo_fixture", "conll2003", "sst", "snli_eval", "squad", "propbank_ewt", "litbank"
)  # fmt: skip
ENV = (
    "export PYTHONPATH=/tmp/site:$PWD HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 NLTK_DATA=/tmp/nltk "
    "ELMO_PLUGIN_DATA=/tmp/d PYTHONUNBUFFERED=1"
)

# a device call's step that installs the wheel folder `.whl{k}` (pip's --target skips a folder
# that exists, so each folder goes to its own target, merged into /tmp/site)
INSTALL = (
    "python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site{k} "
    ".whl{k}/*.whl && cp -a -n /tmp/site{k}/. /tmp/site/"
)
UNPACK_DATA = (
    "mkdir -p /tmp/d /tmp/nltk/tokenizers/punkt && tar -xJf .devdata/data.tar.xz -C /tmp/d"
)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> Dict[str, str]:
    """`name -> version` of requirements.txt and requirements-allennlp.txt."""
    found = {}
    for file in ("requirements.txt", "requirements-allennlp.txt"):
        for line in (REPO_ROOT / file).read_text().splitlines():
            match = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s#]+)", line)
            if match:
                found[canonical(match[1])] = match[2]
    return found


def needed(roots: Iterable[str]) -> Dict[str, str]:
    """The roots and their installed dependencies (this environment's versions), minus what the
    device image holds in a version that works."""
    todo, seen, wanted = list(roots), set(), {}
    while todo:
        name = canonical(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency not installed here
        if name in NOT_ON_DEVICE:
            continue
        if name not in DEVICE_IMAGE or name in DEVICE_VERSIONS:
            wanted[name] = version
        for requirement in metadata.requires(name) or []:
            if "extra ==" in requirement:
                continue
            todo.append(re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0])
    return wanted


def download(packages: Dict[str, str], folder: Path) -> Set[str]:
    """Python 3.12 manylinux (or pure) wheels of `packages` into `folder`, building pure-Python
    ones from source where PyPI has none; returns what could not be had."""
    folder.mkdir(exist_ok=True)
    platforms = [f"manylinux_2_{n}_x86_64" for n in (17, 24, 27, 28, 31, 34, 35)]
    platforms += ["manylinux2014_x86_64", "manylinux1_x86_64", "any"]
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    base += ["--python-version", "3.12", "--implementation", "cp", "-d", str(folder), "-q"]
    for platform in platforms:
        base += ["--platform", platform]
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder)]
    missing = set()
    for name, version in sorted(packages.items()):
        if subprocess.run([*base, f"{name}=={version}"], capture_output=True).returncode == 0:
            continue
        # sdist-only packages (fairscale, word2number) are pure Python: build their wheel here
        if subprocess.run([*build, f"{name}=={version}"], capture_output=True).returncode != 0:
            missing.add(f"{name}=={version}")
    return missing


def travelling_bytes() -> int:
    """Bytes of the tracked and untracked-not-ignored files, as the device tool sends them."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    paths = [REPO_ROOT / p.decode() for p in listed if p]
    return sum(p.stat().st_size for p in paths if p.is_file())


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under `folder`."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def split(paths, budget: int, size_of: Callable[[Path], int] = lambda path: path.stat().st_size):
    """Groups of paths (wheels, or folders sized by `size_of`; largest first, first fit) of at
    most `budget` bytes each."""
    groups: list = []
    for path in sorted(paths, key=lambda p: -size_of(p)):
        size = size_of(path)
        for group in groups:
            if group[0] + size <= budget:
                group[0] += size
                group[1].append(path)
                break
        else:
            groups.append([size, [path]])
    return [files for _, files in groups]


def pack_data(target: Path, folders: Sequence[str] = DATA_FOLDERS) -> int:
    """The bundled data `folders` (by default those the GPU checks read, about 6 MB) as one xz
    tarball; returns its size."""
    target.parent.mkdir(exist_ok=True)
    subprocess.run(["tar", "-cJf", str(target), "-C", str(DATA), *folders], check=True)
    return target.stat().st_size


def task_data_folders(tasks: Sequence[str]) -> List[str]:
    """The bundled data folders that the Table 1 runs of `tasks` read: the first part of their
    `PREFIX_TRAIN`, `_DEV` and `_TEST` defaults (e.g. `litbank` for coreference)."""
    from elmo_plugin.analysis import table1
    from elmo_plugin.common.config_env import data_defaults

    root = Path("/data")
    defaults = data_defaults(root)
    folders = set()
    for task in tasks:
        prefix = table1.TASKS[task].word_vectors[: -len("_WORD_VECTORS")]
        for split_name in ("TRAIN", "DEV", "TEST"):
            path = Path(defaults[f"{prefix}_{split_name}"].split("#")[0])
            folders.add(path.relative_to(root).parts[0])
    return sorted(folders)


def merged_calls(
    steps: Dict[Path, str], budget: int, last: str, size_of: Callable[[Path], int] = folder_bytes
) -> List[Tuple[List[str], str]]:
    """The folders of `steps` (each with the command that puts it in place on the device) carried
    in the fewest calls of at most `budget` bytes each (`split`), as `(carry, command)` pairs; the
    command `last`, which needs them all, ends the last call, or is a call of its own where it
    would take that call past the tool's 2,000 characters. A failed step ends its call there."""
    calls = [
        ([folder.name for folder in group], " && ".join(steps[folder] for folder in group))
        for group in split(list(steps), budget, size_of)
    ]
    if calls and len(calls[-1][1]) + len(last) + 12 <= 2000:
        carry, command = calls.pop()
        calls.append((carry, f"{command} || exit 1; {last}"))
    else:
        calls.append(([], last))
    return calls


def into_folders(files: List[Path], budget: int, prefix: str) -> List[List[Path]]:
    """`files` moved into folders `PREFIX1/`, `PREFIX2/`, ... of this checkout (the old ones
    replaced), each within `budget` bytes (`split`)."""
    for old in REPO_ROOT.glob(f"{prefix}*"):
        shutil.rmtree(old)
    groups = split(files, budget)
    for k, group in enumerate(groups, start=1):
        folder = REPO_ROOT / f"{prefix}{k}"
        folder.mkdir()
        for path in group:
            shutil.move(str(path), folder / path.name)
    return groups


def task_words(task: str) -> Set[str]:
    """The words of `task`'s word-embedding namespace (`tokens`): the vocabulary AllenNLP builds
    for its + ELMo config at the full size (train, dev and test), a superset of any Table 1 run's."""
    from allennlp.common import Params
    from allennlp.training.util import make_vocab_from_params

    import elmo_plugin  # noqa: F401  (the config's readers and ext_vars)
    from elmo_plugin.analysis import table1

    params = Params.from_file(str(table1.CONFIG_DIR / table1.TASKS[task].config))
    with tempfile.TemporaryDirectory() as folder:
        vocab = make_vocab_from_params(params, f"{folder}/run", print_statistics=False)
    return set(vocab.get_token_to_index_vocabulary("tokens"))


def trim_vectors(source: str, output: Path, words: Set[str]) -> int:
    """The lines of the vectors file `source` whose word is in `words`, gzipped into `output`;
    returns how many. AllenNLP's `Embedding` reads only its vocabulary's words from the file and
    draws the others from their mean and spread, so a run whose vocabulary is within `words`
    builds the same matrix from the trimmed file as from the whole one
    (`tests/elmo_benchmarks/test_gpu_sweep.py` checks this with AllenNLP)."""
    opener = gzip.open if source.endswith(".gz") else open
    kept = 0
    with opener(source, "rt", encoding="utf-8") as lines, gzip.open(output, "wt") as out:
        for line in lines:
            if line.split(" ", 1)[0] in words:
                out.write(line)
                kept += 1
    return kept


def bilm_paths(name: str) -> List[str]:
    """The options and weights of the project's biLM `name` (`published.LOCAL`, through the
    resolver), as paths in this checkout, for `git show` while the weights are out of the tree."""
    from elmo_bilm.sources.resolver import resolve_bilm

    resolved = resolve_bilm(name)
    files = (str(resolved.options_file), str(resolved.weight_file))
    return [Path(file).resolve().relative_to(REPO_ROOT.resolve()).as_posix() for file in files]


def table1_payload(
    tasks: Sequence[str], budget: int, bilm: str = "wikipedia_1024_256"
) -> List[List[Path]]:
    """`.devbilm/` (the shipped biLM `bilm`, read from git) and `.devvecK/` folders of each
    task's word vectors trimmed to its words, each folder within `budget` bytes."""
    from elmo_plugin.analysis import table1
    from elmo_plugin.data.word_vectors import vector_defaults

    carried = REPO_ROOT / ".devbilm"
    shutil.rmtree(carried, ignore_errors=True)
    carried.mkdir()
    for name, path in zip(("options.json", "weights.hdf5"), bilm_paths(bilm)):
        blob = subprocess.run(
            ["git", "show", f"HEAD:{path}"],
            cwd=REPO_ROOT,
            capture_output=True,
            check=True,
        ).stdout
        (carried / name).write_bytes(blob)
    with tempfile.TemporaryDirectory() as folder:
        staging = Path(folder)
        for task in tasks:
            variable = table1.TASKS[task].word_vectors
            kept = trim_vectors(
                vector_defaults()[variable], staging / f"{variable}.txt.gz", task_words(task)
            )
            print(f"{task}: {kept} vectors kept for {variable}")
        return into_folders(list(staging.glob("*.txt.gz")), budget, ".devvec")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep-large-weights", action="store_true", help="skip step 1")
    parser.add_argument(
        "--table1",
        nargs="+",
        metavar="TASK",
        help="also carry what Table 1 runs of these tasks need (the biLM `--bilm`, their "
        "word vectors trimmed to their words), and print the calls that train them",
    )
    parser.add_argument(
        "--bilm",
        choices=sorted(published.LOCAL),
        default="wikipedia_1024_256",
        help="with --table1: the shipped biLM of the + ELMo row",
    )
    parser.add_argument(
        "--runs-from",
        nargs="+",
        default=[],
        metavar="TABLE1_JSON",
        help="with --table1: elmo-table1 records in this checkout (they travel with it) whose runs "
        "are not trained again and count in the tabulation, e.g. earlier leases' baselines",
    )
    parser.add_argument(
        "--at-once",
        type=int,
        default=0,
        help="with --table1: the runs trained at a time on the GPU (default 0: all at once)",
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3], help="with --table1")
    parser.add_argument(
        "--scale", default="cpu", help="with --table1: elmo-table1's scale (cpu, cpu_long, full)"
    )
    parser.add_argument(
        "--rows",
        nargs="+",
        choices=["baseline", "elmo"],
        default=["elmo"],
        help="with --table1: the rows to train (+ ELMo from `--bilm`, the baseline)",
    )
    parser.add_argument(
        "--run-seconds",
        type=int,
        default=520,
        help="with --table1: each run stops after this long (the runs outlive a call; a lease "
        "holds 900 s of device time in all)",
    )
    args = parser.parse_args()
    if args.table1:
        from elmo_plugin.analysis import table1

        if args.scale not in table1.SCALES:
            parser.error(f"--scale {args.scale}: not one of {sorted(table1.SCALES)}")
    start = time.perf_counter()
    exclude = REPO_ROOT / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    ignored = exclude.read_text() if exclude.exists() else ""
    with open(exclude, "a") as handle:
        for line in ("/.whl*/", "/.devdata/", "/.devbilm/", "/.devvec*/"):
            if line not in ignored:
                handle.write(line + "\n")
    for large in LARGE_TRACKED if not args.keep_large_weights else ():
        if large.exists():
            large.unlink()
            print(f"removed {large.relative_to(REPO_ROOT)} from the working tree")
    tree = travelling_bytes()
    budget = LIMIT - tree - 2**20  # what one call carries beside the tree
    target = REPO_ROOT / ".devdata" / "data.tar.xz"
    if args.table1:
        payload = table1_payload(args.table1, budget, args.bilm)
        data = pack_data(target, task_data_folders(args.table1))
        wheel_budget = budget
    else:
        payload, data = [], pack_data(target)
        wheel_budget = budget - data  # the last wheel folder travels with the data
    packages = needed(pins())
    with tempfile.TemporaryDirectory() as download_dir:
        missing = download(packages, Path(download_dir))
        groups = into_folders(list(Path(download_dir).glob("*.whl")), wheel_budget, ".whl")
    print(f"{len(packages)} packages, {len(missing)} without a wheel: {sorted(missing)}")
    print(
        f"tree {tree / 2**20:.1f} MiB, data {data / 2**20:.1f} MiB; {len(groups)} wheel folder(s) "
        f"within {wheel_budget / 2**20:.1f} MiB each"
    )
    print(f"prepared in {time.perf_counter() - start:.0f} s; the device calls, in order, each")
    print("within 30 s of the last (the machine and its /tmp go back when idle):")
    if args.table1:
        print_table1_calls(
            len(groups),
            len(payload),
            budget,
            args.table1,
            args.seeds,
            args.scale,
            args.rows,
            args.run_seconds,
            args.runs_from,
            args.at_once,
        )
        print("  here, after the lease: git checkout -- packaging elmo_bilm/pretrained")
    else:
        for k in range(1, len(groups)):
            print(f'  carry [".whl{k}"]: ' + INSTALL.format(k=k))
        last = len(groups)
        print(
            f'  carry [".whl{last}", ".devdata"]: '
            + INSTALL.format(k=last)
            + f" && {UNPACK_DATA} && {ENV} && python3 -m elmo_benchmarks.tools.gpu_check --device cuda; "
            "python3 -m elmo_benchmarks.gpu_sweep --device cuda; "
            "python3 -m elmo_benchmarks.gpu_sweep --device cuda --dtype bfloat16"
        )
        print("  here: git checkout -- elmo_bilm/pretrained (the task configs' default biLM), then")
        vectors = " ".join(f"{task}_WORD_VECTORS=" for task in TASK_PREFIXES)
        print(f"  carry []: {ENV} {vectors} && python3 -m elmo_benchmarks.gpu_tasks --device cuda")
        print("  here, after the lease: git checkout -- packaging")
    if wheel_budget < 8 * 2**20:
        sys.exit("the tree alone leaves under 8 MiB for wheels: leave more files behind")


def _table1_parts(tasks: Sequence[str], scale: str, runs_from: Sequence[str] = ()):
    """The environment every Table 1 device call sets, and its `elmo-table1` command (with the
    `runs_from` records: their runs are skipped and tabulated)."""
    from elmo_plugin.analysis import table1

    variables = " ".join(
        f"{table1.TASKS[t].word_vectors}=/tmp/vec/{table1.TASKS[t].word_vectors}.txt.gz"
        for t in tasks
    )
    env = (
        "ln -sf /tmp/site/bin/allennlp /opt/torch/.venv/bin/allennlp; "
        f"{ENV} ELMO_OPTIONS_FILE=/tmp/bilm/options.json ELMO_WEIGHT_FILE=/tmp/bilm/weights.hdf5 "
        f"{variables}"
    )
    table = (
        f"python3 -m allennlp elmo-table1 -s /tmp/runs_{scale} --scale {scale} "
        "--include-package elmo_plugin" + "".join(f" --runs-from {path}" for path in runs_from)
    )
    return env, table


def _table1_wait(tasks: Sequence[str], seeds: Sequence[int], table: str) -> str:
    """Wait (at most 560 s, a call's 600 s less the rest) for the runs to end, then tabulate the
    finished ones into $OUT/table1/table1.json and pack the logs into $OUT/logs.tgz."""
    return (
        "for i in $(seq 560); do [ -e /tmp/t1_done ] && break; sleep 1; done; "
        f"{table} --no-train --tasks {' '.join(tasks)} --seeds {' '.join(map(str, seeds))} "
        "--output-dir $OUT/table1; tar -czf $OUT/logs.tgz /tmp/t1_*.log /tmp/runs_*/*/*.log"
    )


def table1_wait_call(
    tasks: Sequence[str], seeds: Sequence[int], scale: str = "cpu", runs_from: Sequence[str] = ()
) -> str:
    """A device call that waits for the runs `table1_call` started and writes the finished runs'
    records for `elmo-table1 --runs-from` here: call it again, within 30 s, while runs go on."""
    env, table = _table1_parts(tasks, scale, runs_from)
    return f"{env}; {_table1_wait(tasks, seeds, table)}"


def table1_call(
    tasks: Sequence[str],
    seeds: Sequence[int],
    scale: str = "cpu",
    rows: Sequence[str] = ("elmo",),
    seconds: int = 520,
    runs_from: Sequence[str] = (),
    at_once: int = 0,
) -> str:
    """The device call that starts the Table 1 runs of `tasks`, `rows` and `seeds` that the
    `runs_from` records do not hold (one `elmo-table1` each, stopped after `seconds`), `at_once`
    at a time (0: all; each with its share of the cores), in a new process session, which
    outlives the call while the machine stays warm, then does what `table1_wait_call` does. Runs
    longer than one call's 600 s go on through repeated wait calls. Runs that share a saturated
    GPU all slow down alike, so fewer at a time finish more runs before a lease ends."""
    env, table = _table1_parts(tasks, scale, runs_from)
    from elmo_plugin.analysis import sweep, table1

    rows_of = {sweep.BASELINE: "baseline", None: "elmo"}  # a record's placement -> its row
    done = {(t, rows_of[p], s) for t, p, s in table1.recorded_runs(runs_from)}
    todo = [
        f"{t}:{r}:{s}" for t in tasks for r in rows for s in seeds if (t, r, s) not in done
    ]  # fmt: skip
    at_once = min(at_once or len(todo), len(todo)) or 1
    threads = max(1, DEVICE_CORES // at_once)  # a share each
    launch = (
        f"for run in {' '.join(todo)}; do IFS=: read t r s <<< $run; "
        f"while [ $(jobs -rp | wc -l) -ge {at_once} ]; do wait -n; done; "
        f"OMP_NUM_THREADS={threads} timeout {seconds} {table} --cuda-device 0 "
        "--rows $r --tasks $t --seeds $s > /tmp/t1_$t$r$s.log 2>&1 & done; wait; "
        "touch /tmp/t1_done"
    )
    return (
        # `;`, not `&&`: an and-list before the `&` would put the exports in the background
        # subshell too, and the tabulation after it would run without them
        f"{env}; rm -f /tmp/t1_done; setsid bash -c '{launch}' > /dev/null 2>&1 & "
        + _table1_wait(tasks, seeds, table)
    )


def print_table1_calls(
    wheel_folders: int,
    vector_folders: int,
    budget: int,
    tasks: Sequence[str],
    seeds: Sequence[int],
    scale: str,
    rows: Sequence[str],
    seconds: int,
    runs_from: Sequence[str] = (),
    at_once: int = 0,
) -> None:
    """The calls that install the wheels and carry the data, the biLM and the vectors into /tmp,
    merged into as few calls of `budget` bytes as they fit (`merged_calls`), the last one ending
    with `table1_call`; then `table1_wait_call`."""
    steps = {REPO_ROOT / f".whl{k}": INSTALL.format(k=k) for k in range(1, wheel_folders + 1)}
    steps[REPO_ROOT / ".devdata"] = UNPACK_DATA
    steps[REPO_ROOT / ".devbilm"] = "mkdir -p /tmp/bilm && cp .devbilm/* /tmp/bilm/"
    for k in range(1, vector_folders + 1):
        steps[REPO_ROOT / f".devvec{k}"] = f"mkdir -p /tmp/vec && cp .devvec{k}/* /tmp/vec/"
    launch = table1_call(tasks, seeds, scale, rows, seconds, runs_from, at_once)
    for carry, command in merged_calls(steps, budget, launch):
        print(f"  carry {json.dumps(carry)}: {command}")
    print("  while runs go on (the last call's output lists them), each within 30 s of the last:")
    print("  carry []: " + table1_wait_call(tasks, seeds, scale, runs_from))


if __name__ == "__main__":
    main()
