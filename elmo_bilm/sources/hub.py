"""biLMs published as Hugging Face Hub model repositories (`options.json` + `weights.hdf5`).

A biLM on the Hub is named `hf://ORG/REPO` (a `@REVISION` suffix pins a branch, tag or commit)
wherever a biLM is named: `Elmo("hf://ORG/REPO", None, 1)`, `Elmo.from_pretrained("ORG/REPO")`,
`ElmoEmbedder`, `elmo-embed --options-file`, a config's `options_file`. The files come through
`huggingface_hub` (the extra `elmo-bilm[hub]`): its cache, `HF_HUB_OFFLINE`, `HF_ENDPOINT` and
tokens apply as for any Hub model; only the repository's `.json` and `.hdf5` files are fetched.

What the Hub (or a mirror named by `HF_ENDPOINT`) answers is checked where `huggingface_hub`
0.36 would make a path of it unchecked: a file's ETag (its blob's name, `blobs/ETAG`) and its
commit (`snapshots/COMMIT`, `.no_exist/COMMIT`) must be plain tokens, so an answer such as
`ETag: "../../../../victim"` is one line, refused before anything is written; the check is a
response hook on the sessions `huggingface_hub` makes (`configure_http_backend`, wrapping the
factory in use). After the download, the snapshot's `.json` and `.hdf5` files are checked as
`elmo_bilm.sources.published` checks a download (an HTML page instead of the file, an unreadable
HDF5 or JSON file); a bad one is removed from the Hugging Face cache, with its blob, so that the
next use asks the server again, and is one line naming the repository and the file.
"""

import logging
import os
import re
import threading
from pathlib import Path
from typing import Any, Callable, Optional, Tuple

from elmo_bilm.utils.errors import install_extra
from elmo_bilm.utils.files import UsageError

logger = logging.getLogger(__name__)

PREFIX = "hf://"
# What the Hub accepts in a repository id's parts, and in a revision (a branch, tag or commit):
# checked before the name reaches `huggingface_hub`, which writes the revision into its cache
# (`refs/REVISION`) unchecked
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,255}")


def is_hub_id(name: Optional[str]) -> bool:
    """Whether `name` names a Hub repository (`hf://ORG/REPO[@REVISION]`)."""
    return isinstance(name, str) and name.startswith(PREFIX)


def parse_hub_id(name: str) -> Tuple[str, Optional[str]]:
    """`hf://ORG/REPO@REVISION` -> `("ORG/REPO", "REVISION")` (revision `None`: the default
    branch)."""
    body = name[len(PREFIX) :]
    repo_id, _, revision = body.partition("@")
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(_PART.fullmatch(part) and ".." not in part for part in parts):
        raise UsageError(
            f"{name!r}: a Hub biLM is named hf://ORG/REPO (or hf://ORG/REPO@REVISION), ORG and "
            "REPO of letters, digits, '-', '_' and '.'"
        )
    if revision and not (
        _REVISION.fullmatch(revision) and ".." not in revision and "//" not in revision
    ):
        raise UsageError(
            f"{name!r}: the revision {revision!r} is not a branch, tag or commit name (letters, "
            "digits, '-', '_', '.', '/'; no '..')"
        )
    return repo_id, revision or None


# What `huggingface_hub` makes a file or folder name of, as the Hub sends it: an ETag (a git
# blob's SHA-1 or an LFS file's SHA-256 on the Hub) and a commit hash
_ETAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]{0,255}")
_COMMIT = re.compile(r"[0-9a-fA-F]{40,64}")
_SNAPSHOT_SUFFIXES = (".json", ".hdf5", ".h5")


class HubAnswerRefused(ValueError):
    """A Hub answer `huggingface_hub` would make a path of that is not a plain token."""


def _check_answer(response: Any, *args: Any, **kwargs: Any) -> None:
    """A `requests` response hook: refuse a HEAD answer (a file's metadata, from which
    `huggingface_hub` names its blob and snapshot) whose ETag, X-Linked-Etag or X-Repo-Commit is
    not a plain token. The ETag is judged as `huggingface_hub` normalises it (`W/` and quotes
    stripped)."""
    if getattr(response.request, "method", None) != "HEAD":
        return
    for header in ("X-Linked-Etag", "ETag"):
        value = response.headers.get(header)
        if value is None:
            continue
        etag = value.lstrip("W/").strip('"')  # huggingface_hub's _normalize_etag
        if not _ETAG.fullmatch(etag) or ".." in etag:
            raise HubAnswerRefused(
                f"{response.url} answered the {header} {value!r}, not a plain token: refused, "
                "huggingface_hub would name a file in its cache after it"
            )
    commit = response.headers.get("X-Repo-Commit")
    if commit is not None and not _COMMIT.fullmatch(commit):
        raise HubAnswerRefused(
            f"{response.url} answered the commit (X-Repo-Commit) {commit!r}, not a commit hash: "
            "refused, huggingface_hub would name a folder in its cache after it"
        )


_guard_lock = threading.Lock()


def _guard_hub_answers() -> None:
    """Have every session `huggingface_hub` makes run `_check_answer` on each response: the
    session factory in use (the default, or one configured by the user) wrapped, once, through
    `huggingface_hub.configure_http_backend`; again if the factory was replaced since."""
    try:
        from huggingface_hub import configure_http_backend
        from huggingface_hub.utils import _http
    except ImportError:  # another layout than 0.36's (pinned): the answers go unchecked
        logger.warning("huggingface_hub: cannot check the Hub's ETags (no requests backend)")
        return
    with _guard_lock:
        current: Optional[Callable[[], Any]] = getattr(_http, "_GLOBAL_BACKEND_FACTORY", None)
        if current is None:
            logger.warning("huggingface_hub: cannot check the Hub's ETags (no session factory)")
            return
        if getattr(current, "_elmo_bilm_guarded", False):
            return

        def guarded() -> Any:
            session = current()
            session.hooks["response"].append(_check_answer)
            return session

        guarded._elmo_bilm_guarded = True  # type: ignore[attr-defined]
        configure_http_backend(backend_factory=guarded)


def _refuse_bad_files(name: str, folder: Path) -> None:
    """Check the snapshot's `.json` and `.hdf5` files as a download is checked; remove a bad
    one (the snapshot's link and the blob it names) so that the next use downloads it again,
    and raise one line naming the repository and the file."""
    from elmo_bilm.sources.published import _content_problem

    blobs = (folder.parent.parent / "blobs").resolve()
    for path in sorted(folder.rglob("*")):
        if not path.name.lower().endswith(_SNAPSHOT_SUFFIXES) or not path.is_file():
            continue
        relative = path.relative_to(folder).as_posix()
        problem = _content_problem(relative, str(path), None)
        if problem is None:
            continue
        blob = Path(os.path.realpath(path)) if path.is_symlink() else None
        try:
            path.unlink()
            if blob is not None and blob.parent == blobs:
                blob.unlink(missing_ok=True)
        except OSError as error:
            raise OSError(
                f"{name}: the Hub's {relative} is not the file ({problem}), and it cannot be "
                f"removed from the Hugging Face cache ({error.strerror or error}): delete {path} "
                "by hand"
            ) from None
        raise OSError(
            f"{name}: the Hub's {relative} is not the file ({problem}); removed it from the "
            "Hugging Face cache, so the next use downloads it again"
        )


def hub_folder(name: str) -> str:
    """The local snapshot of the Hub biLM `name`'s `.json` and `.hdf5` files (downloaded into
    `huggingface_hub`'s cache, or read from it offline), the Hub's answers and the files
    checked (see the module's docstring)."""
    repo_id, revision = parse_hub_id(name)
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError as error:
        raise ImportError(
            f"{name}: loading a biLM from the Hugging Face Hub needs huggingface_hub: "
            f"{install_extra('hub')}"
        ) from error
    _guard_hub_answers()
    try:
        folder = snapshot_download(repo_id, revision=revision, allow_patterns=["*.json", "*.hdf5"])
    except LocalEntryNotFoundError as error:
        raise OSError(
            f"{name}: not in the Hugging Face cache and the Hub cannot be reached "
            f"(HF_HUB_OFFLINE or no network): {error}"
        ) from None
    except HfHubHTTPError as error:
        raise OSError(f"{name}: the Hub answered {error}") from None
    except ValueError as error:  # an answer huggingface_hub cannot use (a malformed commit hash)
        raise OSError(f"{name}: the Hub's answer is unusable ({error})") from None
    if not _COMMIT.fullmatch(Path(folder).name):
        raise OSError(
            f"{name}: the Hub's answer is unusable (the commit {Path(folder).name!r} is not a "
            "commit hash)"
        )
    _refuse_bad_files(name, Path(folder))
    return str(folder)
