"""The GPU benchmark's batch-size sweep: biLM inference (all layers, no gradient) and biLM
training (forward + backward + Adagrad, sampled softmax) at each batch size, on sentences sorted
by length (CoNLL-2003 train, cycled). Prints one markdown table: tokens/s, peak device memory
(peak RSS on the CPU) and the fraction of the device's matmul rate (in the `--dtype` measured)
the arithmetic reaches. `--dtype bfloat16` runs both under `torch.autocast` (bf16 matrix products).

    python -m elmo_benchmarks.gpu_sweep --device cuda --config paper   # on a lent GPU
    python -m elmo_benchmarks.gpu_sweep --device cuda --config paper --dtype bfloat16
    python -m elmo_benchmarks.gpu_sweep --device cpu --config tiny --batch-sizes 2 4 --batches 1 --num-samples 0

TF32 stays off (the float32 results must equal the CPU path within float32 tolerance).
"""

import argparse
import itertools
from typing import Any, Callable, Dict, List

import torch
from allennlp.data import Batch, Vocabulary
from torch.utils.flop_counter import FlopCounterMode

from elmo_benchmarks.bilm_forward import matmul_peak
from elmo_benchmarks.common import CONFIGS, DATA, peak_rss_mb, timed
from elmo_bilm.model.characters import batch_char_ids
from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader, read_sentences
from elmo_plugin.lm.models.bilm_language_model import BiLmLanguageModel

TRAIN = str(DATA / "conll2003" / "eng.train")


def sorted_batches(batch_size: int, batches: int) -> List[List[List[str]]]:
    """`batches + 1` batches (the first a warm-up) of CoNLL-2003 training sentences, cycled, each
    sorted by length and cut into batches of similar lengths."""
    needed = batch_size * (batches + 1)
    sentences = list(
        itertools.islice(itertools.cycle(list(read_sentences(TRAIN, "conll2003"))), needed)
    )
    sentences.sort(key=len)
    return [sentences[i : i + batch_size] for i in range(0, needed, batch_size)]


def _instance(reader: LmCorpusReader, sentence: List[str]):
    instance = reader.text_to_instance(sentence)
    reader.apply_token_indexers(instance)
    return instance


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return peak_rss_mb()


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def measure(
    step: Callable[[Any], Any], batches: List[Any], tokens: int, device, dtype=torch.float32
) -> Dict[str, float]:
    """tokens/s, FLOP/s and peak memory of `step` over `batches[1:]` (`batches[0]` warms up),
    under autocast to `dtype` unless it is float32."""
    if dtype != torch.float32:
        plain = step

        def step(batch: Any) -> Any:
            with torch.autocast(device.type, dtype=dtype):
                return plain(batch)

    step(batches[0])
    synchronize(device)
    reset_peak(device)

    def run() -> None:
        for batch in batches[1:]:
            step(batch)
        synchronize(device)

    seconds = timed(run)
    with FlopCounterMode(display=False) as counter:
        for batch in batches[1:]:
            step(batch)
    return {
        "tokens": tokens / seconds,
        "flops": counter.get_total_flops() / seconds,
        "memory": peak_memory_mb(device),
    }


def inference(
    model: BiLmLanguageModel, batches, device: torch.device, dtype=torch.float32
) -> Dict[str, float]:
    """The biLM's forward (all layers, no gradient)."""
    ids = [batch_char_ids(batch).to(device) for batch in batches]
    tokens = sum(len(sentence) for batch in batches[1:] for sentence in batch)
    bilm = model.bilm.eval()
    with torch.no_grad():
        return measure(bilm, ids, tokens, device, dtype)


def training(
    model: BiLmLanguageModel, batches, vocab, device: torch.device, dtype=torch.float32
) -> Dict[str, float]:
    """A training step of the language model (sampled softmax, Adagrad)."""
    reader = LmCorpusReader(max_sentence_length=None)
    tensors = []
    for batch in batches:
        instances = Batch([_instance(reader, sentence) for sentence in batch])
        instances.index_instances(vocab)
        t = instances.as_tensor_dict()
        tensors.append(
            {
                "lm": {"tokens": t["tokens"]["lm"]["tokens"].to(device)},
                "elmo": {"elmo_tokens": t["tokens"]["elmo"]["elmo_tokens"].to(device)},
            }
        )
    tokens = sum(len(sentence) for batch in batches[1:] for sentence in batch)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.2, initial_accumulator_value=1.0)
    model.train()

    def step(batch) -> None:
        optimizer.zero_grad()
        model(batch)["loss"].backward()
        optimizer.step()

    return measure(step, tensors, tokens, device, dtype)


def main(argv=None) -> List[Dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="paper")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 128, 512, 1024])
    parser.add_argument("--batches", type=int, default=3, help="timed batches per size")
    parser.add_argument(
        "--num-samples", type=int, default=8192, help="sampled softmax negatives (0: full softmax)"
    )
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    peak = matmul_peak(device, dtype=dtype)
    rows = []
    print("| mode | batch | tokens/s | peak memory MB | fraction of matmul rate |")
    print("| --- | ---: | ---: | ---: | ---: |")
    # one vocabulary for every batch size: all CoNLL-2003 training sentences (23k words; the
    # batches alone hold fewer words than the sampled softmax's 8,192 negatives)
    reader = LmCorpusReader(max_sentence_length=None)
    vocab = Vocabulary.from_instances(
        (_instance(reader, s) for s in read_sentences(TRAIN, "conll2003")),
        max_vocab_size={"lm_tokens": 50000},
    )
    for batch_size in args.batch_sizes:
        batches = sorted_batches(batch_size, args.batches)
        model = BiLmLanguageModel(
            vocab,
            options=CONFIGS[args.config],
            dropout=0.1,
            num_samples=args.num_samples or None,
        ).to(device)
        for mode, result in (
            ("inference", inference(model, batches, device, dtype)),
            ("training", training(model, batches, vocab, device, dtype)),
        ):
            row = {"mode": mode, "batch": batch_size, **result, "fraction": result["flops"] / peak}
            rows.append(row)
            print(
                f"| {mode} | {batch_size} | {row['tokens']:.0f} | {row['memory']:.0f} | {row['fraction']:.3f} |",
                flush=True,
            )
    return rows


if __name__ == "__main__":
    main()
