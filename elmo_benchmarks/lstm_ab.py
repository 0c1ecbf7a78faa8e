"""A/B of `elmo_bilm/model/lstm.py` at a git revision against the working tree, in one process
(alternating runs, so both see the same machine load): `python -m elmo_benchmarks.lstm_ab --before REV`.
Prints a markdown table: median milliseconds of each, their ratio, and the largest output difference
(the two stacks get the same weights)."""

import argparse
import importlib.util
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import torch

from elmo_benchmarks.common import REPO_ROOT
from elmo_bilm.model.lstm import ProjectedLstmStack

CASES = (
    ("small 1024/128 inference", 1024, 128, False),
    ("paper 4096/512 inference", 4096, 512, False),
    ("small 1024/128 training forward + backward", 1024, 128, True),
)


def load_revision(revision: str):
    """`ProjectedLstmStack` of `elmo_bilm/model/lstm.py` at `revision` (a self-contained file)."""
    source = subprocess.run(
        ["git", "show", f"{revision}:elmo_bilm/model/lstm.py"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.TemporaryDirectory() as folder:  # read once, when the module executes
        path = Path(folder) / "lstm_before.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location("lstm_before", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.ProjectedLstmStack


def run(stack: torch.nn.Module, x: torch.Tensor, mask: torch.Tensor, grad: bool):
    """One forward (and with `grad` a training backward) of `stack`; its outputs."""
    stack.train(grad)
    if grad:
        outputs = stack(x, mask)
        sum(o.sum() for o in outputs).backward()
        stack.zero_grad()
        return [o.detach() for o in outputs]
    with torch.no_grad():
        return stack(x, mask)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="git revision of the A side")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    before = load_revision(args.before)
    print("| case (batch 32, 1 thread) | before ms | after ms | before / after | max abs diff |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, dim, proj, grad in CASES:
        torch.manual_seed(0)
        a = before(proj, dim=dim, projection_dim=proj, n_layers=2, cell_clip=3.0, proj_clip=3.0)
        b = ProjectedLstmStack(
            proj, dim=dim, projection_dim=proj, n_layers=2, cell_clip=3.0, proj_clip=3.0
        )
        b.load_state_dict(a.state_dict())
        generator = torch.Generator().manual_seed(1)
        lengths = torch.randint(5, 40, (32,), generator=generator)
        mask = torch.arange(int(lengths.max()))[None] < lengths[:, None]
        x = torch.randn(32, mask.shape[1], proj, generator=generator) * mask[..., None]

        diff = max(
            (p - q).abs().max().item() for p, q in zip(run(a, x, mask, grad), run(b, x, mask, grad))
        )
        times = {"a": [], "b": []}
        for _ in range(args.repeats):
            for side, stack in (("a", a), ("b", b)):
                start = time.perf_counter()
                run(stack, x, mask, grad)
                times[side].append(time.perf_counter() - start)
        ms_a, ms_b = (1000 * statistics.median(times[s]) for s in ("a", "b"))
        print(f"| {name} | {ms_a:.0f} | {ms_b:.0f} | {ms_a / ms_b:.2f}x | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
