"""Resuming training and reusing its adapter: a checkpoint or a record that a kill cut short or the disk damaged is
never resumed from or trusted, and an adapter is reused only while it is the very file its training recorded."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from safetensors.numpy import save_file

from bineval_dspy.finetune.train import last_complete_checkpoint


def _checkpoint(root, step, complete):
    folder = root / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    save_file({"lora_A": np.ones((8, 64), dtype=np.float32)}, str(folder / "adapter_model.safetensors"))
    with zipfile.ZipFile(folder / "optimizer.pt", "w") as archive:  # torch.save writes a zip archive
        archive.writestr("optimizer/data.pkl", b"state" * 100)
    if complete:
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
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


@pytest.mark.parametrize("damaged", ["trainer_state.json", "adapter_model.safetensors", "optimizer.pt"])
def test_a_checkpoint_with_a_torn_file_is_discarded_for_the_last_whole_one(tmp_path, capsys, damaged):
    """Issue 46, item 7: a torn state file (JSONDecodeError) or a cut adapter (SafetensorError) was resumed from."""
    root = tmp_path / "checkpoints"
    two = _checkpoint(root, 2, complete=True)
    four = _checkpoint(root, 4, complete=True)
    data = (four / damaged).read_bytes()
    (four / damaged).write_bytes(data[: len(data) // 2])
    assert last_complete_checkpoint(root) == two
    assert not four.exists() and f"discarding checkpoint-4: {damaged} is torn" in capsys.readouterr().err.replace("\n", "")


class _Render:
    def fits(self, row, columns, max_length):
        return True


def test_an_adapter_is_reused_only_while_it_is_the_file_its_training_recorded(tmp_path, monkeypatch, capsys):
    """Issue 46, items 4 and 7: a damaged adapter was reused and blessed with its new digest; a torn trained.json was
    a JSONDecodeError on every rerun. Each now trains again (resuming from the last checkpoint) and exports anew."""
    from bineval_dspy.core.fingerprint import sha256_of
    from bineval_dspy.core.jsonio import write_json
    from bineval_dspy.finetune import train
    from bineval_dspy.finetune.optimizer import BinEvalFinetune

    exports = []

    def trained_again(method, rows, base, settings, folder):  # what train_adapter leaves: the adapter, then its record
        exports.append(len(rows))
        (folder / train.ADAPTER_FILE).write_bytes(b"GGUF adapter %d" % len(exports))
        report = train.TrainingReport(
            method=method, examples=len(rows), steps=1, first_loss=1.0, last_loss=0.5, seconds=1.0, peak_memory_mb=1.0, threads=1,
            adapter_sha256=sha256_of(folder / train.ADAPTER_FILE),
        )
        write_json(folder / train.TRAINED_FILE, report.model_dump())
        return report

    monkeypatch.setattr(train, "train_adapter", trained_again)
    tuner = BinEvalFinetune(run_dir=tmp_path, base="smollm2")
    tuner.data = [{"prompt": "p", "completion": "c", "source": {}}]
    tuner.folder.mkdir()
    adapter, record = tuner.folder / train.ADAPTER_FILE, tuner.folder / train.TRAINED_FILE
    first = tuner._train(tmp_path / "base.gguf", "state", _Render())  # type: ignore[arg-type]
    tuner._train(tmp_path / "base.gguf", "state", _Render())  # type: ignore[arg-type]
    assert exports == [1] and "reusing the adapter" in capsys.readouterr().err

    adapter.write_bytes(b"GGUF adaptor 1")  # flipped bytes
    report = tuner._train(tmp_path / "base.gguf", "state", _Render())  # type: ignore[arg-type]
    assert exports == [1, 1] and "sha256 differs" in capsys.readouterr().err.replace("\n", "")
    assert report.adapter_sha256 == sha256_of(adapter) != first.adapter_sha256

    record.write_bytes(record.read_bytes()[:60])  # a record cut short
    tuner._train(tmp_path / "base.gguf", "state", _Render())  # type: ignore[arg-type]
    assert exports == [1, 1, 1] and "trained.json:5: malformed JSON" in capsys.readouterr().err.replace("\n", "")

    tuner._train(tmp_path / "base.gguf", "another state", _Render())  # type: ignore[arg-type]
    said = "".join(capsys.readouterr().err.split())  # the console wraps a long path anywhere
    assert exports == [1, 1, 1, 1] and "training.key:madewithothersettings;redoingit" in said  # other data: trained anew, said


@pytest.mark.embedded
def test_a_full_disk_while_training_is_one_located_line_and_the_rerun_resumes(tmp_path, monkeypatch):
    """Issue 46, item 8: a checkpoint write past the disk's end (RLIMIT_FSIZE: a real short write, then EFBIG, as a
    full disk) was a traceback from the tokenizer's writer; now one line naming the folder, and with space again the
    rerun discards the cut checkpoint and trains. The real trainer and writers, on a two-layer model of the
    embedded model's vocabulary (the weights do not matter here, the writes do)."""
    import resource
    import signal

    from transformers import LlamaConfig, LlamaForCausalLM

    from bineval_dspy.core.errors import InputError
    from bineval_dspy.finetune import torch_model
    from bineval_dspy.finetune.settings import FinetuneSettings
    from bineval_dspy.finetune.train import train_adapter
    from bineval_dspy.lm.specs import embedded_model_path

    gguf = embedded_model_path("smollm2")
    tokenizer = torch_model.load_tokenizer(gguf)

    def small_model(_):
        config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2)
        model = LlamaForCausalLM(config)
        model.generation_config.pad_token_id = tokenizer.eos_token_id
        return model

    monkeypatch.setattr(torch_model, "load_model", small_model)
    rows = [{"prompt": "Say hi.", "completion": "Hi." + tokenizer.eos_token}] * 2
    settings = FinetuneSettings(max_steps=2, batch_size=1, save_steps=1, max_length=64)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, hard))  # below the checkpoint's tokenizer.json (3.5 MB)
    try:
        with pytest.raises(InputError) as failed:
            train_adapter("sft", rows, gguf, settings, tmp_path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    message = str(failed.value)
    assert message.startswith(f"{tmp_path / 'checkpoints'}: cannot write (") and "File too large" in message and "\n" not in message
    assert not (tmp_path / "checkpoints" / "checkpoint-1" / "trainer_state.json").exists()
    report = train_adapter("sft", rows, gguf, settings, tmp_path)  # space again
    assert report.steps == 2 and (tmp_path / "adapter.gguf").is_file()
