"""The embedded model is dequantized once a process, not once per training (half a minute each under load), and
every caller still gets a model of its own: training one leaves the next caller's weights as read."""

from __future__ import annotations

from pathlib import Path


def test_load_model_reads_the_gguf_once_and_gives_each_caller_its_own_weights(monkeypatch, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    from bineval_dspy.finetune import torch_model

    reads: list[str] = []

    def from_pretrained(folder, gguf_file, dtype):
        reads.append(gguf_file)
        config = LlamaConfig(
            vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2
        )
        config.quantization_config = {"quant_method": "gguf"}  # the marker Trainer refuses; the copy must drop it
        torch.manual_seed(0)
        return LlamaForCausalLM(config)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", from_pretrained)
    torch_model._read_weights.cache_clear()
    gguf = tmp_path / "small.gguf"
    try:
        first = torch_model.load_model(gguf)
        read = {name: tensor.clone() for name, tensor in first.state_dict().items()}
        with torch.no_grad():
            for parameter in first.parameters():
                parameter.add_(1.0)  # as training would
        second = torch_model.load_model(Path(gguf))
    finally:
        torch_model._read_weights.cache_clear()
    assert reads == ["small.gguf"]
    assert not hasattr(second.config, "quantization_config")
    assert all(torch.equal(second.state_dict()[name], tensor) for name, tensor in read.items())
    assert second is not first
