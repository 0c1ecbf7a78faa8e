"""Pretrain a biLM on one lent GPU within one device call, without AllenNLP.

The device machine has no package index and takes at most 64 MiB of working tree per call;
AllenNLP and its dependencies as wheels need several calls (`elmo_benchmarks.tools.device_prep`), which a
15-minute lease cannot spare. This script needs only torch, numpy and `elmo_bilm` (the same
`BiLm` and the same loss, `elmo_bilm.model.lm`, as the `elmo_plugin_bilm` model):

1. `pack` (here, on the CPU): the tokenised corpus (`allennlp elmo-prepare-corpus` output), the
   held-out files and WikiText-test as word ids over one table of word types, with sentences
   split at 50 tokens as `elmo_plugin_lm_corpus` splits them; one xz file.
2. `train` (on the GPU): bf16 autocast, length-sorted batches built on the GPU from the ids,
   the full softmax over the biLM's `vocab.txt`, Adam with warm-up and a cosine decay over a
   wall-clock budget (the step count is fixed from the measured rate after the warm-up and
   recorded), or over exactly `--steps` steps whatever the machine's speed. Every `--save-every`
   seconds the weights go to `--out` as float16 parts of at most 15 MiB (the device returns
   files of at most 16 MiB), so a cut-off still returns the newest; at the end, held-out and
   WikiText-test perplexity with the float32 weights and with the float16-rounded ones.
   With `--init-from DIR` the run starts from a shipped biLM's weights and softmax (bilm-tf
   files, e.g. `wikipedia_1024_256`) and trains it on.
3. `ship` (here): the parts back into bilm-tf `options.json` + `weights.hdf5` (with the softmax;
   the float16 values as float32, gzip-compressed to about half, readable by any bilm-tf reader)
   + `vocab.txt` + `training_metrics.json`, for `elmo_benchmarks.shipped_bilm` to re-measure.

    python -m elmo_benchmarks.gpu_pretrain pack --corpus out/wiki --out .devdata/pretrain.xz
    python -m elmo_benchmarks.gpu_pretrain train --data .devdata/pretrain.xz --out $OUT/a --seconds 400
    python -m elmo_benchmarks.gpu_pretrain ship --run RUN_DIR --out DIR
"""

import argparse
import io
import json
import lzma
import math
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence, Tuple

import numpy
import torch

from elmo_bilm.formats.bilm_tf import export_bilm_tf, read_options, read_softmax
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.characters import word_char_ids
from elmo_bilm.model.lm import bidirectional_nll, chunked_nll, softmax_nll
from elmo_bilm.model.vocab import BOS, EOS, UNK, read_vocab_file
from elmo_bilm.sources.resolver import ResolvedBilm, resolve_bilm
from elmo_bilm.sources.shipped import SHIPPED_DIR
from elmo_bilm.utils.files import atomic_output

HELDOUT = ("AB_wiki_98", "AB_wiki_99")  # as for the shipped biLMs
MAX_SENTENCE_LENGTH = 50  # the pretraining configs' `max_sentence_length`
PART_BYTES = 15 * 2**20
SPLITS = ("train", "heldout", "wikitext")


def split_long(sentence: List[str]) -> Iterator[List[str]]:
    """The sentence in pieces of at most `MAX_SENTENCE_LENGTH` tokens (`LmCorpusReader`'s split)."""
    for start in range(0, len(sentence), MAX_SENTENCE_LENGTH):
        yield sentence[start : start + MAX_SENTENCE_LENGTH]


def pack(corpus: Path, wikitext: Path, out: Path) -> None:
    """Word ids of the three splits over one type table (`<S>`, `</S>` first, then by frequency)."""
    from elmo_plugin.lm.dataset_readers.lm_corpus import read_sentences

    files = sorted(corpus.glob("*.txt.gz"))
    sources = {
        "train": [(str(f), "text") for f in files if f.name.split(".")[0] not in HELDOUT],
        "heldout": [(str(f), "text") for f in files if f.name.split(".")[0] in HELDOUT],
        "wikitext": [(str(wikitext), "wikitext")],
    }
    sentences: Dict[str, List[List[str]]] = {}
    counts: Counter = Counter()
    for split, paths in sources.items():
        sentences[split] = [
            piece
            for path, fmt in paths
            for sentence in read_sentences(path, fmt)
            for piece in split_long(sentence)
        ]
        for sentence in sentences[split]:
            counts.update(sentence)
        print(split, len(paths), "files", len(sentences[split]), "sentences", flush=True)
    types = [BOS, EOS] + sorted(
        (t for t in counts if t not in (BOS, EOS)), key=lambda t: (-counts[t], t)
    )
    type_id = {t: i for i, t in enumerate(types)}
    arrays: Dict[str, numpy.ndarray] = {
        "types": numpy.frombuffer("\n".join(types).encode("utf-8"), dtype=numpy.uint8)
    }
    for split, sents in sentences.items():
        arrays[f"{split}_ids"] = numpy.fromiter(
            (type_id[t] for s in sents for t in s), dtype=numpy.uint32
        )
        arrays[f"{split}_lengths"] = numpy.fromiter((len(s) for s in sents), dtype=numpy.uint8)
    buffer = io.BytesIO()
    numpy.savez(buffer, **arrays)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(out, overwrite=True) as partial:
        Path(partial).write_bytes(lzma.compress(buffer.getvalue(), preset=9))
    tokens = {s: int(arrays[f"{s}_lengths"].sum()) for s in SPLITS}
    print(f"{out}: {out.stat().st_size / 2**20:.1f} MiB, {len(types)} types, tokens {tokens}")


class Corpus:
    """One split's sentences on the device: word-type ids, offsets and lengths."""

    def __init__(self, ids: numpy.ndarray, lengths: numpy.ndarray, device: torch.device):
        self.ids = torch.from_numpy(ids.astype(numpy.int64)).to(device)
        self.lengths = torch.from_numpy(lengths.astype(numpy.int64)).to(device)
        self.offsets = torch.cumsum(self.lengths, 0) - self.lengths
        self.lengths_list = lengths.astype(numpy.int64).tolist()

    def batches(self, sentences: int, rng: random.Random, shuffle: bool) -> List[List[int]]:
        """Length-sorted batches of sentence indices (ties in random order when shuffling),
        the batches themselves shuffled."""
        order = list(range(len(self.lengths_list)))
        if shuffle:
            rng.shuffle(order)
        order.sort(key=lambda i: self.lengths_list[i])
        batches = [order[i : i + sentences] for i in range(0, len(order), sentences)]
        if shuffle:
            rng.shuffle(batches)
        return batches

    def batch(self, indices: Sequence[int], device: torch.device) -> Tuple[torch.Tensor, ...]:
        """`(type ids (B, T + 2) with <S>/</S>, -1 at padding; mask)`."""
        index = torch.tensor(indices, device=device)
        lengths = self.lengths[index]
        width = int(max(self.lengths_list[i] for i in indices))
        positions = torch.arange(width, device=device)
        inside = positions[None, :] < lengths[:, None]
        words = self.ids[
            (self.offsets[index][:, None] + positions[None, :]).clamp(max=len(self.ids) - 1)
        ]
        rows = torch.full((len(indices), width + 2), -1, dtype=torch.int64, device=device)
        rows[:, 1:-1] = torch.where(inside, words, -1)
        rows[:, 0] = 0  # <S>
        rows[torch.arange(len(indices), device=device), lengths + 1] = 1  # </S>
        return rows, rows >= 0


class Trainer:
    """The biLM, its softmax over `vocab.txt` and the lookups from word types to inputs."""

    def __init__(
        self,
        data: Dict[str, numpy.ndarray],
        options: Dict[str, Any],
        vocab: List[str],
        args: argparse.Namespace,
        device: torch.device,
    ):
        self.device = device
        types = bytes(data["types"]).decode("utf-8").split("\n")
        chars = numpy.zeros((len(types), 50), dtype=numpy.int16)
        for i, word in enumerate(types):
            chars[i] = word_char_ids(word)
        self.type_chars = torch.from_numpy(chars).to(device, torch.int64)
        row = {t: i for i, t in enumerate(vocab)}
        unk = row[UNK]
        self.type_target = torch.tensor(
            [row.get(t, unk) for t in types], dtype=torch.int64, device=device
        )
        self.splits = {s: Corpus(data[f"{s}_ids"], data[f"{s}_lengths"], device) for s in SPLITS}
        self.bilm = BiLm(options, dropout=args.dropout).to(device)
        proj = self.bilm.projection_dim
        self.softmax_w = torch.nn.Parameter(
            torch.randn(len(vocab), proj, device=device) / math.sqrt(proj)
        )
        self.softmax_b = torch.nn.Parameter(torch.zeros(len(vocab), device=device))
        self.output_dropout = torch.nn.Dropout(args.dropout)
        self.chunk_tokens = args.softmax_chunk_tokens

    def parameters(self) -> List[torch.nn.Parameter]:
        return [*self.bilm.parameters(), self.softmax_w, self.softmax_b]

    def _nll(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return softmax_nll(hidden, targets, self.softmax_w, self.softmax_b)

    def nll(self, rows: torch.Tensor, mask: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        """`(forward sum, backward sum, targets)` for one batch of type-id rows."""
        safe = rows.clamp(min=0)
        chars = self.type_chars[safe] * mask[..., None]
        targets = self.type_target[safe] * mask
        _, layers = self.bilm.encode(chars, mask)
        top = self.output_dropout(layers[-1])
        return bidirectional_nll(
            top, targets, mask, lambda h, t: chunked_nll(h, t, self._nll, self.chunk_tokens)
        )

    def state(self) -> Dict[str, torch.Tensor]:
        state = {f"bilm.{k}": v for k, v in self.bilm.state_dict().items()}
        state["softmax.W"], state["softmax.b"] = self.softmax_w.data, self.softmax_b.data
        return state

    @torch.no_grad()
    def evaluate(self, split: str, batch_sentences: int, limit: int = 0) -> Dict[str, float]:
        """Perplexity (full softmax, float32, no dropout) of a split, or of `limit` of its batches."""
        self.bilm.eval()
        self.output_dropout.eval()
        corpus = self.splits[split]
        totals = torch.zeros(3, dtype=torch.float64, device=self.device)
        batches = corpus.batches(batch_sentences, random.Random(0), shuffle=False)
        if limit:  # evenly spaced over the lengths
            batches = batches[:: max(1, len(batches) // limit)][:limit]
        for indices in batches:
            forward, backward, count = self.nll(*corpus.batch(indices, self.device))
            totals += torch.stack([forward.double(), backward.double(), count.double()])
        self.bilm.train()
        self.output_dropout.train()
        forward, backward, count = totals.tolist()
        return {
            "perplexity": math.exp(0.5 * (forward + backward) / count),
            "perplexity_forward": math.exp(forward / count),
            "perplexity_backward": math.exp(backward / count),
            "targets": count,
        }


def init_from(model: Trainer, start: ResolvedBilm) -> None:
    """The biLM and softmax weights of `start` (bilm-tf files, e.g. the shipped
    `wikipedia_1024_256`, whose weights hold `softmax/W` and `softmax/b` over the shipped
    `vocab.txt`) in place of `model`'s initial ones, to train that biLM on. Adam's moments start
    from zero (the shipped files do not hold them): give the run a warm-up."""
    weights = str(start.weight_file)
    softmax = read_softmax(weights)
    if softmax is None:
        raise SystemExit(f"{weights}: no softmax/W and softmax/b, so nothing to train on from")
    w, b = (torch.from_numpy(array).float() for array in softmax)
    if w.shape != model.softmax_w.shape:
        raise SystemExit(
            f"{weights}: softmax {tuple(w.shape)}, but the shipped vocabulary and the biLM's "
            f"projection make {tuple(model.softmax_w.shape)}"
        )
    with torch.no_grad():
        model.bilm.load_state_dict(start.load().state_dict())
        model.softmax_w.copy_(w)
        model.softmax_b.copy_(b)


def save_parts(state: Dict[str, torch.Tensor], out: Path) -> List[str]:
    """float16 copies of `state` as `weights.part<k>` files of at most `PART_BYTES`, written
    beside and renamed over the previous ones (a cut-off leaves a whole set)."""
    buffer = io.BytesIO()
    torch.save({k: v.detach().to("cpu", torch.float16) for k, v in state.items()}, buffer)
    blob = buffer.getvalue()
    names = []
    for k, start in enumerate(range(0, len(blob), PART_BYTES)):
        name = f"weights.part{k}"
        (out / (name + ".tmp")).write_bytes(blob[start : start + PART_BYTES])
        names.append(name)
    for name in names:
        (out / (name + ".tmp")).replace(out / name)
    return names


def write_json(path: Path, record: Dict[str, Any]) -> None:
    with atomic_output(path, overwrite=True) as partial:
        Path(partial).write_text(json.dumps(record, indent=1))


def gpu_busy() -> str:
    """`nvidia-smi`'s utilisation and memory now (empty without one)."""
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def train(args: argparse.Namespace) -> None:
    started = time.time()
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 evaluation as on the CPU
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with numpy.load(io.BytesIO(lzma.decompress(Path(args.data).read_bytes()))) as npz:
        data = {k: npz[k] for k in npz.files}
    start = resolve_bilm(args.init_from).as_bilm_tf() if args.init_from else None
    if start:  # its sizes, not --dim and --projection-dim
        options = read_options(str(start.options_file))
    else:
        options = json.loads((SHIPPED_DIR / "options.json").read_text())
        options["lstm"].update(dim=args.dim, projection_dim=args.projection_dim)
    vocab = read_vocab_file(str(SHIPPED_DIR / "vocab.txt"))
    options["n_tokens_vocab"] = len(vocab)
    model = Trainer(data, options, vocab, args, device)
    if start:
        init_from(model, start)
    write_json(out / "options.json", options)
    params = model.parameters()
    optimizer = torch.optim.Adam(params, lr=args.lr, fused=device.type == "cuda")
    record: Dict[str, Any] = {
        "command": " ".join(sys.argv),
        "init_from": str(args.init_from or ""),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "parameters": sum(p.numel() for p in params),
        "options": options,
        "setup_s": round(time.time() - started, 1),
        "log": [],
    }
    log = open(out / "train.log", "a")

    def note(line: str) -> None:
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16)
    train_split = model.splits["train"]
    # --steps: fixed now; otherwise fixed after the warm-up from the measured rate
    total_steps = args.steps
    if total_steps:
        record["planned_steps"] = total_steps
    step = tokens = epoch = 0
    window = torch.zeros(3, dtype=torch.float64, device=device)
    t0 = time.time()
    timed_from = (t0, 0)
    last_save = t0
    done = False
    while not done:
        for indices in train_split.batches(args.batch_sentences, rng, shuffle=True):
            if step < args.warmup:
                lr = args.lr * (step + 1) / args.warmup
            else:
                progress = min(1.0, (step - args.warmup) / max(1, total_steps - args.warmup))
                lr = args.lr * (
                    args.final_lr_fraction
                    + (1 - args.final_lr_fraction) * 0.5 * (1 + math.cos(math.pi * progress))
                )
            for group in optimizer.param_groups:
                group["lr"] = lr
            rows, mask = train_split.batch(indices, device)
            with autocast:
                forward, backward, count = model.nll(rows, mask)
                loss = 0.5 * (forward + backward) / count
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, args.clip)
            optimizer.step()
            window += torch.stack(
                [forward.detach().double(), backward.detach().double(), count.double()]
            )
            step += 1
            if step in (args.warmup // 2, args.warmup):
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                if step < args.warmup:
                    timed_from = (time.time(), step)
            if step == args.warmup:
                # the rate of the warm-up's second half (its first includes CUDA's start-up)
                rate = (time.time() - timed_from[0]) / (step - timed_from[1])
                if not args.steps:
                    total_steps = int(args.seconds / rate)
                    record["planned_steps"] = total_steps
                note(f"warm-up done: {rate * 1000:.1f} ms/step, planning {total_steps} steps")
            now = time.time()
            # the wall-clock budget ends a run only when --steps does not fix its length
            out_of_time = not args.steps and now - t0 >= args.seconds
            finished = out_of_time or bool(total_steps and step >= total_steps)
            if step % args.log_every == 0 or finished:
                f, b, c = window.tolist()
                tokens += int(c)
                window.zero_()
                entry = {
                    "step": step,
                    "epoch": epoch,
                    "seconds": round(now - t0, 1),
                    "lr": lr,
                    "train_words": tokens,
                    "words_per_s": round(tokens / (now - t0)),
                    "train_perplexity": math.exp(0.5 * (f + b) / max(c, 1)),
                    "gpu": gpu_busy(),
                }
                if now - last_save >= args.save_every:
                    entry["heldout_sample"] = model.evaluate(
                        "heldout", args.eval_sentences, limit=8
                    )["perplexity"]
                    save_parts(model.state(), out)
                    last_save = time.time()
                record["log"].append(entry)
                write_json(out / "metrics.json", record)
                note(json.dumps(entry))
            if finished:
                done = True
                break
        epoch += 1
    record["train_seconds"] = round(time.time() - t0, 1)
    record["steps"], record["epochs_started"], record["train_words"] = step, epoch, tokens
    if device.type == "cuda":
        record["peak_gpu_gb"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
    save_parts(model.state(), out)
    record["float32"] = {s: model.evaluate(s, args.eval_sentences) for s in ("heldout", "wikitext")}
    with torch.no_grad():  # the float16 weights that come back
        for p in params:
            p.copy_(p.half().float())
    record["float16"] = {s: model.evaluate(s, args.eval_sentences) for s in ("heldout", "wikitext")}
    record["total_seconds"] = round(time.time() - started, 1)
    write_json(out / "metrics.json", record)
    note(
        json.dumps(
            {k: record[k] for k in ("float32", "float16", "steps", "train_words", "total_seconds")}
        )
    )


def ship(run: Path, out: Path) -> None:
    """bilm-tf files (softmax included; the float16 values stored as float32, gzip-compressed),
    `vocab.txt` and the run's metrics as `training_metrics.json`."""
    blob = b"".join(
        (run / f"weights.part{k}").read_bytes() for k in range(len(list(run.glob("weights.part*"))))
    )
    state = torch.load(io.BytesIO(blob), weights_only=True)
    options = json.loads((run / "options.json").read_text())
    bilm = BiLm(options, initialise=False)
    bilm.load_state_dict({k[5:]: v.float() for k, v in state.items() if k.startswith("bilm.")})
    out.mkdir(parents=True, exist_ok=True)
    softmax = (state["softmax.W"].float().numpy(), state["softmax.b"].float().numpy())
    export_bilm_tf(bilm, out / "options.json", out / "weights.hdf5", softmax=softmax, compress=True)
    (out / "vocab.txt").write_bytes((SHIPPED_DIR / "vocab.txt").read_bytes())
    (out / "training_metrics.json").write_bytes((run / "metrics.json").read_bytes())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--corpus", type=Path, required=True, help="elmo-prepare-corpus output")
    p.add_argument(
        "--wikitext",
        type=Path,
        default=Path(os.environ.get("ELMO_PLUGIN_DATA", "../shared/data"))
        / "wikitext"
        / "wiki.test.tokens",
    )
    p.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("train")
    t.add_argument("--data", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--device", default="cuda")
    t.add_argument(
        "--seconds",
        type=float,
        default=400.0,
        help="wall-clock training budget: the step count is planned from it and the rate measured "
        "over the warm-up's second half (ignored with --steps)",
    )
    t.add_argument(
        "--steps",
        type=int,
        default=0,
        help="train exactly this many steps (warm-up included; the cosine decay over them), "
        "whatever the machine's speed, instead of planning them from --seconds (0: plan)",
    )
    t.add_argument(
        "--init-from",
        help="a biLM with its softmax to train on from, named as anywhere else (a shipped name "
        "such as wikipedia_1024_256, a folder of bilm-tf files, ...); its sizes replace --dim "
        "and --projection-dim",
    )
    t.add_argument("--dim", type=int, default=1024)
    t.add_argument("--projection-dim", type=int, default=256)
    t.add_argument("--batch-sentences", type=int, default=1024)
    t.add_argument("--eval-sentences", type=int, default=1024)
    t.add_argument("--lr", type=float, default=1.5e-3)
    t.add_argument("--final-lr-fraction", type=float, default=0.05)
    t.add_argument("--warmup", type=int, default=300)
    t.add_argument("--clip", type=float, default=1.0)
    t.add_argument("--dropout", type=float, default=0.1)
    t.add_argument("--softmax-chunk-tokens", type=int, default=16384)
    t.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--log-every", type=int, default=100)
    t.add_argument("--save-every", type=float, default=90.0)
    s = sub.add_parser("ship")
    s.add_argument("--run", type=Path, required=True)
    s.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "pack":
        pack(args.corpus, args.wikitext, args.out)
    elif args.command == "train":
        train(args)
    else:
        ship(args.run, args.out)


if __name__ == "__main__":
    main()
