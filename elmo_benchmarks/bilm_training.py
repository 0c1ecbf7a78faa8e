"""biLM training throughput: forward + backward + Adagrad step with the sampled softmax."""

import argparse
import itertools

import torch
from allennlp.data import Batch, Vocabulary

from elmo_benchmarks.common import CONFIGS, DATA, emit, peak_rss_mb, timed
from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader
from elmo_plugin.lm.models.bilm_language_model import BiLmLanguageModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", choices=sorted(CONFIGS), default="small")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--num-samples", type=int, default=8192)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    reader = LmCorpusReader(max_sentence_length=50)
    instances = list(
        itertools.islice(reader.read(f"conll2003::{DATA / 'conll2003' / 'eng.train'}"), 4000)
    )
    vocab = Vocabulary.from_instances(instances, max_vocab_size={"lm_tokens": 50000})
    model = BiLmLanguageModel(
        vocab, options=CONFIGS[args.config], dropout=0.1, num_samples=args.num_samples
    ).to(device)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.2, initial_accumulator_value=1.0)
    batches = []
    for i in range(args.batches + 1):
        batch = Batch(instances[i * args.batch_size : (i + 1) * args.batch_size])
        batch.index_instances(vocab)
        batches.append(batch.as_tensor_dict())
    tokens = sum(
        int((b["tokens"]["lm"]["tokens"] > 0).sum()) - 2 * args.batch_size for b in batches[1:]
    )
    model.train()

    def step(batch) -> None:
        tensors = {
            "lm": {"tokens": batch["tokens"]["lm"]["tokens"].to(device)},
            "elmo": {"elmo_tokens": batch["tokens"]["elmo"]["elmo_tokens"].to(device)},
        }
        optimizer.zero_grad()
        model(tensors)["loss"].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()

    step(batches[0])  # warm-up
    seconds = timed(lambda: [step(b) for b in batches[1:]])
    record = {
        "bench": "bilm_training",
        "config": args.config,
        "device": str(device),
        "batch_size": args.batch_size,
        "num_samples": args.num_samples,
        "vocab": vocab.get_vocab_size("lm_tokens"),
        "tokens": tokens,
        "train_tokens_per_s": tokens / seconds,
        "peak_rss_mb": peak_rss_mb(),
    }
    if device.type == "cuda":
        record["peak_gpu_mb"] = torch.cuda.max_memory_allocated() / 2**20
    emit(record)


if __name__ == "__main__":
    main()
