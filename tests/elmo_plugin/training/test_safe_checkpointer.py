import pytest
import torch


def _checkpoint(folder, epoch: int, batch: int) -> None:
    torch.save({"w": torch.full((64,), float(batch))}, folder / f"model_state_e{epoch}_b{batch}.th")
    torch.save({"epoch": epoch}, folder / f"training_state_e{epoch}_b{batch}.th")


def test_recover_skips_a_checkpoint_truncated_by_a_kill_and_allennlps_fails_on_it(tmp_path):
    """A run killed while writing its newest checkpoint leaves a truncated `model_state_*.th`:
    AllenNLP's checkpointer picks it and `--recover` fails; the plugin's moves it aside
    (`*.incomplete`, kept) and resumes from the newest complete one."""
    from allennlp.training.checkpointer import Checkpointer

    from elmo_plugin.training.safe_checkpointer import SafeCheckpointer

    _checkpoint(tmp_path, 0, 3)
    _checkpoint(tmp_path, 0, 6)
    newest = tmp_path / "model_state_e0_b6.th"
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])

    assert Checkpointer(str(tmp_path)).find_latest_checkpoint()[0] == str(newest)
    with pytest.raises(RuntimeError):
        Checkpointer(str(tmp_path)).load_checkpoint()

    loaded = SafeCheckpointer(str(tmp_path)).load_checkpoint()
    assert loaded is not None
    assert torch.equal(loaded.model_state["w"], torch.full((64,), 3.0))
    assert not newest.exists()
    assert (tmp_path / "model_state_e0_b6.th.incomplete").is_file()
