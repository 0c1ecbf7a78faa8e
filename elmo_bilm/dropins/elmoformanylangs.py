"""ELMoForManyLangs' programming interface (`elmoformanylangs.Embedder`), without its code.

A script written for ELMoForManyLangs (HIT-SCIR) runs with one import line switched::

    from elmo_bilm.dropins.elmoformanylangs import Embedder  # was: from elmoformanylangs import Embedder

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

Stateful, as the original: ELMoForManyLangs' encoder carries LSTM states from one batch (and one
call) to the next (AllenNLP's stateful `ElmoLstm`, whose code it copied), so a sentence's vectors
depend on what was embedded before it and beside it. By default this `Embedder` does the same, in
the same order: each call sorts its sentences by length (longest first, ties in input order),
cuts them into batches of `batch_size`, runs the batches in an order shuffled with Python's
`random` module (ELMoForManyLangs' `create_batches` does; `random.seed` fixes it for both), and
each batch row starts from the states the same row ended with in the batch before. So a sequence
of calls gives the original's numbers call after call. `stateful=False` (keyword only) starts
every sentence from zero states instead: a sentence's vectors are then the original's first-batch
vectors whatever the batch, and batches follow `ElmoEmbedder`'s token budget. The underlying
`ElmoEmbedder` is built in one method (`Embedder._make_embedder`), which passes the mode through.
"""

import logging
import random
from typing import Any, Callable, Iterable, List, Optional, Sequence, TypeVar

import numpy

from elmo_bilm.dropins.allennlp import ElmoEmbedder
from elmo_bilm.runtime.engine import embed_each, length_batches, same_words
from elmo_bilm.runtime.layers import Layers
from elmo_bilm.utils.checks import whole_number
from elmo_bilm.utils.devices import cuda_device_of
from elmo_bilm.utils.files import UsageError
from elmo_bilm.utils.names import required_path

__all__ = ["Embedder", "logger", "log_handler", "log_formatter"]

# ELMoForManyLangs' package-level names besides `Embedder`: its logger (which scripts quieten
# with `elmoformanylangs.logger.setLevel(...)`), and the stderr handler and formatter it attaches
# to that logger; here the handler is not attached (this module logs nothing through it)
logger = logging.getLogger(__name__)
log_formatter = logging.Formatter(fmt="%(asctime)-15s %(levelname)s: %(message)s")
log_handler = logging.StreamHandler()
log_handler.setFormatter(log_formatter)

T = TypeVar("T")


class Embedder:
    """ELMoForManyLangs' `Embedder`: a model folder's biLM layers for tokenised sentences.

    # Parameters

    model_dir : `str`
        ELMoForManyLangs' model folder (or any biLM that `resolve_bilm` takes alone).
    batch_size : `int`, optional (default = `64`)
        This many sentences a batch, as in ELMoForManyLangs (stateless: at most this many, also
        bounded by `ElmoEmbedder`'s padded-token budget, and batches never change the vectors).
    cuda_device : `int`, optional (keyword only; not in ELMoForManyLangs)
        The GPU to run on, -1 for the CPU; by default GPU 0 when torch sees one, as
        ELMoForManyLangs decides (`torch.cuda.is_available()`).
    stateful : `bool`, optional (keyword only; not in ELMoForManyLangs; default = `True`)
        Carry LSTM states between batches and calls as ELMoForManyLangs does (see above);
        `reset_states()` forgets them. `False`: every sentence starts from zero states.
    """

    def __init__(
        self,
        model_dir: str,
        batch_size: int = 64,
        *,
        cuda_device: Optional[int] = None,
        stateful: bool = True,
    ) -> None:
        batch_size = int(whole_number(batch_size, "batch_size") or 1)
        required_path(model_dir, "Embedder's model_dir")
        self.model_dir = model_dir
        self.batch_size = batch_size
        self.stateful = stateful
        cuda_device = cuda_device_of(cuda_device)
        self.use_cuda = cuda_device >= 0  # ELMoForManyLangs' attribute
        self.embedder = self._make_embedder(model_dir, cuda_device)
        self.num_layers = self.embedder.elmo_bilm.num_layers

    def _make_embedder(self, model_dir: str, cuda_device: int) -> ElmoEmbedder:
        """The one place the underlying embedder is built, stateful or not (`self.stateful`)."""
        return ElmoEmbedder(model_dir, None, cuda_device=cuda_device, stateful=self.stateful)

    def reset_states(self) -> None:
        """Forget the carried LSTM states: the next batch starts from zero, as after loading."""
        self.embedder.reset_states()

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
        kept = _layers(layer)
        if not self.stateful:
            return list(self.embedder.embed_sentences(sentences, self.batch_size, layers=kept))
        return list(
            embed_each(
                self.embedder.elmo_bilm,
                sentences,
                same_words,
                self._batching,
                self.embedder.device,
                kept,
                self.embedder.max_tokens,
            )
        )

    def _batching(self, items: Iterable[T], words: Callable[[T], Sequence[str]]) -> List[List[T]]:
        """The batches ELMoForManyLangs' `sents2elmo` makes and runs (its `create_batches`):
        sorted by length, longest first (a stable sort: ties in input order), cut into batches
        of `batch_size`, run in an order `random.shuffle` draws (Python's global generator, one
        shuffle a call, as the original draws it); every batch runs, an empty sentence as
        `<bos> <eos>`."""
        batches = list(length_batches(items, words, self.batch_size, None, longest_first=True))
        order = list(range(len(batches)))
        random.shuffle(order)
        return [batches[number] for number in order]

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


def _layers(output_layer: int) -> Layers:
    """`sents2elmo`'s `output_layer` as a `Layers`: -1 the layers' average, -2 all of them, else
    that layer (counted from the top when negative, as numpy counts)."""
    if output_layer == -1:
        return Layers("average")
    if output_layer == -2:
        return Layers("all")
    return Layers(index=output_layer)
