import gzip

import pytest
import torch
from allennlp.common import Params
from allennlp.data import Vocabulary
from allennlp.modules.token_embedders import Embedding

from elmo_bilm.utils.files import FormatError
from elmo_plugin.data.word_vectors import train_word_vectors
from tests.conftest import REPO_ROOT

SENTENCES = [
    "the cat sat on the mat .",
    "the dog sat on the log .",
    "a cat and a dog played .",
    "The Cat was here .",
] * 20


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "shard.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(SENTENCES) + "\n")
    return str(path)


def read_vectors(path):
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return {line.split(" ")[0]: [float(v) for v in line.split(" ")[1:]] for line in handle}


def test_vectors_are_reproducible_and_readable_by_allennlp_embedding(corpus, tmp_path):
    out = tmp_path / "vectors.txt.gz"
    count = train_word_vectors([corpus], str(out), dim=8, min_count=5, epochs=2)
    vectors = read_vectors(out)
    assert count == len(vectors) and "cat" in vectors and "Cat" in vectors  # cased by default
    assert "played" in vectors and all(len(v) == 8 for v in vectors.values())
    again = tmp_path / "again.txt.gz"
    train_word_vectors([corpus], str(again), dim=8, min_count=5, epochs=2)
    assert read_vectors(again) == vectors  # one worker, fixed seed and hash: byte-identical
    vocab = Vocabulary(tokens_to_add={"tokens": ["cat", "dog", "unseen"]})
    embedding = Embedding.from_params(
        Params({"embedding_dim": 8, "pretrained_file": str(out), "trainable": False}), vocab=vocab
    )
    index = vocab.get_token_index("cat")
    assert torch.allclose(embedding.weight[index], torch.tensor(vectors["cat"]), atol=1e-5)


def test_lowercase_and_errors(corpus, tmp_path):
    out = tmp_path / "lower.txt.gz"
    train_word_vectors([corpus], str(out), dim=4, min_count=5, epochs=1, lowercase=True)
    assert "Cat" not in read_vectors(out) and "cat" in read_vectors(out)
    with pytest.raises(FileExistsError):
        train_word_vectors([corpus], str(out), dim=4, epochs=1)
    with pytest.raises(FormatError, match="no word occurs 1000 times"):
        train_word_vectors([corpus], str(tmp_path / "none.txt.gz"), min_count=1000)
    assert not (tmp_path / "none.txt.gz").exists()
    assert not (tmp_path / "none.txt.gz.partial").exists()


def test_the_configs_argument_chooses_pretrained_vectors_not_a_files_existence(
    tmp_path, monkeypatch
):
    """`pretrained_word_vectors` (false by default) chooses: false trains the embeddings from
    scratch even once the file is built; true reads the file, and a missing one is one error
    naming the commands that build it (an unbuilt file used to mean from scratch, silently but
    for a warning). The variable's default is the file, built or not; a user's value is theirs."""
    from elmo_plugin.common import config_env
    from elmo_plugin.data.word_vectors import missing_baseline_vectors

    monkeypatch.setenv("ELMO_PLUGIN_VECTORS", str(tmp_path))
    for name in ("SNLI", "SQUAD", "COREF", "SST", "SRL", "CONLL2003"):
        monkeypatch.delenv(f"{name}_WORD_VECTORS")
    configs = REPO_ROOT / "training_config"
    vectors = tmp_path / "w2v_cased_300d.txt.gz"
    snli = str(configs / "snli_esim_elmo.jsonnet")
    assert config_env.config_ext_vars(snli)["SNLI_WORD_VECTORS"] == str(vectors)  # unbuilt too
    pretrained = tmp_path / "pretrained.jsonnet"
    pretrained.write_text(
        f'(import "{configs / "snli_esim.jsonnet"}")(pretrained_word_vectors=true)\n'
    )

    def tokens(config) -> dict:
        params = Params.from_file(str(config)).as_dict()
        return params["model"]["text_field_embedder"]["token_embedders"]["tokens"]

    with pytest.raises(config_env.ConfigError) as error:
        tokens(pretrained)
    message = str(error.value)
    assert f"SNLI_WORD_VECTORS={vectors}" in message
    # commands that work outside a checkout too (issue 82)
    assert "elmo-plugin elmo-word-vectors" in message and "elmo-plugin elmo-table1" in message
    assert str(vectors) in missing_baseline_vectors(["SNLI_WORD_VECTORS"])
    vectors.write_bytes(b"")  # built
    for config in (configs / "snli_esim.jsonnet", snli):  # the default: from scratch, built or not
        assert "pretrained_file" not in tokens(config) and tokens(config)["trainable"]
    assert (tokens(pretrained)["pretrained_file"], tokens(pretrained)["trainable"]) == (
        str(vectors),
        False,
    )
    assert missing_baseline_vectors(["SNLI_WORD_VECTORS"]) == {}
    monkeypatch.setenv("SNLI_WORD_VECTORS", "")  # asked for, but named as nothing: an error
    with pytest.raises(Exception, match="SNLI_WORD_VECTORS is empty"):
        tokens(pretrained)
    monkeypatch.setenv("SST_WORD_VECTORS", "/my/glove.txt")  # the user's own file: theirs
    assert missing_baseline_vectors(["SST_WORD_VECTORS"]) == {}
    sst = config_env.config_ext_vars(str(configs / "sst_bcn.jsonnet"))
    assert "SST_WORD_VECTORS" not in sst  # the environment's value is what jsonnet reads


def test_word_vectors_command_passes_its_options(corpus, tmp_path):
    from elmo_plugin.commands.elmo_word_vectors import ElmoWordVectors
    from tests.elmo_plugin.analysis.conftest import run_command

    out = tmp_path / "v.txt.gz"
    argv = ["elmo-word-vectors", corpus, str(out), "--dim", "6", "--lowercase", "--min-count", "20"]
    run_command(ElmoWordVectors, [*argv, "--max-vocab", "3", "--epochs", "1", "--seed", "2"])
    vectors = read_vectors(out)
    assert len(vectors) == 3 and all(len(v) == 6 for v in vectors.values())
    assert all(word == word.lower() for word in vectors)
    with pytest.raises(SystemExit, match="elmo-word-vectors: error: .*exists; not overwriting"):
        run_command(ElmoWordVectors, argv)
    run_command(ElmoWordVectors, [*argv, "--overwrite", "--dim", "4"])
    assert all(len(v) == 4 for v in read_vectors(out).values())


def test_config_variables_follow_imports_relative_and_absolute(tmp_path):
    """A sweep's run config imports its libsonnet by absolute path; a comment naming a variable
    is not a read."""
    from elmo_plugin.common.config_env import config_variables

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "task.libsonnet").write_text(
        '// reads SST_WORD_VECTORS below\n{ f: std.extVar("SST_WORD_VECTORS"), '
        'g: import "inner.libsonnet" }\n'
    )
    (tmp_path / "lib" / "inner.libsonnet").write_text('{ h: std.extVar( "SEED" ) }\n')
    run = tmp_path / "run.jsonnet"
    run.write_text(
        f'local t = import "{tmp_path / "lib" / "task.libsonnet"}";\n// SNLI_WORD_VECTORS\nt\n'
    )
    assert config_variables(str(run)) == {"SST_WORD_VECTORS", "SEED"}
    assert config_variables(str(tmp_path / "missing.jsonnet")) == set()
