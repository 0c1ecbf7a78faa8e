"""ONNX export of the biLM: onnxruntime gives `BiLm`'s layers at any batch shape, padding
included; the serving example runs without torch; the command writes atomically."""

import os
import subprocess
import sys

import numpy
import pytest
import torch

from elmo_bilm import batch_to_ids, load_bilm_tf
from elmo_bilm.cli.export_onnx import main
from elmo_bilm.runtime.onnx import ExportableBiLm, export_onnx
from elmo_bilm.sources.resolver import load_bilm
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

onnxruntime = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.slow

SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Короткий", "!"],  # UTF-8 bytes beyond ASCII
    ["x"],
    ["A", "word" * 20, "longer", "than", "fifty", "characters", "is", "cut", "."],
]
# batch shapes: one token, several sentences with padding, the same sentence in a longer batch
BATCHES = [[["x"]], SENTENCES, SENTENCES[:2], [SENTENCES[0] * 4, SENTENCES[2]]]
EXAMPLE = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "docs", "examples", "serve_onnx.py"
)


@pytest.fixture(scope="module", params=["fixture", "shipped"])
def exported(request, tmp_path_factory):
    if request.param == "fixture":
        bilm = load_bilm_tf(str(OPTIONS_FILE), str(WEIGHT_FILE))
    else:
        bilm = load_bilm()
    path = tmp_path_factory.mktemp("onnx") / "bilm.onnx"
    export_onnx(bilm.eval(), path)
    return bilm, path


def torch_layers(bilm, sentences):
    with torch.no_grad():
        return torch.stack(bilm(batch_to_ids(sentences))["activations"])


@pytest.mark.numerics
@pytest.mark.parametrize("batch", range(len(BATCHES)))
def test_onnxruntime_equals_the_torch_bilm(exported, batch):
    bilm, path = exported
    sentences = BATCHES[batch]
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    layers, mask = session.run(None, {"char_ids": batch_to_ids(sentences).numpy()})
    expected = torch_layers(bilm, sentences)
    # the same products summed in another order (padded batch, all 50 character columns)
    assert_float32_close(layers, expected, NETWORK)
    lengths = [len(sentence) for sentence in sentences]
    assert mask.tolist() == [[t < n for t in range(max(lengths))] for n in lengths]
    assert not layers[:, ~mask].any()  # zero at padding


@pytest.mark.numerics
def test_exportable_module_is_the_bilm_in_torch():
    """The padded formulation itself, before any export (float32 rounding only)."""
    bilm = load_bilm_tf(str(OPTIONS_FILE), str(WEIGHT_FILE)).eval()
    ids = batch_to_ids(SENTENCES)
    with torch.no_grad():
        layers, mask = ExportableBiLm(bilm)(ids)
    assert_float32_close(layers, torch_layers(bilm, SENTENCES), NETWORK)
    assert torch.equal(mask, (ids > 0).any(-1))


@pytest.mark.numerics
def test_serving_example_runs_without_torch(exported):
    bilm, path = exported
    # torch made unimportable: the example must not need it
    code = (
        "import runpy, sys\n"
        "sys.modules['torch'] = None\n"
        f"example = runpy.run_path({EXAMPLE!r})\n"
        "import numpy, onnxruntime\n"
        f"session = onnxruntime.InferenceSession({str(path)!r})\n"
        f"sentences = {SENTENCES!r}\n"
        "numpy.save(sys.argv[1], example['embed'](session, sentences))\n"
        "numpy.save(sys.argv[2], example['char_ids'](sentences))\n"
    )
    out = [str(path.with_suffix(f".{name}.npy")) for name in ("layers", "ids")]
    result = subprocess.run(
        [sys.executable, "-c", code, *out], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert numpy.array_equal(numpy.load(out[1]), batch_to_ids(SENTENCES).numpy())
    assert_float32_close(numpy.load(out[0]), torch_layers(bilm, SENTENCES), NETWORK)
    result = subprocess.run(
        [sys.executable, EXAMPLE, str(path)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == f"({bilm.num_layers}, 2, 5, {bilm.get_output_dim()})"


def test_int8_quantized_model_within_int8_arithmetic(exported, tmp_path):
    """onnxruntime's dynamic int8 model (`--quantize int8`) against the float32 one: every
    product quantized, so the bound of tests/elmo_bilm/runtime/test_precision.py, with one scale per
    weight tensor (not per row) counted as twice the error per product: `eps = 2^-6`."""
    from elmo_bilm.runtime.onnx import quantize_onnx

    bilm, path = exported
    quantized = tmp_path / "int8.onnx"
    quantize_onnx(path, quantized)
    ids = batch_to_ids(SENTENCES).numpy()
    run = [
        onnxruntime.InferenceSession(str(p), providers=["CPUExecutionProvider"])
        for p in (path, quantized)
    ]
    expected, got = (session.run(None, {"char_ids": ids})[0] for session in run)
    mask = (ids > 0).any(-1)
    eps = 2.0**-6
    for layer in range(expected.shape[0]):
        depth = 2 + 2 * len(bilm.char_cnn.highways) + 3 * layer
        a, b = torch.from_numpy(got[layer][mask]), torch.from_numpy(expected[layer][mask])
        scale = float(b.abs().max())
        assert 0 < float((a - b).abs().max()) <= 4 * eps * depth**0.5 * scale, layer
        cosine = torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=-1)
        assert float(cosine.mean()) >= 1 - 2 * eps**2 * depth, layer


def test_command_writes_once_and_explains_errors(tmp_path, capsys):
    out = tmp_path / "bilm.onnx"
    files = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    assert main([str(out), *files]) == 0
    written = out.stat().st_mtime_ns
    assert main([str(out), *files]) == 1  # not overwritten
    assert "exists; pass --overwrite" in capsys.readouterr().err  # checked before the export
    assert out.stat().st_mtime_ns == written
    out.write_bytes(b"stale")
    # replaced, with a readable model (quantized: the option reaches the export)
    assert main([str(out), *files, "--overwrite", "--quantize", "int8"]) == 0
    onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert b"DynamicQuantizeLinear" in out.read_bytes()
    assert main([str(tmp_path / "missing" / "bilm.onnx"), *files]) == 1
    assert "no such folder" in capsys.readouterr().err
    assert main([str(tmp_path / "x.onnx"), "--options-file", str(OPTIONS_FILE)]) == 1
    assert "needs its weight file" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("shape", [(0, 3), (2, 0), (0, 0)])
def test_an_empty_batch_gives_empty_layers(exported, shape):
    """No sentences (or no tokens): empty outputs of the right widths, where the graph's
    reshapes failed ("The input tensor cannot be reshaped to the requested shape")."""
    bilm, path = exported
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    layers, mask = session.run(None, {"char_ids": numpy.zeros((*shape, 50), dtype=numpy.int64)})
    assert layers.shape == (bilm.num_layers, *shape, bilm.get_output_dim()) and mask.shape == shape


def test_a_missing_extra_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    """Without the `onnx` extra the exporter died with `ModuleNotFoundError: onnxscript`."""
    import importlib.util

    from elmo_bilm.cli.export_onnx import main

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "onnxscript" else found(name, *a),
    )
    argv = [str(tmp_path / "b.onnx"), "--options-file", str(OPTIONS_FILE)]
    assert main([*argv, "--weight-file", str(WEIGHT_FILE)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("elmo-export-onnx: error: exporting to ONNX needs onnxscript")
    assert "-*.whl)[onnx]" in err[-1] and not (tmp_path / "b.onnx").exists()
