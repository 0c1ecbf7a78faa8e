"""Each ELMo vector is dropped once (Supplement A.3-A.8), where the task model consumes it: the
fraction of exactly-zero ELMo entries in training mode is the one dropout rate, not the result of
two dropouts in a row (0.5 then 0.5 would zero 75%)."""

import json
from typing import Callable, Dict, List, Tuple

import pytest
import torch
from _jsonnet import evaluate_snippet
from allennlp.common import Params
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model

from elmo_plugin.common.config_env import jsonnet_variables
from tests.conftest import DATA, REPO_ROOT

pytestmark = pytest.mark.slow  # builds every task model

E = 32  # the fixture biLM's ELMo width (2 x projection 16)
TASKS = {
    "ner": ("conll2003_crf_tagger", REPO_ROOT / "fixtures" / "conll2003" / "tiny.txt"),
    "snli": ("snli_esim", DATA / "format_samples" / "snli.jsonl"),
    "squad": ("squad_bidaf_selfattn", DATA / "format_samples" / "squad.json"),
    "coref": ("coref_lee2017", DATA / "format_samples" / "coref.gold_conll"),
    "sst": ("sst_bcn", REPO_ROOT / "fixtures" / "sst" / "tiny.txt"),
}
Captured = List[Tuple[torch.Tensor, torch.Tensor]]


def build(task: str, placement: str) -> Tuple[Model, Dict]:
    name, data = TASKS[task]
    elmo = {"placement": placement, "l2_coefficient": 0.0, "do_layer_norm": False, "dropout": 0.5}
    config = f'(import "{REPO_ROOT}/training_config/{name}.libsonnet")(elmo={json.dumps(elmo)})'
    params = Params(json.loads(evaluate_snippet(task, config, ext_vars=jsonnet_variables())))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(reader.read(str(data)))[:8]
    vocab = Vocabulary.from_instances(instances)
    model = Model.from_params(vocab=vocab, params=params.pop("model"))
    batch = Batch(instances)
    batch.index_instances(vocab)
    return model.train(), batch.as_tensor_dict()


def zero_fraction(captured: Captured, start: int, end: int) -> float:
    entries = torch.cat(
        [tensor[..., start:end][mask.bool()].flatten() for tensor, mask in captured]
    )
    assert entries.numel() >= 500
    return (entries == 0).float().mean().item()


def run(model: Model, tensors: Dict, passes: int = 12) -> None:
    torch.manual_seed(0)
    for _ in range(passes):
        model(**tensors)


def pre_hook(module: torch.nn.Module, captured: Captured, mask_of: Callable = None) -> None:
    def hook(_, inputs):
        mask = inputs[1] if mask_of is None else mask_of(inputs[0])
        captured.append((inputs[0].detach(), mask))

    module.register_forward_pre_hook(hook)


def post_hook(module: torch.nn.Module, captured: Captured) -> None:
    module.register_forward_hook(lambda _, inputs, output: captured.append((output, inputs[1])))


@pytest.mark.parametrize("placement", ["input", "output", "both"])
def test_ner(placement):
    model, tensors = build("ner", placement)
    base = 50 + 128
    elmo_in, elmo_out = [], []
    wrapper = model.encoder
    first_lstm = wrapper.encoder.layers[0] if placement != "input" else wrapper.layers[0]
    pre_hook(first_lstm, elmo_in)
    if placement != "input":
        post_hook(wrapper, elmo_out)
    run(model, tensors)
    if placement != "output":  # by the encoder's 50% variational input dropout only
        assert zero_fraction(elmo_in, base, base + E) == pytest.approx(0.5, abs=0.08)
    if placement != "input":  # ELMo's own 50%: it bypasses the encoder
        assert zero_fraction(elmo_out, -E, None) == pytest.approx(0.5, abs=0.08)


def test_snli_both():
    model, tensors = build("snli", "both")
    captured: Captured = []
    pre_hook(model._encoder, captured)
    run(model, tensors, passes=30)
    # ESIM's 50% variational dropout on the LSTM input, for ELMo at the input and the output
    assert zero_fraction(captured, 300, 300 + E) == pytest.approx(0.5, abs=0.08)
    assert zero_fraction(captured, 300 + E, 300 + 2 * E) == pytest.approx(0.5, abs=0.08)


def test_squad_both():
    model, tensors = build("squad", "both")
    elmo_in: Captured = []
    encoded: Captured = []
    pre_hook(model._phrase_layer, elmo_in)
    encode = model._encode
    model._encode = lambda text, mask: encoded.append((encode(text, mask), mask)) or encoded[-1][0]
    run(model, tensors, passes=30)
    # the model's 20% variational dropout before the phrase layer, once (not again after it)
    assert zero_fraction(elmo_in, 400, 400 + E) == pytest.approx(0.2, abs=0.08)
    assert zero_fraction(encoded, -E, None) == pytest.approx(0.2, abs=0.08)


def test_coref_input():
    model, tensors = build("coref", "input")
    captured: Captured = []
    pre_hook(model._context_layer, captured)
    run(model, tensors)
    assert zero_fraction(captured, 300 + 150, 300 + 150 + E) == pytest.approx(0.5, abs=0.08)


def test_sst_both():
    model, tensors = build("sst", "both")
    elmo_in: Captured = []
    mixes: Captured = []
    mask = tensors["tokens"]["tokens"]["tokens"] != 0
    pre_hook(model._pre_encode_feedforward, elmo_in, mask_of=lambda _: mask)
    model._elmo.register_forward_hook(
        lambda _, inputs, output: mixes.append((output["elmo_representations"][1], output["mask"]))
    )
    run(model, tensors)
    # BCN's 50% embedding dropout for ELMo at the input, ELMo's own 50% at the output
    assert zero_fraction(elmo_in, 300, 300 + E) == pytest.approx(0.5, abs=0.08)
    assert zero_fraction(mixes, 0, E) == pytest.approx(0.5, abs=0.08)
