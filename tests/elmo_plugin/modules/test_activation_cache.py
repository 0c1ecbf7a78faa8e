import json

import pytest
import torch
from allennlp.commands.train import train_model_from_file
from allennlp.modules.elmo import batch_to_ids

from elmo_bilm import load_bilm_tf
from elmo_plugin.modules.elmo import ElmoRepresentations
from elmo_plugin.modules.elmo_options import ElmoOptions
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

pytestmark = pytest.mark.numerics  # compared across rounding paths: make test reruns it on AVX2


def counting_elmo(**kwargs):
    elmo = ElmoRepresentations(
        ElmoOptions(dropout=0.0, **kwargs), bilm=load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE)
    ).eval()
    calls = []
    elmo.bilm.register_forward_hook(lambda module, inputs, output: calls.append(inputs[0].shape[0]))
    return elmo, calls


def test_cached_layers_equal_uncached_under_reshuffling(fixture_sentences):
    sentences = fixture_sentences[0] + fixture_sentences[1][:2] + [["One"]]
    cached, calls = counting_elmo()
    plain, _ = counting_elmo(cache_activations=False)
    first = [sentences[:6], sentences[6:]]
    second = [
        [sentences[i] for i in (11, 3, 0, 7)],
        [sentences[i] for i in (5, 9, 1, 2, 4, 6, 8, 10, 12)],
    ]
    for batch in first:
        cached(batch_to_ids(batch))
    assert sum(calls) == len(sentences) and len(cached.cache) == len(sentences)
    calls.clear()
    for batch in second:  # every sentence again, in other batches: no biLM call at all
        ids = batch_to_ids(batch)
        got = cached.bilm_layers(ids)
        expected = plain.bilm_layers(ids)
        assert torch.equal(got["mask"], expected["mask"])
        for a, b in zip(got["activations"], expected["activations"]):
            assert_float32_close(a, b, NETWORK)
    assert calls == [] and cached.cache.hits == len(sentences)
    # a batch mixing new and cached sentences runs only the new ones through the biLM
    mixed = batch_to_ids([sentences[0], ["entirely", "new", "words"], sentences[4]])
    got, expected = cached.bilm_layers(mixed), plain.bilm_layers(mixed)
    assert calls == [1]
    for a, b in zip(got["activations"], expected["activations"]):
        assert_float32_close(a, b, NETWORK)


def test_no_cached_layers_cross_an_inference_precision(fixture_sentences):
    from elmo_bilm.runtime.precision import set_precision

    cached, calls = counting_elmo()
    ids = batch_to_ids(fixture_sentences[0])
    exact = cached.bilm_layers(ids)["activations"]
    set_precision(cached.bilm, "int8")  # int8 runs on every x86 CPU (fbgemm)
    quantized = cached.bilm_layers(ids)["activations"]
    assert len(calls) == 2  # computed again, not served from the float32 entries
    assert not torch.equal(quantized[-1], exact[-1])
    set_precision(cached.bilm, "float32")
    again = cached.bilm_layers(ids)["activations"]
    assert len(calls) == 2  # the float32 entries are still there
    assert all(torch.equal(a, b) for a, b in zip(again, exact))


def test_a_sentence_repeated_in_a_batch_runs_through_the_bilm_once(fixture_sentences):
    # a SQuAD batch holds a paragraph once per question: the biLM sees each paragraph once
    first, second = fixture_sentences[0][0], fixture_sentences[0][1]
    batch = [first, second, first, first, second]
    cached, calls = counting_elmo()
    plain, _ = counting_elmo(cache_activations=False)
    ids = batch_to_ids(batch)
    got = cached.bilm_layers(ids)
    assert calls == [2] and len(cached.cache) == 2
    assert (cached.cache.misses, cached.cache.repeats, cached.cache.hits) == (2, 3, 0)
    # the memory bound counts each entry once (a repeat stored again counted its bytes twice)
    stored = cached.cache.state()["layers"]
    assert cached.cache.bytes == stored.numel() * stored.element_size()
    expected = plain.bilm_layers(ids)
    for a, b in zip(got["activations"], expected["activations"]):
        assert_float32_close(a, b, NETWORK)
        assert torch.equal(a[2], a[0]) and torch.equal(a[3], a[0]) and torch.equal(a[4], a[1])
    # with the cache full, repeats are still computed once (and nothing is stored)
    full, calls = counting_elmo(cache_size_mb=0.0)
    got = full.bilm_layers(ids)
    assert calls == [2] and len(full.cache) == 0
    for a, b in zip(got["activations"], expected["activations"]):
        assert_float32_close(a, b, NETWORK)


def test_cache_respects_its_memory_bound(fixture_sentences):
    elmo, calls = counting_elmo(cache_size_mb=0.01)
    ids = batch_to_ids(fixture_sentences[2])
    first = elmo.bilm_layers(ids)["activations"]
    assert 0 < elmo.cache.bytes <= 0.01 * 2**20 and len(elmo.cache) < len(fixture_sentences[2])
    second = elmo.bilm_layers(ids)["activations"]
    for a, b in zip(first, second):
        assert_float32_close(a, b, NETWORK)


def test_no_cache_when_fine_tuning():
    elmo = ElmoRepresentations(
        ElmoOptions(requires_grad=True), bilm=load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE)
    )
    assert elmo.cache is None


@pytest.mark.slow
def test_cached_and_uncached_training_give_the_same_losses(tmp_path, repo_root):
    losses = {}
    for cache in (True, False):
        tiny = str(repo_root / "fixtures" / "conll2003" / "tiny.txt")
        overrides = {
            "train_data_path": tiny,
            "validation_data_path": tiny,
            "data_loader.batch_sampler.batch_size": 2,
            "trainer.num_epochs": 3,
            "evaluate_on_test": False,
            "model.text_field_embedder.cache_activations": cache,
        }
        out = tmp_path / str(cache)
        train_model_from_file(
            str(repo_root / "training_config" / "conll2003_crf_tagger_elmo.jsonnet"),
            str(out),
            overrides=json.dumps(overrides),
        )
        losses[cache] = [
            json.loads((out / f"metrics_epoch_{k}.json").read_text())["training_loss"]
            for k in range(3)
        ]
    assert losses[True] == pytest.approx(losses[False], rel=1e-5)


def test_cache_entries_are_cpu_copies_of_one_sentence(fixture_sentences):
    elmo, _ = counting_elmo()
    elmo(batch_to_ids(fixture_sentences[0][:5]))
    for entry in elmo.cache._entries.values():
        assert entry.device.type == "cpu"
        assert entry.untyped_storage().nbytes() == entry.numel() * entry.element_size()
