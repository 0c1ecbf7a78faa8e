"""flair's `ELMoEmbeddings` without AllenNLP: a flair script switches with its import line.

    from elmo_bilm.dropins.flair import ELMoEmbeddings  # was: from flair.embeddings import ELMoEmbeddings

flair's own class imports `allennlp.commands.elmo` (AllenNLP 0.9), which no longer installs beside
current flair; this one has its constructor, name (`elmo-{model}-{embedding_mode}`) and vectors,
built on `elmo_bilm.ElmoEmbedder`, stateful as flair's (AllenNLP 0.9's embedder carried LSTM
states from batch to batch; `stateful=False` starts every sentence from zero). The biLM is a
submodule, so a saved flair model (a `SequenceTagger`, say) holds its weights and loads without
the original files (or the network).
Needs flair (elmo-bilm's `flair` extra: `make install` in a checkout, or
`pip install "$(ls dist/elmo_bilm-0.2.0-*.whl)[flair]"`); the core imports nothing of it.
"""

import os
from typing import Any, Dict, List, Optional, Tuple

import flair
import torch
from flair.data import Sentence, Token
from flair.embeddings import TokenEmbeddings
from flair.embeddings.base import register_embeddings

from elmo_bilm.dropins.allennlp import ElmoEmbedder
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.runtime.layers import Layers
from elmo_bilm.sources.published import CONTRIBUTED, FLAIR_NAMES, LOCAL, PUBLISHED
from elmo_bilm.sources.resolver import names_whole_bilm
from elmo_bilm.utils.devices import cuda_device_of
from elmo_bilm.utils.files import UsageError

MODES = ("all", "top", "average")


def bilm_files(
    model: str, options_file: Optional[str], weight_file: Optional[str]
) -> Tuple[str, Optional[str]]:
    """What `ElmoEmbedder` takes for flair's arguments: the files when both are given (as flair),
    else the biLM `model` names: flair's names (`original`, `small`, `medium`, `large` / `5.5B`,
    `pt` / `portuguese`, `pubmed`) or this project's (`wikipedia`, `wikipedia_1024`); an
    `options_file` alone is any source `elmo_bilm.sources.resolver` takes (a folder, an archive,
    `hf://ORG/REPO`, a name)."""
    if options_file:
        return options_file, weight_file or None
    if model in CONTRIBUTED:
        return CONTRIBUTED[model]
    name = FLAIR_NAMES.get(model, model)
    if name not in (*PUBLISHED, *LOCAL) and not (names_whole_bilm(name) or os.path.exists(name)):
        known = ", ".join(["original", "small", "medium", "large", "5.5B", "pt", "pubmed", *LOCAL])
        raise UsageError(
            f"unknown ELMo model {model!r}; one of {known}, or options_file + weight_file"
        )
    return name, None


@register_embeddings
class ELMoEmbeddings(TokenEmbeddings):
    """flair's `ELMoEmbeddings`: per token, every biLM layer concatenated (`embedding_mode="all"`,
    `n_layers * dim`), the top layer (`"top"`) or their mean (`"average"`); static embeddings
    (the biLM frozen), on `flair.device`.

    # Parameters

    model : `str` (default = `"original"`)
        flair's model names (see `bilm_files`), used when the two files are not both given.
    options_file, weight_file : `str`, optional
        bilm-tf files, paths or URLs.
    embedding_mode : `str` (default = `"all"`)
    options : `Dict[str, Any]`, optional
        Not flair's: the biLM's options, given by `from_params` when flair loads a saved model
        (the weights then come from the model's state dict, not from files). A saved model
        finds this class only once `elmo_bilm.flair` (`elmo_bilm.dropins.flair`) is imported (flair's registry).
    stateful : `bool` (default = `True`)
        Not flair's argument, flair's behaviour: flair's class embeds through AllenNLP 0.9's
        stateful `ElmoEmbedder`, so each batch's rows start from the LSTM states the same rows
        ended with in the batch before; so does this one (`reset_states()` forgets them), and
        a saved model keeps the mode. `False`: every sentence from zero states, the same
        vectors in any batch and order.
    """

    def __init__(
        self,
        model: str = "original",
        options_file: Optional[str] = None,
        weight_file: Optional[str] = None,
        embedding_mode: str = "all",
        options: Optional[Dict[str, Any]] = None,
        stateful: bool = True,
    ) -> None:
        super().__init__()
        self.instance_parameters = self.get_instance_parameters(locals=locals())
        if embedding_mode not in MODES:
            raise UsageError(f"embedding_mode must be one of {MODES}, got {embedding_mode!r}")
        self.model_name, self.options_file, self.weight_file = model, options_file, weight_file
        self.embedding_mode = embedding_mode
        self.name = f"elmo-{model}-{embedding_mode}"
        self.static_embeddings = True
        if options is not None:  # from a saved flair model: the weights come with its state dict
            bilm = BiLm(options, initialise=False)
            self.ee = ElmoEmbedder.from_bilm(bilm, cuda_device=-1, stateful=stateful)
        else:
            files = bilm_files(model, options_file, weight_file)
            cuda_device = cuda_device_of(flair.device)
            try:
                self.ee = ElmoEmbedder(*files, cuda_device=cuda_device, stateful=stateful)
            except OSError as error:
                if options_file:  # the user's own files: their error as it is
                    raise
                # as ElmoEmbedder()'s: a named biLM not downloaded yet, and the one shipped
                raise OSError(
                    f"ELMoEmbeddings({model!r}) loads a biLM that is not in the cache yet: "
                    f"{' '.join(str(error).split())}; or name a biLM (e.g. "
                    "ELMoEmbeddings('wikipedia'), the one shipped with this package)"
                ) from None
        for parameter in self.ee.elmo_bilm.parameters():
            parameter.requires_grad_(False)
        self.elmo_bilm = self.ee.elmo_bilm  # a submodule: moved with the model, saved in its state
        layers, dim = self.elmo_bilm.num_layers, self.elmo_bilm.get_output_dim()
        self._embedding_length = layers * dim if embedding_mode == "all" else dim
        self.to(flair.device)

    @property
    def stateful(self) -> bool:
        """Whether LSTM states carry from one batch to the next (the default, as flair's)."""
        return self.ee.stateful

    def reset_states(self) -> None:
        """Forget the carried LSTM states: the next batch starts from zero, as the first did."""
        self.ee.reset_states()

    @property
    def embedding_length(self) -> int:
        return self._embedding_length

    def _add_embeddings_internal(self, sentences: List[Sentence]) -> List[Sentence]:
        """Embed flair's batch through `ElmoEmbedder.embed_batch`, wherever the model is:
        stateful, one biLM batch as flair's class ran it; stateless, passes of similar lengths
        within the token budget (the same vectors, bounded memory)."""
        self.ee.cuda_device = cuda_device_of(next(self.elmo_bilm.parameters()).device)
        kept = Layers.of(self.embedding_mode, flat=True)  # "all": (n_tokens, n_layers * dim)
        arrays = self.ee.embed_batch([[token.text for token in s] for s in sentences], layers=kept)
        for sentence, array in zip(sentences, arrays):
            token: Token
            for token, vector in zip(sentence.tokens, torch.from_numpy(array)):
                token.set_embedding(self.name, vector.to(flair.device))
        return sentences

    def to_params(self) -> Dict[str, Any]:
        """The constructor's arguments and the biLM's options (its weights: the state dict)."""
        return {
            "model": self.model_name,
            "options_file": self.options_file,
            "weight_file": self.weight_file,
            "embedding_mode": self.embedding_mode,
            "options": self.elmo_bilm.options,
            "stateful": self.stateful,
        }

    @classmethod
    def from_params(cls, params: Dict[str, Any]) -> "ELMoEmbeddings":
        return cls(**params)

    def extra_repr(self) -> str:
        return f"model={self.name}"

    def __str__(self) -> str:
        return self.name
