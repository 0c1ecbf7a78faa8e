"""Hub names are checked before they reach `huggingface_hub` (which writes a revision into its
cache unchecked): no revision with a '..' part, no repository id outside the Hub's characters;
each is one line naming the name (a UsageError), never a write outside the cache."""

from pathlib import Path

import pytest

from elmo_bilm.sources.hub import parse_hub_id
from elmo_bilm.sources.resolver import resolve_bilm
from elmo_bilm.utils.files import UsageError


@pytest.mark.parametrize(
    "name",
    [
        "hf://org/repo@../../../../victim",
        "hf://org/repo@main/../../x",
        "hf://org/repo@/abs",
        "hf://org/repo@0123456789abcdef..",
        "hf://../..",
        "hf://a b/c",
        "hf://org/re po",
        "hf://org/..",
    ],
)
def test_a_hostile_hub_name_is_one_usage_error(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(UsageError, match="hf://"):
        parse_hub_id(name)
    with pytest.raises(UsageError):
        resolve_bilm(name)
    assert not (tmp_path / "hf").exists()  # nothing written


def test_branches_tags_and_commits_pass() -> None:
    assert parse_hub_id("hf://org/repo@v1.0") == ("org/repo", "v1.0")
    assert parse_hub_id("hf://org/repo@refs/pr/1") == ("org/repo", "refs/pr/1")
    commit = "0123456789abcdef0123456789abcdef01234567"
    assert parse_hub_id(f"hf://org/repo@{commit}") == ("org/repo", commit)
