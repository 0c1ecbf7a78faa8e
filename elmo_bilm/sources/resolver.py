"""The one resolver: whatever a user names as a biLM becomes one `ResolvedBilm`.

Every entry point that accepts a biLM (`Elmo`, `ElmoEmbedder`, `load_bilm`, the console scripts,
the spaCy component, flair, the plugin's token embedder and configs) hands what the user named to
`resolve_bilm`, which alone decides the kind of source:

- nothing: the biLM shipped with the package;
- a name: this project's (`wikipedia`, `wikipedia_1024`, `wikipedia_1024_256`) or AllenNLP's
  published ones (`small`, `medium`, `original`, `original_5.5b`, downloaded once);
- `hf://ORG/REPO[@REVISION]`: a Hugging Face Hub repository (`elmo_bilm.sources.hub`);
- a `.zip` / `.tar.gz` / `.tar` (a path or URL): unpacked once into the cache
  (`elmo_bilm.sources.archives`, which checks every member); so is TF-Hub's ELMo module named
  by its tfhub.dev or Kaggle address (`https://tfhub.dev/google/elmo/3`), downloaded as
  `hub.Module` downloads it (`published.tfhub_module_url`);
- a folder: ELMoForManyLangs' model, bilm-tf's `options.json` + `*.hdf5` (an unzipped NLPL
  model) or bio_embeddings' `options_file` + `weights_file` (SeqVec's `model_directory`), a
  bilm-tf TensorFlow checkpoint, or a TF-Hub ELMo module (its folder or `variables/` folder);
- a TensorFlow checkpoint prefix (`.../model.ckpt-N`, a hub's `.../variables/variables`) or its
  `.index`;
- an options file and a weight file, paths or http(s) URLs (downloaded once).

A folder's checkpoint is chosen by one rule: the one its `checkpoint` file names (looked up in the
folder by file name), else the highest step number. A checkpoint is converted to bilm-tf files
once, into the cache's `converted/` folder (keyed by the checkpoint's content), never beside the
files it came from, so no later folder search finds the conversion. A checkpoint is a TF-Hub
module's when its variables say so (`elmo_bilm.formats.tfhub`: the biLM under `bilm/`, options
derived from the shapes); it converts the same way. The value returned carries
the kind, the local files and an identity (the SHA-256 of the files' contents) for manifests and
caches.
"""

import difflib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from elmo_bilm.formats.bilm_tf import export_bilm_tf, load_bilm_tf
from elmo_bilm.formats.convert import convert_checkpoint
from elmo_bilm.formats.manylangs import is_manylangs_folder, load_manylangs
from elmo_bilm.formats.tf_checkpoint import (
    CheckpointReader,
    checkpoint_file_prefix,
    resolve_checkpoint,
)
from elmo_bilm.formats.tfhub import is_tfhub_checkpoint, read_tfhub
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.sources import published
from elmo_bilm.sources.archives import (
    bilm_files_in,
    folder_entries,
    is_bilm_archive,
    remove_stale_partials,
    unpacked,
)
from elmo_bilm.sources.hub import PREFIX, hub_folder, is_hub_id
from elmo_bilm.sources.shipped import SHIPPED_OPTIONS_FILE, SHIPPED_WEIGHT_FILE
from elmo_bilm.utils.files import FormatError, UsageError, cache_writes, sha256_files
from elmo_bilm.utils.names import UserPath, shadows_name, user_path

# How a biLM was named (`ResolvedBilm.kind`)
KINDS = (
    "shipped",
    "name",
    "hub",
    "archive",
    "folder",
    "checkpoint",
    "manylangs",
    "tfhub",
    "files",
)
# What its local files are (`ResolvedBilm.format`)
FORMATS = ("bilm_tf", "manylangs", "tf_checkpoint", "tfhub")
# bio_embeddings' `model_directory`: bilm-tf's two files under these names, without suffixes
BIO_EMBEDDINGS_FILES = ("options_file", "weights_file")
# a bilm-tf options.json is well under a kilobyte; a file named so that is larger is not one
MAX_OPTIONS_BYTES = 1 << 20


@dataclass(frozen=True)
class ResolvedBilm:
    """A biLM source, resolved: how it was named (`kind`, one of `KINDS`), what was named
    (`source`), the format of its local files (`format`) and the files: bilm-tf's options and
    weights, an ELMoForManyLangs `folder`, or a TensorFlow `checkpoint` prefix: bilm-tf's with
    the options beside it if any, or a TF-Hub module's (`as_bilm_tf` converts either)."""

    kind: str
    source: str
    format: str
    options_file: Optional[str] = None
    weight_file: Optional[str] = None
    folder: Optional[str] = None
    checkpoint: Optional[str] = None

    @property
    def files(self) -> Tuple[str, ...]:
        """The local files whose contents are the biLM (a folder's: every file, name order)."""
        if self.format == "manylangs":
            root = Path(str(self.folder))
            return tuple(sorted(str(p) for p in root.rglob("*") if p.is_file()))
        if self.format == "tf_checkpoint":
            options = [self.options_file] if self.options_file else []
            return (*options, *checkpoint_files(str(self.checkpoint)))
        if self.format == "tfhub":
            return tuple(checkpoint_files(str(self.checkpoint)))
        return (str(self.options_file), str(self.weight_file))

    def identity(self) -> str:
        """The SHA-256 of the biLM's files' contents, one after another (`files`)."""
        return sha256_files(self.files)

    def as_bilm_tf(self) -> "ResolvedBilm":
        """The same biLM as bilm-tf files: itself, or a checkpoint (bilm-tf's or a TF-Hub
        module's) converted once into the cache's `converted/` folder; an ELMoForManyLangs model has no bilm-tf form."""
        if self.format == "bilm_tf":
            return self
        if self.format == "manylangs":
            raise FormatError(
                f"{self.source}: an ELMoForManyLangs model (its own character and word "
                "vocabularies) has no bilm-tf form; load the folder itself"
            )
        return _converted(self)

    def load(self, dropout: float = 0.0) -> BiLm:
        """The biLM these files hold, with `dropout` on its LSTM inputs in training mode."""
        if self.format == "manylangs":
            return load_manylangs(str(self.folder), dropout)
        if self.format == "tfhub":  # read directly: nothing written for a load
            return read_tfhub(str(self.checkpoint), dropout=dropout).bilm
        files = self.as_bilm_tf()
        bilm = load_bilm_tf(str(files.options_file), str(files.weight_file))
        bilm.set_dropout(dropout)
        return bilm


def resolve_bilm(
    options_file: Optional[UserPath] = None, weight_file: Optional[UserPath] = None
) -> ResolvedBilm:
    """Resolve what a user named as a biLM (see the module's docstring), each argument read by
    `elmo_bilm.utils.names.user_path` first (a `pathlib.Path`, `~`, "" as not given). One
    error when nothing fits, naming what was looked for where."""
    options_file = user_path(options_file, "the options file")
    weight_file = user_path(weight_file, "the weight file")
    if options_file is None and weight_file is None:
        return _bilm_tf(
            "shipped", "the shipped biLM", str(SHIPPED_OPTIONS_FILE), str(SHIPPED_WEIGHT_FILE)
        )
    if options_file is None:
        raise UsageError(f"a weight file ({weight_file}) without its options file")
    _check_name(options_file, weight_file)
    if weight_file is not None:
        if names_whole_bilm(options_file) or os.path.isdir(options_file):
            raise UsageError(
                f"{options_file!r} names a whole biLM (options and weights): give it alone, "
                f"without the weight file {weight_file!r}"
            )
        return _bilm_tf("files", options_file, _local_file(options_file), _local_file(weight_file))
    source = options_file
    if is_hub_id(source):
        return _in_folder("hub", source, Path(hub_folder(source)))
    if shadows_name(source, published.names()):  # a path that exists is a path
        if not os.path.exists(source):  # a dangling link: said so (not "needs its weight file")
            raise FileNotFoundError(
                f"{source}: a link to {os.readlink(source)}, which does not exist (remove the "
                "link for the named biLM, or run from another folder)"
            )
        if os.path.isdir(source):
            return _in_folder("folder", source, Path(source))
        raise UsageError(
            f"{source}: an options file needs its weight file (or name a folder, archive or "
            "checkpoint holding both)"
        )
    if source in published.LOCAL:
        return _bilm_tf("name", source, *published.local_files(source))
    if source in published.PUBLISHED:
        options, weights = (published.cached_path(u) for u in published.published_urls(source))
        return _bilm_tf("name", source, options, weights)
    module_url = published.tfhub_module_url(source)  # TF-Hub's google/elmo, as hub.Module
    if module_url is not None or is_bilm_archive(source):
        local = published.cached_path(module_url or source) if published.is_url(source) else source
        if not os.path.isfile(local):
            raise FileNotFoundError(f"{source}: no such archive")
        # the check runs on the extraction before it is kept: an archive holding no biLM
        # leaves nothing in the cache
        check = lambda folder: _in_folder("archive", source, folder)  # noqa: E731
        with cache_writes(f"{source}: unpacking"):
            folder = unpacked(local, published.cache_dir(), check)
        return _in_folder("archive", source, folder)
    if published.is_url(source):
        raise UsageError(
            f"{source}: a URL names a biLM alone only as a .zip / .tar.gz or as TF-Hub's ELMo "
            f"module ({published.TFHUB_ELMO_URL}/3 or its Kaggle address); give an options "
            "file's URL with its weight file's"
        )
    if os.path.isdir(source):
        return _in_folder("folder", source, Path(source))
    prefix = checkpoint_file_prefix(source)
    if prefix is not None:
        options = os.path.join(os.path.dirname(prefix) or ".", "options.json")
        return _checkpoint("checkpoint", source, prefix, options)
    if os.path.exists(source):
        raise UsageError(
            f"{source}: an options file needs its weight file (or name a folder, archive or "
            "checkpoint holding both)"
        )
    alternatives = (
        f"a biLM's name alone: {', '.join(published.names())}; a Hugging Face Hub repository "
        "alone: hf://ORG/REPO; a .zip / .tar.gz alone; a folder or TensorFlow checkpoint; or an "
        "options file with its weight file"
    )
    if "/" not in source and os.sep not in source:
        raise UsageError(f"{source!r} is not a file, folder or biLM name ({alternatives})")
    raise _not_found(source, f"{source}: no such file or folder ({alternatives})")


def _not_found(path: str, message: str) -> OSError:
    """`FileNotFoundError(message)`, or when `path` is there but a folder on the way is not
    this user's to read (`os.path.exists` says False for both), a `PermissionError` saying so:
    another user's weights were reported as no such folder."""
    try:
        os.stat(path)
    except PermissionError:
        return PermissionError(
            f"{path}: not readable (permission denied); ask its owner for read access to it "
            "and its folders, or copy the biLM where this user can read it"
        )
    except OSError:
        pass
    return FileNotFoundError(message)


def pretrained_source(name: str) -> str:
    """What a pretrained model's name (`Elmo.from_pretrained`, as transformers' takes names)
    stands for as a biLM source: a bare `ORG/REPO` (or `ORG/REPO@REVISION`) is a Hugging Face Hub
    repository, `hf://ORG/REPO`, unless it is a URL or a path that exists; any other name is
    itself (a biLM's name, `hf://...`, a path)."""
    if "/" in name and not (is_hub_id(name) or published.is_url(name) or os.path.exists(name)):
        return PREFIX + name
    return name


def names_whole_bilm(options_file: Optional[UserPath]) -> bool:
    """Whether `options_file` alone names a whole biLM, judged without the file system: a
    biLM's name, a Hub repository or an archive (a folder or a checkpoint stands alone too;
    `resolve_bilm` looks at the file system)."""
    options_file = user_path(options_file, "the options file")
    return isinstance(options_file, str) and (
        options_file in published.names()
        or is_hub_id(options_file)
        or is_bilm_archive(options_file)
        or published.tfhub_module_url(options_file) is not None
    )


def options_path(named: Optional[UserPath]) -> str:
    """The local bilm-tf options file of a biLM named by `named` alone or as the options
    of a pair (for reading its sizes): a published biLM's options are downloaded without its
    weights; an ELMoForManyLangs model has none (FormatError). Nothing named ("", None): the
    shipped biLM's, as `resolve_bilm` takes it."""
    options_file = user_path(named, "the options file")
    if options_file is None:
        return str(SHIPPED_OPTIONS_FILE)
    if options_file in published.PUBLISHED and not os.path.lexists(options_file):
        return published.cached_path(published.published_urls(options_file)[0])
    if (
        names_whole_bilm(options_file)
        or os.path.isdir(options_file)
        or checkpoint_file_prefix(options_file)
    ):
        source = resolve_bilm(options_file)
        if source.format == "tfhub":  # options derived from the variables' shapes
            source = source.as_bilm_tf()
        if source.options_file is None:
            raise FormatError(
                f"{options_file}: no bilm-tf options file (an ELMoForManyLangs model, or a "
                "checkpoint without options.json)"
            )
        return source.options_file
    _check_name(options_file)
    return _local_file(options_file)


def load_bilm(
    options_file: Optional[UserPath] = None,
    weight_file: Optional[UserPath] = None,
    dropout: float = 0.0,
) -> BiLm:
    """The biLM that `options_file` (+ `weight_file`) name (`resolve_bilm`), with `dropout` on
    its LSTM inputs in training mode."""
    return resolve_bilm(options_file, weight_file).load(dropout)


def checkpoint_files(prefix: str) -> List[str]:
    """A checkpoint's `.index` and its `.data-*` shards, in name order."""
    folder, stem = os.path.split(prefix)
    folder = folder or "."
    shards = sorted(name for name in os.listdir(folder) if name.startswith(stem + ".data-"))
    return [prefix + ".index", *(os.path.join(folder, name) for name in shards)]


def _check_name(options_file: Optional[str], weight_file: Optional[str] = None) -> None:
    """Refuse a biLM's name given with a weight file (a name stands for both files), and a
    misspelt name (no such file, and close to a name: the closest names, difflib's); paths that
    exist, URLs and names pass."""
    if not options_file or published.is_url(options_file) or os.path.exists(options_file):
        return
    named = options_file in published.names() or is_hub_id(options_file)
    if named and weight_file is not None:
        raise UsageError(
            f"{options_file!r} is a biLM's name, which stands for its options and weights: give it "
            f"alone, without the weight file {weight_file!r} (or an options file's path with it)"
        )
    if named or "/" in options_file or os.sep in options_file or is_bilm_archive(options_file):
        return
    close = difflib.get_close_matches(options_file, published.names(), n=3, cutoff=0.6)
    if close:  # else the caller's own error (a missing file, the names a name could be) stands
        raise FileNotFoundError(
            f"{options_file}: no such options file, nor a biLM's name; did you mean "
            f"{' or '.join(close)}?"
        )


def _local_file(path: str) -> str:
    if published.is_url(path):
        return published.cached_path(path)
    if not os.path.isfile(path):
        raise _not_found(path, f"{path}: no such file")
    return path


def _bilm_tf(kind: str, source: str, options_file: str, weight_file: str) -> ResolvedBilm:
    return ResolvedBilm(kind, source, "bilm_tf", options_file=options_file, weight_file=weight_file)


def _tfhub(kind: str, source: str, prefix: str) -> Optional[ResolvedBilm]:
    """The TF-Hub module whose checkpoint `prefix` is (its index read and checked), or None
    for another checkpoint (bilm-tf's)."""
    if not is_tfhub_checkpoint(CheckpointReader(prefix + ".index")):  # the index, checked
        return None
    kind = "tfhub" if kind in ("folder", "checkpoint") else kind
    return ResolvedBilm(kind, source, "tfhub", checkpoint=prefix)


def _checkpoint(kind: str, source: str, prefix: str, options: Optional[str]) -> ResolvedBilm:
    hub = _tfhub(kind, source, prefix)
    if hub is not None:
        return hub
    options = options if options is not None and os.path.isfile(options) else None
    return ResolvedBilm(kind, source, "tf_checkpoint", options_file=options, checkpoint=prefix)


def _bio_embeddings_files(folder: Path, source: str) -> Optional[Tuple[str, str]]:
    """bio_embeddings' `options_file` + `weights_file` at the top of `folder`, or None where
    the folder has neither. Both must be regular files (a FIFO or a device would block or never
    end), the options small enough to be bilm-tf's; the weights are checked as every bilm-tf
    file is when loaded."""
    paths = [folder / name for name in BIO_EMBEDDINGS_FILES]
    present = [path for path in paths if os.path.lexists(path)]
    if not present:
        return None
    for path in paths:
        if not os.path.lexists(path):
            raise FormatError(
                f"{source}: has {present[0].name} but no {path.name} (bio_embeddings' model "
                f"folder holds both: {', '.join(BIO_EMBEDDINGS_FILES)})"
            )
        if not path.is_file() or not stat.S_ISREG(path.stat().st_mode):
            raise FormatError(f"{path}: not a regular file (bio_embeddings' {path.name} is one)")
    size = paths[0].stat().st_size
    if size > MAX_OPTIONS_BYTES:
        raise FormatError(
            f"{paths[0]}: {size:,} bytes, not bilm-tf options (at most {MAX_OPTIONS_BYTES:,})"
        )
    return str(paths[0]), str(paths[1])


def _in_folder(kind: str, source: str, folder: Path) -> ResolvedBilm:
    """The biLM in `folder` (a user's folder, an unpacked archive, a Hub snapshot): an
    ELMoForManyLangs model, bio_embeddings' two files, bilm-tf files (searched recursively),
    or, with no `.hdf5` file, a TensorFlow checkpoint (the latest: `resolve_checkpoint`): a
    TF-Hub module's (the `variables/` folder's), or bilm-tf's with the options found beside."""
    if is_manylangs_folder(str(folder)):
        return ResolvedBilm(
            "manylangs" if kind == "folder" else kind, source, "manylangs", folder=str(folder)
        )
    bio = _bio_embeddings_files(folder, source)
    if bio is not None:
        return _bilm_tf(kind, source, *bio)
    entries = folder_entries(folder, source)
    files = [path for path in entries if path.is_file()]
    if not any(path.suffix == ".hdf5" for path in files):
        # an index that is no regular file (a FIFO, a link to a device) is found, then refused
        indexes = {p.parent for p in entries if p.name.endswith(".index") and not p.is_dir()}
        indexes |= {path.parent for path in files if path.name == "checkpoint"}
        if len(indexes) > 1:
            raise FormatError(
                f"{source}: TensorFlow checkpoints in {len(indexes)} folders "
                f"({', '.join(sorted(str(f) for f in indexes)[:5])}); name one"
            )
        if indexes:
            prefix = resolve_checkpoint(indexes.pop())
            hub = _tfhub(kind, source, prefix)
            if hub is not None:  # a TF-Hub module holds no options file
                return hub
            options = bilm_files_in(folder, source, options_only=True)[0]
            return _checkpoint("checkpoint" if kind == "folder" else kind, source, prefix, options)
    return _bilm_tf(kind, source, *bilm_files_in(folder, source))


def _converted(source: ResolvedBilm) -> ResolvedBilm:
    """A TensorFlow checkpoint (bilm-tf's, or a TF-Hub module's) as bilm-tf files, converted
    once into the cache's `converted/` (keyed by the SHA-256 of the options and the checkpoint's
    files; converted into a hidden folder and renamed, so a half-converted folder is never
    used)."""
    if source.format == "tf_checkpoint" and source.options_file is None:
        raise FileNotFoundError(
            f"{source.source}: no options.json beside the checkpoint {source.checkpoint} "
            "(elmo-convert --options-file converts it with bilm-tf options named)"
        )
    out = published.cache_dir() / "converted" / sha256_files(source.files)[:16]
    remove_stale_partials(out.parent)  # hidden folders of conversions killed before the rename
    if not (out / "weights.hdf5").is_file():
        with cache_writes(f"{source.source}: converting"):
            _convert_into(source, out)
    options, weights = str(out / "options.json"), str(out / "weights.hdf5")
    return ResolvedBilm(
        source.kind, source.source, "bilm_tf", options_file=options, weight_file=weights
    )


def _convert_into(source: ResolvedBilm, out: Path) -> None:
    """Convert `source` into `out` (through a hidden partial folder `.DIGEST.PID.RANDOM`,
    renamed when complete; `_converted` removes those of processes that died converting)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.{os.getpid()}."))
    try:
        if source.format == "tfhub":
            bilm = read_tfhub(str(source.checkpoint)).bilm
            export_bilm_tf(bilm, partial / "options.json", partial / "weights.hdf5", overwrite=True)
        else:
            convert_checkpoint(
                str(source.checkpoint),
                partial,
                options_file=source.options_file,
                overwrite=True,
            )
        os.rename(partial, out)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if not (out / "weights.hdf5").is_file():  # else: another process converted it
            raise
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
