"""The embedded GGUF model in PyTorch, for training: dequantized by transformers, in a trainable copy.

transformers reads GGUF but marks such a model as quantized, and its ``Trainer`` (so trl's) refuses to train it; a
plain model built from the same config without that marker, given the same weights, trains. Prompts are rendered
with the GGUF's own chat template, as the embedded engine renders them, so training sees the tokens inference sees.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from bineval_dspy.core.quiet import quiet


def set_threads() -> int:
    """Use every core this process may run on (torch's default can be fewer)."""
    import torch

    from bineval_dspy.core.cores import usable_cores

    cores = usable_cores()
    torch.set_num_threads(cores)
    return cores


def load_tokenizer(gguf: Path) -> Any:
    """The GGUF's tokenizer, read from the file once a process (seconds each time); every caller gets its own copy,
    since a trainer sets padding on the one it is given."""
    return copy.deepcopy(_read_tokenizer(gguf))


@functools.cache
def _read_tokenizer(gguf: Path) -> Any:
    quiet("transformers")  # offline, and none of its advice or loading bars on a command's stderr
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def load_model(gguf: Path) -> Any:
    """A trainable float32 copy of the GGUF model (see the module docstring for why a copy); a fresh one each call,
    built from weights dequantized once a process (half a minute each time), so a caller may train it freely."""
    import torch

    quiet("transformers")
    from transformers import AutoModelForCausalLM

    config, state = _read_weights(gguf)
    model = AutoModelForCausalLM.from_config(copy.deepcopy(config), dtype=torch.float32)
    model.load_state_dict(state)  # copies into the model's own tensors: the cached ones stay as read
    model.generation_config.pad_token_id = model.generation_config.eos_token_id
    return model


@functools.cache
def _read_weights(gguf: Path) -> tuple[Any, dict[str, Any]]:
    """The GGUF's config (without its quantized marker) and its float32 weights, read from the file once a process."""
    import torch

    quiet("transformers")
    from transformers import AutoModelForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    config = copy.deepcopy(loaded.config)  # not read from the file again: parsing a GGUF takes seconds
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    return config, dict(loaded.state_dict())


def chat_prompt(tokenizer: Any, instructions: str, prompt: str) -> str:
    """The text the embedded engine feeds the model for this system and user message, ready for the reply."""
    messages = [{"role": "system", "content": instructions}] if instructions else []
    messages.append({"role": "user", "content": prompt})
    return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))


def greedy_tokens(model: Any, tokenizer: Any, text: str, n: int) -> list[int]:
    """The first ``n`` greedy tokens after ``text`` (tokenized as the engine does: no BOS added, specials parsed)."""
    import torch

    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=n, do_sample=False)
    return [int(t) for t in out[0, ids.shape[1] :]]
