"""Float32 tolerances for one value computed two ways, sized by rounding, not by one machine.

Two float32 computations of the same quantity that sum in another order (another batch
composition, padding length or chunking; another kernel: AVX-512 and AVX2 split a dot product
into 16- and 8-wide partial sums; TensorFlow's kernels for bilm-tf's references) differ by a few
rounding errors of the magnitudes involved. So each comparison allows a number of float32 units
(`EPS32` = 2**-23, the spacing of floats in [1, 2)) times the largest magnitude compared (at least
1: values near zero come out of sums of terms of order 1). The number of units is the depth of the
computation whose order may differ, with headroom:

- `ONE_REDUCTION` (16): one matrix product or reduction (error at most a few units; 16 leaves 4x);
- `NETWORK` (128): a whole biLM forward (character CNN, highways, projection, LSTM steps), where
  the rounding of each step feeds the next through gates of gain below 1.

A wrong result (state leaking between batches, a padding position mixed in, a skipped layer)
differs by 1e-3 or more, i.e. by thousands of units: these tolerances keep their teeth.
`make test` runs the tests marked `numerics` a second time with the CPU kernels forced to AVX2,
and those marked `emulated_cpu` on an emulated AVX2-only CPU (see the Makefile), so a tolerance
that holds only on one rounding path fails on the machine where it is written.
"""

from typing import Union

import numpy
import torch

EPS32 = float(torch.finfo(torch.float32).eps)
ONE_REDUCTION = 16
NETWORK = 128

ArrayLike = Union[torch.Tensor, numpy.ndarray]


def _as_tensor(value: ArrayLike) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, numpy.ndarray) and not value.flags.writeable:
        value = value.copy()  # arrays read from Parquet are read-only; torch warns on those
    return torch.as_tensor(value)


def float32_atol(expected: ArrayLike, units: int) -> float:
    """`units` float32 rounding units of the largest magnitude in `expected` (at least 1)."""
    scale = (
        max(1.0, float(_as_tensor(expected).abs().max())) if _as_tensor(expected).numel() else 1.0
    )
    return units * EPS32 * scale


def assert_float32_close(actual: ArrayLike, expected: ArrayLike, units: int, msg: str = "") -> None:
    """Equal within `units` float32 rounding units of the largest magnitude of `expected`."""
    actual, expected = _as_tensor(actual), _as_tensor(expected)
    assert actual.shape == expected.shape, (msg, actual.shape, expected.shape)
    atol = float32_atol(expected, units)
    torch.testing.assert_close(
        actual.to(expected.dtype),
        expected,
        atol=atol,
        rtol=0,
        msg=lambda m: f"{msg} {m} (tolerance {units} float32 units: {atol:.3g})",
    )
