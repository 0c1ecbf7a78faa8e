"""Published biLMs by URL or by name, against a local HTTP server on 127.0.0.1 (never the
internet): downloaded once, reused offline, a short download retried, a 404 one line."""

import hashlib
import http.server
from typing import Dict, List

import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids, load_bilm_tf
from elmo_bilm.cli.embed import main as embed_main
from elmo_bilm.sources import published
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE
from tests.local_server import LocalServer


class Server(LocalServer):
    """Serves the fixture biLM's files under AllenNLP's published paths; `short` makes the next
    answers for a path announce more bytes than they send (a connection that breaks off)."""

    def __init__(self) -> None:
        self.files: Dict[str, bytes] = {}
        self.requests: List[str] = []
        self.short: Dict[str, int] = {}
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
                if server.short.get(self.path, 0) > 0:
                    server.short[self.path] -= 1
                    body = body[: len(body) // 2]
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._start(Handler)


@pytest.fixture
def server(tmp_path, monkeypatch):
    """The server, the cache in a temporary folder, and the published names pointing at it."""
    running = Server()
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(published, "BASE_URL", f"{running.url}/models/elmo")
    for name in published.PUBLISHED:
        options_url, weight_url = published.published_urls(name)
        running.files[options_url[len(running.url) :]] = OPTIONS_FILE.read_bytes()
        running.files[weight_url[len(running.url) :]] = WEIGHT_FILE.read_bytes()
    yield running
    running.stop()


def same_bilm(elmo_bilm):
    reference = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).state_dict()
    return all(torch.equal(reference[k], v) for k, v in elmo_bilm.state_dict().items())


def test_urls_download_once_and_work_offline(server, tmp_path):
    options_url, weight_url = published.published_urls("original")
    elmo = Elmo(options_url, weight_url, 2, dropout=0.0)  # AllenNLP's way of naming them
    assert same_bilm(elmo.bilm) and len(server.requests) == 2
    cached = sorted(p.name.split("_", 1)[1] for p in (tmp_path / "cache").iterdir())
    stem = "elmo_2x4096_512_2048cnn_2xhighway"
    assert cached == [  # each file, its record and its lock
        f"{stem}_{name}{suffix}"
        for name in ("options.json", "weights.hdf5")
        for suffix in ("", ".lock", ".meta.json")
    ]
    server.stop()  # offline from here on
    again = ElmoEmbedder(options_url, weight_url)
    assert same_bilm(again.elmo_bilm) and len(server.requests) == 2
    assert not list((tmp_path / "cache").glob("*.partial"))


def test_names_are_accepted_wherever_a_bilm_is_named(server, tmp_path):
    for name in published.PUBLISHED:
        assert same_bilm(Elmo.from_pretrained(name, dropout=0.0).bilm)
    assert same_bilm(Elmo("small", None, 1).bilm) and same_bilm(ElmoEmbedder("medium").elmo_bilm)
    (tmp_path / "in.txt").write_text("a cat\n")
    assert (
        embed_main(
            [str(tmp_path / "in.txt"), str(tmp_path / "out.hdf5"), "--options-file", "original"]
        )
        == 0
    )
    with pytest.raises(
        ValueError, match="name alone: wikipedia, wikipedia_1024, wikipedia_1024_256, small, medium"
    ):
        Elmo("huge", None)


def test_a_short_download_is_retried_and_never_cached_whole(server, tmp_path):
    options_url, weight_url = published.published_urls("small")
    server.short[weight_url[len(server.url) :]] = 1  # the first answer breaks off midway
    assert same_bilm(Elmo(options_url, weight_url, 1).bilm)
    assert server.requests.count(weight_url[len(server.url) :]) == 2
    server.short[weight_url[len(server.url) :]] = published.ATTEMPTS  # breaks off every time
    other = f"{weight_url}?again"
    server.files[other[len(server.url) :]] = server.files[weight_url[len(server.url) :]]
    server.short[other[len(server.url) :]] = published.ATTEMPTS
    with pytest.raises(
        OSError, match=r"download failed after 3 tries \(received \d+ of \d+ bytes\)"
    ):
        published.cached_path(other)
    # the entry is named by the URL's digest and its path's last part (the query stays out)
    digest = hashlib.sha256(other.encode("utf-8")).hexdigest()[:16]
    left = [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(digest)]
    assert [p.suffix for p in left] == [".lock"]  # the lock file only


def test_a_missing_file_and_no_network_are_one_line(server, tmp_path, capsys):
    with pytest.raises(OSError, match=r"/nope.json: HTTP 404 Not Found; nothing cached in"):
        Elmo(f"{server.url}/nope.json", f"{server.url}/nope.hdf5")
    server.stop()
    url = f"{server.url}/models/elmo/other.json"
    with pytest.raises(
        OSError, match=r"other.json: download failed after 3 tries .*nothing cached in .*cache"
    ):
        published.cached_path(url)
    (tmp_path / "in.txt").write_text("a cat\n")
    argv = [str(tmp_path / "in.txt"), str(tmp_path / "out.hdf5"), "--options-file", url]
    assert embed_main([*argv, "--weight-file", url]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len([line for line in err if "error" in line]) == 1 and "download failed" in err[-1]


def test_integer_mix_parameters_as_allennlp_accepts_them():
    """`scalar_mix_parameters=[1, 1, 1]` crashed in the first forward pass (softmax of a Long)."""
    elmo = Elmo(
        str(OPTIONS_FILE), str(WEIGHT_FILE), 1, dropout=0.0, scalar_mix_parameters=[1, 1, 1]
    )
    output = elmo(batch_to_ids([["a", "cat"]]))["elmo_representations"][0]
    elmo.reset_states()  # stateful, as AllenNLP's: the layers of the same first call
    layers = torch.stack(elmo.bilm(batch_to_ids([["a", "cat"]]))["activations"])
    assert torch.allclose(output, layers.mean(0), atol=1e-6)  # equal weights
    assert all(p.dtype == torch.float32 for p in elmo.scalar_mixes[0].scalar_parameters)


def test_a_name_in_the_token_embedders_config(server):
    """`"options_file": "small"` in an AllenNLP config (the weight file omitted)."""
    from allennlp.common import Params
    from allennlp.modules.token_embedders import TokenEmbedder

    import elmo_plugin  # noqa: F401  (registers the token embedder)

    params = Params({"type": "elmo_plugin_token_embedder", "options_file": "small", "dropout": 0.0})
    embedder = TokenEmbedder.from_params(params).eval()
    assert same_bilm(embedder.elmo.bilm)
    assert embedder(batch_to_ids([["a", "cat"]])).shape == (1, 2, 32)


def test_this_projects_biLMs_by_name(monkeypatch):
    """`wikipedia` (the core's), `wikipedia_1024` and `wikipedia_1024_256` (distributions of their
    own); without such a distribution installed, one line saying what to install."""
    import importlib.util

    from elmo_bilm.sources.resolver import resolve_bilm
    from elmo_bilm.sources.shipped import SHIPPED_OPTIONS_FILE

    assert resolve_bilm("wikipedia", None).options_file == str(SHIPPED_OPTIONS_FILE)
    options = resolve_bilm("wikipedia_1024", "").options_file
    assert str(options).endswith("elmo_bilm_wikipedia_1024/options.json")
    assert Elmo.from_pretrained("wikipedia_1024").get_output_dim() == 256
    assert Elmo.from_pretrained("wikipedia_1024_256").get_output_dim() == 512
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "elmo_bilm_wikipedia_1024" else found(name, *a),
    )
    with pytest.raises(
        FileNotFoundError, match=r"pip install dist/elmo_bilm_wikipedia_1024-\*\.whl"
    ):
        ElmoEmbedder("wikipedia_1024")


def test_every_model_url_is_in_the_catalogue():
    """One catalogue (`elmo_bilm.sources`): no module outside it spells a model's URL (flair's
    contributed biLMs and SeqVec's files lived in their drop-ins); the drop-ins look names up."""
    import ast

    from elmo_bilm.dropins import bio_embeddings, flair

    outside = []
    package = REPO_ROOT / "elmo_bilm"
    for path in sorted(package.rglob("*.py")):
        if path.parent.name == "sources":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if any(part in node.value for part in ("amazonaws.com/", "bioembeddings.com/")):
                    outside.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert outside == []
    assert flair.CONTRIBUTED is published.CONTRIBUTED and flair.FLAIR_NAMES is published.FLAIR_NAMES
    assert bio_embeddings.seqvec_files is published.seqvec_files
    assert bio_embeddings.SEQVEC_WEIGHTS_URL == published.SEQVEC_WEIGHTS_URL
