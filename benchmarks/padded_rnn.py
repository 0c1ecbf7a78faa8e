"""A training step (forward + backward) of AllenNLP's packed `gru` / `lstm` encoders against the
padded `elmo_plugin_gru` / `elmo_plugin_lstm` with the same weights, on the shapes the task configs
train: `python -m benchmarks.padded_rnn [--repeats N]` (one thread; alternating runs, so both see
the same machine load). Prints one `BENCH {...}` line a case: median seconds of each, their ratio
and the largest output difference.
"""

import argparse
import statistics
import time
from typing import Any, Dict, List

import torch
from allennlp.common import Params
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder

import elmo_plugin  # noqa: F401  (registers the padded encoders)
from benchmarks.common import emit

# (name, kind, batch, longest sequence, input size, hidden size): the configs' largest encoders
CASES = (
    ("SQuAD passage (BiDAF phrase layer)", "gru", 45, 400, 400, 90),
    ("SQuAD passage, 150 tokens", "gru", 45, 150, 400, 90),
    ("SNLI premise (ESIM input encoder)", "lstm", 32, 40, 300, 300),
    ("SST-5 sentence (BCN encoder)", "lstm", 32, 50, 300, 300),
    ("coreference document, 50 sentences (context layer)", "lstm", 1, 1000, 450, 200),
)


def measure(
    kind: str, batch: int, longest: int, inputs: int, hidden: int, repeats: int
) -> Dict[str, Any]:
    params = {"input_size": inputs, "hidden_size": hidden, "bidirectional": True}
    torch.manual_seed(0)
    padded = Seq2SeqEncoder.from_params(Params({"type": f"elmo_plugin_{kind}", **params}))
    packed = Seq2SeqEncoder.from_params(Params({"type": kind, **params}))
    packed.load_state_dict(padded.state_dict())
    # lengths from half the longest to the longest, as in a batch of the bucket sampler's
    lengths = torch.linspace(longest, longest // 2, batch).long()
    mask = torch.arange(longest).unsqueeze(0) < lengths.unsqueeze(1)
    x = torch.randn(batch, longest, inputs) * mask.unsqueeze(-1)
    seconds: Dict[str, List[float]] = {"packed": [], "padded": []}
    outputs = {}
    for _ in range(repeats + 1):  # the first round warms up
        for name, encoder in (("packed", packed), ("padded", padded)):
            start = time.perf_counter()
            output = encoder(x, mask)
            output.square().sum().backward()
            seconds[name].append(time.perf_counter() - start)
            outputs[name] = output.detach()
    packed_s, padded_s = (statistics.median(seconds[name][1:]) for name in ("packed", "padded"))
    return {
        "packed_seconds": round(packed_s, 4),
        "padded_seconds": round(padded_s, 4),
        "speedup": round(packed_s / padded_s, 2),
        "max_output_difference": float((outputs["packed"] - outputs["padded"]).abs().max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, kind, batch, longest, inputs, hidden in CASES:
        record = measure(kind, batch, longest, inputs, hidden, args.repeats)
        emit(
            {"benchmark": "padded_rnn", "case": name, "batch": batch, "longest": longest, **record}
        )


if __name__ == "__main__":
    main()
