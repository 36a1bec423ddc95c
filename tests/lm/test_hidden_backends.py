"""``HiddenStates`` through llama.cpp's quantized pass (backend "llama") against the torch reader on the dequantized
weights: the same tokens, the same pooled features within rounding, a gap close to torch's, and a cache of its own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bineval_dspy.core.errors import InputError
from bineval_dspy.judges.probe import INSTRUCTIONS, probe_text
from bineval_dspy.lm.hidden import HiddenStates, _encode, pool
from bineval_dspy.lm.specs import embedded_model_path

ARTICLE = "The city council voted on Tuesday to build a new library near the river, at a cost of 12 million dollars."
SUMMARY = "The council approved a 12 million dollar library by the river."
QUESTIONS = ("Is every number in the summary the same as in the article?", "Does the summary state the main event?")


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def test_the_backend_is_part_of_the_key_and_torchs_key_is_unchanged(tmp_path: Path) -> None:
    torch = HiddenStates(tmp_path / "m.gguf", "local/test", None)
    llama = HiddenStates(tmp_path / "m.gguf", "local/test", None, backend="llama")
    spans = {"output": (3, 9)}
    assert torch.key("p", spans) != llama.key("p", spans)
    # the key readers had before there was a backend: their caches stay valid
    from bineval_dspy.core.fingerprint import digest
    from bineval_dspy.lm.hidden import FORMAT

    assert torch.key("p", spans) == digest(f"{FORMAT}\nlocal/test\n[[\"output\", [3, 9]]]\np")
    with pytest.raises(InputError, match="backend 'onnx'"):
        HiddenStates(tmp_path / "m.gguf", "local/test", None, backend="onnx")  # type: ignore[arg-type]


def test_a_pooled_reading_does_not_change_when_its_buffer_is_written_again() -> None:
    buffer = np.ones((3, 5, 4), np.float32)
    pooled = pool(buffer[:, :4], {"output": (1, 3)})
    buffer[:] = 7  # the torch walk's next branch writes the same positions
    assert (pooled["last"] == 1).all() and (pooled["output"] == 1).all()


@pytest.mark.embedded
def test_llama_readings_agree_with_torch_readings(tmp_path: Path) -> None:
    gguf = embedded_model_path()
    llama = HiddenStates(gguf, "local/test", tmp_path, backend="llama")
    torch = HiddenStates(gguf, "local/test", tmp_path)
    texts = [probe_text(llama.tokenizer(), INSTRUCTIONS, ARTICLE, SUMMARY, q) for q in QUESTIONS]
    tokens, _ = _encode(llama.tokenizer(), *texts[0])
    assert tokens == llama._llama_states().tokenize(texts[0][0])  # the ids llama.cpp would parse from the text
    prompts, spans = [t for t, _ in texts], [s for _, s in texts]
    ours = llama.read(prompts, spans)
    theirs = torch.read(prompts, spans)
    assert llama.computed == 2 and torch.computed == 2  # one cache file, two keys: neither read the other's
    for a, b in zip(ours, theirs):
        assert set(a.pooled) == set(b.pooled) == {"output", "question"}
        for pooling in ("last", "output", "question"):
            cos = _cosine(a.states(pooling), b.states(pooling))
            assert not np.isnan(a.states(pooling)).any() and cos.min() > 0.99, (pooling, cos.min())
        assert abs(a.gap - b.gap) < 0.5, (a.gap, b.gap)
    again = HiddenStates(gguf, "local/test", tmp_path, backend="llama").read(prompts, spans)
    assert [r.gap for r in again] == [r.gap for r in ours]  # cached: computed nothing
