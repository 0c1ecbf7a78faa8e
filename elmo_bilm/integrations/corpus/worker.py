"""The Ray Data actor of a corpus run: one biLM per worker, embedding whole shards into Parquet
files. A worker holds its shard's text and one batch of vectors (or one piece of a sentence
longer than the budget, written as rows of its own): memory is bounded by the batch size and
`max_tokens`, not by the corpus nor by a line."""

import json
import os
import resource
import time
import uuid
from typing import Any, Dict, List, Optional

import numpy
import torch

from elmo_bilm.formats.parquet import ParquetSink
from elmo_bilm.formats.text import Item
from elmo_bilm.integrations.corpus.plan import Shard, filesystem, shard_sentences
from elmo_bilm.model.derived import fixed_weights
from elmo_bilm.runtime.engine import DEFAULT_MAX_TOKENS, embed_pieces
from elmo_bilm.runtime.layers import Layers
from elmo_bilm.runtime.precision import set_precision
from elmo_bilm.sources.resolver import load_bilm
from elmo_bilm.utils.devices import torch_device


class ShardEmbedder:
    """A Ray Data actor: one biLM, embedding whole shards into Parquet files under
    `output_dir` (a partial file, moved into place when complete)."""

    def __init__(
        self,
        options_file: Optional[str],
        weight_file: Optional[str],
        layers: Dict[str, Any],
        dtype: str,
        batch_size: int,
        output_dir: str,
        threads: int,
        precision: str = "float32",
        max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    ) -> None:
        torch.set_num_threads(threads)
        self.device = torch_device(None)  # a GPU when the worker has one
        self.bilm = load_bilm(options_file, weight_file).to(self.device).eval()
        set_precision(self.bilm, precision)
        self.layers = Layers(**layers)
        self.depth = self.layers.depth(self.bilm.num_layers)
        self.dtype, self.batch_size, self.max_tokens = dtype, batch_size, max_tokens
        self.fs, self.root = filesystem(output_dir)

    def __call__(self, batch: Dict[str, numpy.ndarray]) -> Dict[str, numpy.ndarray]:
        results = [self.embed(Shard(**json.loads(text))) for text in batch["shard"]]
        return {key: numpy.array([result[key] for result in results]) for key in results[0]}

    def embed(self, shard: Shard) -> Dict[str, Any]:
        """Embed one shard into `OUTPUT_DIR/NAME.parquet` (written as a partial file, moved into
        place when complete); its row of the run's summary (sentences, seconds, process, peak
        memory)."""
        started = time.perf_counter()
        # `(0-based index, "", tokens)`: the items the sinks take (Parquet rows name line index + 1)
        sentences = [(line - 1, "", tokens) for line, tokens in shard_sentences(shard)]
        final = f"{self.root}/{shard.name}.parquet"
        partial = f"{final}.{uuid.uuid4().hex}.partial"
        try:
            dim, metadata = self.bilm.get_output_dim(), self.layers.metadata
            with (
                self.fs.open_output_stream(partial) as out,
                ParquetSink(
                    out, shard.file, self.layers.name, self.depth, dim, self.dtype, metadata
                ) as sink,
                fixed_weights(self.bilm),  # the worker owns its biLM
            ):
                pieces = embed_pieces(
                    self.bilm,
                    sentences,
                    _words,
                    self.batch_size,
                    self.device,
                    self.layers,
                    self.max_tokens,
                )
                for batch, start, host in pieces:  # a long sentence's pieces: rows in order
                    sink.write(batch, start, host)
            self.fs.move(partial, final)
        except BaseException:
            try:
                self.fs.delete_file(partial)
            except OSError:
                pass
            raise
        return {
            "shard": shard.name,
            "sentences": len(sentences),
            "seconds": time.perf_counter() - started,
            "pid": os.getpid(),
            # ru_maxrss is KiB on Linux
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }


def _words(item: Item) -> List[str]:
    return item[2]
