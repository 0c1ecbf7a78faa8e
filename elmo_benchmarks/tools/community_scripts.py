"""Public ELMo scripts of four user communities, run on this package with only their import lines
switched (issue 68), and compared with the original library where it runs here.

`python -m elmo_benchmarks.tools.community_scripts FAMILY SCRIPT [options] [-- SCRIPT_ARGS...]`

- FAMILY: `elmoformanylangs`, `simple_elmo`, `seqvec` or `tfhub` (the table `IMPORTS` below).
- SCRIPT: a fetched copy of the script (never one in this repository); `--git-dir DIR` reads
  SCRIPT as a path inside that git directory at `--commit` (default HEAD) and reports the commit;
  `--block N` takes the Nth ```python block of a Markdown file (a README's usage example).
- `--fill OLD=NEW`: replaces the string literal OLD (a README's placeholder such as
  '/path/to/your/model/') by NEW; reported as the one change besides the imports.
- `--link NAME=TARGET`: a symbolic link NAME in the script's working folder (a fresh temporary
  folder), for a script that reads a model or data by a relative path.
- `--original-python PY` (and `--original-path DIR`, prepended to its PYTHONPATH, and
  `--original-env NAME=VALUE`, such as TF_USE_LEGACY_KERAS=1 for TensorFlow 2.16+): also run the
  unchanged script with the original library there and compare every recorded output.

Only the lines that `IMPORTS` matches change; `rewrite` checks that every other line is the
script's own. The script runs in a subprocess (this file, `child` mode, which imports only the
standard library and numpy, so that it runs in the original library's environment too) with the
family's API methods wrapped to record what each outermost call returns, in call order (`RECORD`):
the script's first call and its later calls (stateful libraries carry LSTM states from one to
the next). Prints one `BENCH {...}` line: whether each run finished, its exit code, the tail of
what it printed, the files it wrote, the number of recorded outputs, and the largest absolute and
relative (to the reference array's largest magnitude) difference per call.
"""

import argparse
import functools
import importlib
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy

REPO = Path(__file__).resolve().parents[2]

# family -> (pattern of a whole import line, replacement or None when this package has no
# replacement). Patterns match one logical line, any indentation.
IMPORTS: Dict[str, List[Tuple[str, Optional[str]]]] = {
    "elmoformanylangs": [
        (
            r"from elmoformanylangs import (?P<names>.+)",
            "from elmo_bilm.elmoformanylangs import {names}",
        ),
        (r"import elmoformanylangs", "import elmo_bilm.elmoformanylangs as elmoformanylangs"),
    ],
    "simple_elmo": [
        (r"from simple_elmo import (?P<names>.+)", "from elmo_bilm.simple_elmo import {names}"),
        (r"import simple_elmo", "import elmo_bilm.simple_elmo as simple_elmo"),
    ],
    "seqvec": [
        # SeqVec's own scripts use AllenNLP 0.9's ElmoEmbedder; bio_embeddings wraps it
        (
            r"from allennlp\.commands\.elmo import ElmoEmbedder",
            "from elmo_bilm.elmo import ElmoEmbedder",
        ),
        (
            r"from bio_embeddings\.embed(?:\.seqvec_embedder)? import SeqVecEmbedder",
            "from elmo_bilm.bio_embeddings import SeqVecEmbedder",
        ),
    ],
    "tfhub": [
        # elmo_bilm.tfhub offers `ElmoModule` (called as hub.Module's result is), no `hub`
        # object with a `Module` that takes a URL, and no TensorFlow session: no import line
        # switches these two
        (r"import tensorflow_hub as hub", None),
        (r"import tensorflow as tf", None),
    ],
}

# family -> {importable module of the original library: (ours, [Class.method, ...])}: the calls
# recorded, the original's module first
RECORD: Dict[str, Dict[str, Tuple[str, List[str]]]] = {
    "elmoformanylangs": {
        "elmoformanylangs": ("elmo_bilm.elmoformanylangs", ["Embedder.sents2elmo"])
    },
    "simple_elmo": {
        "simple_elmo": (
            "elmo_bilm.simple_elmo",
            ["ElmoModel.get_elmo_vectors", "ElmoModel.get_elmo_vector_average"],
        )
    },
    "seqvec": {
        "allennlp.commands.elmo": (
            "elmo_bilm.elmo",
            [
                "ElmoEmbedder.embed_batch",
                "ElmoEmbedder.embed_sentence",
                "ElmoEmbedder.embed_sentences",
            ],
        ),
        "bio_embeddings.embed": (
            "elmo_bilm.bio_embeddings",
            ["SeqVecEmbedder.embed", "SeqVecEmbedder.embed_batch", "SeqVecEmbedder.embed_many"],
        ),
    },
    "tfhub": {"tensorflow_hub": ("elmo_bilm.tfhub", ["ElmoModule.forward"])},
}


class UnswitchedImport(Exception):
    """An import line of the family's library that this package has no replacement for."""


def rewrite(source: str, family: str) -> Tuple[str, List[Tuple[int, str, str]]]:
    """`source` with the family's import lines switched, and the changes `(line number, old,
    new)`. Raises `UnswitchedImport` naming the lines without a replacement."""
    table = IMPORTS[family]
    lines = source.splitlines(keepends=True)
    changes: List[Tuple[int, str, str]] = []
    missing: List[str] = []
    for number, line in enumerate(lines, start=1):
        body = line.rstrip("\r\n")
        indent = body[: len(body) - len(body.lstrip())]
        code, comment = _split_comment(body.strip())
        for pattern, replacement in table:
            match = re.fullmatch(pattern, code)
            if not match:
                continue
            if replacement is None:
                missing.append(f"line {number}: {code}")
                break
            new = indent + replacement.format(**match.groupdict()) + comment
            changes.append((number, body, new))
            lines[number - 1] = new + line[len(body) :]
            break
    if missing:
        raise UnswitchedImport("; ".join(missing))
    result = "".join(lines)
    changed = {number for number, _, _ in changes}
    for number, (old, new) in enumerate(zip(source.splitlines(), result.splitlines()), start=1):
        assert old == new or number in changed, f"line {number} changed outside the table"
    return result, changes


def _split_comment(code: str) -> Tuple[str, str]:
    """An import line's code and its trailing `  # comment` (kept as written)."""
    if "#" not in code:
        return code, ""
    head, _, tail = code.partition("#")
    return head.rstrip(), "  #" + tail


def markdown_block(text: str, index: int) -> str:
    """The `index`th ```python block of a Markdown text, dedented (a list item's block)."""
    blocks = re.findall(r"^([ \t]*)```python[ \t]*\n(.*?)^[ \t]*```", text, re.S | re.M)
    if index >= len(blocks):
        raise SystemExit(f"--block {index}: the file has {len(blocks)} python blocks")
    indent, body = blocks[index]
    return "".join(
        line[len(indent) :] if line.startswith(indent) else line for line in body.splitlines(True)
    )


def read_script(path: str, git_dir: Optional[str], commit: str) -> Tuple[str, Optional[str]]:
    """The script's text and, read from a git directory, the commit it was read at."""
    if git_dir is None:
        return Path(path).read_text(encoding="utf-8"), None
    resolved = subprocess.run(
        ["git", "--git-dir", git_dir, "rev-parse", commit],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    text = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{resolved}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return text, resolved


def fill(source: str, fills: Sequence[str]) -> Tuple[str, List[str]]:
    """`source` with each string literal OLD of `OLD=NEW` replaced by NEW (quoted as found)."""
    notes = []
    for item in fills:
        old, _, new = item.partition("=")
        count = 0
        for quote in ("'", '"'):
            count += source.count(quote + old + quote)
            source = source.replace(quote + old + quote, quote + new + quote)
        if not count:
            raise SystemExit(f"--fill: no string literal {old!r} in the script")
        notes.append(f"{old!r} -> {new!r} ({count}x)")
    return source, notes


# ---- child mode: runs the script with the API's calls recorded (stdlib + numpy only) ----


def _arrays(value: Any) -> List[numpy.ndarray]:
    """The arrays of a returned value (an array, a tensor, or a list of them)."""
    if isinstance(value, (list, tuple)):
        return [array for item in value for array in _arrays(item)]
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, dict):
        return [array for key in sorted(value) for array in _arrays(value[key])]
    return [numpy.asarray(value)]


def _install_recorders(
    modules: Dict[str, List[str]], calls: List[Tuple[str, List[numpy.ndarray]]]
) -> None:
    """Wrap each `Class.method` of each importable module to append its outermost calls'
    results to `calls` (generators: each item as it is drawn)."""
    depth = [0]

    def wrap(name: str, method: Any) -> Any:
        @functools.wraps(method)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            try:
                result = method(*args, **kwargs)
            finally:
                depth[0] -= 1
            if depth[0]:
                return result
            if isinstance(result, types.GeneratorType):
                return _drawn(name, result)
            calls.append((name, _arrays(result)))
            return result

        return recorded

    def _drawn(name: str, items: Iterator[Any]) -> Iterator[Any]:
        for item in items:
            calls.append((name, _arrays(item)))
            yield item

    for module_name, methods in modules.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for spec in methods:
            cls_name, method_name = spec.split(".")
            cls = getattr(module, cls_name)
            setattr(cls, method_name, wrap(spec, getattr(cls, method_name)))


def child(script: str, output: str, modules: Dict[str, List[str]], argv: List[str]) -> int:
    """Run `script` as `__main__` with `argv`, the calls recorded into `output` (npz) and its
    index (json), even when the script fails."""
    calls: List[Tuple[str, List[numpy.ndarray]]] = []
    _install_recorders(modules, calls)
    code = 0
    sys.argv = [script] + argv
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python script.py` sets it
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as error:
        code = error.code if isinstance(error.code, int) else (0 if error.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        arrays = {}
        index = []
        for number, (name, values) in enumerate(calls):
            index.append({"call": number, "method": name, "arrays": len(values)})
            for item, array in enumerate(values):
                arrays[f"{number:04d}_{item:04d}"] = array
        numpy.savez(output, **arrays)  # type: ignore[arg-type]
        Path(output + ".json").write_text(json.dumps(index))
    return code


# ---- parent: prepare, run, compare ----


def run_script(
    source: str,
    family: str,
    python: str,
    pythonpath: Sequence[str],
    links: Sequence[str],
    argv: Sequence[str],
    ours: bool,
    timeout: float,
    environment: Sequence[str] = (),
) -> Dict[str, Any]:
    """Run `source` in a fresh working folder with `python`, recording the family's calls
    (ours: this package's modules; else the original's). Returns what happened."""
    work = Path(tempfile.mkdtemp(prefix="community_"))
    try:
        for item in links:
            name, _, target = item.partition("=")
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.abspath(target), work / name)
        script = work / "script.py"
        script.write_text(source, encoding="utf-8")
        record = {
            ours_name if ours else original: methods
            for original, (ours_name, methods) in RECORD[family].items()
        }
        output = str(work / ".recorded.npz")
        before = set(os.listdir(work))
        env = dict(os.environ)
        env.update(item.partition("=")[::2] for item in environment)
        env["PYTHONPATH"] = os.pathsep.join(list(pythonpath) + [env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
        command = [
            python,
            str(Path(__file__).resolve()),
            "child",
            str(script),
            output,
            json.dumps(record),
            "--",
        ]
        try:
            done = subprocess.run(
                command + list(argv),
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            code, out, err = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as error:
            code, out, err = -9, str(error.stdout or ""), f"timed out after {timeout} s"
        calls: List[Dict[str, Any]] = []
        arrays: List[List[numpy.ndarray]] = []
        if os.path.exists(output + ".json"):
            calls = json.loads(Path(output + ".json").read_text())
            with numpy.load(output) as data:
                arrays = [
                    [data[f"{c['call']:04d}_{i:04d}"] for i in range(c["arrays"])] for c in calls
                ]
        written = sorted(set(os.listdir(work)) - before - {".recorded.npz", ".recorded.npz.json"})
        return {
            "ran": code == 0,
            "exit_code": code,
            "stdout_tail": out[-1500:],
            "_stdout": out,
            "stderr_tail": err[-1500:],
            "wrote": written,
            "calls": [c["method"] for c in calls],
            "shapes": [[list(a.shape) for a in call] for call in arrays],
            "_arrays": arrays,
            "_written": {name: _read_output(work / name) for name in written},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _read_output(path: Path) -> Dict[str, numpy.ndarray]:
    """The arrays of a file the script wrote (npz, npy or HDF5), by name; {} for others."""
    if path.suffix == ".npz":
        with numpy.load(path) as data:
            return {key: data[key] for key in data.files}
    if path.suffix == ".npy":
        return {"": numpy.load(path)}
    if path.suffix in (".h5", ".hdf5"):
        import h5py

        with h5py.File(path, "r") as data:
            return {key: data[key][()] for key in data}
    return {}


def compare(
    ours: List[List[numpy.ndarray]], reference: List[List[numpy.ndarray]]
) -> Dict[str, Any]:
    """Per call, the largest absolute difference and that divided by the reference's largest
    magnitude, over all arrays of the call; `same_structure` False when the calls or shapes differ."""
    if len(ours) != len(reference) or any(
        [a.shape for a in x] != [b.shape for b in y] for x, y in zip(ours, reference)
    ):
        return {"same_structure": False}
    per_call = []
    for mine, theirs in zip(ours, reference):
        pairs = [
            (a.astype(numpy.float64), b.astype(numpy.float64))
            for a, b in zip(mine, theirs)
            if a.size
        ]
        diff = max((float(numpy.abs(a - b).max()) for a, b in pairs), default=0.0)
        # the same where ours is not zero: padding that one side zeroes and the other does not
        # shows in `max_abs` only
        kept = max(
            (float(numpy.abs(a - b)[a != 0].max(initial=0.0)) for a, b in pairs), default=0.0
        )
        scale = max((float(numpy.abs(b).max()) for _, b in pairs), default=0.0)
        per_call.append(
            {
                "max_abs": diff,
                "max_rel": diff / scale if scale else diff,
                "max_abs_where_ours_nonzero": kept,
                "max_rel_where_ours_nonzero": kept / scale if scale else kept,
            }
        )
    return {
        "same_structure": True,
        "per_call": per_call,
        **{key: max((c[key] for c in per_call), default=0.0) for key in (per_call or [{}])[0]},
    }


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?")


def compare_printed(ours: str, reference: str) -> Dict[str, Any]:
    """What the two runs printed: whether the text around the numbers is the same, and the
    largest absolute and relative difference of the numbers printed with a decimal point, in
    order (whole numbers, such as a timing in seconds, are counted as text)."""

    def split(text: str) -> Tuple[List[str], List[float]]:
        words = [w for w in NUMBER.split(text)]
        numbers = [float(n) for n in NUMBER.findall(text)]
        return words, numbers

    words_a, numbers_a = split(ours)
    words_b, numbers_b = split(reference)
    if len(numbers_a) != len(numbers_b):
        return {"same_text": False, "numbers": [len(numbers_a), len(numbers_b)]}
    lines = [(x, y) for x, y in zip(ours.splitlines(), reference.splitlines()) if x != y]
    diffs = [abs(x - y) for x, y in zip(numbers_a, numbers_b)]
    scale = max((abs(y) for y in numbers_b), default=0.0)
    return {
        "same_text": words_a == words_b,
        "numbers": len(numbers_a),
        "max_abs": max(diffs, default=0.0),
        "max_rel": max(diffs, default=0.0) / scale if scale else 0.0,
        "lines_differing": len(lines),
        "first_differing": lines[:2],
    }


def _public(result: Dict[str, Any]) -> Dict[str, Any]:
    return {key: value for key, value in result.items() if not key.startswith("_")}


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "child":
        script, output, record = args[1], args[2], json.loads(args[3])
        sys.exit(child(script, output, record, args[5:]))
    script_args: List[str] = []
    if "--" in args:
        script_args = args[args.index("--") + 1 :]
        args = args[: args.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("family", choices=sorted(IMPORTS))
    parser.add_argument("script")
    parser.add_argument("--git-dir")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--block", type=int)
    parser.add_argument("--fill", action="append", default=[])
    parser.add_argument("--link", action="append", default=[])
    parser.add_argument("--original-python")
    parser.add_argument("--original-path", action="append", default=[])
    parser.add_argument("--original-env", action="append", default=[])
    parser.add_argument("--timeout", type=float, default=600.0)
    options = parser.parse_args(args)
    text, commit = read_script(options.script, options.git_dir, options.commit)
    if options.block is not None:
        text = markdown_block(text, options.block)
    text, filled = fill(text, options.fill)
    report: Dict[str, Any] = {
        "benchmark": "community_scripts",
        "family": options.family,
        "script": options.script,
        "block": options.block,
        "commit": commit,
        "filled": filled,
        "links": options.link,
        "script_args": script_args,
    }
    try:
        rewritten, changes = rewrite(text, options.family)
    except UnswitchedImport as error:
        report.update(ran=False, unswitched_imports=str(error))
        return report
    report["import_changes"] = [{"line": n, "was": old, "now": new} for n, old, new in changes]
    mine = run_script(
        rewritten,
        options.family,
        sys.executable,
        [str(REPO)],
        options.link,
        script_args,
        True,
        options.timeout,
    )
    report["ours"] = _public(mine)
    if options.original_python:
        python = options.original_python
        theirs = run_script(
            text,
            options.family,
            os.path.abspath(python) if os.sep in python else python,
            [os.path.abspath(path) for path in options.original_path],
            options.link,
            script_args,
            False,
            options.timeout,
            options.original_env,
        )
        report["original"] = _public(theirs)
        if mine["ran"] and theirs["ran"]:
            report["recorded_calls"] = compare(mine["_arrays"], theirs["_arrays"])
            report["printed"] = compare_printed(mine["_stdout"], theirs["_stdout"])
            report["written_files"] = {
                name: compare(
                    [list(mine["_written"].get(name, {}).values())], [list(arrays.values())]
                )
                for name, arrays in theirs["_written"].items()
            }
    return report


if __name__ == "__main__":
    outcome = main()
    print("BENCH " + json.dumps(outcome, default=str))
