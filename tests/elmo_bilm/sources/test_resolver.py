"""The one resolver (`elmo_bilm.sources.resolver`): every kind of biLM source, given to every
entry point, resolves through `resolve_bilm` and gives the same vectors; the latest checkpoint
by one rule; nothing the resolver writes is found by a later folder search."""

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids
from elmo_bilm.sources import resolver
from elmo_bilm.sources.resolver import resolve_bilm
from elmo_bilm.utils.files import FormatError, UsageError
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE

SENTENCE = ["The", "cat", "sat", "."]
CHECKPOINT = REPO_ROOT / "fixtures" / "tf_checkpoint" / "save_dir"
MANYLANGS = REPO_ROOT / "fixtures" / "elmoformanylangs" / "chars_only"
# a TF-Hub module's variables, written by TensorFlow from the tiny biLM's weights
TFHUB = REPO_ROOT / "fixtures" / "tfhub" / "tiny_module"


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def bilm_tf_folder(folder: Path) -> Path:
    """An unzipped NLPL model: options.json, model.hdf5, vocab.txt."""
    folder.mkdir()
    shutil.copyfile(OPTIONS_FILE, folder / "options.json")
    shutil.copyfile(WEIGHT_FILE, folder / "model.hdf5")
    (folder / "vocab.txt").write_text("<S>\n</S>\n<UNK>\nthe\n")
    return folder


def bio_embeddings_folder(folder: Path) -> Path:
    """bio_embeddings' SeqVec `model_directory`: bilm-tf's files named without suffixes."""
    folder.mkdir()
    shutil.copyfile(OPTIONS_FILE, folder / "options_file")
    shutil.copyfile(WEIGHT_FILE, folder / "weights_file")
    return folder


def checkpoint_folder(folder: Path, state_file: bool = True) -> Path:
    shutil.copytree(CHECKPOINT, folder)
    if not state_file:
        (folder / "checkpoint").unlink()
    return folder


def sources(tmp_path: Path) -> Dict[str, Tuple[str, ...]]:
    """One source of each kind (as user-named arguments) holding the tiny biLM."""
    archive = tmp_path / "packed.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(OPTIONS_FILE, "m/options.json")
        tar.add(WEIGHT_FILE, "m/weights.hdf5")
    packed_checkpoint = tmp_path / "packed_checkpoint.zip"
    with zipfile.ZipFile(packed_checkpoint, "w") as packed:
        for path in CHECKPOINT.iterdir():
            packed.write(path, f"model/{path.name}")
    packed_hub = tmp_path / "elmo_3.tar.gz"  # as ?tf-hub-format=compressed serves a module
    with tarfile.open(packed_hub, "w:gz") as tar:
        tar.add(TFHUB / "variables", "variables")
    return {
        "files": (str(OPTIONS_FILE), str(WEIGHT_FILE)),
        "folder": (str(bilm_tf_folder(tmp_path / "nlpl")),),
        "archive": (str(archive),),
        "checkpoint": (str(checkpoint_folder(tmp_path / "save_dir")),),
        "checkpoint prefix": (str(CHECKPOINT / "model.ckpt-3"),),
        "packed checkpoint": (str(packed_checkpoint),),
        "bio_embeddings folder": (str(bio_embeddings_folder(tmp_path / "seqvec")),),
        "tfhub module": (str(TFHUB),),
        "tfhub variables": (str(TFHUB / "variables"),),
        "tfhub prefix": (str(TFHUB / "variables" / "variables"),),
        "packed tfhub module": (str(packed_hub),),
    }


EXPECTED_KINDS = {
    "files": ("files", "bilm_tf"),
    "folder": ("folder", "bilm_tf"),
    "archive": ("archive", "bilm_tf"),
    "checkpoint": ("checkpoint", "tf_checkpoint"),
    "checkpoint prefix": ("checkpoint", "tf_checkpoint"),
    "packed checkpoint": ("archive", "tf_checkpoint"),
    "bio_embeddings folder": ("folder", "bilm_tf"),
    "tfhub module": ("tfhub", "tfhub"),
    "tfhub variables": ("tfhub", "tfhub"),
    "tfhub prefix": ("tfhub", "tfhub"),
    "packed tfhub module": ("archive", "tfhub"),
}


def test_every_kind_resolves_to_one_value_with_the_same_weights(tmp_path: Path) -> None:
    found = {name: resolve_bilm(*args) for name, args in sources(tmp_path).items()}
    assert {name: (r.kind, r.format) for name, r in found.items()} == EXPECTED_KINDS
    reference = resolve_bilm(str(OPTIONS_FILE), str(WEIGHT_FILE)).load().state_dict()
    for name, source in found.items():
        for loaded in (source.load(), source.as_bilm_tf().load()):
            state = loaded.state_dict()
            assert state.keys() == reference.keys(), name
            assert all(torch.equal(state[k], reference[k]) for k in reference), name
    # the identity is the files' content: the same bytes by path or in a folder agree
    assert found["files"].identity() == found["folder"].identity()
    assert found["checkpoint"].identity() == found["checkpoint prefix"].identity()
    assert found["bio_embeddings folder"].identity() == found["files"].identity()
    hub = {found[name].identity() for name in found if "tfhub" in name}
    assert len(hub) == 1 and hub != {found["checkpoint"].identity()}
    # a hub module's options are derived from its variables: the tiny biLM's, written out
    assert resolver.options_path(str(TFHUB)) == found["tfhub module"].as_bilm_tf().options_file


def test_the_shipped_biLM_names_and_manylangs(tmp_path: Path) -> None:
    assert resolve_bilm().kind == "shipped"
    assert resolve_bilm("wikipedia").kind == "name"
    manylangs = resolve_bilm(str(MANYLANGS))
    assert (manylangs.kind, manylangs.format) == ("manylangs", "manylangs")
    with pytest.raises(FormatError, match="no bilm-tf form"):
        manylangs.as_bilm_tf()


@pytest.mark.parametrize("layout", ["nlpl", "bio_embeddings", "tfhub"])
def test_every_entry_point_resolves_through_the_resolver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    """A folder (an unzipped NLPL model, bio_embeddings' SeqVec folder, a TF-Hub module) given
    to each entry point is looked into by the resolver (its `_in_folder`, seen by a spy), and
    every entry point gives the reference vectors."""
    import spacy

    from elmo_bilm.cli import convert, embed, export_onnx
    from elmo_bilm.dropins.flair import ELMoEmbeddings
    from elmo_bilm.integrations.corpus import bilm_sha256
    from elmo_plugin.common.config_env import options_path
    from elmo_plugin.modules.bilm_loading import load_bilm_or_archive
    from elmo_plugin.token_embedders.elmo_token_embedder import ElmoPluginTokenEmbedder

    if layout == "tfhub":
        folder = str(shutil.copytree(TFHUB, tmp_path / "module"))
    elif layout == "bio_embeddings":
        folder = str(bio_embeddings_folder(tmp_path / "seqvec"))
    else:
        folder = str(bilm_tf_folder(tmp_path / "nlpl"))
    seen: List[str] = []
    real = resolver._in_folder

    def spy(kind: str, source: str, path: Path) -> resolver.ResolvedBilm:
        seen.append(source)
        return real(kind, source, path)

    monkeypatch.setattr(resolver, "_in_folder", spy)
    expected = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE)).embed_sentence(SENTENCE)
    mix = [1.0, 1.0, 1.0]
    ids = batch_to_ids([SENTENCE])
    reference = Elmo(str(OPTIONS_FILE), str(WEIGHT_FILE), 1, dropout=0.0, scalar_mix_parameters=mix)
    entry_points = {
        "ElmoEmbedder": lambda: ElmoEmbedder(folder).embed_sentence(SENTENCE),
        "Elmo": lambda: Elmo(folder, None, 1, dropout=0.0, scalar_mix_parameters=mix)(ids),
        "load_bilm": lambda: resolver.load_bilm(folder),
        "plugin": lambda: load_bilm_or_archive(folder),
        "config": lambda: options_path(folder),
        "corpus identity": lambda: bilm_sha256(folder, None),
        "flair": lambda: ELMoEmbeddings(options_file=folder),
        "spacy": lambda: spacy.blank("en").add_pipe("elmo", config={"model": folder}).bilm,  # type: ignore[attr-defined]
        "elmo-embed": lambda: embed.main(
            [str(tmp_path / "in.txt"), str(tmp_path / "out.hdf5"), "--options-file", folder]
        ),
        "elmo-convert": lambda: convert.main([folder, str(tmp_path / "converted")]),
        "elmo-export-onnx": lambda: export_onnx.main(
            [str(tmp_path / "bilm.onnx"), "--options-file", folder]
        ),
        "token embedder": lambda: ElmoPluginTokenEmbedder(options_file=folder, dropout=0.0),
    }
    (tmp_path / "in.txt").write_text(" ".join(SENTENCE) + "\n")
    results = {}
    for name, call in entry_points.items():
        seen.clear()
        results[name] = call()
        assert seen == [folder], name
    assert (results["ElmoEmbedder"] == expected).all()
    assert torch.equal(
        results["Elmo"]["elmo_representations"][0], reference(ids)["elmo_representations"][0]
    )
    resolved = real("folder", folder, Path(folder))
    assert results["corpus identity"] == resolved.identity()
    assert results["config"] == resolved.as_bilm_tf().options_file
    assert Path(results["config"]).name == (
        "options_file" if layout == "bio_embeddings" else "options.json"
    )
    state = results["load_bilm"].state_dict()
    reference_state = resolve_bilm(str(OPTIONS_FILE), str(WEIGHT_FILE)).load().state_dict()
    assert all(torch.equal(state[k], reference_state[k]) for k in reference_state)


def test_the_latest_checkpoint_is_the_highest_step_without_a_state_file(tmp_path: Path) -> None:
    """model.ckpt-9 and model.ckpt-10: ckpt-10 (a broken ckpt-9 shows which one was read), by
    the resolver and by elmo-convert alike."""
    folder = checkpoint_folder(tmp_path / "two", state_file=False)
    for suffix in (".index", ".data-00000-of-00001"):
        (folder / f"model.ckpt-3{suffix}").rename(folder / f"model.ckpt-10{suffix}")
    (folder / "model.ckpt-9.index").write_bytes(b"not an index")
    (folder / "model.ckpt-9.data-00000-of-00001").write_bytes(b"")
    source = resolve_bilm(str(folder))
    assert source.checkpoint == str(folder / "model.ckpt-10")
    source.load()
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "elmo_bilm.cli.convert", str(folder), str(out)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    converted = resolve_bilm(str(out / "options.json"), str(out / "weights.hdf5")).load()
    assert all(
        torch.equal(a, b)
        for a, b in zip(converted.state_dict().values(), source.load().state_dict().values())
    )


def test_a_state_file_naming_a_path_outside_the_folder_is_looked_up_inside(tmp_path: Path) -> None:
    victim = checkpoint_folder(tmp_path / "victim")
    folder = checkpoint_folder(tmp_path / "model")
    (folder / "checkpoint").write_text('model_checkpoint_path: "../victim/model.ckpt-3"\n')
    assert resolve_bilm(str(folder)).checkpoint == str(folder / "model.ckpt-3")
    for suffix in (".index", ".data-00000-of-00001"):
        (folder / f"model.ckpt-3{suffix}").unlink()
    with pytest.raises(FileNotFoundError, match="has no model.ckpt-3.index"):
        resolve_bilm(str(folder))
    assert victim.is_dir()


def test_a_huge_state_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    folder = checkpoint_folder(tmp_path / "model")
    with open(folder / "checkpoint", "wb") as handle:
        handle.truncate(3 * 2**30)  # sparse: 3 GiB without a line end
    with pytest.raises(FormatError, match="not a checkpoint state file"):
        resolve_bilm(str(folder))


def test_nothing_fits_is_one_error_naming_what_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="DOES-NOT-EXIST: no such file or folder"):
        resolve_bilm(str(tmp_path / "DOES-NOT-EXIST"))
    with pytest.raises(UsageError, match="'huge' is not a file, folder or biLM name"):
        resolve_bilm("huge")
    with pytest.raises(UsageError, match="needs its weight file"):
        resolve_bilm(str(OPTIONS_FILE))
    with pytest.raises(UsageError, match="names a whole biLM"):
        resolve_bilm(str(bilm_tf_folder(tmp_path / "f")), str(WEIGHT_FILE))


def test_an_archive_holding_no_biLM_leaves_nothing_in_the_cache(
    tmp_path: Path, cache: Path
) -> None:
    archive = tmp_path / "nothing.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        packed.writestr("README.txt", "no biLM here")
    with pytest.raises(FormatError, match="no options file"):
        resolve_bilm(str(archive))
    assert (
        not [p for p in (cache / "unpacked").iterdir()] if (cache / "unpacked").exists() else True
    )


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_an_index_that_is_no_regular_file_is_named_as_such(tmp_path: Path, kind: str) -> None:
    import os

    folder = checkpoint_folder(tmp_path / "model")
    index = folder / "model.ckpt-3.index"
    index.unlink()
    if kind == "fifo":
        os.mkfifo(index)
    else:
        index.symlink_to("/dev/zero")
    with pytest.raises(FormatError, match="model.ckpt-3.index: not a regular file"):
        resolve_bilm(str(folder / "model.ckpt-3"))
    from elmo_bilm.formats.tf_checkpoint import CheckpointReader

    with pytest.raises(FormatError, match="not a regular file"):
        CheckpointReader(str(index))


def test_a_pretrained_name_org_repo_is_a_hub_repository_unless_a_path_or_url(tmp_path, monkeypatch):
    """`Elmo.from_pretrained`'s names, judged by the resolver: `ORG/REPO` is `hf://ORG/REPO`; a
    folder that exists, a URL, `hf://...` and a biLM's name are themselves."""
    from elmo_bilm.sources.resolver import pretrained_source

    monkeypatch.chdir(tmp_path)
    assert pretrained_source("org/repo") == "hf://org/repo"
    assert pretrained_source("org/repo@v1") == "hf://org/repo@v1"
    (tmp_path / "org" / "folder").mkdir(parents=True)
    for name in ("org/folder", "hf://org/repo", "https://host/a/b.tar.gz", "small", "wikipedia"):
        assert pretrained_source(name) == name


def test_another_users_unreadable_biLM_is_not_called_missing(tmp_path: Path, monkeypatch) -> None:
    """Issue 88: a biLM under a folder this user may not read was "no such file or folder".
    The kernel's answer, EACCES from stat, is given for that folder (the tests may run as root,
    whom permissions do not stop)."""
    locked = tmp_path / "other_user"
    folder = locked / "bilm"
    folder.mkdir(parents=True)
    shutil.copy(OPTIONS_FILE, folder / "options.json")
    shutil.copy(WEIGHT_FILE, folder / "weights.hdf5")
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if os.fspath(path).startswith(str(locked) + os.sep):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    for source in [(str(folder),), (str(folder / "options.json"), str(folder / "weights.hdf5"))]:
        with pytest.raises(PermissionError, match="not readable \\(permission denied\\)") as caught:
            resolve_bilm(*source)
        assert "\n" not in str(caught.value) and "no such" not in str(caught.value)
