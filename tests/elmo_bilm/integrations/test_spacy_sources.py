"""The spaCy component's biLM sources go through the resolver (an ELMoForManyLangs folder, an
unzipped NLPL folder), and a saved pipeline is untrusted input: its `cfg` names only the folder's
own files or a biLM's name, its bytes only the component's files, and `from_bytes` leaves no
temporary folder behind."""

import json
import shutil
import tempfile
from pathlib import Path

import numpy
import pytest
import spacy
import srsly

from elmo_bilm import ElmoEmbedder
from elmo_bilm.utils.files import FormatError
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE

MANYLANGS = REPO_ROOT / "fixtures" / "elmoformanylangs" / "chars_only"
TEXT = "The cat sat on the mat ."


def nlp_with(model: str, weights: str = "") -> spacy.language.Language:
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": model, "weights": weights})
    return nlp


def test_an_elmoformanylangs_folder_loads_saves_and_reloads(tmp_path: Path) -> None:
    nlp = nlp_with(str(MANYLANGS))
    doc = nlp(TEXT)
    expected = ElmoEmbedder(str(MANYLANGS)).embed_sentence(TEXT.split())
    numpy.testing.assert_allclose(doc._.elmo, expected, atol=1e-6)
    nlp.to_disk(tmp_path / "saved")
    again = spacy.load(tmp_path / "saved")
    numpy.testing.assert_array_equal(again(TEXT)._.elmo, doc._.elmo)
    numpy.testing.assert_array_equal(nlp.from_bytes(nlp.to_bytes())(TEXT)._.elmo, doc._.elmo)


def test_an_unzipped_nlpl_folder_loads(tmp_path: Path) -> None:
    folder = tmp_path / "nlpl"
    folder.mkdir()
    shutil.copyfile(OPTIONS_FILE, folder / "options.json")
    shutil.copyfile(WEIGHT_FILE, folder / "model.hdf5")
    expected = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE)).embed_sentence(TEXT.split())
    numpy.testing.assert_allclose(nlp_with(str(folder))(TEXT)._.elmo, expected, atol=1e-6)


def saved(tmp_path: Path) -> Path:
    nlp = nlp_with(str(OPTIONS_FILE), str(WEIGHT_FILE))
    nlp.to_disk(tmp_path / "saved")
    return tmp_path / "saved"


@pytest.mark.parametrize(
    "cfg, message",
    [
        ({"files": False, "model": "/etc/passwd", "weights": ""}, "not a biLM's name"),
        ({"files": False, "model": "http://127.0.0.1:9/x.zip", "weights": ""}, "not a biLM's name"),
        ({"files": False, "model": "small", "weights": "/etc/passwd"}, "not a biLM's name"),
        (
            {"files": True, "model": "../../victim/options.json", "weights": ""},
            "not a file the saved",
        ),
        ({"model": "small"}, "no files / model"),
        ("[1, 2", "not the elmo component's saved cfg"),
    ],
)
def test_a_tampered_saved_cfg_is_refused(tmp_path: Path, cfg: object, message: str) -> None:
    folder = saved(tmp_path)
    cfg_file = folder / "elmo" / "cfg"
    cfg_file.write_text(cfg if isinstance(cfg, str) else json.dumps(cfg))
    with pytest.raises(FormatError, match=message):
        spacy.load(folder)


def test_bytes_naming_a_file_outside_are_refused(tmp_path: Path) -> None:
    nlp = nlp_with(str(OPTIONS_FILE), str(WEIGHT_FILE))
    payload = srsly.msgpack_loads(nlp.get_pipe("elmo").to_bytes())
    payload["../outside"] = b"x"
    with pytest.raises(FormatError, match="'../outside', not one of its files"):
        nlp.get_pipe("elmo").from_bytes(srsly.msgpack_dumps(payload))


def test_from_bytes_leaves_no_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    nlp = nlp_with(str(OPTIONS_FILE), str(WEIGHT_FILE))
    data = nlp.to_bytes()
    first = nlp(TEXT)._.elmo
    again = spacy.blank("en")
    again.add_pipe("elmo")
    again.from_bytes(data)
    assert list((tmp_path / "tmp").iterdir()) == []
    numpy.testing.assert_array_equal(again(TEXT)._.elmo, first)
    again.to_disk(tmp_path / "resaved")  # the files come from the bytes kept in memory
    numpy.testing.assert_array_equal(spacy.load(tmp_path / "resaved")(TEXT)._.elmo, first)
