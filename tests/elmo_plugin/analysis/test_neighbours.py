import json

import pytest

from elmo_plugin.analysis.neighbours import nearest_neighbours
from elmo_plugin.commands.analysis import ElmoNeighbours
from tests.elmo_plugin.analysis.conftest import BILM_ARGS, run_command

CORPUS = [
    "he sat on the bank of the river".split(),
    "the bank approved the loan".split(),
    "a play about kings".split(),
]


def test_neighbours_per_layer_and_token_layer(fixture_bilm):
    query = "she deposited money at the bank".split()
    top = nearest_neighbours(fixture_bilm, query, 5, CORPUS, layer=-1, k=3)
    first = nearest_neighbours(fixture_bilm, query, 5, CORPUS, layer=1, k=3)
    assert top["layer"] == 2 and first["layer"] == 1
    assert len(top["contextual_neighbours"]) == 3
    cosines = [n["cosine"] for n in top["contextual_neighbours"]]
    assert cosines == sorted(cosines, reverse=True)
    assert cosines != [n["cosine"] for n in first["contextual_neighbours"]]  # the layer matters
    # layer 0 is context-free: the query word itself is left out, other words listed once
    words = [n["word"] for n in top["token_layer_neighbours"]]
    assert "bank" not in words and len(set(words)) == 3
    with pytest.raises(IndexError, match="layer 3 is out of range"):
        nearest_neighbours(fixture_bilm, query, 5, CORPUS, layer=3)
    with pytest.raises(IndexError, match="word index 9"):
        nearest_neighbours(fixture_bilm, query, 9, CORPUS)


def test_neighbours_command(tmp_path):
    (tmp_path / "corpus.txt").write_text("\n".join(" ".join(s) for s in CORPUS) + "\n")
    argv = ["elmo-neighbours", "the bank was closed", "1", str(tmp_path / "corpus.txt"), *BILM_ARGS]
    run_command(ElmoNeighbours, argv + ["--output-dir", str(tmp_path / "out"), "-k", "2"])
    result = json.loads((tmp_path / "out" / "neighbours.json").read_text())
    assert result["word"] == "bank" and len(result["contextual_neighbours"]) == 2
    assert {"word", "sentence", "cosine", "sentence_index", "token_index"} <= set(
        result["contextual_neighbours"][0]
    )
    with pytest.raises(SystemExit, match="elmo-neighbours: error: .*none.txt: cannot read"):
        run_command(
            ElmoNeighbours, argv[:3] + [str(tmp_path / "none.txt"), "--output-dir", str(tmp_path)]
        )


def test_an_empty_corpus_is_refused(fixture_bilm):
    with pytest.raises(ValueError, match="the corpus has no tokens"):
        nearest_neighbours(fixture_bilm, ["a", "play"], 1, [[], []])


def test_neighbours_json_keeps_cyrillic_as_written(tmp_path):
    """A Russian corpus's words are UTF-8 in neighbours.json, not \\uXXXX escapes."""
    sentences = ["банк закрыт", "мы пошли в банк", "река и берег"]
    (tmp_path / "corpus.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    argv = ["elmo-neighbours", "банк закрыт", "0", str(tmp_path / "corpus.txt"), *BILM_ARGS]
    run_command(ElmoNeighbours, argv + ["--output-dir", str(tmp_path / "out"), "-k", "2"])
    raw = (tmp_path / "out" / "neighbours.json").read_bytes()
    assert "\\u" not in raw.decode("ascii", errors="replace")
    assert json.loads(raw.decode("utf-8"))["word"] == "банк"
    assert '"word": "банк"' in raw.decode("utf-8")
