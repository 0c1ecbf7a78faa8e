"""Inference precisions (`elmo_bilm.runtime.precision`): float32 bit for bit as before, bfloat16 and int8
within bounds that follow from their arithmetic, the fallback where the CPU lacks bfloat16
instructions, `torch.autocast` around the biLM, `--precision` on the commands.

The bounds. A chain of D matrix products (convolution, 2 per highway layer, the char CNN's
projection, then per LSTM layer its input-to-gate, recurrent and projection products) each adding
an error of relative size `eps` to what it passes on: the gates and clips between them have gains
of at most 1 (sigmoid' <= 1/4, tanh' <= 1, clipping, a highway's convex mix, the forget gate < 1
on the carried state), and errors of different products are independent, so they add in
quadrature: about `eps * sqrt(D)` of a layer's scale (its largest float32 magnitude) for a
typical element. The largest of thousands of such elements is about 4 standard deviations out,
so `max abs <= 4 * eps * sqrt(D) * scale`; a token vector's relative error is about
`eps * sqrt(D)` and `1 - cos ~ (relative error)^2 / 2`, so with a factor 2 on the error
`mean cosine >= 1 - 2 * eps^2 * D`.

- bfloat16 keeps 8 significand bits: rounding an operand is a relative error of at most 2^-9,
  a product of two rounded operands about 2^-8 per term, which the float32 accumulation keeps
  (terms of random sign: the sum's error is 2^-8 of its size), and rounding the result to
  bfloat16 adds 2^-9: `eps = 2^-8` per product.
- int8: a weight row rounds to 255 levels of its largest magnitude, an input tensor to 255 levels
  (127 on a CPU without VNNI) of its range: errors of 2^-8 (2^-7) of the largest magnitudes,
  about twice that against the typical values they multiply: `eps = 2^-7` per product (2^-6
  on a CPU without VNNI).
- `torch.autocast` also rounds every product's result and the LSTM's state and outputs to
  bfloat16: two roundings a product, `eps = 2^-7`.

A wrong result (a direction's weights swapped, a layer skipped, state leaking between
sentences) is off by a good part of the scale and far from cosine 1: the largest-difference
bounds (5% of the scale for bfloat16 on the top layer, 11% for int8) and above all the cosine
bounds (1 - 4e-4 and 1 - 1.5e-3) catch it.
"""

import json
import math
import os
import subprocess
import sys
import warnings
from typing import List

import h5py
import pytest
import torch

from elmo_bilm.cli.embed import main as embed_main
from elmo_bilm.cli.embed_corpus import add_arguments as corpus_arguments
from elmo_bilm.integrations.corpus import ShardEmbedder
from elmo_bilm.model import onednn
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.characters import batch_char_ids
from elmo_bilm.runtime import precision
from elmo_bilm.runtime.precision import _prepare, set_precision
from elmo_bilm.sources.resolver import load_bilm
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

# compared across rounding paths: make test reruns it on AVX2 kernels and on an emulated AVX2 CPU
pytestmark = [pytest.mark.numerics, pytest.mark.emulated_cpu]

BF16_EPS = 2.0**-8
INT8_EPS = 2.0**-7 if torch.cpu._is_vnni_supported() else 2.0**-6
AUTOCAST_EPS = 2.0**-7


def fresh() -> BiLm:
    return load_bilm(str(OPTIONS_FILE), str(WEIGHT_FILE)).eval()


@pytest.fixture(scope="module")
def char_ids(fixture_sentences) -> torch.Tensor:
    return batch_char_ids([s for group in fixture_sentences for s in group])


@pytest.fixture(scope="module")
def today(char_ids) -> List[torch.Tensor]:
    """Every layer as a freshly loaded biLM computes it without any precision set."""
    with torch.no_grad():
        return fresh()(char_ids)["activations"]


def layers(bilm: BiLm, char_ids: torch.Tensor) -> List[torch.Tensor]:
    with torch.no_grad():
        return [layer.float() for layer in bilm(char_ids)["activations"]]


def depth(bilm: BiLm, layer: int) -> int:
    """Matrix products on the longest path to `layer` (see the module docstring)."""
    return 2 + 2 * len(bilm.char_cnn.highways) + 3 * layer


def assert_within(bilm, got, expected, eps, mask):
    for layer, (a, b) in enumerate(zip(got, expected)):
        d = depth(bilm, layer)
        scale = float(b.abs().max())
        max_abs = float((a - b).abs().max())
        assert max_abs <= 4 * eps * math.sqrt(d) * scale, (layer, max_abs, scale)
        cosine = torch.nn.functional.cosine_similarity(a[mask].double(), b[mask].double(), dim=-1)
        assert float(cosine.mean()) >= 1 - 2 * eps**2 * d, (layer, float(cosine.mean()))
        assert max_abs > 0, "a lower precision that changes nothing did not run"


@pytest.mark.same_on_every_cpu
def test_float32_is_bit_identical_to_before(char_ids, today, monkeypatch):
    bilm = set_precision(fresh(), "float32")
    assert all(torch.equal(a, b) for a, b in zip(layers(bilm, char_ids), today))
    for other in ("bfloat16", "int8"):  # and back, the word cache included
        _prepare(bilm, other, other)
        layers(bilm, char_ids)
        set_precision(bilm, "float32")
        assert all(torch.equal(a, b) for a, b in zip(layers(bilm, char_ids), today)), other
    # the oneDNN route that large biLMs take: the same bits with and without a precision's visit
    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0)
    packed = layers(fresh(), char_ids)
    _prepare(bilm, "int8", "int8")
    layers(bilm, char_ids)
    set_precision(bilm, "float32")
    assert all(torch.equal(a, b) for a, b in zip(layers(bilm, char_ids), packed))


@pytest.mark.parametrize(
    "name, recurrent, eps",
    [("bfloat16", "bfloat16", BF16_EPS), ("int8", precision.INT8_RECURRENT, INT8_EPS)],
)
def test_lower_precisions_stay_within_their_arithmetic(char_ids, today, name, recurrent, eps):
    bilm = _prepare(fresh(), name, recurrent)  # without the CPU check: the arithmetic everywhere
    mask = (char_ids > 0).any(-1)
    assert_within(bilm, layers(bilm, char_ids), today, eps, mask)
    assert isinstance(bilm.char_cnn.projection, precision.PrecisionLinear)


@pytest.mark.same_on_every_cpu
def test_training_passes_stay_float32(char_ids):
    """A pass that needs gradients ignores the setting (it is for inference)."""
    reference, bilm = fresh().train(), _prepare(fresh(), "int8", "int8").train()
    expected = reference(char_ids)["activations"]
    got = bilm(char_ids)["activations"]
    assert all(torch.equal(a, b) for a, b in zip(got, expected))
    got[-1].sum().backward()
    assert bilm.lstm.input_weights[0].grad is not None


def test_bfloat16_without_the_instructions_falls_back_to_float32(char_ids, today, monkeypatch):
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    with pytest.warns(UserWarning) as caught:
        bilm = set_precision(fresh(), "bfloat16")
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "AVX-512 BF16" in message and "AVX2" in message and "\n" not in message
    assert bilm.lstm.products is None
    assert all(torch.equal(a, b) for a, b in zip(layers(bilm, char_ids), today))

    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    with pytest.warns(UserWarning, match="AVX-512 BF16 \\(nor AMX\\)"):
        set_precision(fresh(), "bfloat16")


def test_bfloat16_with_the_instructions_runs_bfloat16(monkeypatch):
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bilm = set_precision(fresh(), "bfloat16")
    assert isinstance(bilm.lstm.products, precision.LstmProducts)
    assert bilm.lstm.products.precision == "bfloat16"


def test_the_fallback_follows_torchs_capability_variable():
    code = (
        "import warnings, json; from elmo_bilm.model.bilm import BiLm; "
        "from elmo_bilm.runtime.precision import set_precision; "
        f"options = json.load(open({str(OPTIONS_FILE)!r})); "
        "b = set_precision(BiLm(options), 'bfloat16'); print(b.lstm.products)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "ATEN_CPU_CAPABILITY": "avx2"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "None"
    assert "needs AVX-512 BF16 (torch's CPU capability is AVX2)" in result.stderr


@pytest.mark.parametrize("route", ["bmm", "onednn"])
def test_autocast_around_the_bilm(char_ids, today, route, monkeypatch):
    if route == "onednn":  # the large biLMs' route (it yields to autocast's dtype)
        monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0)
    bilm = fresh()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = layers(bilm, char_ids)
    assert all(bool(layer.isfinite().all()) for layer in got)
    assert_within(bilm, got, today, AUTOCAST_EPS, (char_ids > 0).any(-1))


@pytest.mark.same_on_every_cpu
def test_a_prepared_biLM_copies_and_keeps_its_parameters(char_ids):
    import copy
    import pickle

    bilm = _prepare(fresh(), "int8", "int8")
    expected = layers(bilm, char_ids)
    for other in (copy.deepcopy(bilm), pickle.loads(pickle.dumps(bilm))):
        assert all(torch.equal(a, b) for a, b in zip(layers(other, char_ids), expected))
    assert set(bilm.state_dict()) == set(fresh().state_dict())


def test_set_precision_checks_its_argument_and_returns_the_biLM():
    bilm = fresh()
    assert set_precision(bilm, "int8") is bilm
    products = bilm.lstm.products
    assert set_precision(bilm, "int8").lstm.products is products  # packs kept: no new work
    with pytest.raises(ValueError, match="float32"):
        set_precision(bilm, "float16")


@pytest.mark.same_on_every_cpu
def test_an_int8_biLM_cast_after_set_precision_says_what_to_do(char_ids):
    """Issue 79: `.double()` after `set_precision(bilm, "int8")` was a bare dtype error from
    fbgemm; now one line naming the dtype and the two ways out, each of which then runs."""
    expected = layers(set_precision(fresh(), "int8"), char_ids)
    bilm = set_precision(fresh(), "int8").double()
    with pytest.raises(RuntimeError) as error, torch.no_grad():
        bilm(char_ids)
    message = str(error.value)
    assert "\n" not in message
    assert "precision 'int8'" in message and "torch.float64" in message
    assert ".float()" in message and "set_precision(bilm, 'float32')" in message
    # the first way out: int8 again, the same bits; the second: float64 throughout
    assert all(torch.equal(a, b) for a, b in zip(layers(bilm.float(), char_ids), expected))
    double = set_precision(set_precision(fresh(), "int8"), "float32").double()
    with torch.no_grad():
        assert all(layer.dtype == torch.float64 for layer in double(char_ids)["activations"])


@pytest.mark.filterwarnings("ignore:precision 'bfloat16' needs")  # the AVX2 pass of make test
def test_the_benchmark_runs(capsys, monkeypatch):
    from elmo_benchmarks import precision as bench

    arguments = "--config tiny --sentences 6 --batch-size 4 --rounds 1 --threads 1".split()
    monkeypatch.setattr(sys, "argv", ["elmo_benchmarks.precision", *arguments])
    bench.main()
    out = capsys.readouterr().out
    records = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("BENCH ")]
    assert [r["variant"] for r in records] == ["float32", "bfloat16", "int8"]
    # each record says which kernels ran (under `make test`'s AVX2 pass: AVX2)
    kernels = {"cpu_capability": torch.backends.cpu.get_cpu_capability()}
    assert all(r["kernels"].items() >= kernels.items() for r in records)
    assert all(isinstance(r["kernels"]["vnni"], bool) for r in records)


def test_elmo_embed_precision(tmp_path, fixture_sentences, capsys):
    text = tmp_path / "in.txt"
    text.write_text("\n".join(" ".join(s) for s in fixture_sentences[0]) + "\n")
    files = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    outputs = {}
    for name in ("float32", "int8"):
        out = tmp_path / f"{name}.hdf5"
        assert embed_main([str(text), str(out), "--top", "--precision", name, *files]) == 0
        with h5py.File(out) as handle:
            outputs[name] = torch.cat([torch.from_numpy(handle[str(i)][()]) for i in range(10)])
    scale = float(outputs["float32"].abs().max())
    bound = 4 * INT8_EPS * math.sqrt(depth(fresh(), 2)) * scale
    assert 0 < float((outputs["int8"] - outputs["float32"]).abs().max()) <= bound
    gpu = [str(text), str(tmp_path / "gpu.hdf5"), "--precision", "int8", "--cuda-device", "0"]
    assert embed_main(gpu + files) == 1  # int8 is for the CPU: an error, not a crash
    assert "--precision int8 runs on the CPU" in capsys.readouterr().err


def test_elmo_embed_corpus_precision(tmp_path):
    parser = corpus_arguments(__import__("argparse").ArgumentParser())
    assert parser.parse_args(["in", "out", "--precision", "int8"]).precision == "int8"
    assert parser.parse_args(["in", "out"]).precision == "float32"
    worker = ShardEmbedder(
        str(OPTIONS_FILE), str(WEIGHT_FILE), {}, "float32", 8, str(tmp_path), 1, "int8"
    )
    assert worker.bilm.lstm.products.precision == "int8"


@pytest.mark.parametrize("precision", ["bfloat16", "int8"])
def test_elmo_and_elmo_embedder_take_a_precision(precision: str) -> None:
    """`Elmo(..., precision=)` / `ElmoEmbedder(..., precision=)` run the biLM as
    `set_precision` prepares it (the numerics themselves are tested above)."""
    from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids

    sentences = [["The", "cat", "sat", "."], ["Hi"]]
    files = (str(OPTIONS_FILE), str(WEIGHT_FILE))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the float32 fallback on a CPU without AVX-512 BF16
        bilm = set_precision(load_bilm(*files).eval(), precision)
        elmo = Elmo(
            *files, 1, dropout=0.0, scalar_mix_parameters=[-9e10, -9e10, 0], precision=precision
        )
        embedder = ElmoEmbedder(*files, precision=precision)
    with torch.no_grad():  # int8 scales each product's input by the batch: compare like batches
        expected = bilm(batch_to_ids(sentences))["activations"]
        # the embedder's fresh biLM encodes the sentence's words in a block of their own: so must
        # this one (its word cache holds them from the block with "Hi", whose convolution may round
        # differently where the CPU's kernels are capped, e.g. AVX2 on an AVX-512 BF16 CPU)
        bilm.char_cnn.clear_word_cache()
        alone = bilm(batch_to_ids(sentences[:1]))["activations"]
    top = elmo(batch_to_ids(sentences))["elmo_representations"][0]
    assert torch.equal(top, expected[-1])
    assert torch.equal(
        torch.from_numpy(embedder.embed_sentence(sentences[0])), torch.stack(alone)[:, 0]
    )


@pytest.mark.same_on_every_cpu
def test_an_int8_biLM_sees_an_edit_of_its_forget_bias(char_ids):
    """Issue 88: the input products' int8 pack holds the forget gate's constant, a buffer its
    fingerprint did not cover: `lstm.forget_bias.zero_()` was not seen."""
    bilm = set_precision(fresh(), "int8")
    before = layers(bilm, char_ids)
    bilm.lstm.forget_bias.zero_()
    after = layers(bilm, char_ids)
    edited = fresh()
    edited.lstm.forget_bias.zero_()
    expected = layers(set_precision(edited, "int8"), char_ids)
    assert not torch.equal(before[1], after[1])
    assert all(torch.equal(a, b) for a, b in zip(after, expected))
