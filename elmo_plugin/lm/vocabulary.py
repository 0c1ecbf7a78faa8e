"""AllenNLP vocabularies <-> bilm-tf `vocab.txt` files (the softmax namespace of the biLM)."""

from typing import List, Optional

from allennlp.data import Vocabulary

from elmo_bilm.model.vocab import BOS, EOS, UNK, read_vocab_file, write_vocab_file
from elmo_bilm.utils.files import FormatError


@Vocabulary.register("elmo_plugin_bilm_tf_vocab", constructor="from_bilm_tf_vocab")
class BilmTfVocabulary(Vocabulary):
    """A Vocabulary whose softmax namespace is read from a bilm-tf `vocab.txt`.

    `<UNK>` becomes the namespace's OOV token; the order of the file is kept (bilm-tf files are
    frequency-sorted, which the log-uniform sampler of the sampled softmax assumes).

    Registered as a `Vocabulary` with name "elmo_plugin_bilm_tf_vocab".

    # Parameters

    vocab_file : `str`
        The `vocab.txt` (e.g. written by `allennlp elmo-vocab` or `allennlp elmo-export`).
    namespace : `str`, optional (default = `"lm_tokens"`)
    max_size : `int`, optional
        Keep only the first `max_size` tokens.
    """

    @classmethod
    def from_bilm_tf_vocab(
        cls, vocab_file: str, namespace: str = "lm_tokens", max_size: Optional[int] = None
    ) -> Vocabulary:
        """Read `vocab_file` into `namespace`, keeping at most `max_size` tokens."""
        tokens = [token for token in read_vocab_file(vocab_file) if token != UNK]
        if max_size is not None:
            tokens = tokens[:max_size]
        missing = [token for token in (BOS, EOS) if token not in tokens]
        if missing:
            # without them the softmax has no row to predict </S> from <S>: a run would train
            # without those words and export the unknown word's row in their place
            raise FormatError(
                f"{vocab_file}: no {' and no '.join(missing)} line"
                f"{' within max_size ' + str(max_size) if max_size is not None else ''}; a "
                f"bilm-tf vocab.txt lists {BOS}, {EOS} and {UNK} first (`elmo-plugin elmo-vocab` "
                "writes one)"
            )
        vocab = Vocabulary(non_padded_namespaces=())
        vocab.add_tokens_to_namespace(tokens, namespace)
        return vocab


def write_bilm_tf_vocab(
    vocab: Vocabulary, vocab_file: str, namespace: str = "lm_tokens"
) -> List[str]:
    """Write `namespace` as a bilm-tf `vocab.txt` (`<S>`, `</S>`, `<UNK>` first, then index order);
    return its lines. Never overwrites."""
    tokens = [
        token
        for _, token in sorted(vocab.get_index_to_token_vocabulary(namespace).items())
        if token not in (vocab._padding_token, vocab._oov_token, BOS, EOS)
    ]
    return write_vocab_file(tokens, vocab_file)
