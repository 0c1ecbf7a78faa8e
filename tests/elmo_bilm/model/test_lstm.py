import copy
import threading

import pytest
import torch

from elmo_bilm.model import lstm as lstm_module
from elmo_bilm.model import onednn
from elmo_bilm.model.lstm import InputBlocks, ProjectedLstmStack, reverse_padded
from tests.numerics import NETWORK, assert_float32_close

# compared across rounding paths: make test reruns it on AVX2 kernels and on an emulated AVX2 CPU
pytestmark = [pytest.mark.numerics, pytest.mark.emulated_cpu]


def plain_lstm(stack: ProjectedLstmStack, sentence: torch.Tensor):
    """Reference: one sentence, one direction and one time step at a time, no batching tricks."""
    outputs = []
    for direction in (0, 1):
        x = sentence if direction == 0 else sentence.flip(0)
        layers = []
        for layer in range(stack.n_layers):
            w_x = stack.input_weights[layer][direction]
            w_h = stack.recurrent_weights[layer][direction]
            b = stack.biases[layer][direction, 0] + stack.forget_bias
            w_p = stack.projections[layer][direction].t()
            h = torch.zeros(stack.projection_dim)
            c = torch.zeros(stack.dim)
            out = []
            for t in range(x.shape[0]):
                i, j, f, o = (x[t] @ w_x + h @ w_h + b).chunk(4)
                c = (torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(j)).clamp(
                    -stack.cell_clip, stack.cell_clip
                )
                h = ((torch.sigmoid(o) * torch.tanh(c)) @ w_p).clamp(
                    -stack.proj_clip, stack.proj_clip
                )
                out.append(h)
            out = torch.stack(out)
            if layer > 0 and stack.use_skip_connections:
                out = out + x
            layers.append(out if direction == 0 else out.flip(0))
            x = out
        outputs.append(layers)
    return [torch.cat([f, b], -1) for f, b in zip(*outputs)]


def make_stack(seed: int = 0) -> ProjectedLstmStack:
    torch.manual_seed(seed)
    stack = ProjectedLstmStack(
        6, dim=10, projection_dim=6, n_layers=2, cell_clip=3.0, proj_clip=3.0
    )
    with torch.no_grad():  # larger weights than the init so that clipping is exercised
        for p in stack.parameters():
            p.uniform_(-1.0, 1.0)
    return stack.eval()


def test_reverse_padded_reverses_within_length_and_is_an_involution():
    x = torch.arange(8.0).view(2, 4, 1)
    lengths = torch.tensor([3, 4])
    rev = reverse_padded(x, lengths)
    assert rev[0, :, 0].tolist() == [2.0, 1.0, 0.0, 3.0]
    assert rev[1, :, 0].tolist() == [7.0, 6.0, 5.0, 4.0]
    assert torch.equal(reverse_padded(rev, lengths), x)


def test_fast_path_matches_plain_reference_with_padding_and_mixed_lengths():
    stack = make_stack()
    lengths = [5, 1, 3, 7, 1]
    inputs = torch.randn(len(lengths), 7, 6) * 3
    mask = torch.arange(7)[None, :] < torch.tensor(lengths)[:, None]
    with torch.no_grad():
        fast = stack(inputs * mask[..., None], mask)
        for row, n in enumerate(lengths):
            expected = plain_lstm(stack, inputs[row, :n])
            for layer in range(2):
                assert_float32_close(fast[layer][row, :n], expected[layer], NETWORK)
                assert fast[layer][row, n:].abs().max() == 0 if n < 7 else True


def test_stateless_same_sentence_same_vectors_in_any_batch():
    stack = make_stack(1)
    sentence = torch.randn(4, 6)
    other = torch.randn(2, 6, 6)
    batch_a = torch.zeros(3, 6, 6)
    batch_a[0, :4] = sentence
    batch_a[1:] = other
    mask_a = torch.tensor([[1, 1, 1, 1, 0, 0], [1] * 6, [1] * 6]).bool()
    with torch.no_grad():
        alone = stack(sentence[None], torch.ones(1, 4, dtype=torch.bool))
        first = stack(batch_a, mask_a)
        second = stack(batch_a, mask_a)  # a second call sees no state left by the first
    for layer in range(2):
        assert_float32_close(alone[layer][0], first[layer][0, :4], NETWORK)
        assert torch.equal(first[layer], second[layer])


def test_gradients_reach_every_parameter_and_dropout_only_in_training():
    stack = ProjectedLstmStack(
        6, dim=10, projection_dim=6, n_layers=2, cell_clip=3.0, proj_clip=3.0, dropout=0.5
    )
    inputs = torch.randn(2, 5, 6)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]).bool()
    stack.train()
    sum(layer.sum() for layer in stack(inputs, mask)).backward()
    for name, parameter in stack.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
    torch.manual_seed(0)
    a = stack(inputs, mask)[-1]
    torch.manual_seed(1)
    b = stack(inputs, mask)[-1]
    assert not torch.allclose(a, b)
    stack.eval()
    assert torch.equal(stack(inputs, mask)[-1], stack(inputs, mask)[-1])


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
def test_onednn_packed_path_equals_bmm_path_and_follows_weight_changes(monkeypatch):
    stack = make_stack(2)
    lengths = [4, 6, 1]
    inputs = torch.randn(3, 6, 6)
    mask = torch.arange(6)[None, :] < torch.tensor(lengths)[:, None]
    with torch.no_grad():
        stack(inputs, mask)
        assert stack._packed.items == {}  # weights this small stay with bmm
        monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0)
        packed = stack(inputs, mask)
        assert {layer for _, layer, _ in stack._packed.items} == {0, 1}  # the packed path ran
        monkeypatch.setattr(onednn, "AVAILABLE", False)
        plain = stack(inputs, mask)
        monkeypatch.setattr(onednn, "AVAILABLE", True)
        for a, b in zip(packed, plain):
            assert_float32_close(a, b, NETWORK)
        # an in-place update (an optimiser step) must not leave stale packed weights behind
        stack.recurrent_weights[1].mul_(0.5)
        stack.projections[0].add_(0.1)
        stack.input_weights[1].mul_(-1.0)
        updated = stack(inputs, mask)
        monkeypatch.setattr(onednn, "AVAILABLE", False)
        expected = stack(inputs, mask)
    for a, b, old in zip(updated, expected, packed):
        assert_float32_close(a, b, NETWORK)
        assert not torch.allclose(a, old)
    copy.deepcopy(stack)  # oneDNN's opaque tensors are not part of the module's copyable state


def test_gradients_flow_through_the_bmm_path_when_weights_train():
    stack = make_stack(3).train()
    inputs = torch.randn(2, 3, 6)
    mask = torch.ones(2, 3, dtype=torch.bool)
    stack(inputs, mask)[-1].sum().backward()
    assert stack._packed.items == {}
    assert stack.recurrent_weights[0].grad.abs().sum() > 0


def test_a_batch_without_tokens_gives_zeros():
    stack = make_stack(4)
    out = stack(torch.randn(2, 3, 6), torch.zeros(2, 3, dtype=torch.bool))
    assert [tuple(layer.shape) for layer in out] == [(2, 3, 12), (2, 3, 12)]
    assert all(layer.abs().sum() == 0 for layer in out)


@pytest.mark.parametrize("packed", [False, True])
def test_first_layer_products_per_distinct_word_equal_per_position(monkeypatch, packed):
    if packed and not onednn.AVAILABLE:
        pytest.skip("oneDNN is not available in this torch build")
    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0 if packed else 2**62)
    stack = make_stack(5)
    vectors = torch.randn(4, 6)
    index = torch.tensor([[0, 1, 2, 1, 0], [3, 3, 0, 0, 0], [2, 0, 0, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0]]).bool()
    inputs = vectors[index] * mask[..., None]
    with torch.no_grad():
        per_position = stack(inputs, mask)
        per_word = stack(inputs, mask, distinct=(vectors, index))
        # the distinct vectors are really used: changing one word changes every layer
        changed = stack(inputs, mask, distinct=(vectors + torch.eye(4, 6)[1], index))
    for a, b, c in zip(per_position, per_word, changed):
        assert_float32_close(a, b, NETWORK)
        assert not torch.allclose(a, c)


def test_distinct_words_are_ignored_under_training_dropout():
    stack = make_stack(6)
    stack.dropout.p = 0.5
    stack.train()
    vectors = torch.randn(3, 6)
    index = torch.tensor([[0, 1, 2], [2, 2, 0]])
    mask = torch.ones(2, 3, dtype=torch.bool)
    torch.manual_seed(0)
    plain = stack(vectors[index], mask)
    torch.manual_seed(0)
    with_distinct = stack(vectors[index], mask, distinct=(vectors, index))
    for a, b in zip(plain, with_distinct):
        assert torch.equal(a, b)  # per-position dropout masks: one product per word would be wrong


def _backward_allocated_bytes(
    stack: ProjectedLstmStack, inputs: torch.Tensor, mask: torch.Tensor
) -> int:
    """Bytes the autograd engine allocates during the backward pass (CPU profiler)."""
    outputs = stack(inputs, mask)
    loss = sum(out.sum() for out in outputs)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True
    ) as prof:
        loss.backward()
    return sum(max(event.cpu_memory_usage, 0) for event in prof.events() if event.cpu_memory_usage)


@pytest.mark.same_on_every_cpu
def test_backward_memory_grows_linearly_with_sentence_length():
    # A per-step slice of the gate stream would make autograd allocate a zero tensor of the whole
    # stream at every step (bytes quadratic in the length); the stream is split once instead.
    torch.manual_seed(0)
    stack = ProjectedLstmStack(8, dim=16, projection_dim=8, n_layers=1)
    per_length = {}
    for length in (50, 200):
        inputs = torch.randn(2, length, 8, requires_grad=True)
        per_length[length] = _backward_allocated_bytes(
            stack, inputs, torch.ones(2, length, dtype=torch.bool)
        )
    stream_bytes = 2 * 2 * 200 * 4 * 16 * 4  # (directions, rows, 4 * dim) float32 at length 200
    assert per_length[200] < 4 * per_length[50], per_length  # 4x the length: linear, not 16x
    assert per_length[200] < 40 * stream_bytes, (per_length, stream_bytes)


def test_onednn_packs_are_dropped_when_the_module_moves(monkeypatch):
    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0)
    stack = make_stack().eval()
    with torch.no_grad():
        stack(torch.randn(2, 5, 6), torch.ones(2, 5, dtype=torch.bool))
    if not onednn.AVAILABLE:
        pytest.skip("no oneDNN in this torch build")
    assert stack._packed.items
    stack.to(torch.float64)
    assert not stack._packed.items


def _casts_in_forward(stack: ProjectedLstmStack, length: int) -> int:
    inputs, mask = torch.randn(2, length, 6), torch.ones(2, length, dtype=torch.bool)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            stack(inputs, mask)
    return sum(event.count for event in prof.key_averages() if event.key == "aten::_to_copy")


def test_autocast_casts_the_step_weights_once_not_per_step(monkeypatch):
    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 2**62)  # the bmm path, as on a GPU
    stack = make_stack().eval()
    for parameter in stack.parameters():
        parameter.requires_grad_(False)  # frozen, as in ELMo: autocast would not cache its casts
    assert _casts_in_forward(stack, 40) == _casts_in_forward(stack, 10)


@pytest.fixture
def two_threads():
    """torch at two intra-op threads for the test (the suite runs at one), restored after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
@pytest.mark.parametrize("route", ["onednn", "int8"])
@pytest.mark.parametrize("by_word", [False, True])
def test_directions_at_once_equal_one_after_the_other(monkeypatch, two_threads, route, by_word):
    from elmo_bilm.model import lstm as lstm_module
    from elmo_bilm.runtime.precision import LstmProducts

    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0)
    stack = make_stack(6).requires_grad_(False)  # frozen, as Elmo's biLM
    if route == "int8":
        stack.products = LstmProducts("int8", "int8")
    vectors = torch.randn(4, 6)
    index = torch.tensor([[0, 1, 2, 1, 0], [3, 3, 0, 0, 0], [2, 0, 0, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0]]).bool()
    inputs = vectors[index] * mask[..., None]
    distinct = (vectors, index) if by_word else None
    threads_seen = []
    threaded = lstm_module._threaded

    def spy(task, threads):
        threads_seen.append((threading.current_thread().name, threads, torch.is_grad_enabled()))
        return threaded(task, threads)

    monkeypatch.setattr(lstm_module, "_threaded", spy)
    packed_in = []  # (thread, direction) of each weight check and pack of the oneDNN route
    pack = onednn.PackedWeights.pack

    def pack_spy(self, name, layer, direction, weight, batch_hint):
        packed_in.append((threading.current_thread().name, direction))
        return pack(self, name, layer, direction, weight, batch_hint)

    monkeypatch.setattr(onednn.PackedWeights, "pack", pack_spy)
    at_once = stack(inputs, mask, distinct)  # grad mode on, as in a frozen biLM's caller
    if route == "onednn":  # each direction's weights checked and packed in its own thread
        threads_of = {d: {name for name, seen in packed_in if seen == d} for d in (0, 1)}
        # direction d always in its own worker d: never both in one worker, one after the other
        assert threads_of == {d: {f"elmo-bilm-direction-{d}_0"} for d in (0, 1)}
        assert len(packed_in) == 2 * 3 * 2  # directions x (input, recurrent, projection) x layers
    assert sorted(name.startswith("elmo-bilm-direction") for name, _, _ in threads_seen) == [
        True,
        True,
    ]
    assert {threads for _, threads, _ in threads_seen} == {1}  # two threads, one each
    assert not any(layer.requires_grad for layer in at_once)  # no graph kept in the threads
    # a thread started afterwards still gets the caller's setting (2), not the workers' (1)
    seen = []
    thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    assert seen == [2]
    torch.set_num_threads(1)
    one_after_the_other = stack(inputs, mask, distinct)
    assert len(threads_seen) == 2  # this pass ran in the calling thread
    # the same kernels at one thread each: only the threads differ, so float32 rounding alone
    for a, b in zip(at_once, one_after_the_other):
        assert_float32_close(a, b, NETWORK)


def test_directions_run_in_the_calling_thread_where_a_gradient_is_needed(two_threads):
    stack = make_stack(7).train()
    inputs = torch.randn(2, 3, 6, requires_grad=True)
    out = stack(inputs, torch.ones(2, 3, dtype=torch.bool))
    out[-1].sum().backward()  # the bmm path in this thread: the graph reaches the inputs
    assert inputs.grad is not None and inputs.grad.abs().sum() > 0


def test_input_blocks_group_whole_steps_up_to_the_row_bound():
    active = [3, 3, 2, 1, 1]
    x = torch.arange(10.0)[:, None]
    asked = []

    def gates(start, end):
        asked.append((start, end))
        return x[start:end] * 2

    steps = list(InputBlocks(gates, max_rows=4).per_step(active))
    assert asked == [(0, 3), (3, 6), (6, 10)]  # 3 + 3 > 4; 2 + 1 + 1 = 4
    for step, expected in zip(steps, (x * 2).split(active)):
        assert torch.equal(step, expected)
    asked.clear()
    list(InputBlocks(gates, max_rows=1).per_step(active))  # a step larger than the bound: alone
    assert asked == [(0, 3), (3, 6), (6, 8), (8, 9), (9, 10)]
    asked.clear()
    list(InputBlocks(gates, max_rows=100).per_step(active))
    assert asked == [(0, 10)]


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
@pytest.mark.parametrize("threads", [1, 2])  # one direction after the other; both at once
@pytest.mark.parametrize("by_word", [False, True])
def test_input_gates_by_blocks_equal_all_positions_at_once(monkeypatch, threads, by_word):
    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0)  # the per-direction packed route
    stack = make_stack(8).requires_grad_(False)
    generator = torch.Generator().manual_seed(8)
    vectors = torch.randn(5, 6, generator=generator)
    index = torch.randint(0, 5, (4, 7), generator=generator)
    mask = torch.arange(7)[None, :] < torch.tensor([7, 4, 6, 2])[:, None]
    inputs = vectors[index] * mask[..., None]
    distinct = (vectors, index) if by_word else None
    blocks = []
    per_step = InputBlocks.per_step

    def spy(self, active):
        blocks.append(self.max_rows)
        return per_step(self, active)

    monkeypatch.setattr(InputBlocks, "per_step", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            whole = stack(inputs, mask, distinct)
            assert blocks and min(blocks) > 19  # every layer's gates in one block
            blocks.clear()
            monkeypatch.setattr(lstm_module, "INPUT_BLOCK_BYTES", 3 * 4 * 10 * 4)  # 3 rows
            blocked = stack(inputs, mask, distinct)
    finally:
        torch.set_num_threads(before)
    assert blocks == [3] * 4  # both directions of both layers went by blocks of 3 rows
    for a, b in zip(blocked, whole):
        assert_float32_close(a, b, NETWORK)
        assert a.abs().max() > 0.1
