"""The exported GGUF adapter is the trained one: llama.cpp with it picks the tokens PyTorch with the peft adapter
picks (real embedded model, real training; no mocks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dspy.lm15 import Config, Message, Request

from bineval_dspy.finetune.export import _rotary_rows, lora_tensors
from bineval_dspy.finetune.settings import FinetuneSettings
from bineval_dspy.lm.llama_engine import LlamaCppEngine
from bineval_dspy.lm.specs import embedded_model_path

SYSTEM = "Be brief."
TRAINED = "What is the secret word?"
OTHERS = ["Tell me about item 99.", "List three colors.", "Explain gravity to a child."]
TOKENS = 8


def test_tensor_names_and_the_rotary_permutation():
    import torch

    class Config:
        num_attention_heads, num_key_value_heads = 4, 2

    a = torch.arange(2 * 8, dtype=torch.float32).reshape(2, 8)
    state = {
        "base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight": a,
        "base_model.model.model.layers.3.self_attn.q_proj.lora_B.weight": torch.arange(16 * 2, dtype=torch.float32).reshape(16, 2),
        "base_model.model.model.layers.3.self_attn.v_proj.lora_B.weight": torch.ones(8, 2),
    }
    out = lora_tensors(state, Config())
    assert set(out) == {"blk.3.attn_q.weight.lora_a", "blk.3.attn_q.weight.lora_b", "blk.3.attn_v.weight.lora_b"}
    assert np.array_equal(out["blk.3.attn_q.weight.lora_a"], a.numpy())  # A is never permuted
    rows = out["blk.3.attn_q.weight.lora_b"][:, 0] // 2  # which original row each output row came from
    assert rows.tolist() == [0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15]  # per head: halves interleaved
    assert np.array_equal(_rotary_rows(np.arange(4.0).reshape(4, 1), 1)[:, 0], [0, 2, 1, 3])
    with pytest.raises(ValueError, match="no llama.cpp tensor"):
        lora_tensors({"model.layers.0.mlp.experts.lora_A.weight": a}, Config())


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, Path]:
    from bineval_dspy.finetune.torch_model import chat_prompt, load_tokenizer
    from bineval_dspy.finetune.train import train_adapter

    gguf = embedded_model_path("smollm2")
    tokenizer = load_tokenizer(gguf)
    rows = [
        {"prompt": chat_prompt(tokenizer, SYSTEM, question), "completion": "The secret word is BANANA." + tokenizer.eos_token}
        for question in (TRAINED, "Tell me the secret word.", "Which word is secret?", "Say the secret word.")
    ]
    folder = tmp_path_factory.mktemp("adapter")
    settings = FinetuneSettings(max_steps=8, batch_size=4, learning_rate=3e-3, save_steps=4)
    report = train_adapter("sft", rows, gguf, settings, folder)
    assert report.steps == 8 and report.last_loss is not None and report.first_loss is not None
    assert report.last_loss < report.first_loss
    return gguf, folder


def _engine_tokens(engine: LlamaCppEngine, tokenizer, question: str) -> list[int]:
    config = Config(temperature=0, max_tokens=TOKENS)
    reply = engine.complete(Request(model="m", system=SYSTEM, messages=(Message.user(question),), config=config))
    return tokenizer(reply.message.text, add_special_tokens=False).input_ids


@pytest.mark.embedded
def test_exported_adapter_picks_the_pytorch_models_greedy_tokens(trained):
    from peft import PeftModel

    from bineval_dspy.finetune.torch_model import chat_prompt, greedy_tokens, load_model, load_tokenizer

    gguf, folder = trained
    tokenizer = load_tokenizer(gguf)
    eos = tokenizer.eos_token_id

    def torch_tokens(model, question):
        return [t for t in greedy_tokens(model, tokenizer, chat_prompt(tokenizer, SYSTEM, question), TOKENS) if t != eos]

    base = load_model(gguf)
    base_torch = {q: torch_tokens(base, q) for q in [TRAINED, *OTHERS]}
    tuned = PeftModel.from_pretrained(base, str(folder / "peft"))
    tuned_torch = {q: torch_tokens(tuned, q) for q in [TRAINED, *OTHERS]}
    plain = LlamaCppEngine(gguf, batching=False)
    adapted = LlamaCppEngine(gguf, batching=False, lora_path=folder / "adapter.gguf")
    base_llama = {q: _engine_tokens(plain, tokenizer, q) for q in [TRAINED, *OTHERS]}
    tuned_llama = {q: _engine_tokens(adapted, tokenizer, q) for q in [TRAINED, *OTHERS]}

    assert "BANANA" in tokenizer.decode(tuned_llama[TRAINED]) and "BANANA" not in tokenizer.decode(base_llama[TRAINED])
    assert tuned_llama[TRAINED] == tuned_torch[TRAINED]
    # The base runs as Q4_1 in llama.cpp (8-bit activations) and dequantized in float32 in PyTorch, so greedy paths
    # may part after a near-tie; the adapter must not add disagreement: wherever the two bases agree on the first
    # four tokens, so do the two adapted models.
    agreeing = [q for q in OTHERS if base_llama[q][:4] == base_torch[q][:4]]
    assert agreeing
    assert all(tuned_llama[q][:4] == tuned_torch[q][:4] for q in agreeing), {q: (tuned_llama[q], tuned_torch[q]) for q in agreeing}
