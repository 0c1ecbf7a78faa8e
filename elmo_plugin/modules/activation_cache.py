"""Per-sentence cache of a frozen biLM's layers, so task epochs after the first skip the biLM."""

import logging
from typing import Any, Callable, Dict, List

import torch

logger = logging.getLogger(__name__)

BiLmFunction = Callable[[torch.Tensor], Dict[str, Any]]


class ActivationCache:
    """Maps a sentence (its character ids) to its biLM layers `(n_layers, length, dim)`.

    The biLM is stateless and frozen, so a sentence's layers never change but for float32
    rounding: the batch that computed them sums the matrix products in its own order, so a cached
    entry equals a recomputation in another batch up to rounding, not bit for bit (`state` /
    `load_state` carry the entries through a checkpoint, so a resumed run serves the same bits).
    The task's scalar mixes, layer norm and dropout run on the cached layers afterwards, every
    time. Keys are the sentence's content, so shuffling and re-batching do not matter, and a
    sentence repeated within one batch runs through the biLM once. Entries are kept on the
    CPU in the layers' dtype until `max_megabytes` is reached; after that, new sentences are
    computed but not stored (in epoch order an LRU policy would only thrash).
    """

    def __init__(self, max_megabytes: float = 2048.0) -> None:
        self.max_bytes = int(max_megabytes * 2**20)
        self.bytes = 0
        self._entries: Dict[bytes, torch.Tensor] = {}
        self.hits = 0
        self.misses = 0
        self.repeats = 0  # rows served by a repeat of the sentence earlier in the same batch
        self._full_warned = False

    def __len__(self) -> int:
        return len(self._entries)

    def layers(
        self, char_ids: torch.Tensor, compute: BiLmFunction, context: bytes = b""
    ) -> Dict[str, object]:
        """The biLM output for `char_ids` (batch, T, chars): cached sentences are looked up, the
        rest run through `compute` as one smaller batch. Same format as `BiLm.forward`.
        `context` is part of every key: what else the layers depend on (the biLM's inference
        precision), so that no entry is served across it.

        Host transfers are per batch, not per sentence: the keys come from one copy of the ids,
        new entries from one copy of the computed layers, and the hits travel to the device as one
        (pinned, on a GPU) tensor."""
        if len(char_ids) == 0:  # an empty batch: nothing to look up or store
            return compute(char_ids)
        mask = (char_ids > 0).any(-1)
        lengths = mask.sum(-1).tolist()
        host_ids = char_ids.cpu().numpy()
        keys = [context + host_ids[row, :length].tobytes() for row, length in enumerate(lengths)]
        # a sentence that recurs in the batch (a SQuAD paragraph under each of its questions)
        # runs through the biLM once; its other rows copy that result
        hits: List[int] = []
        repeated: List[int] = []
        first_rows: Dict[bytes, int] = {}
        for row, key in enumerate(keys):
            if key in self._entries:
                hits.append(row)
            elif key in first_rows:
                repeated.append(row)
            else:
                first_rows[key] = row
        missing = list(first_rows.values())
        self.hits += len(hits)
        self.misses += len(missing)
        self.repeats += len(repeated)
        stacked = None
        if missing:
            sub_ids = char_ids[missing][:, : max(lengths[row] for row in missing)]
            activations = torch.stack(
                compute(sub_ids)["activations"], dim=1
            )  # (n, layers, T', dim)
            n_layers, dim = activations.shape[1], activations.shape[-1]
            stacked = activations.new_zeros((len(keys), n_layers, char_ids.shape[1], dim))
            stacked[missing, :, : activations.shape[2]] = activations
            if repeated:
                stacked[repeated] = stacked[[first_rows[keys[row]] for row in repeated]]
            host = activations.detach().cpu()
            for position, row in enumerate(missing):
                self._store(keys[row], host[position, :, : lengths[row]])
        if hits:
            first = self._entries[keys[hits[0]]]
            longest = max(lengths[row] for row in hits)
            found = first.new_zeros((len(hits), first.shape[0], longest, first.shape[-1]))
            for position, row in enumerate(hits):
                found[position, :, : lengths[row]] = self._entries[keys[row]]
            if char_ids.device.type == "cuda":
                found = found.pin_memory()
            found = found.to(char_ids.device, non_blocking=True)
            if stacked is None:
                stacked = found.new_zeros(
                    (len(keys), found.shape[1], char_ids.shape[1], found.shape[-1])
                )
            stacked[hits, :, :longest] = found
        assert stacked is not None  # a batch has at least one row
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
        self._entries[key] = entry.clone()  # a CPU copy that owns its storage (not a batch view)
        self.bytes += size

    def state(self) -> Dict[str, torch.Tensor]:
        """The entries as CPU tensors, in insertion order, for a checkpoint: `ids` (the keys'
        character ids, concatenated), `lengths` (tokens per sentence), `layers` (n_layers,
        total tokens, dim)."""
        if not self._entries:
            return {}
        keys = list(self._entries)
        ids = torch.frombuffer(bytearray(b"".join(keys)), dtype=torch.int64)
        values = list(self._entries.values())
        return {
            "ids": ids.clone(),
            "lengths": torch.tensor([value.shape[1] for value in values]),
            "layers": torch.cat(values, dim=1),
        }

    def load_state(self, state: Dict[str, torch.Tensor]) -> None:
        """Replace the entries with a `state()` (a resumed run serves the very same bits)."""
        self._entries.clear()
        self.bytes = 0
        if not state:
            return
        lengths = state["lengths"].tolist()
        chars = state["ids"].numel() // max(sum(lengths), 1)
        ids = state["ids"].view(-1, chars).numpy()
        offset = 0
        for length, layers in zip(lengths, state["layers"].split(lengths, dim=1)):
            self._store(ids[offset : offset + length].tobytes(), layers)
            offset += length
