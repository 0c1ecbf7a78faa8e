import pytest

from elmo_plugin.tasks.common.conll2012 import FormatError
from elmo_plugin.tasks.coref.dataset_readers.coref import CorefTaskReader
from elmo_plugin.tasks.coref.genres import GENRES
from tests.conftest import DATA

SAMPLE = DATA / "format_samples" / "coref.gold_conll"


def _two_speaker_document(tmp_path):
    """The sample's first document with its second sentence given to another speaker and a 'tc' id."""
    text = SAMPLE.read_text().split("#end document")[0] + "#end document\n"
    lines = text.splitlines()
    blank = lines.index("", 1)
    for i in range(blank + 1, len(lines) - 1):
        if lines[i].strip():
            lines[i] = lines[i].replace("Speaker#1", "Speaker#2")
    path = tmp_path / "doc.gold_conll"
    path.write_text("\n".join(lines).replace("bc/cctv", "tc/cctv") + "\n")
    return path, blank


def test_documents_with_clusters_genre_and_speakers(tmp_path):
    instances = list(CorefTaskReader(max_span_width=10).read(str(SAMPLE)))
    assert len(instances) == 4
    first = instances[0]
    assert first["genre"].label == GENRES.index("bc")
    assert sorted(first["metadata"]["clusters"][0]) == [(23, 24), (41, 42)]
    assert len(first["speaker_ids"].labels) == len(first["text"].tokens)
    # every candidate span up to 10 words, labelled with its gold cluster or -1
    assert all(span.span_end - span.span_start < 10 for span in first["spans"].field_list)
    assert sum(label >= 0 for label in first["span_labels"].labels) == sum(
        len(c) for c in first["metadata"]["clusters"]
    )

    path, blank = _two_speaker_document(tmp_path)
    (doc,) = CorefTaskReader(max_span_width=10).read(str(path))
    first_sentence_length = blank - 1  # rows between "#begin document" and the first blank line
    assert doc["genre"].label == GENRES.index("tc")
    assert set(doc["speaker_ids"].labels[:first_sentence_length]) == {0}
    assert set(doc["speaker_ids"].labels[first_sentence_length:]) == {1}


def test_malformed_row_names_file_and_line(tmp_path):
    lines = SAMPLE.read_text().splitlines()
    lines[5] = "\t".join(
        lines[5].split()[:-1] + ["(3", "extra"]
    )  # one column too many for its sentence
    (tmp_path / "bad.gold_conll").write_text("\n".join(lines) + "\n")
    with pytest.raises(
        FormatError,
        match=r"bad.gold_conll:2: the rows of one sentence have different column counts",
    ):
        list(CorefTaskReader(max_span_width=10).read(str(tmp_path / "bad.gold_conll")))


def test_litbank_fold_variable_picks_the_fold(monkeypatch):
    """LITBANK_FOLD selects which documents COREF_TRAIN reads (80 of the 100 in every fold)."""
    from elmo_plugin.common.config_env import data_defaults
    from elmo_plugin.tasks.coref.dataset_readers.coref import CorefTaskReader

    reader = CorefTaskReader(max_span_width=10)
    ids = {}
    for fold in ("0", "3"):
        monkeypatch.setenv("LITBANK_FOLD", fold)
        path = data_defaults(DATA)["COREF_TEST"]
        assert path.endswith(f"splits/{fold}/test.ids")
        ids[fold] = {" ".join(i["metadata"]["original_text"][:30]) for i in reader.read(path)}
        assert len(ids[fold]) == 10
    assert ids["0"] != ids["3"]
