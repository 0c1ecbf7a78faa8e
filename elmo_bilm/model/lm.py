"""The biLM's language-model loss (Peters et al. 2018, Sec. 3.1): forward and backward
negative log-likelihoods under one softmax shared by both directions.

Torch only, so that the AllenNLP training model (`elmo_plugin_bilm`) and the GPU pretraining
script (`elmo_benchmarks.gpu_pretrain`, for machines where AllenNLP cannot be installed) compute the
same loss.
"""

from typing import Callable, Optional, Tuple

import torch
from torch.utils.checkpoint import checkpoint

NllSum = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def softmax_nll(
    hidden: torch.Tensor,
    targets: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    excluded: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Summed negative log-likelihood of `targets` (N,) under the full softmax of `hidden`
    (N, d) with `weight` (V, d) and `bias` (V,); `excluded` (V,) bool marks rows that are never
    a word (a padding id) and stay out of the normalisation."""
    logits = torch.addmm(bias, hidden, weight.t())
    if excluded is not None:
        logits = logits.masked_fill(excluded, float("-inf"))
    return torch.nn.functional.cross_entropy(logits.float(), targets, reduction="sum")


def chunked_nll(
    hidden: torch.Tensor, targets: torch.Tensor, nll_sum: NllSum, chunk_tokens: int
) -> torch.Tensor:
    """`nll_sum` over `chunk_tokens` positions at a time, so that the logits take at most
    `chunk_tokens x vocabulary` floats however large the batch; with a gradient, each chunk's
    logits are recomputed in the backward pass instead of kept."""
    total = hidden.new_zeros((), dtype=torch.float32)
    for start in range(0, hidden.shape[0], chunk_tokens):
        chunk = (hidden[start : start + chunk_tokens], targets[start : start + chunk_tokens])
        if torch.is_grad_enabled() and hidden.requires_grad:
            total = total + checkpoint(nll_sum, *chunk, use_reentrant=False)
        else:
            total = total + nll_sum(*chunk)
    return total


def bidirectional_nll(
    top: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor, nll_sum: NllSum
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`(forward sum, backward sum, number of targets)` for sentences with `<S>`/`</S>`.

    `top` (batch, T, 2 * proj) is the biLM's top layer `[forward; backward]`, `targets`
    (batch, T) the word ids, `mask` (batch, T). The forward half at position t predicts the word
    at t + 1, the backward half at t + 1 the word at t; each direction has one target per
    position after the first.
    """
    proj = top.shape[-1] // 2
    target_mask = mask[:, 1:]
    forward = nll_sum(top[:, :-1, :proj][target_mask], targets[:, 1:][target_mask])
    backward = nll_sum(top[:, 1:, proj:][target_mask], targets[:, :-1][target_mask])
    return forward, backward, target_mask.sum()
