"""Compatibility with torch >= 2.6, whose `torch.load` defaults to `weights_only=True`.

AllenNLP 2.10 saves training states (`training_state_*.th`, used by `allennlp train --recover`)
that can hold numpy scalars, which the weights-only unpickler refuses. Rather than turning the safe
loader off (`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`), the plugin allows exactly those numpy types.
"""
import numpy
import torch


def allow_numpy_scalars_in_checkpoints() -> None:
    """Add numpy's scalar reconstructor and dtypes to torch's weights-only allow-list."""
    dtypes = [type(numpy.dtype(name)) for name in ("float16", "float32", "float64", "int32", "int64", "bool")]
    torch.serialization.add_safe_globals([numpy._core.multiarray.scalar, numpy.dtype, *dtypes])
