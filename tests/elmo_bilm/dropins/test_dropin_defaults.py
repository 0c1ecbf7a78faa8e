"""Issue 80's rule, family by family: a name that mirrors another library's behaves as that
library does by default (carried LSTM state, default model, layers, output types and shapes,
the module's public names, the arguments), and `stateful=False` gives the deterministic mode.

References: AllenNLP 2.10 itself (installed) for `Elmo` and, for 0.9's `ElmoEmbedder`, 0.9's
method bodies over 2.10's stateful `_ElmoBiLm` (0.9 does not install on Python 3.11); for
bio_embeddings, ELMoForManyLangs, simple_elmo and TF-Hub, `fixtures/dropins/originals.json`,
their public names and signatures' defaults read from their own source by
`fixtures/dropins/make_fixture.py` (their numbers: `fixtures/elmoformanylangs`,
`fixtures/simple_elmo`, `fixtures/tfhub`, and tests/elmo_bilm/dropins/test_seqvec_stateful.py).

Tolerance: `NETWORK` float32 units (one biLM pass's rounding); a state carried or not differs by
far more (`DIFFERENT`), asserted so that each comparison can fail.
"""

import http.server
import importlib
import inspect
import json
import logging
import shutil
from pathlib import Path
from typing import Dict, List, Sequence

import h5py
import numpy
import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids, load_bilm_tf
from elmo_bilm.sources import published
from elmo_bilm.utils.files import UsageError
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.local_server import LocalServer
from tests.numerics import NETWORK, assert_float32_close

FILES = (str(OPTIONS_FILE), str(WEIGHT_FILE))
ORIGINALS = json.loads(
    (Path(__file__).resolve().parents[3] / "fixtures" / "dropins" / "originals.json").read_text()
)
# batches whose sizes change from call to call (AllenNLP keeps states per row: rows past a
# smaller batch keep theirs, new rows of a larger one start from zero)
BATCHES = [
    [["The", "cat", "sat", "."], ["Hello", "!"]],
    [["A", "b", "c"], ["x"], ["The", "dog", "ran", "off", "."], ["Hi"], ["y", "z"]],
    [["Birds", "fly", "."], ["q"], ["The", "end"]],
]
DIFFERENT = 1e-3  # far beyond rounding (values near 1): a carried state moves them by more


def max_difference(a: Sequence[numpy.ndarray], b: Sequence[numpy.ndarray]) -> float:
    return max(float(numpy.abs(numpy.asarray(x) - numpy.asarray(y)).max()) for x, y in zip(a, b))


# ---- AllenNLP's Elmo


def test_elmo_is_stateful_by_default_as_allennlps_call_after_call() -> None:
    from allennlp.modules.elmo import Elmo as AllenNlpElmo

    ours = Elmo(*FILES, 2, dropout=0.0)
    theirs = AllenNlpElmo(*FILES, 2, dropout=0.0)
    stateless = Elmo(*FILES, 2, dropout=0.0, stateful=False)
    assert ours.stateful and not stateless.stateful
    first_alone = None
    for call, batch in enumerate(BATCHES):
        ids = batch_to_ids(batch)
        mine, reference = ours(ids), theirs(ids)
        assert torch.equal(mine["mask"], reference["mask"].bool())
        for got, want in zip(mine["elmo_representations"], reference["elmo_representations"]):
            assert_float32_close(got, want, NETWORK, f"call {call}")
        plain = stateless(ids)["elmo_representations"][0]
        if call == 0:
            first_alone = plain
            assert_float32_close(plain, reference["elmo_representations"][0], NETWORK)
        else:  # from the second call on, only the stateful default is AllenNLP's
            gap = (plain - reference["elmo_representations"][0]).abs().max().item()
            assert gap > DIFFERENT, call
    again = stateless(batch_to_ids(BATCHES[0]))["elmo_representations"][0]
    assert torch.equal(again, first_alone)  # stateless: the same vectors call after call


def test_elmo_reset_states_starts_over_as_allennlps() -> None:
    ours = Elmo(*FILES, 1, dropout=0.0)
    ids = batch_to_ids(BATCHES[1])
    first = ours(ids)["elmo_representations"][0]
    second = ours(ids)["elmo_representations"][0]
    assert (first - second).abs().max().item() > DIFFERENT
    ours._elmo_lstm._elmo_lstm.reset_states()  # AllenNLP's path
    assert_float32_close(ours(ids)["elmo_representations"][0], first, NETWORK)


def test_elmo_signature_defaults_are_allennlps() -> None:
    from allennlp.modules.elmo import Elmo as AllenNlpElmo

    theirs = inspect.signature(AllenNlpElmo.__init__).parameters
    ours = inspect.signature(Elmo.__init__).parameters
    shared = [name for name in theirs if name != "self"]
    assert list(ours)[1 : 1 + len(shared)] == shared  # the same positions
    for name in shared:
        if theirs[name].default is not inspect.Parameter.empty:
            assert ours[name].default == theirs[name].default, name


# ---- AllenNLP 0.9's ElmoEmbedder


class AllenNlp09:
    """AllenNLP 0.9's `ElmoEmbedder` methods in outline over AllenNLP 2.10's `_ElmoBiLm`, which
    is stateful as 0.9's was (nothing reset between calls): `batch_to_embeddings` (the layers
    less the boundaries, stacked on dim 1), `embed_batch` (each sentence cut to its length; the
    batch `[[]]` not run), `embed_sentences` (groups of `batch_size` in input order)."""

    def __init__(self) -> None:
        from allennlp.modules.elmo import _ElmoBiLm

        self.bilm = _ElmoBiLm(*FILES).eval()

    def batch_to_embeddings(self, batch: List[List[str]]) -> torch.Tensor:
        from allennlp.nn.util import remove_sentence_boundaries

        with torch.no_grad():
            output = self.bilm(batch_to_ids(batch))
        layers = [remove_sentence_boundaries(x, output["mask"])[0] for x in output["activations"]]
        return torch.stack(layers, dim=1)

    def embed_batch(self, batch: List[List[str]]) -> List[numpy.ndarray]:
        if batch == [[]]:
            return [numpy.zeros((3, 0, 32))]
        stacked = self.batch_to_embeddings(batch).numpy()
        return [stacked[row, :, : len(sentence)] for row, sentence in enumerate(batch)]

    def embed_sentences(self, sentences: List[List[str]], batch_size: int) -> List[numpy.ndarray]:
        out: List[numpy.ndarray] = []
        for start in range(0, len(sentences), batch_size):
            out += self.embed_batch(sentences[start : start + batch_size])
        return out


def test_elmo_embedder_is_stateful_by_default_as_allennlp_09s(tmp_path) -> None:
    """Every method in turn, batch sizes changing, `embed_file` last: 0.9's numbers throughout."""
    ours, theirs = ElmoEmbedder(*FILES), AllenNlp09()
    assert ours.stateful
    assert_float32_close(
        ours.batch_to_embeddings(BATCHES[0])[0], theirs.batch_to_embeddings(BATCHES[0]), NETWORK
    )
    assert_float32_close(
        ours.embed_sentence(BATCHES[1][2]), theirs.embed_batch([BATCHES[1][2]])[0], NETWORK
    )
    for got, want in zip(ours.embed_batch(BATCHES[1]), theirs.embed_batch(BATCHES[1])):
        assert_float32_close(got, want, NETWORK)
    sentences = BATCHES[2] + BATCHES[0] + BATCHES[1]
    lazy = list(ours.embed_sentences(iter(sentences), batch_size=3))
    for got, want in zip(lazy, theirs.embed_sentences(sentences, 3), strict=True):
        assert_float32_close(got, want, NETWORK)
    source = tmp_path / "in.txt"
    source.write_text("".join(" ".join(s) + "\n" for s in sentences))
    ours.embed_file(str(source), str(tmp_path / "out.hdf5"), output_format="average", batch_size=4)
    expected = theirs.embed_sentences(sentences, 4)
    with h5py.File(tmp_path / "out.hdf5", "r") as out:
        index = json.loads(out["sentence_to_index"][0])
        assert index["The end"] == "2" and len(index) == len(sentences)
        for key, want in enumerate(expected):
            assert out[str(key)].dtype == numpy.float32
            assert_float32_close(out[str(key)][...], want.mean(axis=0), NETWORK, str(key))
    # the stateless mode is not 0.9's from the second call on, and is the same call after call
    stateless = ElmoEmbedder(*FILES, stateful=False)
    first = stateless.embed_batch(BATCHES[1])
    assert max_difference(first, theirs.embed_batch(BATCHES[1])) > DIFFERENT
    assert max_difference(first, stateless.embed_batch(BATCHES[1])) == 0


class Server(LocalServer):
    """Serves the fixture biLM's files at `files`' paths; counts the requests."""

    def __init__(self) -> None:
        self.files: Dict[str, bytes] = {}
        self.requests: List[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.requests.append(self.path)
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._start(Handler)

    def serve(self, url: str, body: bytes) -> None:
        self.files[url[len(self.url) :]] = body


@pytest.fixture
def server(tmp_path, monkeypatch):
    """The server; the download cache in a temporary folder; AllenNLP's published URLs (and
    bio_embeddings' SeqVec URLs) pointing at the server, serving the fixture biLM; no
    bio_embeddings cache."""
    running = Server()
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(published, "BASE_URL", f"{running.url}/models/elmo")
    options_url, weight_url = published.published_urls("original")
    running.serve(options_url, OPTIONS_FILE.read_bytes())
    running.serve(weight_url, WEIGHT_FILE.read_bytes())
    # SeqVec's entry in the one catalogue, which bio_embeddings' drop-in looks up
    monkeypatch.setattr(published, "SEQVEC_OPTIONS_URL", f"{running.url}/seqvec/options.json")
    monkeypatch.setattr(published, "SEQVEC_WEIGHTS_URL", f"{running.url}/seqvec/weights.hdf5")
    running.serve(published.SEQVEC_OPTIONS_URL, OPTIONS_FILE.read_bytes())
    running.serve(published.SEQVEC_WEIGHTS_URL, WEIGHT_FILE.read_bytes())
    yield running
    running.stop()


def same_weights(bilm: torch.nn.Module) -> bool:
    reference = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).state_dict()
    return all(torch.equal(reference[k], v) for k, v in bilm.state_dict().items())


def test_elmo_embedder_without_files_loads_original_once_as_09_did(server) -> None:
    embedder = ElmoEmbedder()  # 0.9: DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE (`original`)
    assert same_weights(embedder.elmo_bilm) and embedder.stateful
    original = [path for path in server.requests if "2x4096_512_2048cnn_2xhighway" in path]
    assert len(original) == len(server.requests) == 2
    server.stop()  # offline from here on: the cache serves it
    assert same_weights(ElmoEmbedder().elmo_bilm)


def test_elmo_embedder_without_files_offline_is_one_line(server, tmp_path) -> None:
    server.stop()  # nothing cached, nothing answering
    with pytest.raises(OSError) as caught:
        ElmoEmbedder()
    message = str(caught.value)
    assert "\n" not in message
    options_url = published.published_urls("original")[0]
    for part in ("ElmoEmbedder() without files", "'original'", options_url, "cache"):
        assert part in message, part
    assert "elmo_2x4096_512_2048cnn_2xhighway_options.json" in message  # the file to place
    assert "ElmoEmbedder('wikipedia')" in message


@pytest.mark.parametrize("blank", ["  ", b"", "\u3000"])
def test_elmo_embedder_of_a_blank_name_is_the_default(server, blank) -> None:
    """ElmoEmbedder("  ") (an unset variable in a notebook's f-string) loaded the shipped
    test-size biLM, not the default `original` ElmoEmbedder() loads: the blank name passed the
    constructor's `not options_file` and the resolver read it as nothing named."""
    server.stop()  # offline: the default's one line, as ElmoEmbedder()'s
    with pytest.raises(OSError, match="ElmoEmbedder\\(\\) without files"):
        ElmoEmbedder(blank)


def test_elmo_embedder_takes_a_path_object() -> None:
    assert same_weights(ElmoEmbedder(Path(OPTIONS_FILE), Path(WEIGHT_FILE)).elmo_bilm)


# ---- bio_embeddings


def test_bio_embeddings_public_names_import_and_the_others_refuse_use() -> None:
    module = importlib.import_module("elmo_bilm.bio_embeddings")
    original = ORIGINALS["bio_embeddings.embed"]
    for name in original["names"]:
        assert hasattr(module, name), name
        assert name in module.__all__, name
    from elmo_bilm.dropins.bio_embeddings import (  # the script: ImportError before
        ProtTransBertBFDEmbedder,
        SeqVecEmbedder,
        UnsupportedEmbedder,
        name_to_embedder,
    )

    assert {k: v.__name__ for k, v in name_to_embedder.items()} == {
        name: class_name for class_name, name in original["embedder_names"].items()
    }
    assert SeqVecEmbedder.name == "seqvec"
    for class_name in original["embedder_names"]:
        if class_name == "SeqVecEmbedder":
            continue
        embedder_class = getattr(module, class_name)
        with pytest.raises(UnsupportedEmbedder) as caught:
            embedder_class(device="cpu")
        message = str(caught.value)
        assert "\n" not in message and class_name in message and "SeqVecEmbedder" in message
        with pytest.raises(UnsupportedEmbedder):
            embedder_class.reduce_per_protein(numpy.zeros((3, 2, 4)))
    assert issubclass(ProtTransBertBFDEmbedder, module.EmbedderInterface)
    assert issubclass(SeqVecEmbedder, module.EmbedderInterface)
    assert issubclass(UnsupportedEmbedder, (UsageError, NotImplementedError))


def test_seqvec_signature_defaults_are_bio_embeddings() -> None:
    from elmo_bilm.dropins.bio_embeddings import EmbedderInterface, SeqVecEmbedder

    signatures = ORIGINALS["bio_embeddings.embed"]["signatures"]
    ours = inspect.signature(SeqVecEmbedder.__init__).parameters
    assert (
        ours["warmup_rounds"].default
        == signatures["SeqVecEmbedder.__init__"]["defaults"]["warmup_rounds"]
    )
    assert ours["device"].default == signatures["EmbedderInterface.__init__"]["defaults"]["device"]
    many = inspect.signature(EmbedderInterface.embed_many).parameters
    assert (
        many["batch_size"].default
        == signatures["EmbedderInterface.embed_many"]["defaults"]["batch_size"]
    )
    assert inspect.signature(SeqVecEmbedder.embed_many).parameters["batch_size"].default is None
    assert inspect.signature(SeqVecEmbedder.__init__).parameters["stateful"].default is True


def test_seqvec_without_files_downloads_bio_embeddings_files_once(server) -> None:
    from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder

    embedder = SeqVecEmbedder(device="cpu")  # bio_embeddings: its defaults.yml URLs, cached
    assert same_weights(embedder._model.elmo_bilm) and embedder.stateful
    assert sorted(server.requests) == ["/seqvec/options.json", "/seqvec/weights.hdf5"]
    files = SeqVecEmbedder(
        options_file=str(OPTIONS_FILE), weights_file=str(WEIGHT_FILE), device="cpu"
    )  # the same warm-up, so the same states: the same vectors
    assert_float32_close(embedder.embed("MKTAYIAK"), files.embed("MKTAYIAK"), NETWORK)
    server.stop()  # offline from here on: the cache serves them
    assert same_weights(SeqVecEmbedder(0, device="cpu")._model.elmo_bilm)


def test_seqvec_without_files_reads_bio_embeddings_own_cache(server, tmp_path) -> None:
    from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder, bio_embeddings_cache

    folder = bio_embeddings_cache()
    assert folder == tmp_path / "xdg" / "bio_embeddings" / "seqvec"
    folder.mkdir(parents=True)
    shutil.copy(OPTIONS_FILE, folder / "options_file")  # where bio_embeddings downloads them
    shutil.copy(WEIGHT_FILE, folder / "weights_file")
    server.stop()
    assert same_weights(SeqVecEmbedder(0, device="cpu")._model.elmo_bilm)
    assert server.requests == []


def test_seqvec_without_files_offline_is_one_line_naming_every_file(server) -> None:
    from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder, bio_embeddings_cache

    server.stop()
    with pytest.raises(OSError) as caught:
        SeqVecEmbedder(device="cpu")
    message = str(caught.value)
    assert "\n" not in message
    urls = (published.SEQVEC_OPTIONS_URL, published.SEQVEC_WEIGHTS_URL)
    for part in ("SeqVecEmbedder() without files", *urls, "options.json"):
        assert part in message, part
    for name in ("options_file", "weights_file"):  # where to save each, at once
        assert str(bio_embeddings_cache() / name) in message, name
    assert "model_directory=" in message


def test_seqvec_weights_file_alone_warns_and_fetches_the_options_once(server, caplog) -> None:
    """bio_embeddings, given `weights_file` without `options_file`, fetches the missing file
    from its URL and logs a warning that the files go all or none (issue 89): the same here,
    through the catalogue's SeqVec entry and the download cache, the options alone."""
    from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder

    with caplog.at_level(logging.WARNING, logger="elmo_bilm.dropins.bio_embeddings"):
        embedder = SeqVecEmbedder(0, weights_file=str(WEIGHT_FILE), device="cpu")
    assert same_weights(embedder._model.elmo_bilm)
    assert server.requests == ["/seqvec/options.json"]  # the weights given are not fetched
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "without options_file" in warned[0]
    assert str(WEIGHT_FILE) in warned[0]
    server.stop()  # offline from here on: the cached options serve
    assert same_weights(SeqVecEmbedder(0, weights_file=str(WEIGHT_FILE))._model.elmo_bilm)


def test_seqvec_weights_file_alone_takes_bio_embeddings_cached_options(server) -> None:
    from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder, bio_embeddings_cache

    bio_embeddings_cache().mkdir(parents=True)
    shutil.copy(OPTIONS_FILE, bio_embeddings_cache() / "options_file")
    server.stop()
    embedder = SeqVecEmbedder(0, weights_file=str(WEIGHT_FILE), device="cpu")
    assert same_weights(embedder._model.elmo_bilm) and server.requests == []


def test_seqvec_weights_file_alone_offline_is_one_line(server) -> None:
    from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder, bio_embeddings_cache

    server.stop()
    with pytest.raises(OSError) as caught:
        SeqVecEmbedder(weights_file=str(WEIGHT_FILE), device="cpu")
    message = str(caught.value)
    assert "\n" not in message and published.SEQVEC_OPTIONS_URL in message
    assert published.SEQVEC_WEIGHTS_URL not in message  # only the missing file is asked for
    assert str(bio_embeddings_cache() / "options_file") in message
    assert "without options_file" in message and "pass options_file=" in message


def test_seqvec_model_directory_that_is_no_folder_says_what_it_takes(tmp_path, monkeypatch):
    """`SeqVecEmbedder(model_directory="uniref50_v2")`, bio_embeddings' docs' example, where no
    such folder is: one line naming the argument, what folder it takes and the default."""
    from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder

    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as caught:
        SeqVecEmbedder(model_directory="uniref50_v2")
    message = str(caught.value)
    assert message.startswith("model_directory='uniref50_v2': no such folder"), message
    assert "options.json and weights.hdf5" in message and "leave model_directory out" in message


def test_reduce_per_protein_of_an_empty_protein_is_an_error_not_nan() -> None:
    from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder

    seqvec = SeqVecEmbedder(0, options_file=FILES[0], weights_file=FILES[1], device="cpu")
    empty = seqvec.embed("")
    assert empty.shape == (3, 0, 32)  # AllenNLP 0.9's empty embedding
    with pytest.warns(RuntimeWarning):  # bio_embeddings' reduction: NaN, numpy warns
        assert numpy.isnan(empty.sum(0).mean(0)).all()
    with pytest.raises(UsageError, match=r"protein with residues, got shape \(3, 0, 32\)"):
        SeqVecEmbedder.reduce_per_protein(empty)
    assert SeqVecEmbedder.reduce_per_protein(seqvec.embed("MKV")).shape == (32,)


# ---- ELMoForManyLangs and simple_elmo


@pytest.mark.parametrize(
    "family, module_name, methods",
    [
        (
            "elmoformanylangs",
            "elmo_bilm.elmoformanylangs",
            {
                "Embedder.__init__": "Embedder.__init__",
                "Embedder.sents2elmo": "Embedder.sents2elmo",
            },
        ),
        (
            "simple_elmo",
            "elmo_bilm.simple_elmo",
            {
                f"ElmoModel.{m}": f"ElmoModel.{m}"
                for m in ("load", "get_elmo_vectors", "get_elmo_vector_average")
            },
        ),
    ],
)
def test_names_and_defaults_are_the_originals(family, module_name, methods) -> None:
    """Every public name of the original package imports; each method's parameters stand where
    the original's do, with the original's defaults (this project's own arguments come after,
    keyword only)."""
    module = importlib.import_module(module_name)
    original = ORIGINALS[family]
    for name in original["names"]:
        assert hasattr(module, name), name
    for theirs_name, ours_name in methods.items():
        theirs = original["signatures"][theirs_name]
        owner, method = ours_name.split(".")
        ours = inspect.signature(getattr(getattr(module, owner), method)).parameters
        positional = [
            p.name
            for p in ours.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"
        ]
        assert positional == theirs["parameters"], ours_name
        for name, default in theirs["defaults"].items():
            assert ours[name].default == default, (ours_name, name)
        extra = [p for p in ours.values() if p.name not in theirs["parameters"] + ["self"]]
        assert all(p.kind == p.KEYWORD_ONLY for p in extra), ours_name


def test_simple_elmo_tensorflow_names_refuse_use_in_one_line() -> None:
    import elmo_bilm.simple_elmo as simple_elmo

    assert simple_elmo.name == "simple_elmo"
    for call in (
        lambda: simple_elmo.Batcher("vocab.txt", 50),
        lambda: simple_elmo.BidirectionalLanguageModel("options.json", "model.hdf5"),
        lambda: simple_elmo.weight_layers("input", {}),
    ):
        with pytest.raises(simple_elmo.UnsupportedName) as caught:
            call()
        assert "\n" not in str(caught.value) and "ElmoModel" in str(caught.value)


# ---- TF-Hub


def test_elmo_module_takes_hub_modules_arguments() -> None:
    from elmo_bilm.dropins.tfhub import ElmoModule

    theirs = ORIGINALS["tensorflow_hub"]["signatures"]["Module.__init__"]
    ours = inspect.signature(ElmoModule.__init__).parameters
    assert list(ours)[1:5] == theirs["parameters"]  # spec, trainable, name, tags
    for name, default in theirs["defaults"].items():
        assert ours[name].default == default, name
    module = Path(__file__).resolve().parents[3] / "fixtures" / "tfhub" / "tiny_module"
    sentences = ["the cat sat", "dogs"]
    plain = ElmoModule(str(module))(sentences, as_dict=True)
    named = ElmoModule(str(module), True, "elmo_module", set())  # hub.Module's order
    assert named.name == "elmo_module" and named.trainable and named.tags == frozenset()
    assert ElmoModule(str(module)).name == "module"
    outputs = named(sentences, signature="default", as_dict=True)
    for key, value in plain.items():
        assert torch.equal(outputs[key], value), key
    with pytest.raises(ValueError, match="default graph variant only") as caught:
        ElmoModule(str(module), tags={"train"})
    assert "\n" not in str(caught.value)
    with pytest.raises(UsageError, match="variable scope"):
        ElmoModule(str(module), name="")


# ---- the adapters' shared pieces: one device parse, a public state API


def test_one_device_parse_for_every_adapter(monkeypatch) -> None:
    from elmo_bilm.dropins.allennlp import cuda_device_of

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)  # the reading, on four GPUs
    default = 0 if torch.cuda.is_available() else -1  # bio_embeddings', ManyLangs', TF's choice
    assert cuda_device_of(None) == default
    assert [cuda_device_of(d) for d in ("cpu", "cuda", "cuda:2", 3, -1)] == [-1, 0, 2, 3, -1]
    assert cuda_device_of(torch.device("cuda", 1)) == 1
    for bad in ("meta", "gpu"):
        with pytest.raises(UsageError, match="device must be the CPU or a CUDA device"):
            cuda_device_of(bad)


def test_states_are_saved_and_restored_through_the_embedder() -> None:
    """`ElmoEmbedder.states`: what simple_elmo's sessions keep, without `_states` from outside."""
    embedder = ElmoEmbedder(*FILES)
    assert embedder.states == ()
    embedder.embed_batch(BATCHES[0])
    saved = embedder.states
    assert len(saved) == 2 and saved[0].shape[1] == len(BATCHES[0])
    following = embedder.embed_batch(BATCHES[1])
    embedder.states = saved  # back to before the second batch
    assert max_difference(embedder.embed_batch(BATCHES[1]), following) == 0
    embedder.states = ()
    fresh = ElmoEmbedder(*FILES).embed_batch(BATCHES[1])
    assert max_difference(embedder.embed_batch(BATCHES[1]), fresh) == 0
    with pytest.raises(ValueError, match="stateless"):
        ElmoEmbedder(*FILES, stateful=False).states = saved


# ---- careless values (the sweep of issue 80's surfaces)


@pytest.mark.parametrize("tags", [[["train"]], [{"train"}]])
def test_elmo_module_tags_of_unhashable_items_are_one_line(tags) -> None:
    """Was a bare TypeError "unhashable type: 'list'" from frozenset()."""
    from elmo_bilm.dropins.tfhub import ElmoModule

    module = Path(__file__).resolve().parents[3] / "fixtures" / "tfhub" / "tiny_module"
    with pytest.raises(UsageError, match="tags: a set of strings") as caught:
        ElmoModule(str(module), tags=tags)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu"), -1, -7])
def test_elmo_embedder_takes_a_device_as_pytorch_names_it(device) -> None:
    """cuda_device="cpu" (or a torch.device) was a TypeError of `<` at the first batch."""
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), cuda_device=device)
    assert embedder.cuda_device == -1 and embedder.device == torch.device("cpu")
    assert embedder.embed_sentence(["a", "cat"]).shape[1] == 2


@pytest.mark.parametrize("device", ["gpu", "tpu:0", 1.5])
def test_elmo_embedder_refuses_a_device_it_cannot_read_in_one_line(device) -> None:
    with pytest.raises(UsageError, match="device must be the CPU or a CUDA device") as caught:
        ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), cuda_device=device)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("empty", ["", "  ", None])
def test_an_empty_model_folder_is_refused_not_read_as_the_default_biLM(empty: object) -> None:
    """ELMoForManyLangs' `Embedder(model_dir)` and simple_elmo's `load(directory)` require the
    model: "" (a variable left empty) loaded AllenNLP's English `original`, downloading it."""
    from elmo_bilm.dropins.elmoformanylangs import Embedder
    from elmo_bilm.dropins.simple_elmo import ElmoModel
    from elmo_bilm.utils.files import UsageError

    with pytest.raises(UsageError, match="model_dir: got .* names no biLM"):
        Embedder(empty)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="directory: got .* names no biLM"):
        ElmoModel().load(empty)  # type: ignore[arg-type]
