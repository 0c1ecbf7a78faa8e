"""`make gpu-check`: the plugin's CUDA paths checked against the CPU and the references, then the
GPU benchmark table. `make test` runs it with `--device cpu` (every check on the CPU), so the
script itself is tested code.

    python -m elmo_benchmarks.tools.gpu_check --device cuda [--bench]
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Tuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS

import h5py  # noqa: E402
import torch  # noqa: E402
from allennlp.data import Batch, Vocabulary  # noqa: E402
from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids  # noqa: E402

from elmo_bilm import export_bilm_tf, load_bilm_tf  # noqa: E402
from elmo_bilm.runtime.engine import embed_file  # noqa: E402
from elmo_plugin.common.config_env import data_dir  # noqa: E402
from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader  # noqa: E402
from elmo_plugin.lm.models.bilm_language_model import BiLmLanguageModel  # noqa: E402
from elmo_plugin.modules.elmo import ElmoRepresentations  # noqa: E402
from elmo_plugin.modules.elmo_options import ElmoOptions  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE = (data_dir() or REPO_ROOT.parent / "shared" / "data") / "elmo_fixture"
FILES = (str(FIXTURE / "options.json"), str(FIXTURE / "lm_weights.hdf5"))
Result = Tuple[bool, str]


def sentences() -> List[List[str]]:
    with open(FIXTURE / "sentences.json") as handle:
        return [s.split() for group in json.load(handle) for s in group]


def max_diff(a: List[torch.Tensor], b: List[torch.Tensor], mask: torch.Tensor) -> float:
    """Largest absolute difference over unmasked positions of paired layers."""
    m = mask[..., None].to(a[0].device)
    return max(((x - y.to(x.device)).abs() * m).max().item() for x, y in zip(a, b))


def check_reference(device: torch.device) -> Result:
    """Top layer vs bilm-tf's own activations (sentence 0 of each fixture file)."""
    bilm = load_bilm_tf(*FILES).to(device).eval()
    first = [sentences()[i] for i in (0, 10, 20)]
    with torch.no_grad():
        top = bilm(batch_to_ids(first).to(device))["activations"][-1].cpu()
    worst = 0.0
    for k, sentence in enumerate(first):
        with h5py.File(FIXTURE / f"lm_embeddings_{k}.hdf5", "r") as handle:
            expected = torch.from_numpy(handle["0"][...])
        ours = top[k, : len(sentence)]
        worst = max(
            worst,
            (torch.cat([ours[:, :16], ours[:, 16:]]) - expected.reshape(-1, 16)).abs().max().item(),
        )
    return worst < 1e-5, f"max |diff| {worst:.2e}"


def check_allennlp_and_cpu(device: torch.device) -> Result:
    """All layers vs AllenNLP's `_ElmoBiLm` on the same device, and vs the plugin on the CPU."""
    ids = batch_to_ids(sentences())
    reference = _ElmoBiLm(*FILES).to(device).eval()
    ours = load_bilm_tf(*FILES).to(device).eval()
    cpu = load_bilm_tf(*FILES).eval()
    with torch.no_grad():
        expected = reference(ids.to(device))
        with_boundaries = ours(ids.to(device), keep_sentence_boundaries=True)
        got = ours(ids.to(device))
        on_cpu = cpu(ids)
    to_allennlp = max_diff(
        with_boundaries["activations"], expected["activations"], expected["mask"]
    )
    to_cpu = max_diff(got["activations"], on_cpu["activations"], on_cpu["mask"])
    return max(to_allennlp, to_cpu) < 1e-5, f"vs AllenNLP {to_allennlp:.2e}, vs CPU {to_cpu:.2e}"


def language_model_batch() -> Tuple[BiLmLanguageModel, Dict]:
    reader = LmCorpusReader()
    instances = list(reader.read(str(REPO_ROOT / "fixtures" / "lm_corpus" / "dev.txt")))[:16]
    vocab = Vocabulary.from_instances(instances)
    torch.manual_seed(0)
    options = json.loads(Path(FILES[0]).read_text())
    model = BiLmLanguageModel(vocab, options=options, dropout=0.0)
    batch = Batch(instances)
    batch.index_instances(vocab)
    return model, batch.as_tensor_dict()


def training_step(
    model: BiLmLanguageModel, tensors: Dict, device: torch.device
) -> Tuple[float, Dict]:
    model = model.to(device).train()
    model.zero_grad()
    moved = {
        "tokens": {k: {n: t.to(device) for n, t in v.items()} for k, v in tensors["tokens"].items()}
    }
    loss = model(**moved)["loss"]
    loss.backward()
    grads = {
        n: p.grad.detach().cpu().clone() for n, p in model.named_parameters() if p.grad is not None
    }
    return loss.item(), grads


def check_training_step(device: torch.device) -> Result:
    """One biLM training step (full softmax): loss and every gradient, device vs CPU."""
    model, tensors = language_model_batch()
    cpu_loss, cpu_grads = training_step(copy.deepcopy(model), tensors, torch.device("cpu"))
    loss, grads = training_step(model, tensors, device)
    worst = max(
        (grads[n] - g).abs().max().item() / (g.abs().max().item() + 1e-12)
        for n, g in cpu_grads.items()
    )
    ok = (
        abs(loss - cpu_loss) <= 1e-4 * abs(cpu_loss)
        and worst < 1e-3
        and grads.keys() == cpu_grads.keys()
    )
    return ok, f"loss {loss:.6f} vs {cpu_loss:.6f}, worst relative gradient diff {worst:.2e}"


def check_deterministic(device: torch.device) -> Result:
    """With deterministic algorithms on, two identical training steps give identical gradients."""
    torch.use_deterministic_algorithms(True)
    try:
        model, tensors = language_model_batch()
        first = training_step(copy.deepcopy(model), tensors, device)[1]
        second = training_step(model, tensors, device)[1]
    finally:
        torch.use_deterministic_algorithms(False)
    same = all(torch.equal(first[n], second[n]) for n in first)
    return same, "bitwise equal" if same else "gradients differ"


def check_autocast(device: torch.device) -> Result:
    """bf16 (and on CUDA fp16) autocast: finite, and close to float32 relative to the layer scale."""
    bilm = load_bilm_tf(*FILES).to(device).eval()
    ids = batch_to_ids(sentences()).to(device)
    with torch.no_grad():
        reference = bilm(ids)
        details, ok = [], True
        for dtype in (
            (torch.bfloat16, torch.float16) if device.type == "cuda" else (torch.bfloat16,)
        ):
            with torch.autocast(device.type, dtype=dtype):
                low = bilm(ids)
            error = max(
                (a.float() - b).abs().max().item() / b.abs().max().item()
                for a, b in zip(low["activations"], reference["activations"])
            )
            finite = all(torch.isfinite(a).all().item() for a in low["activations"])
            ok &= finite and error < 0.05
            details.append(f"{str(dtype)[6:]} relative error {error:.3f}")
    return ok, ", ".join(details)


def check_activation_cache(device: torch.device) -> Result:
    """Cache hit equals miss exactly; entries live on the CPU; hits add no device memory."""
    elmo = (
        ElmoRepresentations(ElmoOptions(dropout=0.0), bilm=load_bilm_tf(*FILES)).to(device).eval()
    )
    ids = batch_to_ids(sentences()).to(device)
    miss = elmo.bilm_layers(ids)["activations"]
    cuda = device.type == "cuda"
    before = torch.cuda.memory_allocated(device) if cuda else 0
    hit = elmo.bilm_layers(ids)["activations"]
    growth = (torch.cuda.memory_allocated(device) - before) if cuda else 0
    same = all(torch.equal(a, b) for a, b in zip(miss, hit))
    on_cpu = all(entry.device.type == "cpu" for entry in elmo.cache._entries.values())
    # the hits' own output: one storage, which the CUDA allocator hands out in 512-byte blocks
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in hit}
    returned = sum(-(-size // 512) * 512 for size in storages.values())
    ok = same and on_cpu and elmo.cache.hits == ids.shape[0] and growth <= returned
    detail = f"hit == miss: {same}, entries on CPU: {on_cpu}, device memory growth {growth} B"
    return ok, f"{detail} (output {returned} B)"


def check_embed(device: torch.device) -> Result:
    """`elmo-embed` on the device vs on the CPU, same file."""
    bilm = load_bilm_tf(*FILES)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "in.txt"
        source.write_text("".join(" ".join(s) + "\n" for s in sentences()))
        index = device.index or 0 if device.type == "cuda" else -1
        embed_file(copy.deepcopy(bilm), str(source), f"{tmp}/dev.hdf5", cuda_device=index)
        embed_file(bilm, str(source), f"{tmp}/cpu.hdf5")
        with h5py.File(f"{tmp}/dev.hdf5") as a, h5py.File(f"{tmp}/cpu.hdf5") as b:
            keys = [k for k in b.keys() if k != "sentence_to_index"]
            worst = max(abs(a[k][...] - b[k][...]).max() for k in keys)
            same_index = a["sentence_to_index"][()] == b["sentence_to_index"][()]
    return bool(worst < 1e-5 and same_index), f"max |diff| {worst:.2e} over {len(keys)} sentences"


def check_export(device: torch.device) -> Result:
    """Export of a device-resident biLM reloads to the same weights on the CPU."""
    bilm = load_bilm_tf(*FILES).to(device)
    with tempfile.TemporaryDirectory() as tmp:
        export_bilm_tf(bilm, f"{tmp}/options.json", f"{tmp}/weights.hdf5")
        back = load_bilm_tf(f"{tmp}/options.json", f"{tmp}/weights.hdf5")
    same = all(
        torch.equal(a.cpu(), b)
        for a, b in zip(bilm.state_dict().values(), back.state_dict().values())
    )
    return same, "exact" if same else "weights differ"


CHECKS: Dict[str, Callable[[torch.device], Result]] = {
    "bilm-tf reference activations": check_reference,
    "AllenNLP biLM and CPU": check_allennlp_and_cpu,
    "training step vs CPU": check_training_step,
    "deterministic mode": check_deterministic,
    "autocast": check_autocast,
    "activation cache": check_activation_cache,
    "elmo-embed vs CPU": check_embed,
    "export from device": check_export,
}


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    parser.add_argument(
        "--bench", action="store_true", help="then the benchmark table on this device"
    )
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            print("gpu-check: no CUDA device visible", file=sys.stderr)
            return 2
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        print(f"device: {torch.cuda.get_device_name(device)}")
    failures = 0
    print("| check | result | detail |\n| --- | --- | --- |")
    for name, check in CHECKS.items():
        try:
            ok, detail = check(device)
        except Exception as error:  # a crash is a failed check, reported with the rest
            ok, detail = False, f"{type(error).__name__}: {error}"
        failures += not ok
        print(f"| {name} | {'ok' if ok else 'FAILED'} | {detail} |", flush=True)
    if args.bench and failures == 0:
        env = dict(os.environ, ELMO_PLUGIN_BENCH_DEVICE=device.type)
        failures += (
            subprocess.run([sys.executable, "-m", "elmo_benchmarks.run_all"], env=env).returncode
            != 0
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
