"""The familiar API from the torch-only core: AllenNLP's `Elmo` / `batch_to_ids` and AllenNLP 0.9's
`ElmoEmbedder`, switched to with one import line."""

import json

import h5py
import numpy
import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids, load_bilm_tf
from tests.conftest import ELMO_FIXTURE, OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

# A typical script written against AllenNLP; the test runs it with its first line as it is and
# with the one line a user changes.
SCRIPT = """
from allennlp.modules.elmo import Elmo, batch_to_ids
import torch

elmo = Elmo(options_file, weight_file, 2, dropout=0)
sentences = [["First", "sentence", "."], ["Another", "."], ["A", "third", "one", "here", "!"]]
character_ids = batch_to_ids(sentences)
embeddings = elmo(character_ids)
result = (embeddings["elmo_representations"], embeddings["mask"], elmo.get_output_dim())
"""
SWITCHED = SCRIPT.replace(
    "from allennlp.modules.elmo import Elmo, batch_to_ids",
    "from elmo_bilm import Elmo, batch_to_ids",
)


def run_script(source: str, options_file: str, weight_file: str):
    namespace = {"options_file": options_file, "weight_file": weight_file}
    exec(source, namespace)  # the script as a user would run it
    return namespace["result"]


def assert_same_results(options_file: str, weight_file: str) -> None:
    theirs = run_script(SCRIPT, options_file, weight_file)  # AllenNLP's first call
    ours = run_script(SWITCHED, options_file, weight_file)
    assert "allennlp" not in SWITCHED
    assert ours[2] == theirs[2]
    assert torch.equal(ours[1], theirs[1])
    assert len(ours[0]) == len(theirs[0]) == 2
    for mine, reference in zip(ours[0], theirs[0]):
        assert_float32_close(mine * ours[1][..., None], reference * theirs[1][..., None], NETWORK)


@pytest.mark.numerics
def test_one_line_switch_gives_allennlps_first_call_at_the_fixture():
    assert_same_results(str(OPTIONS_FILE), str(WEIGHT_FILE))


@pytest.mark.slow
@pytest.mark.numerics
def test_one_line_switch_gives_allennlps_first_call_at_paper_size():
    from elmo_benchmarks.common import random_bilm_tf

    files = random_bilm_tf("paper")  # 4096 cells, 512 projection, random weights
    assert_same_results(files["options_file"], files["weight_file"])


@pytest.mark.numerics
def test_elmo_equals_bilm_tf_reference_activations(fixture_sentences):
    # scalar mix fixed on the top layer: the top biLM layer, which bilm-tf dumped
    elmo = Elmo(
        str(OPTIONS_FILE),
        str(WEIGHT_FILE),
        1,
        dropout=0.0,
        scalar_mix_parameters=[-9e10, -9e10, 0.0],
    )
    first = [group[0] for group in fixture_sentences]
    top = elmo(batch_to_ids(first))["elmo_representations"][0]
    for k, sentence in enumerate(first):
        with h5py.File(ELMO_FIXTURE / f"lm_embeddings_{k}.hdf5", "r") as handle:
            expected = handle["0"][...]  # (2, T, 16) forward, backward
        n = len(sentence)
        assert_float32_close(top[k, :n], numpy.concatenate([expected[0], expected[1]], -1), NETWORK)


def test_elmo_options_of_allennlp():
    sentences = [["a", "b"], ["c"]]
    plain = Elmo(str(OPTIONS_FILE), str(WEIGHT_FILE), 1, dropout=0.0)
    out = plain(batch_to_ids(sentences))
    # keep_sentence_boundaries: <S> and </S> kept, two positions longer
    bounded = Elmo(
        str(OPTIONS_FILE), str(WEIGHT_FILE), 1, dropout=0.0, keep_sentence_boundaries=True
    )
    kept = bounded(batch_to_ids(sentences))
    assert kept["mask"].sum().item() == out["mask"].sum().item() + 4
    assert_float32_close(
        kept["elmo_representations"][0][0, 1:3], out["elmo_representations"][0][0], NETWORK
    )
    # vocab_to_cache: word ids instead of characters, the same vectors
    vocab = ["@@PADDING@@", "a", "b", "c"]
    cached = Elmo(str(OPTIONS_FILE), str(WEIGHT_FILE), 1, dropout=0.0, vocab_to_cache=vocab)
    by_word = cached(batch_to_ids(sentences), word_inputs=torch.tensor([[1, 2], [3, 0]]))
    assert torch.equal(by_word["mask"], out["mask"])
    assert_float32_close(
        by_word["elmo_representations"][0], out["elmo_representations"][0], NETWORK
    )
    # frozen by default, mixes trained; fixed mixes are not; a biLM in memory as `module`
    assert not any(p.requires_grad for p in plain.bilm.parameters())
    assert all(p.requires_grad for p in plain.scalar_mixes[0].parameters())
    fixed = Elmo(
        module=load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE), scalar_mix_parameters=[1.0, 0.0, 0.0]
    )
    assert not any(p.requires_grad for p in fixed.scalar_mixes[0].scalar_parameters)
    assert Elmo(requires_grad=True).bilm.char_cnn.projection.weight.requires_grad  # shipped biLM
    with pytest.warns(UserWarning, match="vocab_to_cache"):  # ignored, as by AllenNLP
        plain(batch_to_ids(sentences), word_inputs=torch.tensor([[1, 2], [3, 0]]))
    with pytest.raises(ValueError, match="needs its weight file"):
        Elmo(str(OPTIONS_FILE))


@pytest.mark.numerics
def test_elmo_embedder_methods(tmp_path, fixture_sentences):
    """The stateless mode's contract: every method gives each sentence's vectors alone, in any
    batch (the stateful default, 0.9's: test_dropin_defaults.py)."""
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=False)
    sentences = fixture_sentences[0][:5] + [[]] + fixture_sentences[1][:40]
    bilm = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()
    with torch.no_grad():
        alone = [
            torch.stack(bilm(batch_to_ids([s]))["activations"])[:, 0].numpy() if s else None
            for s in sentences
        ]
    one = embedder.embed_sentence(sentences[0])
    assert one.shape == (3, len(sentences[0]), 32)
    assert_float32_close(one, alone[0], NETWORK)
    batch = embedder.embed_batch(sentences[:7])
    assert batch[5].shape == (3, 0, 32)  # an empty sentence: zero tokens, as AllenNLP 0.9
    lazy = embedder.embed_sentences(iter(sentences), batch_size=2)  # a generator: lazy
    for sentence, expected, got in zip(sentences, alone, lazy):
        assert got.shape == (3, len(sentence), 32)
        if sentence:
            assert_float32_close(got, expected, NETWORK)
    source = tmp_path / "in.txt"
    source.write_text("\n".join(" ".join(s) for s in fixture_sentences[2]) + "\n")
    embedder.embed_file(str(source), str(tmp_path / "out.hdf5"), batch_size=3)
    with h5py.File(tmp_path / "out.hdf5", "r") as out:
        index = json.loads(out["sentence_to_index"][0])
        assert index[" ".join(fixture_sentences[2][4])] == "4"
        assert_float32_close(
            out["4"][...], embedder.embed_sentence(fixture_sentences[2][4]), NETWORK
        )
    with open(source) as handle:
        embedder.embed_file(
            handle, str(tmp_path / "keys.hdf5"), output_format="top", use_sentence_keys=True
        )
    with h5py.File(tmp_path / "keys.hdf5", "r") as out:
        key = " ".join(fixture_sentences[2][0])
        assert "sentence_to_index" not in out and out[key].shape == (
            len(fixture_sentences[2][0]),
            32,
        )


def test_elmo_embedder_embed_file_can_forget_sentences(tmp_path, fixture_sentences):
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE))
    source = tmp_path / "in.txt"
    source.write_text("\n".join(" ".join(s) for s in fixture_sentences[0][:3]) + "\n")
    embedder.embed_file(str(source), str(tmp_path / "out.hdf5"), forget_sentences=True)
    with h5py.File(tmp_path / "out.hdf5", "r") as out:
        assert sorted(out.keys()) == ["0", "1", "2"]  # no sentence_to_index


# A script in the style of public ELMo code (research code, tutorials, a protein-embedding
# pipeline): integer mix weights, a fine-tuned biLM, a cached vocabulary, character ids built by
# hand with `ELMoCharacterMapper`, and AllenNLP 0.9's `ElmoEmbedder` with a learned layer mix and
# its HDF5 file read back with the usual idiom. Run with AllenNLP 2.10's imports (the `Elmo`
# part: 2.10 has no `ElmoEmbedder`) and with only the import lines switched.
WILD_ELMO = """
{imports}
import torch

vocabulary = ["@@PADDING@@", "The", "cat", "sat", "."]
elmo = Elmo(options_file, weight_file, 2, requires_grad=True, dropout=0,
            scalar_mix_parameters=[1, 1, 1], vocab_to_cache=vocabulary)
mapper = ELMoCharacterMapper()
words = ["The", "cat", "sat", "."]
character_ids = torch.tensor([[mapper.convert_word_to_char_ids(w) for w in words]])
assert torch.equal(character_ids, batch_to_ids([words]))
output = elmo(character_ids, torch.tensor([[1, 2, 3, 4]]))
output["elmo_representations"][0].sum().backward()
grads = [p.grad for p in elmo.parameters() if p.requires_grad and p.grad is not None]
result = (output["elmo_representations"], output["mask"], elmo.get_output_dim(), len(grads) > 10,
          ELMoCharacterMapper.beginning_of_sentence_characters, mapper.max_word_length)
"""
ALLENNLP_IMPORTS = (
    "from allennlp.modules.elmo import Elmo, batch_to_ids\n"
    "from allennlp.data.token_indexers.elmo_indexer import ELMoCharacterMapper"
)
OUR_IMPORTS = "from elmo_bilm import Elmo, batch_to_ids, ELMoCharacterMapper"
WILD_EMBEDDER = """
from elmo_bilm import ElmoEmbedder  # was: from allennlp.commands.elmo import ElmoEmbedder
import h5py, json, torch

embedder = ElmoEmbedder(options_file, weight_file)
activations, mask = embedder.batch_to_embeddings([["The", "cat", "sat", "."], ["Hello", "!"]])
layer_weights = torch.nn.Parameter(torch.zeros(activations.shape[1]))  # a learned layer mix
mixed = (torch.softmax(layer_weights, 0)[None, :, None, None] * activations).sum(1)
mixed.sum().backward()
with open(input_file) as handle:
    embedder.embed_file(handle, output_file, output_format="top", batch_size=2)
with h5py.File(output_file, "r") as f:
    index = json.loads(f["sentence_to_index"][0])  # AllenNLP 0.9 readers' idiom
    vector = f[index["The cat sat ."]][...]
result = (activations, mask, mixed, layer_weights.grad, index, vector)
"""


@pytest.mark.numerics
def test_public_style_script_runs_with_its_import_lines_switched(tmp_path):
    theirs = run_script(
        WILD_ELMO.format(imports=ALLENNLP_IMPORTS), str(OPTIONS_FILE), str(WEIGHT_FILE)
    )
    ours = run_script(WILD_ELMO.format(imports=OUR_IMPORTS), str(OPTIONS_FILE), str(WEIGHT_FILE))
    assert ours[2:] == theirs[2:] and ours[3]  # width, fine-tuned weights got gradients, mapper
    assert torch.equal(ours[1], theirs[1])
    for mine, reference in zip(ours[0], theirs[0]):  # through the cached vocabulary, both
        assert_float32_close(mine, reference, NETWORK)

    (tmp_path / "in.txt").write_text("The cat sat .\nHello !\n")
    namespace = {
        "options_file": str(OPTIONS_FILE),
        "weight_file": str(WEIGHT_FILE),
        "input_file": str(tmp_path / "in.txt"),
        "output_file": str(tmp_path / "out.hdf5"),
    }
    exec(WILD_EMBEDDER, namespace)
    activations, mask, mixed, grad, index, vector = namespace["result"]
    assert activations.shape == (2, 3, 4, 32) and mask.sum().item() == 6
    assert mixed.shape == (2, 4, 32) and grad is not None and grad.abs().sum() > 0
    assert index == {"The cat sat .": "0", "Hello !": "1"} and vector.shape == (4, 32)
    # stateful, as 0.9's: embed_file's batch starts from the states batch_to_embeddings left,
    # so its vectors are AllenNLP's second call's (2.10's `_ElmoBiLm`, stateful as 0.9's)
    from allennlp.modules.elmo import _ElmoBiLm

    reference = _ElmoBiLm(str(OPTIONS_FILE), str(WEIGHT_FILE)).eval()
    ids = batch_to_ids([["The", "cat", "sat", "."], ["Hello", "!"]])
    with torch.no_grad():
        first = reference(ids)["activations"][-1][0, 1:5]
        second = reference(ids)["activations"][-1][0, 1:5]
    assert_float32_close(activations[0, -1], first, NETWORK)
    assert_float32_close(vector, second, NETWORK)
    assert (second - first).abs().max().item() > 1e-3  # the carried state shows


def test_published_names_are_allennlps_urls():
    import inspect

    from allennlp.modules.token_embedders.elmo_token_embedder import ElmoTokenEmbedder

    from elmo_bilm.sources.published import published_urls

    defaults = inspect.signature(ElmoTokenEmbedder.__init__).parameters
    assert published_urls("original") == (
        defaults["options_file"].default,
        defaults["weight_file"].default,
    )


def test_elmo_moved_to_float64_after_use_runs_in_float64():
    """The word cache filled in float32 is not served after `.double()` (it compared values,
    which the cast keeps, and the LSTM then met float32 vectors). Stateful, the default: the
    second call goes on from the first's states (cast with the call), as a float32 `Elmo`'s
    second call does."""
    elmo = Elmo(str(OPTIONS_FILE), str(WEIGHT_FILE), 1, dropout=0.0).eval()
    ids = batch_to_ids([["The", "cat", "sat", "."]])
    elmo(ids)
    again = elmo.double()(ids)["elmo_representations"][0]
    assert again.dtype == torch.float64
    in_float32 = Elmo(str(OPTIONS_FILE), str(WEIGHT_FILE), 1, dropout=0.0).eval()
    in_float32(ids)
    assert_float32_close(again, in_float32(ids)["elmo_representations"][0], NETWORK)
