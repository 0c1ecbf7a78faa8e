import json

import numpy
import pytest

from elmo_bilm.utils.files import FormatError
from elmo_plugin.analysis.probes import (
    WsdData,
    nearest_centroid_wsd,
    pos_probe,
    read_conllu_xpos,
    wsd_probe,
    wsd_scores,
)
from elmo_plugin.commands.analysis import ElmoProbe
from tests.conftest import DATA
from tests.elmo_plugin.analysis.conftest import BILM_ARGS, run_command

EWT = DATA / "ud_english_ewt"


def first_sentences(source, target, n):
    blocks = source.read_text(encoding="utf-8").split("\n\n")[:n]
    target.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return str(target)


def test_conllu_reader_skips_ranges_and_names_bad_lines(tmp_path):
    sentences, tags = read_conllu_xpos(str(EWT / "en_ewt-ud-test.conllu"))
    assert len(sentences) == 2077 and all(len(s) == len(t) for s, t in zip(sentences, tags))
    assert "NN" in {t for ts in tags for t in ts}  # XPOS = Penn Treebank tags
    (tmp_path / "bad.conllu").write_text("1\tword\n")
    with pytest.raises(FormatError, match="bad.conllu:1: expected 10"):
        read_conllu_xpos(str(tmp_path / "bad.conllu"))


@pytest.mark.numerics
def test_pos_probe_command_writes_per_layer_accuracy(tmp_path):
    train = first_sentences(EWT / "en_ewt-ud-train.conllu", tmp_path / "train.conllu", 300)
    test = first_sentences(EWT / "en_ewt-ud-test.conllu", tmp_path / "test.conllu", 100)
    out = tmp_path / "out"
    argv = ["elmo-probe", "pos", *BILM_ARGS, "--train-file", train, "--test-file", test]
    run_command(ElmoProbe, argv + ["--output-dir", str(out), "--epochs", "3"])
    result = json.loads((out / "pos_probe.json").read_text())
    accuracies = result["accuracy_per_layer"]
    assert len(accuracies) == 3 and len(set(accuracies)) == 3  # the layers differ
    assert all(0.2 < a < 1.0 for a in accuracies)  # far above 1 / 45 tags
    assert "| biLM layer | POS accuracy (%) |" in (out / "pos_probe.md").read_text()
    with pytest.raises(SystemExit, match="elmo-probe: error: .*--overwrite"):
        run_command(ElmoProbe, argv + ["--output-dir", str(out), "--epochs", "1"])
    # --epochs 0 trained nothing and still wrote results (1.7-3.1%): refused, nothing written
    # refused when the options are read (argparse: status 2, the option named on stderr)
    with pytest.raises(SystemExit) as exit_:
        run_command(ElmoProbe, argv + ["--output-dir", str(tmp_path / "zero"), "--epochs", "0"])
    assert exit_.value.code == 2
    assert not (tmp_path / "zero").exists()
    with pytest.raises(FormatError, match="nothing.conllu: cannot read"):
        pos_probe(None, str(tmp_path / "nothing.conllu"), test)


def write_wsd(folder, name, senses):
    """A dataset of sentences '<w> bank <w>' whose instance is 'bank' with the given senses."""
    folder.mkdir(parents=True, exist_ok=True)
    sentences, keys = [], []
    for k, (context, sense) in enumerate(senses):
        sentences.append(
            f'<sentence id="{name}.s{k}"><wf lemma="x" pos="X">{context}</wf>'
            f'<instance id="{name}.s{k}.t0" lemma="bank" pos="NOUN">bank</instance></sentence>'
        )
        keys.append(f"{name}.s{k}.t0 {sense}")
    xml = f'<corpus lang="en"><text id="{name}">{"".join(sentences)}</text></corpus>'
    (folder / f"{name}.data.xml").write_text(xml)
    (folder / f"{name}.gold.key.txt").write_text("\n".join(keys) + "\n")
    return str(folder)


def test_nearest_centroid_and_scores():
    v = numpy.array
    train = [
        ("bank", "N", "river", v([1.0, 0.0])),
        ("bank", "N", "money", v([0.0, 1.0])),
        ("set", "V", "a", v([1.0, 1.0])),
    ]
    test = [("bank", "N", v([0.9, 0.1])), ("set", "N", v([0.0, 1.0])), ("cat", "N", v([1.0, 0.0]))]
    predictions = nearest_centroid_wsd(train, test)
    assert predictions == ["river", "a", None]  # centroid; lemma's most frequent sense; abstain
    scores = wsd_scores(predictions, [{"river"}, {"b"}, {"c"}])
    assert scores["precision"] == 50.0 and scores["recall"] == pytest.approx(100 / 3)


def test_wsd_probe_leave_one_out(tmp_path, fixture_bilm):
    river = [("river", "bank%1:17:01::"), ("water", "bank%1:17:01::")]
    money = [("money", "bank%1:14:00::"), ("loan", "bank%1:14:00::")]
    sets = [WsdData.from_dir(write_wsd(tmp_path / n, n, river + money)) for n in ("a", "b", "c")]
    result = wsd_probe(fixture_bilm, sets)
    assert result["setting"] == "leave one dataset out" and len(result["f1_per_layer"]) == 3
    assert set(result["scores_per_layer"][0]) == {"a", "b", "c", "ALL"}
    # identical contexts in the other sets: the nearest centroid is the right sense everywhere
    assert result["f1_per_layer"][2] == 100.0
    with pytest.raises(FormatError, match="nowhere.data.xml"):
        WsdData.from_dir(str(tmp_path / "nowhere"))


def test_wsd_instance_without_its_attributes_names_file_and_sentence(tmp_path):
    folder = write_wsd(tmp_path / "d", "d", [("river", "bank%1:17:01::")])
    xml = tmp_path / "d" / "d.data.xml"
    xml.write_text(xml.read_text().replace(' lemma="bank"', ""))
    with pytest.raises(FormatError, match=r"d.data.xml: an <instance> of sentence d.s0 lacks"):
        WsdData.from_dir(folder)


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("probe", ["pos", "wsd"])
def test_probes_accept_include_package_like_every_allennlp_command(probe, where, monkeypatch):
    from allennlp.commands import parse_args

    include = ["--include-package", "elmo_plugin"]
    argv = ["elmo-probe", *(include if where == "before" else []), probe, "--output-dir", "out"]
    monkeypatch.setattr("sys.argv", ["allennlp", *argv, *(include if where == "after" else [])])
    _, args = parse_args()
    assert args.probe == probe and args.include_package == ["elmo_plugin"]


def test_sst_probe_command_scores_every_layer_and_word_vectors(tmp_path, repo_root):
    """Linear SST-5 probes on mean-pooled features: each layer, their average, word vectors and
    both; a sentence's pooled layers are the mean of its tokens' (checked against the biLM)."""
    import torch

    from elmo_bilm import batch_to_ids, load_bilm_tf
    from elmo_plugin.analysis.probes import read_sst_sentences
    from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

    trees = repo_root / "fixtures" / "sst" / "tiny.txt"
    sentences, labels = read_sst_sentences(str(trees))
    assert sentences[0] == ["The", "actors", "are", "fantastic", "."] and labels[:2].tolist() == [
        4,
        0,
    ]
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("the 1 0\nactors 0 1\nterrible -1 -1\n")
    out = tmp_path / "out"
    argv = ["elmo-probe", "sst", *BILM_ARGS, "--train-file", str(trees), "--test-file", str(trees)]
    run_command(
        ElmoProbe,
        argv + ["--word-vectors", str(vectors), "--epochs", "30", "--output-dir", str(out)],
    )
    result = json.loads((out / "sst_probe.json").read_text())
    assert list(result["accuracy"]) == [
        "layer 0", "layer 1", "layer 2", "average of the layers", "word vectors",
        "word vectors + average of the layers",
    ]  # fmt: skip
    assert all(0.0 <= a <= 1.0 for a in result["accuracy"].values())
    assert result["train_sentences"] == 6 and "majority class" in (out / "sst_probe.md").read_text()
    from elmo_plugin.analysis import probes

    bilm = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()
    seen = {}
    original = probes._linear_accuracy

    def spy(train_x, *args):
        seen.setdefault("first", train_x)
        return original(train_x, *args)

    probes._linear_accuracy, saved = spy, probes._linear_accuracy
    try:
        probes.sst_probe(bilm, str(trees), str(trees), epochs=1)
    finally:
        probes._linear_accuracy = saved
    with torch.no_grad():
        layer0 = bilm(batch_to_ids(sentences[:1]))["activations"][0][0]
    numpy.testing.assert_allclose(seen["first"][0], layer0.mean(0).numpy(), rtol=1e-5, atol=1e-6)
