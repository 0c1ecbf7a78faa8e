"""Compatibility of AllenNLP 2.10 with torch 2.x.

- torch >= 2.6's `torch.load` defaults to `weights_only=True`. AllenNLP saves training states
  (`training_state_*.th`, used by `allennlp train --recover`) that can hold numpy scalars, which
  the weights-only unpickler refuses. Rather than turning the safe loader off
  (`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`), the plugin allows exactly those numpy types.
- AllenNLP's distributed workers return without destroying their process group; with torch 2.x a
  worker's gloo threads can then abort the process at interpreter exit ("terminate called without
  an active exception", SIGABRT), which fails the whole run before the model is archived. The
  plugin destroys the group at exit.
"""
import atexit

import numpy
import torch
import torch.distributed as dist


def allow_numpy_scalars_in_checkpoints() -> None:
    """Add numpy's scalar reconstructor and dtypes to torch's weights-only allow-list."""
    dtypes = [type(numpy.dtype(name)) for name in ("float16", "float32", "float64", "int32", "int64", "bool")]
    torch.serialization.add_safe_globals([numpy._core.multiarray.scalar, numpy.dtype, *dtypes])


def destroy_process_group() -> None:
    """Destroy the default process group, if one is initialised (registered with `atexit`)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def destroy_process_group_at_exit() -> None:
    atexit.register(destroy_process_group)
