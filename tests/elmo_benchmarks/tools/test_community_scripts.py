import json
from pathlib import Path

import numpy
import pytest

from elmo_benchmarks.tools.community_scripts import (
    UnswitchedImport,
    compare,
    compare_printed,
    fill,
    markdown_block,
    rewrite,
    run_script,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "elmoformanylangs"

# a script in the style of ELMoForManyLangs' README, written here (not anyone's code): two calls,
# so that the second starts from the states the first left
SCRIPT = """import json
from elmoformanylangs import Embedder  # the library
import numpy as np

e = Embedder('/path/to/your/model/')
sents = json.load(open('sentences.json'))
first = e.sents2elmo(sents, output_layer=-1)
again = e.sents2elmo(sents, output_layer=-1)
print(len(first), np.stack([v.sum() for v in first]).shape)
"""


def test_only_the_import_lines_change():
    rewritten, changes = rewrite(SCRIPT, "elmoformanylangs")
    assert changes == [
        (
            2,
            "from elmoformanylangs import Embedder  # the library",
            "from elmo_bilm.elmoformanylangs import Embedder  # the library",
        )
    ]
    old, new = SCRIPT.splitlines(), rewritten.splitlines()
    assert [i for i, (a, b) in enumerate(zip(old, new)) if a != b] == [1] and len(old) == len(new)


def test_each_family_switches_its_own_imports():
    assert rewrite("    from simple_elmo import ElmoModel\n", "simple_elmo")[0] == (
        "    from elmo_bilm.simple_elmo import ElmoModel\n"
    )
    assert rewrite("import simple_elmo\n", "simple_elmo")[0] == (
        "import elmo_bilm.simple_elmo as simple_elmo\n"
    )
    assert rewrite("from bio_embeddings.embed import SeqVecEmbedder\n", "seqvec")[0] == (
        "from elmo_bilm.bio_embeddings import SeqVecEmbedder\n"
    )
    assert rewrite("from allennlp.commands.elmo import ElmoEmbedder\n", "seqvec")[0] == (
        "from elmo_bilm.elmo import ElmoEmbedder\n"
    )
    # another family's import is not this family's business
    assert rewrite("from simple_elmo import ElmoModel\n", "elmoformanylangs")[1] == []


def test_an_import_without_a_replacement_is_reported():
    with pytest.raises(UnswitchedImport, match="line 2: import tensorflow_hub as hub"):
        rewrite("import numpy\nimport tensorflow_hub as hub\n", "tfhub")


def test_a_readme_block_and_its_placeholder():
    readme = "Intro\n\n1. Use it:\n\n    ```python\n    from x import y\n    y('/path/')\n    ```\n"
    block = markdown_block(readme, 0)
    assert block == "from x import y\ny('/path/')\n"
    assert fill(block, ["/path/=/data/model"])[0] == "from x import y\ny('/data/model')\n"
    with pytest.raises(SystemExit):
        fill(block, ["/elsewhere/=/data/model"])


def test_printed_numbers_are_compared_in_order():
    same = compare_printed("cat 1.2500001\nready in 3 s\n", "cat 1.25\nready in 3 s\n")
    assert same["same_text"] and same["numbers"] == 1 and same["max_abs"] == pytest.approx(1e-7)
    assert not compare_printed("dog 1.25\n", "cat 1.25\n")["same_text"]


def test_differences_are_per_call_and_padding_is_told_apart():
    ours = [[numpy.array([[1.0, 0.0]])]]
    reference = [[numpy.array([[1.0 + 1e-7, 0.5]])]]
    result = compare(ours, reference)
    assert result["max_abs"] == pytest.approx(0.5)
    assert result["max_abs_where_ours_nonzero"] == pytest.approx(1e-7)
    assert not compare(ours, [[numpy.zeros((1, 3))]])["same_structure"]


def test_the_rewritten_script_runs_on_the_fixture_bilm(tmp_path):
    # ELMoForManyLangs' own sents2elmo, first call from zero states: fixtures/.../expected.npz
    source, _ = fill(SCRIPT, [f"/path/to/your/model/={FIXTURES / 'word8'}"])
    rewritten, _ = rewrite(source, "elmoformanylangs")
    import sys

    result = run_script(
        rewritten,
        "elmoformanylangs",
        sys.executable,
        [str(Path(__file__).resolve().parents[3])],
        [f"sentences.json={FIXTURES / 'sentences.json'}"],
        [],
        True,
        600.0,
    )
    assert result["ran"], result["stderr_tail"]
    assert result["calls"] == ["Embedder.sents2elmo", "Embedder.sents2elmo"]
    sentences = json.loads((FIXTURES / "sentences.json").read_text())
    assert result["stdout_tail"].strip() == f"{len(sentences)} ({len(sentences)},)"
    first, again = result["_arrays"]
    with numpy.load(FIXTURES / "expected.npz") as expected:
        for index, vectors in enumerate(first):
            # float32 rounding of a few dozen products a value
            numpy.testing.assert_allclose(vectors, expected[f"word8/-1/{index}"], atol=1e-5)
    # stateful, as the original: the second call starts from the first's states
    assert any(not numpy.allclose(a, b, atol=1e-5) for a, b in zip(first, again))
