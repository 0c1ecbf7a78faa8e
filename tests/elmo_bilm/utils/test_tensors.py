import pytest
import torch

from elmo_bilm.utils.tensors import all_finite


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("where", [0, 517, 4095])
def test_all_finite_finds_one_bad_value_anywhere(dtype, bad, where):
    tensor = torch.randn(4096).to(dtype)
    assert all_finite(tensor)
    tensor[where] = bad
    assert not all_finite(tensor)
    assert not all_finite(tensor.view(64, 64).t())  # a transposed view too


def test_all_finite_of_extremes_and_of_nothing():
    largest = torch.finfo(torch.float32).max
    assert all_finite(torch.tensor([largest, -largest, 0.0]))
    assert all_finite(torch.zeros(0))
    both = torch.tensor([float("inf"), float("-inf")])  # neither bound alone is enough
    assert not all_finite(both)
