"""A training step (forward + backward) of AllenNLP's `gru` / `lstm` / `alternating_lstm` encoders
against the padded `elmo_plugin_*` ones with the same weights, on the shapes the task configs
train: `python -m elmo_benchmarks.padded_rnn [--repeats N] [--device cuda]` (one CPU thread; alternating
runs, so both see the same machine load). Prints one `BENCH {...}` line a case: median seconds of each, their ratio
and the largest output difference (in evaluation). "packed" names AllenNLP's encoders.
"""

import argparse
import statistics
import time
import warnings
from typing import Any, Dict, List

import torch
from allennlp.common import Params
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder

import elmo_plugin  # noqa: F401  (registers the padded encoders)
from elmo_benchmarks.common import emit

BI = {"bidirectional": True}
# (name, kind, batch, longest sequence, input size, hidden size, other parameters): the configs'
# largest encoders
CASES = (
    ("SQuAD passage (BiDAF phrase layer)", "gru", 45, 400, 400, 90, BI),
    ("SQuAD passage, 150 tokens", "gru", 45, 150, 400, 90, BI),
    ("SNLI premise (ESIM input encoder)", "lstm", 32, 40, 300, 300, BI),
    ("SST-5 sentence (BCN encoder)", "lstm", 32, 50, 300, 300, BI),
    ("coreference document, 50 sentences (context layer)", "lstm", 1, 1000, 450, 200, BI),
    (
        "SRL sentence (He et al., 8 alternating layers)",
        "alternating_lstm",
        80,
        50,
        200,
        300,
        {"num_layers": 8, "recurrent_dropout_probability": 0.1},
    ),
)


def measure(
    kind: str,
    batch: int,
    longest: int,
    inputs: int,
    hidden: int,
    other: Dict[str, Any],
    repeats: int,
    device: torch.device,
) -> Dict[str, Any]:
    params = {"input_size": inputs, "hidden_size": hidden, **other}
    torch.manual_seed(0)
    padded = Seq2SeqEncoder.from_params(Params({"type": f"elmo_plugin_{kind}", **params}))
    packed = Seq2SeqEncoder.from_params(Params({"type": kind, **params}))
    packed.load_state_dict(padded.state_dict())
    padded, packed = padded.to(device), packed.to(device)
    # lengths from half the longest to the longest, as in a batch of the bucket sampler's
    lengths = torch.linspace(longest, longest // 2, batch).long()
    mask = torch.arange(longest).unsqueeze(0) < lengths.unsqueeze(1)
    x = torch.randn(batch, longest, inputs) * mask.unsqueeze(-1)
    x, mask = x.to(device), mask.to(device)
    seconds: Dict[str, List[float]] = {"packed": [], "padded": []}
    for _ in range(repeats + 1):  # the first round warms up
        for name, encoder in (("packed", packed), ("padded", padded)):
            start = time.perf_counter()
            encoder(x, mask).square().sum().backward()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            seconds[name].append(time.perf_counter() - start)
    with torch.no_grad():  # in evaluation: the recurrent dropout masks differ by row order
        outputs = {"packed": packed.eval()(x, mask), "padded": padded.eval()(x, mask)}
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
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    args = parser.parse_args()
    torch.set_num_threads(1)
    device = torch.device(args.device)
    for name, kind, batch, longest, inputs, hidden, other in CASES:
        with warnings.catch_warnings(record=True) as caught:  # e.g. cuDNN's non-contiguous weights
            warnings.simplefilter("always")
            record = measure(kind, batch, longest, inputs, hidden, other, args.repeats, device)
        emit(
            {
                "benchmark": "padded_rnn",
                "case": name,
                "device": str(device),
                "batch": batch,
                "longest": longest,
                **record,
                "warnings": sorted({str(w.message)[:120] for w in caught}),
            }
        )


if __name__ == "__main__":
    main()
