import pytest

from elmo_bilm.utils.files import FormatError
from elmo_plugin.tasks.ner.dataset_readers.conll2003 import Conll2003TaskReader
from tests.conftest import DATA


def test_reads_conll2003_and_converts_to_bioul():
    reader = Conll2003TaskReader(convert_to_coding_scheme="BIOUL")
    instances = list(reader.read(str(DATA / "conll2003" / "eng.testa")))
    assert len(instances) == 3250
    first = instances[0]
    assert [t.text for t in first["tokens"].tokens][:3] == ["CRICKET", "-", "LEICESTERSHIRE"]
    assert first["tags"].labels[2] == "U-ORG"  # IOB1 I-ORG single token -> BIOUL U-ORG


def test_malformed_lines_name_file_and_line(tmp_path):
    (tmp_path / "bad.txt").write_text("-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP\n")
    with pytest.raises(FormatError, match=r"bad.txt:4: expected 4 columns"):
        list(Conll2003TaskReader().read(str(tmp_path / "bad.txt")))
    (tmp_path / "tag.txt").write_text("EU NNP I-NP ORG\n")
    with pytest.raises(FormatError, match=r"tag.txt:1: 'ORG' is not an IOB tag"):
        list(Conll2003TaskReader().read(str(tmp_path / "tag.txt")))
