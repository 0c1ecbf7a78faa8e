"""One `PATH[START:END]` parser for the readers and the config hook (they disagreed: the hook took
`[-5:]` and `[1-2:]` for slices, the readers for part of the file name)."""

import pytest

from elmo_bilm.utils.files import FormatError
from elmo_plugin.common import config_env
from elmo_plugin.common.slices import slice_parts, split_slice
from elmo_plugin.tasks.snli.dataset_readers.snli import SnliTaskReader
from tests.conftest import DATA

CASES = {
    "d/test[:4912]": ("d/test", "[:4912]"),
    "d/test[4912:]": ("d/test", "[4912:]"),
    "d/test[2:7]": ("d/test", "[2:7]"),
    "d/test[:]": ("d/test", "[:]"),
    "d/test[-5:]": ("d/test", "[-5:]"),
    "d/test[1-2:]": ("d/test[1-2:]", ""),  # not a slice, for both
    "d/test": ("d/test", ""),
}


@pytest.mark.parametrize("value", CASES)
def test_the_readers_and_the_config_hook_split_a_path_alike(value):
    path, suffix = CASES[value]
    assert slice_parts(value) == (path, suffix)
    assert config_env._paths(value) == [path]
    assert config_env.absolute_paths(value) == config_env.absolute(path) + suffix
    if "-" not in suffix:
        assert split_slice(value)[0] == path


def test_a_negative_bound_is_named_by_the_reader():
    assert split_slice("d/test[2:7]") == ("d/test", 2, 7)
    with pytest.raises(FormatError, match="cannot be negative"):
        list(SnliTaskReader().read(str(DATA / "snli_eval" / "test[-5:]")))
