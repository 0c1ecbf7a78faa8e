"""The biLM's language-model loss (`elmo_bilm.model.lm`), against a direct reading of Sec. 3.1."""

import math

import torch

from elmo_bilm.model.lm import bidirectional_nll, chunked_nll, softmax_nll
from tests.numerics import ONE_REDUCTION, assert_float32_close


def test_each_direction_predicts_its_neighbour_under_one_shared_softmax():
    torch.manual_seed(0)
    top = torch.randn(2, 5, 6)  # [forward 3; backward 3]
    targets = torch.tensor([[0, 7, 8, 9, 1], [0, 4, 1, 0, 0]])  # <S> ... </S>, padded
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.bool)
    weight, bias = torch.randn(10, 3), torch.randn(10)

    def nll(h, t):
        return softmax_nll(h, t, weight, bias)

    forward, backward, count = bidirectional_nll(top, targets, mask, nll)
    log_p = lambda h, word: torch.log_softmax(weight @ h + bias, 0)[word]  # noqa: E731
    expected_forward = expected_backward = 0.0
    for b, length in enumerate((5, 3)):
        for t in range(length - 1):
            expected_forward -= float(log_p(top[b, t, :3], targets[b, t + 1]))
            expected_backward -= float(log_p(top[b, t + 1, 3:], targets[b, t]))
    assert int(count) == 4 + 2
    assert_float32_close(forward, expected_forward, ONE_REDUCTION * 8)
    assert_float32_close(backward, expected_backward, ONE_REDUCTION * 8)
    assert not math.isclose(float(forward), float(backward), rel_tol=1e-3)


def test_an_excluded_row_is_never_predicted():
    hidden, weight = torch.randn(4, 3), torch.randn(5, 3)
    bias = torch.zeros(5)
    bias[0] = 100.0  # would take all the mass
    excluded = torch.tensor([True, False, False, False, False])
    targets = torch.tensor([1, 2, 3, 4])
    with_row = softmax_nll(hidden, targets, weight, bias)
    without = softmax_nll(hidden, targets, weight, bias, excluded)
    expected = -torch.log_softmax(hidden @ weight[1:].t(), 1)[torch.arange(4), targets - 1].sum()
    assert float(with_row) > 300
    assert_float32_close(without, expected, ONE_REDUCTION)


def test_chunks_give_the_whole_softmax_and_its_gradient():
    torch.manual_seed(1)
    weight = torch.randn(50, 8, requires_grad=True)
    bias = torch.randn(50, requires_grad=True)
    targets = torch.randint(0, 50, (37,))
    results = []
    for chunk in (5, 1000):
        hidden = torch.randn(37, 8, generator=torch.Generator().manual_seed(2)).requires_grad_()
        total = chunked_nll(hidden, targets, lambda h, t: softmax_nll(h, t, weight, bias), chunk)
        grads = torch.autograd.grad(total, [hidden, weight, bias])
        results.append((total, *grads))
    for chunked, whole in zip(results[0], results[1]):
        assert_float32_close(chunked, whole, ONE_REDUCTION * 8)
