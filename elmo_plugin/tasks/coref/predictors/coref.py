"""Coreference predictions offline: spaCy's rule-based sentence splitting and tokenisation."""

from allennlp.common.util import JsonDict
from allennlp.data import Instance
from allennlp.models import Model
from allennlp.predictors import Predictor

from elmo_plugin.data.tokenizers import SentenceTokenizer
from elmo_plugin.tasks.coref.dataset_readers.coref import CorefTaskReader


@Predictor.register("elmo_plugin_coref")
class OfflineCorefPredictor(Predictor):
    """Coreference clusters of a document with `elmo_plugin_coref`, splitting and tokenising raw
    text with spaCy's rules (allennlp-models' "coreference_resolution" loads a trained spaCy
    pipeline, which cannot be downloaded here). Input: `{"document": "raw text"}` or
    `{"sentences": [[token, ...], ...]}`, optionally with `"genre"` (an OntoNotes genre such as
    "nw"); the whole document is one speaker. Output: the model's `clusters` (inclusive
    `[start, end]` word spans) and `document` (the words).

    Registered as a `Predictor` with name "elmo_plugin_coref".

    # Parameters

    model : `Model`
        A trained `elmo_plugin_coref` model.
    dataset_reader : `CorefTaskReader`
        Its `elmo_plugin_coref` reader (the one that takes `genre`).
    language : `str`, optional (default = `"en"`)
        The language of spaCy's blank pipeline that splits and tokenises raw text.
    """

    _dataset_reader: CorefTaskReader

    def __init__(self, model: Model, dataset_reader: CorefTaskReader, language: str = "en") -> None:
        super().__init__(model, dataset_reader)
        self._sentence_tokenizer = SentenceTokenizer(language)

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        if "sentences" in json_dict:
            sentences = json_dict["sentences"]
        else:
            sentences = list(self._sentence_tokenizer.sentences([json_dict["document"]]))
        return self._dataset_reader.text_to_instance(sentences, genre=json_dict.get("genre", ""))
