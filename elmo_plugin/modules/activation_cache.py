"""Per-sentence cache of a frozen biLM's layers, so task epochs after the first skip the biLM."""

import logging
from typing import Callable, Dict, List

import torch

logger = logging.getLogger(__name__)

BiLmFunction = Callable[[torch.Tensor], Dict[str, torch.Tensor]]


class ActivationCache:
    """Maps a sentence (its character ids) to its biLM layers `(n_layers, length, dim)`.

    Exact: the biLM is stateless and frozen, so a sentence's layers never change; the task's
    scalar mixes, layer norm and dropout run on the cached layers afterwards, every time. Keys are
    the sentence's content, so shuffling and re-batching do not matter. Entries are kept on the
    CPU in the layers' dtype until `max_megabytes` is reached; after that, new sentences are
    computed but not stored (in epoch order an LRU policy would only thrash).
    """

    def __init__(self, max_megabytes: float = 2048.0) -> None:
        self.max_bytes = int(max_megabytes * 2**20)
        self.bytes = 0
        self._entries: Dict[bytes, torch.Tensor] = {}
        self.hits = 0
        self.misses = 0
        self._full_warned = False

    def __len__(self) -> int:
        return len(self._entries)

    def layers(self, char_ids: torch.Tensor, compute: BiLmFunction) -> Dict[str, object]:
        """The biLM output for `char_ids` (batch, T, chars): cached sentences are looked up, the
        rest run through `compute` as one smaller batch. Same format as `BiLm.forward`."""
        mask = (char_ids > 0).any(-1)
        lengths = mask.sum(-1).tolist()
        keys = [
            char_ids[row, :length].cpu().numpy().tobytes() for row, length in enumerate(lengths)
        ]
        missing = [row for row, key in enumerate(keys) if key not in self._entries]
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        computed: Dict[int, torch.Tensor] = {}
        if missing:
            sub_ids = char_ids[missing]
            sub_ids = sub_ids[:, : max(lengths[row] for row in missing)]
            activations = torch.stack(compute(sub_ids)["activations"], dim=1)  # (n, layers, T, dim)
            for position, row in enumerate(missing):
                entry = activations[position, :, : lengths[row]]
                computed[row] = entry
                self._store(keys[row], entry)
        rows: List[torch.Tensor] = [
            computed[row] if row in computed else self._entries[keys[row]].to(char_ids.device)
            for row in range(len(keys))
        ]
        n_layers, dim = rows[0].shape[0], rows[0].shape[-1]
        stacked = rows[0].new_zeros((len(rows), n_layers, char_ids.shape[1], dim))
        for row, entry in enumerate(rows):
            stacked[row, :, : entry.shape[1]] = entry
        return {"activations": list(stacked.unbind(dim=1)), "mask": mask}

    def _store(self, key: bytes, entry: torch.Tensor) -> None:
        size = entry.numel() * entry.element_size()
        if self.bytes + size > self.max_bytes:
            if not self._full_warned:
                logger.warning(
                    "biLM activation cache full (%.0f MB): further sentences are recomputed",
                    self.bytes / 2**20,
                )
                self._full_warned = True
            return
        self._entries[key] = entry.detach().to("cpu", copy=True)
        self.bytes += size
