"""TF-Hub's ELMo module (issue 68): `elmo_bilm.tfhub.ElmoModule` reads a hub module folder's
`variables/` checkpoint (fixtures/tfhub: written by TensorFlow with bilm-tf's own graph under the
hub's variable names, from the tiny bilm-tf biLM) and gives the hub's outputs: the biLM's layers
equal `ElmoEmbedder`'s on the bilm-tf files and TensorFlow's own, `elmo` the hub's mix of them,
`default` their mean over each sentence's tokens, both signatures alike, the mix trainable; a
script in the style of the hub module's documentation runs with its import and constructor
switched. The module's folder is a kind of biLM source the resolver knows (format "tfhub"), so
every entry point opens it."""

import difflib
import http.server
import io
import json
import os
import runpy
import shutil
import sys
import tarfile
from typing import Dict, List

import numpy
import pytest
import torch

from elmo_bilm import ElmoEmbedder
from elmo_bilm.dropins.tfhub import ElmoModule, hub_name
from elmo_bilm.formats.bilm_tf import read_options
from elmo_bilm.sources import published
from elmo_bilm.utils.files import FormatError, UsageError
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE
from tests.local_server import LocalServer
from tests.numerics import NETWORK, ONE_REDUCTION, assert_float32_close

MODULE = REPO_ROOT / "fixtures" / "tfhub" / "tiny_module"
REFERENCE = json.loads((REPO_ROOT / "fixtures" / "tfhub" / "reference.json").read_text())
PROJ, DIM = 16, 32
OUTPUTS = ("word_emb", "lstm_outputs1", "lstm_outputs2", "elmo", "default")


@pytest.fixture(scope="module")
def module() -> ElmoModule:
    return ElmoModule(MODULE)


@pytest.fixture(scope="module")
def embedder() -> ElmoEmbedder:
    return ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), cuda_device=-1, stateful=False)


def _numpy(outputs: Dict[str, torch.Tensor]) -> Dict[str, numpy.ndarray]:
    return {name: value.detach().numpy() for name, value in outputs.items()}


def test_the_architecture_is_derived_from_the_variables(module):
    fixture = read_options(OPTIONS_FILE)
    for section in ("char_cnn", "lstm"):
        for key, value in module.bilm.options[section].items():
            assert value == fixture[section][key], (section, key)
    assert module.aggregation.weights.tolist() == REFERENCE["aggregation_weights"]
    assert module.aggregation.scaling.item() == REFERENCE["aggregation_scaling"]
    assert hub_name("RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0") == (
        "bilm/RNN_1/RNN/MultiRNNCell/Cell0/rnn/lstm_cell/projection/kernel"
    )


def test_outputs_equal_tensorflows(module):
    """The same sentences through bilm-tf's graph in TensorFlow (reference.json): the biLM's
    layers, the mix and the mean at each sentence's tokens, zero after them."""
    outputs = _numpy(module(REFERENCE["sentences"], signature="default", as_dict=True))
    lengths = REFERENCE["sequence_len"]
    assert outputs["sequence_len"].tolist() == lengths
    assert outputs["sequence_len"].dtype == numpy.int32
    expected = {name: numpy.asarray(REFERENCE["outputs"][name]) for name in OUTPUTS}
    width = len(REFERENCE["tokens"][0])
    for name in OUTPUTS[:4]:
        assert outputs[name].shape == (3, width, PROJ if name == "word_emb" else DIM), name
        for row, length in enumerate(lengths):
            assert_float32_close(
                outputs[name][row, :length], expected[name][row, :length], NETWORK, name
            )
            assert not outputs[name][row, length:].any(), name
    assert_float32_close(outputs["default"], expected["default"], NETWORK, "default")


def test_layers_equal_elmo_embedders(module, embedder):
    tokens = [[t for t in row if t] for row in REFERENCE["tokens"]]
    outputs = _numpy(module(REFERENCE["sentences"], as_dict=True))
    for row, layers in enumerate(embedder.embed_batch(tokens)):
        n = len(tokens[row])
        assert_float32_close(outputs["word_emb"][row, :n], layers[0][:, :PROJ], ONE_REDUCTION)
        assert_float32_close(outputs["lstm_outputs1"][row, :n], layers[1], ONE_REDUCTION)
        assert_float32_close(outputs["lstm_outputs2"][row, :n], layers[2], ONE_REDUCTION)


def test_elmo_is_the_hubs_mix_and_default_its_masked_mean(module):
    outputs = _numpy(module(REFERENCE["sentences"], as_dict=True))
    weights = numpy.exp(REFERENCE["aggregation_weights"])
    weights /= weights.sum()
    word = outputs["word_emb"]
    layers = [
        numpy.concatenate([word, word], -1),
        outputs["lstm_outputs1"],
        outputs["lstm_outputs2"],
    ]
    mix = REFERENCE["aggregation_scaling"] * sum(w * layer for w, layer in zip(weights, layers))
    assert_float32_close(outputs["elmo"], mix, ONE_REDUCTION)
    lengths = numpy.asarray(REFERENCE["sequence_len"])[:, None]
    assert_float32_close(outputs["default"], mix.sum(1) / lengths, ONE_REDUCTION)


def test_the_signatures_agree(module):
    sentences = ["the  cat sat", "", "dogs"]
    by_default = module(sentences, signature="default", as_dict=True)
    assert [by_default[name].shape[:2] for name in OUTPUTS[:4]] == [(3, 3)] * 4
    tokens = [["the", "cat", "sat", ""], ["ignored", "", "", ""], ["dogs", "junk", "", ""]]
    by_tokens = module(
        inputs={"tokens": tokens, "sequence_len": [3, 0, 1]}, signature="tokens", as_dict=True
    )
    assert "sequence_len" not in by_tokens
    for name in OUTPUTS[:4]:
        assert by_tokens[name].shape[1] == 4, name  # as wide as the token rows
        torch.testing.assert_close(by_tokens[name][:, :3], by_default[name], rtol=0, atol=0)
        assert not by_tokens[name][:, 3:].any()
    torch.testing.assert_close(by_tokens["default"], by_default["default"], rtol=0, atol=0)
    assert not by_default["default"][1].any()  # an empty sentence: zero, not 0 / 0
    numpy_tokens = numpy.array([[t.encode() for t in row] for row in tokens])
    as_bytes = module(
        inputs={"tokens": numpy_tokens, "sequence_len": numpy.array([3, 0, 1], numpy.int32)},
        signature="tokens",
    )
    torch.testing.assert_close(as_bytes, by_tokens["default"], rtol=0, atol=0)


def test_without_as_dict_the_default_output(module):
    default = module(["the cat", "dogs"])
    assert default.shape == (2, DIM)
    torch.testing.assert_close(default, module(["the cat", "dogs"], as_dict=True)["default"])


def test_empty_batches(module):
    outputs = module([], as_dict=True)
    assert outputs["elmo"].shape == (0, 0, DIM) and outputs["default"].shape == (0, DIM)
    outputs = module(["", "  "], as_dict=True)
    assert outputs["word_emb"].shape == (2, 0, PROJ) and not outputs["default"].any()


def test_the_mix_is_trainable_and_the_bilm_frozen():
    trainable = ElmoModule(MODULE, trainable=True)
    names = {name for name, p in trainable.named_parameters() if p.requires_grad}
    assert names == {"aggregation.weights", "aggregation.scaling"}
    outputs = trainable(["the cat sat", "dogs"], as_dict=True)
    (outputs["elmo"].square().sum() + outputs["default"].sum()).backward()
    weights_grad, scaling_grad = (
        trainable.aggregation.weights.grad,
        trainable.aggregation.scaling.grad,
    )
    assert weights_grad is not None and scaling_grad is not None
    assert weights_grad.abs().sum() > 0 and scaling_grad.abs() > 0
    assert all(p.grad is None for p in trainable.bilm.parameters())
    optimiser = torch.optim.SGD(trainable.parameters(), lr=0.1)
    optimiser.step()
    assert trainable.aggregation.scaling.item() != REFERENCE["aggregation_scaling"]
    frozen = ElmoModule(MODULE)
    assert not any(p.requires_grad for p in frozen.parameters())
    assert not frozen(["the cat"], as_dict=True)["elmo"].requires_grad


def test_bad_calls(module, tmp_path):
    with pytest.raises(UsageError, match="one string where a batch"):
        module("the cat sat")
    with pytest.raises(UsageError, match="signature 'tokenz'"):
        module(["a"], signature="tokenz")
    with pytest.raises(UsageError, match="rows of"):
        module(inputs={"tokens": [["a", "b"], ["c"]], "sequence_len": [2, 1]}, signature="tokens")
    with pytest.raises(UsageError, match=r"sequence_len\[0\] is 3"):
        module(inputs={"tokens": [["a", "b"]], "sequence_len": [3]}, signature="tokens")
    with pytest.raises(UsageError, match="takes inputs="):
        module(inputs={"tokens": [["a"]]}, signature="tokens")
    with pytest.raises(UsageError, match="a URL ElmoModule cannot fetch"):
        ElmoModule("gs://tfhub-modules/google/elmo/3.tar.gz")
    with pytest.raises(UsageError, match="as TF-Hub's ELMo module"):
        ElmoModule("https://tfhub.dev/google/universal-sentence-encoder/4")
    with pytest.raises(FormatError, match="not a TF-Hub ELMo module"):
        ElmoModule(tmp_path)
    with pytest.raises(UsageError, match="options_file= is for a TF-Hub module"):
        ElmoModule(OPTIONS_FILE.parent, options_file=OPTIONS_FILE)


def test_another_bilm_runs_with_the_mix_at_tfhubs_initial_values():
    """Issue 89: a folder of bilm-tf files (any source the resolver reads) is a module whose
    mix is TF-Hub's initial one, weights 0 and scaling 1: `elmo` is the layers' mean."""
    module = ElmoModule(OPTIONS_FILE.parent, trainable=True)
    assert module.aggregation.weights.tolist() == [0.0, 0.0, 0.0]
    assert module.aggregation.scaling.item() == 1.0 and module.aggregation.weights.requires_grad
    outputs = module(["the cat sat", "dogs"], as_dict=True)
    token = torch.cat([outputs["word_emb"]] * 2, dim=-1)
    mean = (token + outputs["lstm_outputs1"] + outputs["lstm_outputs2"]) / 3
    assert_float32_close(outputs["elmo"], mean, ONE_REDUCTION)
    layers = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=False).embed_sentence(
        ["the", "cat", "sat"]
    )
    assert_float32_close(outputs["lstm_outputs2"][0], torch.from_numpy(layers[2]), NETWORK)


def test_the_module_is_read_through_the_resolver(tmp_path, monkeypatch):
    """`ElmoModule` asks the resolver what its path is; the resolver's answer, format "tfhub",
    opens the same folder (or its `.tar.gz`) in `ElmoEmbedder` with the same layers."""
    from elmo_bilm.sources import resolver

    seen = []
    real = resolver.resolve_bilm

    def spy(*args):
        seen.append(args)
        return real(*args)

    monkeypatch.setattr(resolver, "resolve_bilm", spy)
    monkeypatch.setattr(sys.modules["elmo_bilm.dropins.tfhub"], "resolve_bilm", spy)
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    ElmoModule(MODULE / "variables")
    assert seen == [(str(MODULE / "variables"),)]
    packed = tmp_path / "elmo_3.tar.gz"
    with tarfile.open(packed, "w:gz") as tar:
        tar.add(MODULE / "variables", "variables")
    from_archive = ElmoModule(packed)
    sentences = ["the cat sat", "dogs"]
    fresh = ElmoModule(MODULE)  # (`module`'s character CNN may serve vectors cached earlier)
    torch.testing.assert_close(from_archive(sentences), fresh(sentences), rtol=0, atol=0)
    tokens = [s.split() for s in sentences]
    hub_embedder = ElmoEmbedder(str(MODULE), cuda_device=-1)
    files_embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), cuda_device=-1)
    for got, want in zip(hub_embedder.embed_batch(tokens), files_embedder.embed_batch(tokens)):
        numpy.testing.assert_array_equal(got, want)  # the same weights, exactly


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_an_index_that_is_no_regular_file_is_refused(tmp_path, kind):
    folder = tmp_path / "module"
    shutil.copytree(MODULE, folder)
    index = folder / "variables" / "variables.index"
    index.unlink()
    if kind == "fifo":
        os.mkfifo(index)
    else:
        index.symlink_to("/dev/zero")
    with pytest.raises(FormatError, match="variables.index: not a regular file"):
        ElmoModule(folder)


def test_an_options_file_is_checked_against_the_variables(tmp_path):
    options = read_options(OPTIONS_FILE)
    options["lstm"]["dim"] = 32
    wrong = tmp_path / "options.json"
    wrong.write_text(json.dumps(options))
    with pytest.raises(FormatError, match="lstm_cell/kernel' has shape"):
        ElmoModule(MODULE, options_file=wrong)
    same = ElmoModule(MODULE / "variables", options_file=OPTIONS_FILE)
    torch.testing.assert_close(same(["the cat"]), ElmoModule(MODULE)(["the cat"]))


def test_a_damaged_module_is_one_line(tmp_path):
    folder = tmp_path / "module"
    shutil.copytree(MODULE, folder)
    data = folder / "variables" / "variables.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:1000])
    with pytest.raises(FormatError, match="truncated or damaged"):
        ElmoModule(folder)


# A script in the style of the hub module's documentation (tfhub.dev/google/elmo/3), in
# PyTorch: the module is called as the hub's is; only its import line and constructor differ.
PUBLIC_SCRIPT = """\
import sys
import tensorflow_hub as hub

elmo = hub.Module("https://tfhub.dev/google/elmo/3", trainable=True)
embeddings = elmo(
    ["the cat is on the mat", "dogs are in the fog"],
    signature="default",
    as_dict=True)["elmo"]
print(tuple(embeddings.shape))
tokens_input = [["the", "cat", "is", "on", "the", "mat"],
                ["dogs", "are", "in", "the", "fog", ""]]
tokens_length = [6, 5]
outputs = elmo(
    inputs={
        "tokens": tokens_input,
        "sequence_len": tokens_length
    },
    signature="tokens",
    as_dict=True)
print(sorted(outputs), tuple(outputs["word_emb"].shape), tuple(outputs["default"].shape))
print(tuple(elmo(["the cat is on the mat"]).shape))
"""


def test_a_public_script_runs_with_the_import_and_constructor_switched(
    tmp_path, monkeypatch, capsys
):
    ours = PUBLIC_SCRIPT.replace(
        "import tensorflow_hub as hub", "from elmo_bilm.dropins.tfhub import ElmoModule"
    ).replace('hub.Module("https://tfhub.dev/google/elmo/3"', "ElmoModule(sys.argv[1]")
    changed: List[str] = [
        line
        for line in difflib.unified_diff(PUBLIC_SCRIPT.splitlines(), ours.splitlines(), n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert len(changed) == 4, changed  # two lines out, two lines in
    script = tmp_path / "elmo_hub.py"
    script.write_text(ours, encoding="utf-8")
    monkeypatch.setattr(sys, "argv", [str(script), str(MODULE)])
    runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.splitlines() == [
        f"(2, 6, {DIM})",
        f"['default', 'elmo', 'lstm_outputs1', 'lstm_outputs2', 'word_emb'] (2, 6, {PROJ}) "
        f"(2, {DIM})",
        f"(1, {DIM})",
    ]


class HubServer(LocalServer):
    """TF-Hub's protocol on 127.0.0.1: a handle asked for with `?tf-hub-format=compressed`
    answers with the module's `.tar.gz` (`archives`: request path -> body) or, as tfhub.dev
    does, a redirect to it (`redirects`: request path -> path)."""

    def __init__(self) -> None:
        self.archives: Dict[str, bytes] = {}
        self.redirects: Dict[str, str] = {}
        self.requests: List[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.requests.append(self.path)
                if self.path in server.redirects:
                    self.send_response(302)
                    self.send_header("Location", server.url + server.redirects[self.path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = server.archives.get(self.path)
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-tar")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._start(Handler)


def module_archive() -> bytes:
    """The fixture module packed as TF-Hub packs a module: a `.tar.gz` of its folder, `./`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(MODULE, ".")
    return buffer.getvalue()


@pytest.fixture
def hub_server(tmp_path, monkeypatch):
    """The server; google/elmo's tfhub.dev and Kaggle addresses in the catalogue pointing at
    it; the download cache in a temporary folder."""
    running = HubServer()
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(published, "TFHUB_ELMO_URL", f"{running.url}/google/elmo")
    monkeypatch.setattr(published, "KAGGLE_ELMO_URL", f"{running.url}/models/google/elmo")
    compressed = f"?{published.TFHUB_COMPRESSED}"
    running.redirects[f"/google/elmo/3{compressed}"] = "/tfhub-modules/google/elmo/3.tar.gz"
    running.archives["/tfhub-modules/google/elmo/3.tar.gz"] = module_archive()
    kaggle = "/models/google/elmo/frameworks/TensorFlow1/variations/elmo/versions/2"
    running.archives[kaggle + compressed] = module_archive()
    yield running
    running.stop()


def test_tfhubs_handles_of_google_elmo_name_their_compressed_archives():
    """The addresses `hub.Module` takes for google/elmo, mapped by the catalogue to the
    download tensorflow_hub's resolver makes (the handle + `?tf-hub-format=compressed`)."""
    compressed = "?tf-hub-format=compressed"
    for handle in (
        "https://tfhub.dev/google/elmo/1",
        "https://tfhub.dev/google/elmo/2/",
        "https://tfhub.dev/google/elmo/3",
        "https://www.kaggle.com/models/google/elmo/frameworks/TensorFlow1/variations/elmo/versions/3",
        "https://www.kaggle.com/models/google/elmo/tensorFlow1/elmo/2",
    ):
        assert published.tfhub_module_url(handle) == handle.rstrip("/") + compressed
        assert published.tfhub_module_url(handle + compressed) == handle.rstrip("/") + compressed
    plain = "http://tfhub.dev/google/elmo/2"  # hub.Module takes http too
    assert published.tfhub_module_url(plain) == plain + compressed
    others = ("https://tfhub.dev/google/nnlm-en-dim128/2", "https://tfhub.dev/google/elmo/3/x")
    for other in (*others, "https://tfhub.dev/google/elmo/", "original", "/tmp/elmo/3"):
        assert published.tfhub_module_url(other) is None
    with pytest.raises(UsageError, match="google/elmo has versions 1, 2, 3"):
        published.tfhub_module_url("https://tfhub.dev/google/elmo/4")


def test_a_tfhub_handle_is_downloaded_once_as_hub_module_does(hub_server, tmp_path):
    """Issue 89: `ElmoModule("https://tfhub.dev/google/elmo/3")` fetches the handle with
    `?tf-hub-format=compressed` (following tfhub.dev's redirect) once, unpacks it in the cache,
    and from then on needs no network; the Kaggle address is a module as well."""
    sentences = ["the cat sat", "dogs"]
    expected = ElmoModule(MODULE)(sentences, as_dict=True)
    handle = f"{published.TFHUB_ELMO_URL}/3"
    module = ElmoModule(handle, trainable=True)
    assert hub_server.requests == [
        "/google/elmo/3?tf-hub-format=compressed",
        "/tfhub-modules/google/elmo/3.tar.gz",
    ]
    assert module.aggregation.weights.tolist() == REFERENCE["aggregation_weights"]
    got = module(sentences, as_dict=True)
    for name in OUTPUTS:
        torch.testing.assert_close(got[name], expected[name], rtol=0, atol=0)
    kaggle = f"{published.KAGGLE_ELMO_URL}/frameworks/TensorFlow1/variations/elmo/versions/2"
    torch.testing.assert_close(ElmoModule(kaggle)(sentences), expected["default"])
    assert len(hub_server.requests) == 3
    hub_server.stop()  # offline from here on: the cache serves both
    torch.testing.assert_close(ElmoModule(handle)(sentences), expected["default"])
    torch.testing.assert_close(ElmoModule(kaggle + "/")(sentences), expected["default"])
    layers = ElmoEmbedder(handle, cuda_device=-1).embed_sentence(["the", "cat", "sat"])
    assert_float32_close(got["lstm_outputs1"][0].detach().numpy(), layers[1], ONE_REDUCTION)


def test_a_tfhub_handle_offline_is_one_line(hub_server):
    hub_server.stop()  # nothing cached, nothing answering
    with pytest.raises(OSError) as caught:
        ElmoModule(f"{published.TFHUB_ELMO_URL}/3")
    message = str(caught.value)
    assert "\n" not in message and "google/elmo/3?tf-hub-format=compressed" in message
    assert "download failed" in message and "nothing cached" in message


def test_a_tfhub_handle_that_sends_no_module_caches_nothing(hub_server, tmp_path):
    """A handle answered by an HTML page (a login wall), or by an archive with no module in it:
    refused in one line, nothing kept in the cache for a later run to take."""
    hub_server.archives["/tfhub-modules/google/elmo/3.tar.gz"] = b"<!DOCTYPE html><html></html>"
    with pytest.raises(OSError, match="HTML page"):
        ElmoModule(f"{published.TFHUB_ELMO_URL}/3")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("./README.md")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"hello"))
    hub_server.archives["/tfhub-modules/google/elmo/3.tar.gz"] = buffer.getvalue()
    with pytest.raises(FormatError) as caught:
        ElmoModule(f"{published.TFHUB_ELMO_URL}/3")
    assert "\n" not in str(caught.value)
    unpacked = tmp_path / "cache" / "unpacked"
    assert not unpacked.exists() or not [p for p in unpacked.iterdir()]


def test_the_public_script_runs_with_its_tfhub_handle(hub_server, monkeypatch, capsys, tmp_path):
    """The script `hub.Module("https://tfhub.dev/google/elmo/3", ...)` (issue 89's one failure):
    its handle, pointed at 127.0.0.1 by the catalogue, as the constructor's argument."""
    ours = PUBLIC_SCRIPT.replace(
        "import tensorflow_hub as hub", "from elmo_bilm.dropins.tfhub import ElmoModule"
    ).replace('hub.Module("https://tfhub.dev/google/elmo/3"', "ElmoModule(sys.argv[1]")
    script = tmp_path / "elmo_hub.py"
    script.write_text(ours, encoding="utf-8")
    monkeypatch.setattr(sys, "argv", [str(script), f"{published.TFHUB_ELMO_URL}/3"])
    runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.splitlines()[0] == f"(2, 6, {DIM})"


@pytest.mark.parametrize("trainable", [1, "no", None])
def test_trainable_is_a_bool_as_hubs(trainable):
    """Issue 88: `trainable=1` was torch's TypeError from `nn.Parameter(requires_grad=1)`;
    TF-Hub's `trainable` is a Python bool."""
    with pytest.raises(
        UsageError, match=r"trainable \(hub.Module's, a bool\) must be True or False"
    ) as caught:
        ElmoModule(MODULE, trainable=trainable)
    assert "\n" not in str(caught.value)
