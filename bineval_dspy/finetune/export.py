"""A trained peft LoRA adapter written as a GGUF LoRA file, the format llama.cpp applies to its base model.

Written by us with the ``gguf`` package: each adapted projection becomes ``<gguf tensor>.lora_a`` (A, rank x in)
and ``.lora_b`` (B, out x rank), with the adapter's alpha, so llama.cpp scales it by alpha / rank as peft does.
llama.cpp stores a llama model's query and key projections with their rows permuted for its rotary layout; their
B matrices get the same permutation, so B @ A lands on the weights as stored.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

# peft module path (inside model.layers.N) -> llama.cpp's tensor name (inside blk.N)
LLAMA_TENSORS = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
_KEY = re.compile(r"(?:^|\.)layers\.(\d+)\.(.+)\.lora_([AB])\.weight$")


def _rotary_rows(matrix: np.ndarray, heads: int) -> np.ndarray:
    """Rows reordered as llama.cpp's converter reorders a query or key projection's output rows."""
    shape = matrix.shape
    return matrix.reshape(heads, 2, shape[0] // heads // 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


def lora_tensors(state: dict[str, Any], config: Any) -> dict[str, np.ndarray]:
    """GGUF tensor name -> float32 array for every LoRA matrix of a llama model's peft state dict."""
    heads = {"attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads}
    out: dict[str, np.ndarray] = {}
    for key, tensor in state.items():
        match = _KEY.search(key)
        if match is None:
            raise ValueError(f"not a LoRA matrix of a decoder layer: {key}")
        layer, module, which = match.groups()
        if module not in LLAMA_TENSORS:
            raise ValueError(f"no llama.cpp tensor for the adapted module {module!r} (adapt one of {', '.join(LLAMA_TENSORS)})")
        name = LLAMA_TENSORS[module]
        array = tensor.detach().float().cpu().numpy()
        if which == "B" and name in heads:
            array = _rotary_rows(array, heads[name])
        out[f"blk.{layer}.{name}.weight.lora_{which.lower()}"] = np.ascontiguousarray(array, dtype=np.float32)
    return out


def write_gguf_adapter(model: Any, alpha: float, path: Path) -> Path:
    """Write ``model``'s (a peft model of a llama-architecture base) LoRA adapter to ``path`` as GGUF."""
    import gguf

    from bineval_dspy.core.quiet import quiet

    quiet("peft")
    from peft import get_peft_model_state_dict

    config = model.base_model.model.config
    if config.model_type != "llama":
        raise ValueError(f"exporting an adapter of a {config.model_type!r} model is not supported (llama only)")
    tensors = lora_tensors(get_peft_model_state_dict(model), config)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    writer = gguf.GGUFWriter(str(tmp), arch="llama")
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(alpha))
    for name, array in sorted(tensors.items()):
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(path)
    return path
