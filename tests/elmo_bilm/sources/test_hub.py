"""biLMs from Hugging Face Hub repositories (`hf://ORG/REPO`), against a local server on 127.0.0.1
that answers the Hub's routes (the repository's metadata and `resolve` downloads), then offline
from the filled cache. Each run is a fresh process: `huggingface_hub` reads `HF_ENDPOINT` and
`HF_HUB_OFFLINE` when imported."""

import hashlib
import json
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Dict, Iterator, List

import h5py
import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids
from elmo_bilm.sources.hub import parse_hub_id
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.local_server import LocalServer
from tests.numerics import assert_float32_close

COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = "someone/elmo-tiny"
# named as in public ELMo repositories on the Hub (AllenNLP's file names), beside other files
FILES = {
    "elmo_2x16_options.json": OPTIONS_FILE.read_bytes(),
    "elmo_2x16_weights.hdf5": WEIGHT_FILE.read_bytes(),
    "config.json": b"{}",
    "README.md": b"# a tiny biLM",
}
SENTENCES = [["The", "cat", "sat", "."], ["Hello", "!"]]


class HubHandler(BaseHTTPRequestHandler):
    """The two routes `huggingface_hub.snapshot_download` uses: the revision's metadata and each
    file's `resolve` URL (HEAD for its metadata, GET for its bytes)."""

    requests: List[str] = []

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _file(self) -> bytes:
        prefix = f"/{REPO}/resolve/"
        if not self.path.startswith(prefix):
            return b""
        name = self.path[len(prefix) :].split("/", 1)[1].split("?")[0]
        return FILES.get(name, b"")

    def _headers_for(self, body: bytes) -> None:
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", f'"{hashlib.sha256(body).hexdigest()}"')
        self.end_headers()

    def do_HEAD(self) -> None:
        body = self._file()
        self.send_response(200 if body else 404)
        self._headers_for(body)

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        if self.path.startswith(f"/api/models/{REPO}/revision/"):
            info = {"id": REPO, "sha": COMMIT, "siblings": [{"rfilename": f} for f in FILES]}
            body = json.dumps(info).encode()
        else:
            body = self._file()
        self.send_response(200 if body else 404)
        self._headers_for(body)
        self.wfile.write(body)


@pytest.fixture
def hub() -> Iterator[str]:
    HubHandler.requests = []
    server = LocalServer.started(HubHandler)
    yield server.url
    server.stop()


SCRIPT = f"""
import sys, torch
from elmo_bilm import Elmo, batch_to_ids
name, out = sys.argv[1], sys.argv[2]
elmo = Elmo.from_pretrained(name, dropout=0.0, scalar_mix_parameters=[0.0, 0.0, 1.0])
vectors = elmo(batch_to_ids({SENTENCES!r}))["elmo_representations"][0]
torch.save(vectors, out)
"""


def online_env(hub: str, tmp_path: Path) -> Dict[str, str]:
    """The Hub at `hub`, its cache in `tmp_path`, online (the suite runs offline otherwise)."""
    env = {**os.environ, "HF_ENDPOINT": hub, "HF_HOME": str(tmp_path / "hf")}
    env.pop("TRANSFORMERS_OFFLINE", None)  # huggingface_hub honours it too
    return {**env, "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1"}


def run(name: str, out: Path, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, name, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_hub_repository_downloads_then_loads_offline(hub: str, tmp_path: Path) -> None:
    expected = Elmo(
        str(OPTIONS_FILE), str(WEIGHT_FILE), 1, dropout=0.0, scalar_mix_parameters=[0, 0, 1]
    )(batch_to_ids(SENTENCES))["elmo_representations"][0]
    env = online_env(hub, tmp_path)
    result = run(REPO, tmp_path / "online.pt", env)  # ORG/REPO, as from_pretrained takes it
    assert result.returncode == 0, result.stderr
    assert_float32_close(torch.load(tmp_path / "online.pt"), expected, 16)
    assert not any("README" in path for path in HubHandler.requests)  # only .json / .hdf5

    # offline, from the cache the first run filled: no request reaches the server
    HubHandler.requests = []
    offline = {**env, "HF_HUB_OFFLINE": "1"}
    result = run(f"hf://{REPO}", tmp_path / "offline.pt", offline)
    assert result.returncode == 0, result.stderr
    assert HubHandler.requests == []
    assert torch.equal(torch.load(tmp_path / "offline.pt"), torch.load(tmp_path / "online.pt"))

    # elmo-embed names it the same way
    (tmp_path / "in.txt").write_text("The cat sat .\n")
    command = [str(Path(sys.executable).parent / "elmo-embed"), str(tmp_path / "in.txt")]
    command += [str(tmp_path / "out.hdf5"), "--top", "--options-file", f"hf://{REPO}"]
    result = subprocess.run(command, env=offline, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    with h5py.File(tmp_path / "out.hdf5", "r") as handle:
        top = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE)).embed_sentence(SENTENCES[0])[-1]
        assert_float32_close(handle["0"][...], top, 16)

    # a repository the cache lacks, offline: one error naming it
    result = run("hf://someone/other", tmp_path / "x.pt", offline)
    assert result.returncode != 0
    assert "hf://someone/other: not in the Hugging Face cache" in result.stderr


def test_hub_revision_is_passed_to_the_hub(hub: str, tmp_path: Path) -> None:
    env = online_env(hub, tmp_path)
    result = run(f"hf://{REPO}@v1.0", tmp_path / "v.pt", env)
    assert result.returncode == 0, result.stderr
    assert any(path.startswith(f"/api/models/{REPO}/revision/v1.0") for path in HubHandler.requests)


def test_hub_ids_are_parsed_or_refused() -> None:
    assert parse_hub_id("hf://org/repo") == ("org/repo", None)
    assert parse_hub_id("hf://org/repo@main") == ("org/repo", "main")
    with pytest.raises(ValueError, match="hf://ORG/REPO"):
        parse_hub_id("hf://just-a-name")
