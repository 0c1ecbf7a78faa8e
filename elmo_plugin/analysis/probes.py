"""Layer probes of Section 5.3: POS tagging with a linear classifier on each biLM layer (Table 6)
and word sense disambiguation by nearest sense centroid (Table 5)."""

import collections
import os
import xml.etree.ElementTree as ElementTree
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy
import torch

from elmo_bilm.model.bilm import BiLm
from elmo_bilm.utils.files import FormatError, UsageError, numbered_lines
from elmo_bilm.utils.progress import progress_bar
from elmo_plugin.analysis.features import token_layers

Sentence = List[str]


# ---------------------------------------------------------------------------- POS (Table 6)


def read_conllu_xpos(path: str) -> Tuple[List[Sentence], List[List[str]]]:
    """Tokens and XPOS (Penn Treebank) tags of a CoNLL-U file; multi-word ranges and empty
    nodes are skipped."""
    sentences: List[Sentence] = []
    tags: List[List[str]] = []
    tokens: Sentence = []
    labels: List[str] = []
    for line_number, line in numbered_lines(path):
        line = line.rstrip("\n")
        if not line:
            if tokens:
                sentences.append(tokens)
                tags.append(labels)
            tokens, labels = [], []
            continue
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 10:
            raise FormatError(f"{path}:{line_number}: expected 10 tab-separated CoNLL-U fields")
        if not fields[0].isdigit():  # 1-2 (multi-word token) or 1.1 (empty node)
            continue
        tokens.append(fields[1])
        labels.append(fields[4])
    if tokens:
        sentences.append(tokens)
        tags.append(labels)
    if not sentences:
        raise FormatError(f"{path}: no sentences")
    return sentences, tags


def train_linear_probe(
    features: numpy.ndarray,
    labels: numpy.ndarray,
    num_classes: int,
    epochs: int = 10,
    batch_size: int = 512,
    lr: float = 0.01,
    seed: int = 0,
) -> torch.nn.Linear:
    """Softmax regression (one linear layer, no hidden layer), Adam, seeded."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    probe = torch.nn.Linear(features.shape[1], num_classes)
    optimizer = torch.optim.Adam(probe.parameters(), lr=lr)
    x, y = torch.from_numpy(features), torch.from_numpy(labels)
    for _ in range(epochs):
        for batch in torch.randperm(len(y), generator=generator).split(batch_size):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(probe(x[batch]), y[batch]).backward()
            optimizer.step()
    return probe


def pos_probe(
    bilm: BiLm,
    train_file: str,
    test_file: str,
    epochs: int = 10,
    batch_size: int = 64,
    device: torch.device = torch.device("cpu"),
    max_train_sentences: Optional[int] = None,
    seed: int = 0,
) -> Dict:
    """Accuracy of a linear POS classifier trained on each biLM layer separately."""
    if epochs < 1:
        raise UsageError(f"epochs is {epochs}; at least 1 (with none the probe is untrained)")
    train_sentences, train_tags = read_conllu_xpos(train_file)
    if max_train_sentences is not None:
        train_sentences, train_tags = (
            train_sentences[:max_train_sentences],
            train_tags[:max_train_sentences],
        )
    test_sentences, test_tags = read_conllu_xpos(test_file)
    tag_ids = {tag: i for i, tag in enumerate(sorted({t for tags in train_tags for t in tags}))}

    def data(sentences, tags, desc):
        positions = [(s, i) for s, tokens in enumerate(sentences) for i in range(len(tokens))]
        flat = [tag_ids.get(tag, -1) for sentence_tags in tags for tag in sentence_tags]
        return token_layers(bilm, sentences, positions, batch_size, device, desc), numpy.array(flat)

    x_train, y_train = data(train_sentences, train_tags, "train layers")
    x_test, y_test = data(test_sentences, test_tags, "test layers")
    accuracies = []
    for layer in progress_bar(range(x_train.shape[0]), desc="probes", unit=" layers"):
        # standardised with the training statistics (an affine map: the probe stays linear)
        mean, std = x_train[layer].mean(0), x_train[layer].std(0) + 1e-6
        train_x, test_x = (x_train[layer] - mean) / std, (x_test[layer] - mean) / std
        probe = train_linear_probe(train_x, y_train, len(tag_ids), epochs=epochs, seed=seed)
        with torch.no_grad():
            predicted = probe(torch.from_numpy(test_x)).argmax(-1).numpy()
        accuracies.append(float((predicted == y_test).mean()))  # unseen tags (-1) count as wrong
    return {
        "task": "pos",
        "train_file": train_file,
        "test_file": test_file,
        "train_tokens": int(len(y_train)),
        "test_tokens": int(len(y_test)),
        "tags": len(tag_ids),
        "epochs": epochs,
        "accuracy_per_layer": accuracies,
    }


# ---------------------------------------------------------------- SST-5 (Table 1's SST-5 row)


def read_sst_sentences(path: str) -> Tuple[List[List[str]], numpy.ndarray]:
    """The whole sentences of an SST tree file (no phrases) and their 5-class labels."""
    from elmo_plugin.tasks.sst.dataset_readers.sst import SstTaskReader

    reader = SstTaskReader(granularity="5-class", use_subtrees=False)
    sentences, labels = [], []
    for instance in reader.read(path):
        sentences.append([token.text for token in instance["tokens"]])  # type: ignore[attr-defined]
        labels.append(int(instance["label"].label))  # type: ignore[attr-defined]
    return sentences, numpy.array(labels)


def mean_word_vectors(path: str, sentences: Sequence[Sequence[str]]) -> numpy.ndarray:
    """`(n, dim)` the mean of each sentence's (lowercased) words' vectors from a GloVe-format
    file (`word v1 ... vd` a line; plain or gzip); words it lacks are left out, a sentence with
    none is zeros."""
    wanted = {word.lower() for sentence in sentences for word in sentence}
    vectors: Dict[str, numpy.ndarray] = {}
    for _, line in numbered_lines(path):
        word, _, rest = line.partition(" ")
        if word in wanted:
            vectors[word] = numpy.array(rest.split(), dtype=numpy.float32)
    if not vectors:
        raise FormatError(f"{path}: none of the sentences' words has a vector")
    dim = len(next(iter(vectors.values())))
    out = numpy.zeros((len(sentences), dim), dtype=numpy.float32)
    for row, sentence in enumerate(sentences):
        found = [vectors[w.lower()] for w in sentence if w.lower() in vectors]
        if found:
            out[row] = numpy.mean(found, axis=0)
    return out


def _linear_accuracy(
    train_x: numpy.ndarray,
    y_train: numpy.ndarray,
    test_x: numpy.ndarray,
    y_test: numpy.ndarray,
    epochs: int,
    seed: int,
) -> float:
    """Test accuracy of a softmax regression on standardised features (an affine map: linear)."""
    mean, std = train_x.mean(0), train_x.std(0) + 1e-6
    probe = train_linear_probe((train_x - mean) / std, y_train, 5, epochs=epochs, seed=seed)
    with torch.no_grad():
        predicted = probe(torch.from_numpy((test_x - mean) / std)).argmax(-1).numpy()
    return float((predicted == y_test).mean())


def sst_probe(
    bilm: BiLm,
    train_file: str,
    test_file: str,
    word_vectors: Optional[str] = None,
    epochs: int = 50,
    batch_size: int = 64,
    device: torch.device = torch.device("cpu"),
    seed: int = 0,
) -> Dict:
    """SST-5 sentence accuracy of a linear classifier on mean-pooled vectors: each biLM layer,
    the layers' average (Eq. 1 with equal weights) and, given a file, context-free word vectors.
    How much fine-grained sentiment each representation carries linearly, apart from any task
    model: the diagnosis of Table 1's SST-5 row."""
    if epochs < 1:
        raise UsageError(f"epochs is {epochs}; at least 1 (with none the probe is untrained)")
    (train_sentences, y_train), (test_sentences, y_test) = (
        read_sst_sentences(train_file),
        read_sst_sentences(test_file),
    )

    def pooled(sentences: Sequence[Sequence[str]], desc: str) -> numpy.ndarray:
        positions = [(s, i) for s, tokens in enumerate(sentences) for i in range(len(tokens))]
        layers = token_layers(bilm, sentences, positions, batch_size, device, desc)
        owner = numpy.array([s for s, _ in positions])
        counts = numpy.bincount(owner, minlength=len(sentences))[:, None]
        sums = numpy.stack(
            [
                numpy.add.reduceat(
                    layer, numpy.flatnonzero(numpy.r_[True, owner[1:] != owner[:-1]])
                )
                for layer in layers
            ]
        )
        return (sums / counts).astype(numpy.float32)  # (n_layers, n, dim)

    x_train, x_test = pooled(train_sentences, "train layers"), pooled(test_sentences, "test layers")
    features = {f"layer {k}": (x_train[k], x_test[k]) for k in range(x_train.shape[0])}
    features["average of the layers"] = (x_train.mean(0), x_test.mean(0))
    if word_vectors is not None:
        features["word vectors"] = (
            mean_word_vectors(word_vectors, train_sentences),
            mean_word_vectors(word_vectors, test_sentences),
        )
        features["word vectors + average of the layers"] = (
            numpy.concatenate([features["word vectors"][0], x_train.mean(0)], axis=1),
            numpy.concatenate([features["word vectors"][1], x_test.mean(0)], axis=1),
        )
    accuracies = {
        name: _linear_accuracy(train_x, y_train, test_x, y_test, epochs, seed)
        for name, (train_x, test_x) in progress_bar(
            features.items(), desc="probes", unit=" features"
        )
    }
    majority = float((y_test == numpy.bincount(y_train).argmax()).mean())
    return {
        "task": "sst5",
        "train_file": train_file,
        "test_file": test_file,
        "word_vectors": word_vectors,
        "train_sentences": len(train_sentences),
        "test_sentences": len(test_sentences),
        "epochs": epochs,
        "majority_class_accuracy": majority,
        "accuracy": accuracies,
    }


# ---------------------------------------------------------------------------- WSD (Table 5)

WSD_DATASETS = ("senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015")


class WsdData:
    """A Raganato-framework dataset: sentences, its instances `(sentence, token, id, lemma, pos)`
    and their gold senses."""

    def __init__(self, xml_file: str, key_file: str) -> None:
        self.name = os.path.basename(xml_file).split(".")[0]
        self.sentences: List[Sentence] = []
        self.instances: List[Tuple[int, int, str, str, str]] = []
        try:
            root = ElementTree.parse(xml_file).getroot()
        except (ElementTree.ParseError, OSError) as error:
            raise FormatError(f"{xml_file}: not a Raganato data.xml ({error})") from error
        for sentence in root.iter("sentence"):
            tokens: List[str] = []
            for word in sentence:
                if word.tag == "instance":
                    id_, lemma, pos = (word.get(name) for name in ("id", "lemma", "pos"))
                    if id_ is None or lemma is None or pos is None:
                        raise FormatError(
                            f"{xml_file}: an <instance> of sentence {sentence.get('id')} lacks "
                            "its id, lemma or pos attribute"
                        )
                    self.instances.append((len(self.sentences), len(tokens), id_, lemma, pos))
                tokens.append(word.text or "_")
            self.sentences.append(tokens)
        self.gold: Dict[str, Set[str]] = {}
        for line_number, line in numbered_lines(key_file):
            fields = line.split()
            if len(fields) < 2:
                raise FormatError(f"{key_file}:{line_number}: expected 'INSTANCE_ID SENSE_KEY ...'")
            self.gold[fields[0]] = set(fields[1:])
        missing = [i for _, _, i, _, _ in self.instances if i not in self.gold]
        if missing:
            raise FormatError(f"{key_file}: no gold sense for instance {missing[0]} of {xml_file}")

    @classmethod
    def from_dir(cls, directory: str) -> "WsdData":
        """A Raganato et al. (2017) folder `NAME/`: `NAME.data.xml` and `NAME.gold.key.txt`."""
        name = os.path.basename(os.path.normpath(directory))
        return cls(
            os.path.join(directory, f"{name}.data.xml"),
            os.path.join(directory, f"{name}.gold.key.txt"),
        )


def _normalise(vectors: numpy.ndarray) -> numpy.ndarray:
    return vectors / numpy.maximum(numpy.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def nearest_centroid_wsd(
    train: List[Tuple[str, str, str, numpy.ndarray]], test: List[Tuple[str, str, numpy.ndarray]]
) -> List[Optional[str]]:
    """1-NN over sense centroids. `train`: (lemma, pos, sense, vector); `test`: (lemma, pos, vector).
    A test word takes the sense whose centroid (from training instances of the same lemma and
    POS) is nearest by cosine; with none, the lemma's most frequent training sense; else None
    (abstain)."""
    sums: Dict[Tuple[str, str], Dict[str, numpy.ndarray]] = collections.defaultdict(dict)
    counts: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for lemma, pos, sense, vector in train:
        bucket = sums[(lemma, pos)]
        bucket[sense] = bucket.get(sense, 0) + _normalise(vector)
        counts[lemma][sense] += 1
    predictions: List[Optional[str]] = []
    for lemma, pos, vector in test:
        senses = sums.get((lemma, pos))
        if senses:
            names = sorted(senses)
            centroids = _normalise(numpy.stack([senses[s] for s in names]))
            predictions.append(names[int(numpy.argmax(centroids @ _normalise(vector)))])
        elif counts.get(lemma):
            predictions.append(counts[lemma].most_common(1)[0][0])
        else:
            predictions.append(None)
    return predictions


def wsd_scores(predictions: Sequence[Optional[str]], gold: Sequence[Set[str]]) -> Dict[str, float]:
    """The Raganato scorer's precision (over answered), recall (over all) and F1, in %."""
    answered = sum(p is not None for p in predictions)
    correct = sum(p is not None and p in g for p, g in zip(predictions, gold))
    precision = correct / answered if answered else 0.0
    recall = correct / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": 100 * precision,
        "recall": 100 * recall,
        "f1": 100 * f1,
        "answered": answered,
    }


def wsd_probe(
    bilm: BiLm,
    test_sets: Sequence[WsdData],
    train_sets: Optional[Sequence[WsdData]] = None,
    batch_size: int = 64,
    device: torch.device = torch.device("cpu"),
) -> Dict:
    """Per layer: F1 on each test set and on all of them together. With `train_sets` (e.g.
    SemCor) the centroids come from those; without, leave one dataset out (each test set's
    centroids come from the other test sets)."""
    every = list(test_sets) + list(train_sets or [])
    vectors = {
        data.name: token_layers(
            bilm,
            data.sentences,
            [(s, t) for s, t, _, _, _ in data.instances],
            batch_size,
            device,
            data.name,
        )
        for data in every
    }
    n_layers = next(iter(vectors.values())).shape[0]
    result: Dict = {
        "task": "wsd",
        "setting": "train sets" if train_sets else "leave one dataset out",
    }
    result["train_sets"] = [d.name for d in train_sets] if train_sets else None
    per_layer = []
    for layer in range(n_layers):
        scores, all_predictions, all_gold = {}, [], []
        for data in test_sets:
            sources = train_sets if train_sets else [d for d in test_sets if d is not data]
            train = [
                (lemma, pos, sorted(source.gold[i])[0], vectors[source.name][layer, row])
                for source in sources
                for row, (_, _, i, lemma, pos) in enumerate(source.instances)
            ]
            test = [
                (lemma, pos, vectors[data.name][layer, row])
                for row, (_, _, _, lemma, pos) in enumerate(data.instances)
            ]
            predictions = nearest_centroid_wsd(train, test)
            gold = [data.gold[i] for _, _, i, _, _ in data.instances]
            scores[data.name] = wsd_scores(predictions, gold)
            all_predictions += predictions
            all_gold += gold
        scores["ALL"] = wsd_scores(all_predictions, all_gold)
        per_layer.append(scores)
    result["scores_per_layer"] = per_layer
    result["f1_per_layer"] = [scores["ALL"]["f1"] for scores in per_layer]
    return result
