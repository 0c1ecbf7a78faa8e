"""`PATH[START:END]` data paths (the one parser is `elmo_plugin.common.slices`)."""

from elmo_plugin.common.slices import slice_parts, split_slice

__all__ = ["slice_parts", "split_slice"]
