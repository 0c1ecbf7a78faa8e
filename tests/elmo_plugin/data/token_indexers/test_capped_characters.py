from collections import defaultdict

from allennlp.common import Params
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import TokenIndexer

from tests.conftest import REPO_ROOT


def test_task_character_indexers_cap_each_token_at_50_characters():
    """A 200,000-character token in the data gives the character CNN 50 characters (it asked for
    22 GB uncapped), in every task config with a character CNN."""
    for name in ("conll2003_crf_tagger", "coref_lee2017", "squad_bidaf_selfattn"):
        params = Params.from_file(str(REPO_ROOT / "training_config" / f"{name}.jsonnet"))
        indexers = params.as_dict()["dataset_reader"]["token_indexers"]
        characters = [i for i in indexers.values() if i["type"] == "elmo_plugin_capped_characters"]
        assert characters and all(i["max_characters"] == 50 for i in characters), name
    indexer = TokenIndexer.from_params(Params({"type": "elmo_plugin_capped_characters"}))
    # the name archives trained before 0.2.0 carry builds the same indexer
    old = TokenIndexer.from_params(Params({"type": "elmo_plugin_characters"}))
    assert type(old) is type(indexer)
    huge, small = Token("x" * 200_000), Token("cat")
    counter = defaultdict(lambda: defaultdict(int))
    indexer.count_vocab_items(huge, counter)
    assert counter["token_characters"]["x"] == 50
    indices = indexer.tokens_to_indices([huge, small], Vocabulary())["token_characters"]
    assert [len(i) for i in indices] == [50, 3]
