"""biLMs published as Hugging Face Hub model repositories (`options.json` + `weights.hdf5`).

A biLM on the Hub is named `hf://ORG/REPO` (a `@REVISION` suffix pins a branch, tag or commit)
wherever a biLM is named: `Elmo("hf://ORG/REPO", None, 1)`, `Elmo.from_pretrained("ORG/REPO")`,
`ElmoEmbedder`, `elmo-embed --options-file`, a config's `options_file`. The files come through
`huggingface_hub` (the extra `elmo-bilm[hub]`): its cache, `HF_HUB_OFFLINE`, `HF_ENDPOINT` and
tokens apply as for any Hub model; only the repository's `.json` and `.hdf5` files are fetched.
"""

import re
from typing import Optional, Tuple

from elmo_bilm.utils.files import UsageError

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


def hub_folder(name: str) -> str:
    """The local snapshot of the Hub biLM `name`'s `.json` and `.hdf5` files (downloaded into
    `huggingface_hub`'s cache, or read from it offline)."""
    repo_id, revision = parse_hub_id(name)
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError as error:
        raise ImportError(
            f"{name}: loading a biLM from the Hugging Face Hub needs huggingface_hub: "
            'pip install "elmo-bilm[hub]"'
        ) from error
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
    return str(folder)
