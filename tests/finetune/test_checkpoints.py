"""Resuming training: a checkpoint whose write a kill cut short is never the one resumed from."""

from __future__ import annotations

from bineval_dspy.finetune.train import last_complete_checkpoint


def _checkpoint(root, step, complete):
    folder = root / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    if complete:
        (folder / "trainer_state.json").write_text("{}")
    return folder


def test_the_newest_complete_checkpoint_is_resumed_and_a_cut_short_one_removed(tmp_path):
    root = tmp_path / "checkpoints"
    _checkpoint(root, 2, complete=True)
    ten = _checkpoint(root, 10, complete=True)
    cut = _checkpoint(root, 12, complete=False)
    assert last_complete_checkpoint(root) == ten  # 10 sorts after 2 by step, not by name
    assert not cut.exists()


def test_no_checkpoint_or_only_a_cut_short_one_means_training_starts_over(tmp_path):
    assert last_complete_checkpoint(tmp_path / "absent") is None
    root = tmp_path / "checkpoints"
    cut = _checkpoint(root, 2, complete=False)
    assert last_complete_checkpoint(root) is None and not cut.exists()
