"""ELMoForManyLangs' programming interface (`elmoformanylangs.Embedder`), without its code.

A script written for ELMoForManyLangs (HIT-SCIR) runs with one import line switched::

    from elmo_bilm.elmoformanylangs import Embedder  # was: from elmoformanylangs import Embedder

    embedder = Embedder("/path/to/model")           # its model folder, as before
    vectors = embedder.sents2elmo([["a", "sentence"], ["another", "one"]])

`Embedder(model_dir, batch_size=64)` takes its model folder (`config.json`, the architecture JSON,
`char.dic`, `word.dic`, `token_embedder.pkl`, `encoder.pkl`: loaded by
`elmo_bilm.formats.manylangs`) or any other biLM that `elmo_bilm.sources.resolver.resolve_bilm`
names alone (an NLPL folder or zip, a published name). `sents2elmo(sents, output_layer=-1)`
returns one numpy float32 array per sentence, in input order, as its does: `output_layer` 0 is
the word encoder's layer (the character CNN with its word embedding, the token vector twice), 1
and 2 the LSTM layers, -1 the average of the three `(n_tokens, dim)`, -2 all of them
`(3, n_tokens, dim)`.

One difference, on purpose: the biLM is stateless here (every sentence starts from zero LSTM
states), while ELMoForManyLangs' encoder carries LSTM states from one batch (and one call) to the
next, so the two agree on its first batch after loading, and a sentence's vectors here do not
depend on the sentences beside it. The underlying `ElmoEmbedder` is built in one method
(`Embedder._make_embedder`), where a stateful mode will be passed through.
"""

from typing import Any, Iterable, List, Optional, Sequence

import numpy
import torch

from elmo_bilm.elmo import ElmoEmbedder
from elmo_bilm.utils.files import UsageError

__all__ = ["Embedder"]


class Embedder:
    """ELMoForManyLangs' `Embedder`: a model folder's biLM layers for tokenised sentences.

    # Parameters

    model_dir : `str`
        ELMoForManyLangs' model folder (or any biLM that `resolve_bilm` takes alone).
    batch_size : `int`, optional (default = `64`)
        At most this many sentences a batch (also bounded by `ElmoEmbedder`'s padded-token
        budget); batches never change the vectors here (the biLM is stateless).
    cuda_device : `int`, optional (keyword only; not in ELMoForManyLangs)
        The GPU to run on, -1 for the CPU; by default GPU 0 when torch sees one, as
        ELMoForManyLangs decides (`torch.cuda.is_available()`).
    """

    def __init__(
        self, model_dir: str, batch_size: int = 64, *, cuda_device: Optional[int] = None
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise UsageError(f"batch_size must be a whole number of at least 1, got {batch_size!r}")
        self.model_dir = model_dir
        self.batch_size = batch_size
        if cuda_device is None:
            cuda_device = 0 if torch.cuda.is_available() else -1
        self.use_cuda = cuda_device >= 0  # ELMoForManyLangs' attribute
        self.embedder = self._make_embedder(model_dir, cuda_device)
        self.num_layers = self.embedder.elmo_bilm.num_layers

    def _make_embedder(self, model_dir: str, cuda_device: int) -> ElmoEmbedder:
        """The one place the underlying embedder is built: a stateful mode, once it exists, is
        passed through here."""
        return ElmoEmbedder(model_dir, None, cuda_device=cuda_device)

    def sents2elmo(
        self, sents: Iterable[Sequence[str]], output_layer: int = -1
    ) -> List[numpy.ndarray]:
        """One float32 numpy array per sentence (a list of tokens), in input order:
        `(n_tokens, dim)` for `output_layer` 0 (the word encoder), 1 or 2 (the LSTM layers) or
        -1 (the three layers' average), `(3, n_tokens, dim)` for -2 (all layers). Other
        negative numbers count from the top as numpy does (-3 is layer 0), as in
        ELMoForManyLangs. A string where a list of tokens belongs is a `TypeError` (it would
        embed the string's characters as tokens)."""
        layer = self._check_layer(output_layer)
        sentences = list(sents)
        for index, sentence in enumerate(sentences):
            if isinstance(sentence, str):
                raise TypeError(
                    f"sents2elmo takes lists of tokens; sentence {index} is the string "
                    f"{sentence[:40]!r} (e.g. {sentence[:20]!r}.split())"
                )
        outputs = []
        for layers in self.embedder.embed_sentences(sentences, batch_size=self.batch_size):
            outputs.append(_select(layers, layer))
        return outputs

    def _check_layer(self, output_layer: Any) -> int:
        """`output_layer` if this biLM has it: -2, -1, or a layer counted from 0 or the top."""
        count = self.num_layers
        if (
            isinstance(output_layer, bool)
            or not isinstance(output_layer, (int, numpy.integer))
            or not -count <= output_layer < count
        ):
            raise UsageError(
                f"output_layer must be 0 to {count - 1} (a layer), -1 (their average) or -2 "
                f"(all layers), got {output_layer!r}"
            )
        return int(output_layer)


def _select(layers: numpy.ndarray, output_layer: int) -> numpy.ndarray:
    """`output_layer` of one sentence's `(n_layers, n_tokens, dim)` layers, as its own array (not
    a view that keeps the whole batch's array alive)."""
    if output_layer == -1:
        return layers.mean(axis=0)
    if output_layer == -2:
        return layers.copy()
    return layers[output_layer].copy()
