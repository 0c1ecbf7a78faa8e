"""Copies derived from the weights (oneDNN's float32 packs, int8 and bfloat16 packs and casts)
follow every way of changing a weight, `.data` edits included (project issue 67): autograd's
version counter misses those (`p.data` is a new tensor with a counter of its own), so the caches
compare fingerprints of the weights' values (`elmo_bilm.model.derived.fingerprint`).

Each edit is applied to one parameter behind each kind of derived copy in turn, on a biLM that
has already run (its copies built); its output must equal that of a freshly loaded biLM given the
same edits before its first pass, and differ from the output before the edit.
"""

import threading
from typing import Callable, Dict, List, Sequence

import pytest
import torch
from torch import nn

from elmo_bilm.formats.bilm_tf import load_bilm_tf
from elmo_bilm.model import derived, onednn
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.char_cnn import CharCnnEncoder
from elmo_bilm.model.characters import batch_char_ids
from elmo_bilm.runtime import precision
from elmo_bilm.runtime.precision import _prepare
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

# one parameter behind each kind of derived copy: the LSTM's input-to-gate, recurrent and
# projection weights and its biases (in int8's input pack), a highway layer and the char CNN's
# projection (float32 packs, int8 / bfloat16 linears) and a convolution (bfloat16)
EDITED = [
    "lstm.input_weights.0",
    "lstm.recurrent_weights.1",
    "lstm.projections.0",
    "lstm.biases.1",
    "char_cnn.highways.0.transform.weight",
    "char_cnn.projection.weight",
    "char_cnn.convolutions.2.weight",
]


def _random_like(name: str, tensor: torch.Tensor) -> torch.Tensor:
    generator = torch.Generator().manual_seed(sum(map(ord, name)))
    return torch.randn(tensor.shape, generator=generator) * float(tensor.detach().std() + 0.1)


def _load_state_dict(bilm: BiLm, name: str) -> None:
    state = bilm.state_dict()
    state[name] = state[name] * -0.75
    bilm.load_state_dict(state)


def _no_grad_in_place(p: nn.Parameter) -> None:
    with torch.no_grad():
        p.add_(0.25)


def _numpy_view(p: nn.Parameter) -> None:
    p.data.numpy()[...] *= 0.5  # a write no torch operation sees


def _negate_columns_1_and_3(p: nn.Parameter) -> None:
    """Issue 79: the parameter's memory as rows of four elements, columns 1 and 3 negated in
    place (odd-numbered elements: their sign bits, the top bits of 64-bit words, cancelled in
    pairs in the old fingerprint). Every odd element changes, so the output does too."""
    rows = p.data.view(-1, 4)
    rows[:, 1].neg_()
    rows[:, 3].neg_()


EDITS: Dict[str, Callable[[BiLm, str], None]] = {
    "negate columns 1 and 3": lambda bilm, name: _negate_columns_1_and_3(_parameter(bilm, name)),
    "data.mul_": lambda bilm, name: _parameter(bilm, name).data.mul_(1.5),
    "data.copy_": lambda bilm, name: _parameter(bilm, name).data.copy_(
        _random_like(name, _parameter(bilm, name))
    ),
    "data = tensor": lambda bilm, name: setattr(
        _parameter(bilm, name), "data", _parameter(bilm, name).data.flip(0)
    ),
    "no_grad in-place": lambda bilm, name: _no_grad_in_place(_parameter(bilm, name)),
    "load_state_dict": _load_state_dict,
    "numpy view": lambda bilm, name: _numpy_view(_parameter(bilm, name)),
}

# precision -> (precision, recurrent product's precision) given to `_prepare` (without the CPU
# check: emulated bfloat16 where the CPU lacks it, the same arithmetic); "float32" runs the LSTM on
# oneDNN's packs (the large biLMs' route, forced here at the fixture's size)
PRECISIONS = {
    "float32": ("float32", "float32"),
    "int8": ("int8", precision.INT8_RECURRENT),
    "bfloat16": ("bfloat16", "bfloat16"),
    "int8, float32 recurrent": ("int8", "float32"),  # int8's float32 oneDNN packs
}


def _parameter(bilm: BiLm, name: str) -> nn.Parameter:
    return dict(bilm.named_parameters())[name]


@pytest.fixture(scope="module")
def char_ids(fixture_sentences) -> torch.Tensor:
    return batch_char_ids(fixture_sentences[0])


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Hundreds of passes of the tiny biLM: one thread keeps them quick on a loaded machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def onednn_route(monkeypatch) -> None:
    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0)
    monkeypatch.setattr(onednn, "MIN_LINEAR_ROWS", 0)  # the char CNN's float32 packs too


def _prepared(name: str, edits: Sequence[str] = (), how: str = "") -> BiLm:
    bilm = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()
    for edited in edits:
        EDITS[how](bilm, edited)
    return _prepare(bilm, *PRECISIONS[name])


def _layers(bilm: BiLm, char_ids: torch.Tensor) -> List[torch.Tensor]:
    with torch.no_grad():
        return [layer.float() for layer in bilm(char_ids)["activations"]]


def _derived_copies(bilm: BiLm) -> int:
    """How many derived copies the biLM holds (to check that the test's routes build some)."""
    count = len(bilm.lstm._packed.items)
    if bilm.char_cnn._packed is not None:
        count += len(bilm.char_cnn._packed.items)
    products = bilm.lstm.products
    if isinstance(products, precision.LstmProducts):
        count += len(products.derived.items)
    for module in bilm.char_cnn.modules():
        if isinstance(module, (precision.PrecisionLinear, precision.PrecisionConv1d)):
            count += len(module.derived.items)
    return count


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
@pytest.mark.parametrize("how", list(EDITS))
@pytest.mark.parametrize("name", list(PRECISIONS))
def test_derived_copies_follow_every_kind_of_weight_edit(char_ids, name, how):
    bilm = _prepared(name)
    before = _layers(bilm, char_ids)
    assert _derived_copies(bilm) > 0
    for done in range(1, len(EDITED) + 1):
        EDITS[how](bilm, EDITED[done - 1])
        after = _layers(bilm, char_ids)
        expected = _layers(_prepared(name, EDITED[:done], how), char_ids)
        for layer, (got, want) in enumerate(zip(after, expected)):
            # the same arithmetic on the same weights: the same bits
            assert torch.equal(got, want), (EDITED[done - 1], layer)
        assert any(not torch.equal(a, b) for a, b in zip(after, before)), EDITED[done - 1]
        before = after


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
@pytest.mark.parametrize("name", list(PRECISIONS))
def test_unchanged_weights_keep_their_derived_copies(char_ids, name):
    bilm = _prepared(name)
    first = _layers(bilm, char_ids)
    copies = _lstm_copies(bilm)
    assert copies
    _parameter(bilm, "lstm.projections.1").data = _parameter(bilm, "lstm.projections.1").clone()
    again = _layers(bilm, char_ids)  # the same values in new memory: nothing to rebuild
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    now = _lstm_copies(bilm)
    assert now.keys() == copies.keys()
    assert all(now[key] is made for key, made in copies.items())


def _lstm_copies(bilm: BiLm) -> Dict[object, object]:
    """The LSTM's derived copies by key."""
    copies: Dict[object, object] = {key: made for key, (_, made) in bilm.lstm._packed.items.items()}
    products = bilm.lstm.products
    if isinstance(products, precision.LstmProducts):
        copies.update((key, made) for key, (_, made) in products.derived.items.items())
    return copies


def test_a_fingerprint_sees_every_single_element_and_ignores_the_view():
    base = torch.randn(2 * 1024 + 5)
    for tensor in (base, base[1:], base[3:-1], torch.randn(0), torch.randn(3, dtype=torch.float64)):
        stamp = derived.fingerprint(tensor)
        for i in range(tensor.numel()):
            edited = tensor.clone()
            edited[i] = edited[i].nextafter(torch.tensor(float("inf"), dtype=tensor.dtype))
            assert not torch.equal(derived.fingerprint(edited), stamp), (tensor.shape, i)
    weight = torch.randn(2, 6, 10)
    assert torch.equal(derived.fingerprint(weight.transpose(1, 2)), derived.fingerprint(weight))
    assert torch.equal(derived.fingerprint(weight.clone()), derived.fingerprint(weight))
    swapped = weight.flip(0)  # a direction's weights for the other's
    assert not torch.equal(derived.fingerprint(swapped), derived.fingerprint(weight))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_a_fingerprint_sees_sign_changes_in_any_columns(dtype):
    """Issue 79: negating columns 1 and 3 of a weight in place left its fingerprint as it was
    (stale int8 and oneDNN copies); any pair of columns, and a few columns at once, are seen."""
    weight = torch.randn(64, 16, generator=torch.Generator().manual_seed(79)).to(dtype)
    stamp = derived.fingerprint(weight)
    columns = range(weight.shape[1])
    for chosen in [(i, j) for i in columns for j in columns if i < j] + [(1, 3, 5, 7), (0, 2, 4)]:
        edited = weight.clone()
        edited[:, list(chosen)] *= -1
        assert not torch.equal(derived.fingerprint(edited), stamp), (dtype, chosen)
    edited = weight.clone()
    edited[5, 1], edited[5, 3] = -edited[5, 1], -edited[5, 3]  # one row only
    assert not torch.equal(derived.fingerprint(edited), stamp)


def _counting_checks(monkeypatch) -> List[str]:
    """Record each weight check from now on: a fingerprint (`WeightStamp`) or the word cache's
    comparison with its copy of the weights."""
    checks: List[str] = []
    fingerprint = derived.fingerprint
    unchanged = CharCnnEncoder._weights_unchanged

    def fingerprinted(tensor: torch.Tensor) -> torch.Tensor:
        checks.append("fingerprint")
        return fingerprint(tensor)

    def compared(encoder: CharCnnEncoder) -> bool:
        checks.append("word cache")
        return unchanged(encoder)

    monkeypatch.setattr(derived, "fingerprint", fingerprinted)
    monkeypatch.setattr(CharCnnEncoder, "_weights_unchanged", compared)
    return checks


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
@pytest.mark.parametrize("name", list(PRECISIONS))
def test_a_fixed_weights_run_checks_each_copy_at_its_first_pass_only(char_ids, name, monkeypatch):
    bilm = _prepared(name)
    first = _layers(bilm, char_ids)
    checks = _counting_checks(monkeypatch)
    _layers(bilm, char_ids)
    per_pass = sorted(checks)
    assert per_pass.count("fingerprint") > 0 and per_pass.count("word cache") == 1
    checks.clear()
    with derived.fixed_weights(bilm):
        for _ in range(3):
            again = _layers(bilm, char_ids)
            assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert sorted(checks) == per_pass  # the run's first pass checked, the two after it did not
    checks.clear()
    _layers(bilm, char_ids)
    assert sorted(checks) == per_pass  # after the run: every pass again


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
@pytest.mark.parametrize("name", list(PRECISIONS))
def test_an_edit_made_inside_a_fixed_weights_run_is_seen_after_it(char_ids, name):
    bilm = _prepared(name)
    with derived.fixed_weights(bilm):
        before = _layers(bilm, char_ids)
        for edited in EDITED:
            EDITS["data.mul_"](bilm, edited)
    after = _layers(bilm, char_ids)
    expected = _layers(_prepared(name, EDITED, "data.mul_"), char_ids)
    assert all(torch.equal(a, b) for a, b in zip(after, expected))
    assert any(not torch.equal(a, b) for a, b in zip(after, before))


def test_a_fixed_weights_run_holds_its_own_module_only(char_ids):
    held, other = _prepared("float32"), _prepared("float32")
    with derived.fixed_weights(held):
        _layers(held, char_ids)
        _layers(other, char_ids)
        EDITS["data.mul_"](other, "lstm.projections.0")  # not held: seen at its next pass
        expected = _layers(_prepared("float32", ["lstm.projections.0"], "data.mul_"), char_ids)
        assert all(torch.equal(a, b) for a, b in zip(_layers(other, char_ids), expected))
        run = derived.fixed_run(list(held.parameters()))
        assert run is not None and derived.fixed_run(list(other.parameters())) is None
        with derived.fixed_weights(held):  # nested: the outer run holds the weights
            assert derived.fixed_run([held.lstm.projections[0][1]]) is run
        assert derived.fixed_run(list(held.parameters())) is run
    assert derived.fixed_run(list(held.parameters())) is None
    assert not derived._FIXED.held


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
@pytest.mark.parametrize("name", ["float32", "int8"])
def test_a_fixed_weights_run_holds_for_its_own_thread_only(char_ids, name):
    """Issue 79: one thread's run skipped the checks of every thread, so a second thread that
    edited the biLM's weights and ran it read the stale copies; now it sees its edit."""
    bilm = _prepared(name)
    _layers(bilm, char_ids)
    entered, edited = threading.Event(), threading.Event()
    failures: List[BaseException] = []

    def bulk_run() -> None:
        try:
            with derived.fixed_weights(bilm):
                _layers(bilm, char_ids)  # the run's first pass: its copies checked
                entered.set()
                edited.wait(timeout=600)
            assert derived.fixed_run(list(bilm.parameters())) is None
        except BaseException as error:  # noqa: BLE001 (reported by the main thread)
            failures.append(error)
        finally:
            entered.set()

    worker = threading.Thread(target=bulk_run)
    worker.start()
    try:
        assert entered.wait(timeout=600)
        assert derived.fixed_run(list(bilm.parameters())) is None  # not this thread's run
        for edit in EDITED[:3]:
            _negate_columns_1_and_3(_parameter(bilm, edit))
        got = _layers(bilm, char_ids)
    finally:
        edited.set()
        worker.join()
    assert not failures, failures
    expected = _layers(_prepared(name, EDITED[:3], "negate columns 1 and 3"), char_ids)
    assert all(torch.equal(a, b) for a, b in zip(got, expected))
