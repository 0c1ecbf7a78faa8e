"""bilm-tf softmax vocabularies (`vocab.txt`: one token a line, `<S>`, `</S>`, `<UNK>` first)."""
import os
from typing import List, Optional

from allennlp.data import Vocabulary

from elmo_plugin.dataset_readers.lm_corpus import BOS, EOS

BILM_TF_UNK = "<UNK>"


@Vocabulary.register("elmo_plugin_bilm_tf_vocab", constructor="from_bilm_tf_vocab")
class BilmTfVocabulary(Vocabulary):
    """A Vocabulary whose softmax namespace is read from a bilm-tf `vocab.txt`.

    `<UNK>` becomes the namespace's OOV token; the order of the file is kept (bilm-tf files are
    frequency-sorted, which the log-uniform sampler of the sampled softmax assumes).

    Registered as a `Vocabulary` with name "elmo_plugin_bilm_tf_vocab".
    """

    @classmethod
    def from_bilm_tf_vocab(
        cls, vocab_file: str, namespace: str = "lm_tokens", max_size: Optional[int] = None
    ) -> Vocabulary:
        """Read `vocab_file` into `namespace`, keeping at most `max_size` tokens."""
        tokens: List[str] = []
        with open(vocab_file, encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                token = line.strip()
                if not token or len(token.split()) != 1:
                    raise ValueError(f"{vocab_file}:{line_number}: expected one token per line, got {line!r}")
                if token != BILM_TF_UNK:
                    tokens.append(token)
        if max_size is not None:
            tokens = tokens[:max_size]
        vocab = Vocabulary(non_padded_namespaces=())
        vocab.add_tokens_to_namespace(tokens, namespace)
        return vocab


def read_bilm_tf_vocab_lines(vocab_file: str) -> List[str]:
    """The tokens of a `vocab.txt`, in file order."""
    with open(vocab_file, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


def write_bilm_tf_vocab(vocab: Vocabulary, vocab_file: str, namespace: str = "lm_tokens") -> List[str]:
    """Write `namespace` as a bilm-tf `vocab.txt` (`<S>`, `</S>`, `<UNK>` first); return its lines.
    Never overwrites."""
    if os.path.exists(vocab_file):
        raise FileExistsError(f"{vocab_file} exists; not overwriting it")
    tokens = [
        token
        for _, token in sorted(vocab.get_index_to_token_vocabulary(namespace).items())
        if token not in (vocab._padding_token, vocab._oov_token, BOS, EOS)
    ]
    lines = [BOS, EOS, BILM_TF_UNK, *tokens]
    with open(vocab_file, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return lines
