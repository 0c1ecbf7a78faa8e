"""What users type, read once (`elmo_bilm.utils.names`, issue 79's fifth sweep): a
`pathlib.Path`, `~`, an empty variable, a local folder named like a biLM, a URL with a long
query, a local archive with `?` in its name, a control character; each finding of the sweep is a
test here, and properties (hypothesis) hold the normalisation for any text."""

import errno
import http.server
import os
import shutil
import string
import zipfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from elmo_bilm import ElmoEmbedder
from elmo_bilm.dropins.simple_elmo import ElmoModel
from elmo_bilm.sources import published
from elmo_bilm.sources.archives import MAX_FOLDER_ENTRIES, is_bilm_archive
from elmo_bilm.sources.resolver import options_path, resolve_bilm
from elmo_bilm.utils import files, names
from elmo_bilm.utils.files import FormatError, UsageError, cache_dir
from elmo_bilm.utils.names import PathShadowsName, url_file_name, user_path
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.local_server import LocalServer

# deterministic: the same examples at every run, none remembered between runs
PROPERTIES = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def bilm_zip(path: Path) -> Path:
    """A zip of the tiny bilm-tf biLM (options.json + weights.hdf5)."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.write(OPTIONS_FILE, "model/options.json")
        archive.write(WEIGHT_FILE, "model/weights.hdf5")
    return path


def output_dim(bilm: torch.nn.Module) -> int:
    return int(bilm.get_output_dim())  # type: ignore[operator]


# -- paths as users hold them --------------------------------------------------------------


def test_a_pathlib_path_to_a_zip_is_an_archive(tmp_path: Path) -> None:
    archive = bilm_zip(tmp_path / "tiny.zip")
    assert resolve_bilm(archive).kind == "archive"
    embedder = ElmoEmbedder(archive)  # was a TypeError
    assert embedder.embed_sentence(["a", "b"]).shape == (3, 2, 32)


def test_a_pathlib_path_pair_and_a_folder(tmp_path: Path) -> None:
    assert resolve_bilm(OPTIONS_FILE, WEIGHT_FILE).kind == "files"
    folder = tmp_path / "nlpl"
    folder.mkdir()
    shutil.copyfile(OPTIONS_FILE, folder / "options.json")
    shutil.copyfile(WEIGHT_FILE, folder / "model.hdf5")
    model = ElmoModel()
    model.load(folder)  # simple_elmo's load with a Path
    assert model.vector_size == 32


def test_tilde_is_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    bilm_zip(tmp_path / "tiny.zip")
    resolved = resolve_bilm("~/tiny.zip")  # was "no such file"
    assert resolved.kind == "archive"
    assert resolve_bilm("~/tiny.zip").identity() == resolve_bilm(tmp_path / "tiny.zip").identity()


@pytest.mark.parametrize("empty", ["", "   ", None])
def test_empty_means_not_given(empty: object) -> None:
    assert resolve_bilm(empty, empty).kind == "shipped"  # type: ignore[arg-type]


def test_a_local_folder_named_like_a_biLM_is_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep's WRONG: `wikipedia` in the working directory was silently the shipped biLM.
    A path that exists is a path (AllenNLP's `cached_path`), and a warning says so."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "wikipedia"
    folder.mkdir()
    shutil.copyfile(OPTIONS_FILE, folder / "options.json")
    shutil.copyfile(WEIGHT_FILE, folder / "weights.hdf5")
    with pytest.warns(PathShadowsName, match="using the folder"):
        resolved = resolve_bilm("wikipedia")
    assert resolved.kind == "folder"
    assert Path(str(resolved.weight_file)).samefile(folder / "weights.hdf5")
    monkeypatch.chdir(tmp_path.parent)  # elsewhere the name is the shipped biLM again
    assert resolve_bilm("wikipedia").kind == "name"


def test_a_folder_named_like_a_biLM_holding_none_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small").mkdir()
    with pytest.warns(PathShadowsName), pytest.raises(FormatError, match="small"):
        resolve_bilm("small")


# -- the cache variable ----------------------------------------------------------------------


def test_an_empty_cache_variable_is_unset(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ELMO_BILM_CACHE", "")  # was: unpacked/ and kernels/ in the working folder
    assert cache_dir() == tmp_path / ".cache" / "elmo_bilm"


def test_a_tilde_cache_variable_is_expanded_and_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ELMO_BILM_CACHE", "~/x")  # was a folder named `~`
    assert cache_dir() == tmp_path / "x"
    monkeypatch.setattr(files, "_RELATIVE_CACHES", {})  # no earlier test's first read
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ELMO_BILM_CACHE", "relative")
    assert cache_dir() == tmp_path / "relative"


def test_a_relative_cache_variable_stays_where_it_was_first_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """ELMO_BILM_CACHE=cache and a chdir (a notebook's %cd, a script's os.chdir) between two
    loads: the second looked in NEW_FOLDER/cache, a second cache with nothing in it (so a
    second download, and kernels compiled again)."""
    monkeypatch.setattr(files, "_RELATIVE_CACHES", {})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ELMO_BILM_CACHE", "cache")
    first = cache_dir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert cache_dir() == first == tmp_path / "cache"
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "a" / ".." / "b"))  # absolute: as is
    assert cache_dir() == tmp_path / "b"


def test_a_control_character_in_the_cache_variable_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ELMO_BILM_CACHE", "/tmp/a\nb")
    with pytest.raises(UsageError, match="ELMO_BILM_CACHE") as error:
        cache_dir()
    assert "\n" not in str(error.value)


# -- URLs and archives -------------------------------------------------------------------------


def test_a_presigned_urls_query_stays_out_of_the_file_name() -> None:
    """A URL with a long presigned query failed with "File name too long": its download is
    cached under the path's last part, the whole URL in the digest before it."""
    body = OPTIONS_FILE.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = LocalServer.started(Handler)
    try:
        query = "X-Amz-Signature=" + "a" * 2000 + "&X-Amz-Credential=" + "b" * 500
        first = published.cached_path(f"{server.url}/models/elmo_options.json?{query}")
        second = published.cached_path(f"{server.url}/models/elmo_options.json?other=1")
    finally:
        server.stop()
    assert Path(first).name.endswith("_elmo_options.json") and len(Path(first).name) < 100
    assert Path(first).read_bytes() == body
    assert first != second  # another query, another entry


def test_a_long_url_path_keeps_its_suffix_within_a_file_names_length() -> None:
    url = "https://example.org/" + "w" * 400 + ".tar.gz"
    name = url_file_name(url)
    assert name.endswith(".gz") and len(name.encode()) <= names.MAX_FILE_NAME_BYTES - 64


def test_a_local_archive_with_a_question_mark_is_an_archive(tmp_path: Path) -> None:
    archive = bilm_zip(tmp_path / "model?v=2.zip")
    assert is_bilm_archive(str(archive))
    assert resolve_bilm(str(archive)).kind == "archive"
    # a URL's query is still not part of its name
    assert is_bilm_archive("https://example.org/m.zip?sig=1")
    assert not is_bilm_archive("https://example.org/m?x=.zip/")


# -- what cannot be a name ------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["/missing/a\nb.json", "x\ty", "a\x1b[31mred", "bad\x00byte"])
def test_a_control_character_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(UsageError, match="control character") as error:
        resolve_bilm(text)
    assert "\n" not in str(error.value)


def test_not_a_path_at_all_is_one_line() -> None:
    with pytest.raises(UsageError, match="expected a path"):
        resolve_bilm(42)  # type: ignore[arg-type]


def test_a_huge_folder_is_refused_at_once(tmp_path: Path) -> None:
    """`--options-file /usr` walked the disk for 30 s; a folder of more entries than any biLM's
    is refused as soon as that many are seen."""
    big = tmp_path / "big"
    big.mkdir()
    for index in range(MAX_FOLDER_ENTRIES + 1):
        (big / f"{index}").touch()
    with pytest.raises(FormatError, match="not a biLM's folder"):
        resolve_bilm(big)


def test_options_path_takes_paths(tmp_path: Path) -> None:
    assert Path(options_path(OPTIONS_FILE)).samefile(OPTIONS_FILE)
    assert options_path("") == options_path(None) == resolve_bilm("").options_file  # shipped


# -- properties ------------------------------------------------------------------------------------

TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=60)


@PROPERTIES
@given(text=TEXT)
@example(text="\n")
@example(text="~")
@example(text="   ")
def test_user_path_is_none_a_clean_string_or_one_line_error(text: str) -> None:
    try:
        value = user_path(text)
    except UsageError as error:
        assert "\n" not in str(error) and "control character" in str(error)
        assert any(ord(c) < 32 or 127 <= ord(c) <= 159 for c in text)
        return
    if not text.strip():
        assert value is None
        return
    assert isinstance(value, str)
    assert not any(ord(c) < 32 or 127 <= ord(c) <= 159 for c in value)
    assert value == (os.path.expanduser(text) if text.startswith("~") else text)
    assert user_path(Path(text)) == user_path(str(Path(text)))  # a Path reads as its string


@PROPERTIES
@given(
    path=st.text(alphabet=string.ascii_letters + string.digits + "/._-%", max_size=300),
    query=st.text(alphabet=string.printable, max_size=300),
)
def test_url_file_names_are_file_names(path: str, query: str) -> None:
    name = url_file_name(f"https://host.example/{path}?{query}")
    assert name and "/" not in name and not name.startswith(".")
    assert len(name.encode("utf-8")) <= names.MAX_FILE_NAME_BYTES - 64
    assert "?" not in name or "?" in path


def test_the_shipped_name_still_resolves_from_the_repository() -> None:
    assert resolve_bilm("wikipedia").kind == "name"
    assert published.is_url("https://x") and not published.is_url(Path("https:/x"))  # type: ignore[arg-type]


# -- a cache at fault says so ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "code, said",
    [
        (errno.ENOSPC, "the disk is full"),
        (errno.EROFS, "read-only file system"),
        (errno.EACCES, "not writable by this user"),
    ],
)
def test_a_cache_at_fault_is_named_with_its_variable(
    code: int, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only, foreign or full cache gave raw errno text (a full disk as "truncated or
    damaged?"), never naming ELMO_BILM_CACHE."""
    from elmo_bilm.sources import resolver

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(resolver, "unpacked", fail)
    with pytest.raises(OSError, match=said) as error:
        resolve_bilm(bilm_zip(tmp_path / "tiny.zip"))
    message = str(error.value)
    assert "ELMO_BILM_CACHE" in message and str(cache_dir()) in message and "\n" not in message
    assert "tiny.zip: unpacking" in message


def test_a_conversion_into_a_full_cache_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from elmo_bilm.sources import resolver
    from tests.conftest import REPO_ROOT

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(resolver, "convert_checkpoint", full)
    checkpoint = REPO_ROOT / "fixtures" / "tf_checkpoint" / "save_dir"
    with pytest.raises(OSError, match="converting: cannot write the cache .*the disk is full"):
        resolve_bilm(checkpoint).as_bilm_tf()
    assert not list((cache_dir() / "converted").iterdir())  # no partial folder left


@pytest.mark.parametrize(
    "typed",
    [
        "  https://example.org/elmo.tar.gz  ",  # pasted with the spaces around it
        "HTTPS://example.org/elmo.tar.gz",  # a scheme in capitals (RFC 3986: the same URL)
        "Https://example.org/elmo.tar.gz ",
    ],
)
def test_a_url_typed_carelessly_is_the_url(typed: str) -> None:
    """Both were read as local paths: 'no such archive' naming a file nobody meant."""
    assert user_path(typed) == "https://example.org/elmo.tar.gz"


def test_a_path_with_a_space_is_kept(tmp_path: Path) -> None:
    """Only a URL loses its surrounding spaces: a file name may end in one."""
    assert user_path(f"{tmp_path}/a ") == f"{tmp_path}/a "


def test_a_dangling_link_named_like_a_bilm_is_said_to_be_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A link `small` to a folder since removed: the error said an options file needs its
    weight file, which names neither the link nor the missing target."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small").symlink_to(tmp_path / "gone")
    with pytest.warns(PathShadowsName):
        with pytest.raises(FileNotFoundError, match="a link to .*gone, which does not exist"):
            resolve_bilm("small")


@pytest.mark.parametrize("kind", ["file", "dangling link"])
def test_a_cache_variable_naming_a_file_is_one_line(
    kind: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """ELMO_BILM_CACHE naming a file: unpacking an archive was a bare NotADirectoryError on
    FILE/unpacked, naming neither the variable nor what to do."""
    cache = tmp_path / "cache"
    if kind == "file":
        cache.write_text("not a folder")
    else:
        cache.symlink_to(tmp_path / "gone")
    monkeypatch.setenv("ELMO_BILM_CACHE", str(cache))
    with pytest.raises(UsageError, match="ELMO_BILM_CACHE=.*not a folder") as error:
        cache_dir()
    assert "\n" not in str(error.value)
