"""What a user names, read once: the one normalisation every entry point's biLM source, path and
cache variable goes through before anything looks at it.

AllenNLP's `cached_path` is the model of what users expect: a `pathlib.Path` is as good as a
string, `~` is their home, a URL is fetched, and a path that exists is that path. So here:

- `None`, `""` and a value of only spaces mean "not given" (an empty environment variable is
  unset, as a shell script's `${VAR:-}` leaves it);
- a `pathlib.Path` (any `os.PathLike`, or bytes) becomes its string (`os.fspath`);
- a leading `~` or `~user` is expanded (not inside a URL, nor a Hub id);
- a control character (a newline, a tab, an escape) anywhere is refused in one line: no file
  name a user means holds one, and an error message printing it would break across lines;
- a URL is kept as it is but for spaces around it and its scheme's case (`HTTPS://` is
  `https://`); its query, a presigned signature, say, never becomes part of a file name
  (`url_file_name`).

A name that is both one of this project's biLM names and a path that exists (a folder called
`wikipedia` in the working directory) is the path: what exists where the user stands wins, as
with `cached_path`, and a warning says so in one line (`PathShadowsName`), naming the folder and
how to reach the named biLM (from another working directory, or by `./NAME` for the folder).
"""

import os
import posixpath
import re
import urllib.parse
import warnings
from typing import Collection, Optional, Union

from elmo_bilm.utils.errors import UsageError

UserPath = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

# C0 and C1 control characters and DEL: never part of a name a user means
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# an http(s) URL's scheme, in any case (RFC 3986: schemes are case-insensitive)
_URL_SCHEME = re.compile(r"(https?)://", re.IGNORECASE)
# the longest file name most file systems take (ext4, XFS, APFS: 255 bytes)
MAX_FILE_NAME_BYTES = 255


class PathShadowsName(UserWarning):
    """A biLM's name that is also a path existing where the user stands: the path is used."""


def user_text(value: Optional[UserPath], what: str = "the biLM") -> Optional[str]:
    """`value` as text: None for nothing given (None, "", only spaces); a path-like object's
    string; a control character refused (UsageError naming `what`). `~` is left as it is."""
    if value is None:
        return None
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise UsageError(
            f"{what}: expected a path, URL or name (str or pathlib.Path), got "
            f"{type(value).__name__} {value!r:.80}"
        )
    text = os.fsdecode(os.fspath(value))
    if not text.strip():
        return None
    control = _CONTROL.search(text)
    if control is not None:
        raise UsageError(
            f"{what}: {text!r:.120} holds a control character ({control.group()!r} at position "
            f"{control.start()}); no file name or URL a user means does"
        )
    return text


def is_url(text: Optional[str]) -> bool:
    """Whether `text` is an http(s) URL."""
    return isinstance(text, str) and text.startswith(("http://", "https://"))


def user_path(value: Optional[UserPath], what: str = "the biLM") -> Optional[str]:
    """What a user named as a file, folder, URL or name, normalised (the module's docstring):
    None for nothing given, else a string with `~` expanded outside URLs and Hub ids."""
    text = user_text(value, what)
    if text is None:
        return None
    url = _URL_SCHEME.match(text.strip())
    if url is not None:  # a URL pasted with spaces around it, or as HTTPS://: the URL
        return url.group(1).lower() + text.strip()[url.end(1) :]
    if text.startswith("~") and not is_url(text):
        text = os.path.expanduser(text)
    return text


def required_path(value: Optional[UserPath], what: str) -> str:
    """`user_path` for an argument the original API requires (a model's folder): nothing given
    (None, "", only spaces) is refused in one line, not read as the drop-in's default biLM."""
    text = user_path(value, what)
    if text is None:
        raise UsageError(f"{what}: got {value!r}, which names no biLM: give its folder or file")
    return text


def shadows_name(text: str, names: Collection[str]) -> bool:
    """Whether `text` is one of `names` and also a path that exists (the path wins; a
    `PathShadowsName` warning says so)."""
    if text not in names or not os.path.lexists(text):
        return False
    warnings.warn(
        f"{text!r} is a biLM's name and also {os.path.abspath(text)} here: using the "
        f"{'folder' if os.path.isdir(text) else 'file'} (write ./{text} to say so; run from "
        "another folder for the named biLM)",
        PathShadowsName,
        stacklevel=3,
    )
    return True


def url_file_name(url: str) -> str:
    """The file name a URL's download is kept under: the last part of its path (no query, no
    fragment, percent-decoded, no separators), at most `MAX_FILE_NAME_BYTES` bytes with the
    suffix kept; `download` where the path names no file."""
    path = urllib.parse.urlsplit(url).path
    name = urllib.parse.unquote(posixpath.basename(path.rstrip("/")))
    name = _CONTROL.sub("_", name.replace("/", "_").replace(os.sep, "_")).lstrip(".")
    if not name:
        name = "download"
    # room for the cache's `DIGEST_` prefix and `.meta.json` / `.lock` / `.PID.partial` suffixes
    limit = MAX_FILE_NAME_BYTES - 64
    if len(name.encode("utf-8")) > limit:
        stem, dot, suffix = name.rpartition(".")
        suffix = f".{suffix}" if dot and len(suffix) <= 16 else ""
        stem = name[: len(name) - len(suffix)]
        keep = limit - len(suffix.encode("utf-8"))
        stem = stem.encode("utf-8")[:keep].decode("utf-8", "ignore")
        name = stem + suffix
    return name
