"""States read from llama.cpp's own forward pass (``lm.llama_states``) against the torch reader on the dequantized
weights: every layer in its place (closer to its torch twin than to either neighbour), the same next token, the
shared prefix reused without changing a number that matters, and an engine beside it generating as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dspy.lm15 import Config, Message, Request

from bineval_dspy.judges.probe import INSTRUCTIONS, probe_prompt
from bineval_dspy.lm.llama_states import CHUNK, LlamaStates
from bineval_dspy.lm.specs import embedded_model_path

pytestmark = pytest.mark.embedded

ARTICLE = "The city council voted on Tuesday to build a new library near the river, at a cost of 12 million dollars."
SUMMARY = "The council approved a 12 million dollar library by the river."
QUESTIONS = ("Is every number in the summary the same as in the article?", "Does the summary state the main event?")


@pytest.fixture(scope="module")
def gguf() -> Path:
    return embedded_model_path()


@pytest.fixture(scope="module")
def states(gguf: Path) -> LlamaStates:
    return LlamaStates(gguf)


@pytest.fixture(scope="module")
def torch_model(gguf: Path):
    from bineval_dspy.lm.hidden import _loaded

    return _loaded(gguf)


def _prompt(tokenizer, question: str) -> str:
    return probe_prompt(tokenizer, INSTRUCTIONS, ARTICLE, SUMMARY, question)


def _torch_states(torch_model, text: str) -> tuple[np.ndarray, np.ndarray]:
    import torch

    model, tokenizer, _, _ = torch_model
    ids = tokenizer(text, add_special_tokens=False).input_ids
    with torch.inference_mode():
        result = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
    return torch.stack([h[0] for h in result.hidden_states]).float().numpy(), result.logits[0, -1].float().numpy()


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def test_every_layer_is_its_torch_twin_and_not_a_neighbour(states, torch_model):
    text = _prompt(torch_model[1], QUESTIONS[0])
    tokens = states.tokenize(text)
    assert tokens == torch_model[1](text, add_special_tokens=False).input_ids  # the same ids from the same text
    ours, logits = states.states(tokens)
    theirs, torch_logits = _torch_states(torch_model, text)
    assert ours.shape == theirs.shape == (states.depth() + 1, len(tokens), 576)
    last = _cosine(ours[:, -1], theirs[:, -1])
    # measured: 0.9997-1.0 per layer (Q4_1 against its float32 dequantization); neighbouring layers reach 0.99
    assert last.min() > 0.998, last
    for layer in range(len(last)):
        neighbours = [_cosine(ours[layer, -1], theirs[other, -1]) for other in (layer - 1, layer + 1) if 0 <= other < len(last)]
        assert last[layer] > max(neighbours), (layer, last[layer], neighbours)
    every_token = _cosine(ours[:-1], theirs[:-1])  # the final layer is at the last token only (the cheap default)
    assert every_token.min() > 0.995, every_token.min()
    assert np.isnan(ours[-1, :-1]).all() and not np.isnan(ours[:-1]).any()
    assert int(np.argmax(logits)) == int(np.argmax(torch_logits))


def test_the_shared_prefix_is_reused_and_gives_the_states_a_fresh_read_gives(states, torch_model, gguf):
    first, second = (states.tokenize(_prompt(torch_model[1], q)) for q in QUESTIONS)
    shared = next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)
    states.states(first)
    before = states.evaluated
    tail, logits = states.states(second, shared)
    assert states.evaluated - before == len(second) - shared  # only the question's tail was evaluated
    fresh = LlamaStates(gguf)
    try:
        alone, alone_logits = fresh.states(second, shared)
    finally:
        fresh.close()
    assert tail.shape == alone.shape == (states.depth() + 1, len(second) - shared, 576)
    # continued from cells or evaluated whole: one reading (measured 0.9995 at worst: the batch shapes round apart),
    # and each row in its place (a row against its neighbour's twin falls far below)
    assert _cosine(tail[:-1], alone[:-1]).min() > 0.999
    assert _cosine(tail[:-1, 1:], alone[:-1, :-1]).min() < 0.99
    assert int(np.argmax(logits)) == int(np.argmax(alone_logits))


def test_every_output_fills_the_final_layer_and_does_not_trust_a_cheap_prefix(states, torch_model):
    text = _prompt(torch_model[1], QUESTIONS[1])
    tokens = states.tokenize(text)
    states.states(tokens)  # cheap: the kept prefix's final layer is NaN
    before = states.evaluated
    full, _ = states.states(tokens, every_output=True)
    assert states.evaluated - before == len(tokens)  # read again, every position producing its final state
    assert not np.isnan(full).any()
    theirs, _ = _torch_states(torch_model, text)
    assert _cosine(full[-1], theirs[-1]).min() > 0.995


def test_a_prompt_longer_than_one_chunk_is_read_across_chunks(states, torch_model):
    text = _prompt(torch_model[1], QUESTIONS[0]).replace(ARTICLE, " ".join([ARTICLE] * 30))
    tokens = states.tokenize(text)
    assert len(tokens) > CHUNK
    ours, logits = states.states(tokens, first=CHUNK - 4)
    theirs, torch_logits = _torch_states(torch_model, text)
    assert ours.shape[1] == len(tokens) - CHUNK + 4 and not np.isnan(ours[:-1]).any()
    assert np.isnan(ours[-1, :-1]).all()  # the first chunk's last row (a logits row llama.cpp asked) is not kept
    assert _cosine(ours[:-1], theirs[:-1, CHUNK - 4 :]).min() > 0.995
    assert int(np.argmax(logits)) == int(np.argmax(torch_logits))


def test_a_position_outside_the_prompt_is_refused(states):
    with pytest.raises(ValueError, match="positions 5.. of a prompt of 3 tokens"):
        states.states([1, 2, 3], 5)
    with pytest.raises(ValueError):
        states.states([])


def test_the_llama_backend_gives_the_torch_readers_gap_and_states(gguf, torch_model):
    """Prompts without spans: one shared context, the tails side by side (``last_states``), through the library."""
    from bineval_dspy.lm.hidden import HiddenStates

    reader = HiddenStates(gguf, "local/test", backend="llama")
    prompts = [_prompt(reader.tokenizer(), q) for q in QUESTIONS]
    ours = reader.read(prompts)
    theirs = HiddenStates(gguf, "local/test").read(prompts)
    assert reader.computed == 2 and [r.hidden.shape for r in ours] == [r.hidden.shape for r in theirs]
    for a, b in zip(ours, theirs):
        assert _cosine(a.hidden, b.hidden).min() > 0.998
        assert abs(a.gap - b.gap) < 0.5, (a.gap, b.gap)


def test_an_engine_beside_the_reader_generates_as_before(gguf, states, torch_model):
    from bineval_dspy.lm.llama_engine import LlamaCppEngine

    engine = LlamaCppEngine(gguf, batching=False)
    request = Request(model="local/test", messages=(Message.user("Name a colour."),), config=Config(temperature=0.0, max_tokens=12))
    before = engine.complete(request)
    states.states(states.tokenize(_prompt(torch_model[1], QUESTIONS[0])))
    after = engine.complete(request)
    assert after.message.text == before.message.text and after.message.text


def test_tails_side_by_side_read_what_one_at_a_time_reads(states, torch_model):
    prompts = [states.tokenize(_prompt(torch_model[1], q)) for q in (*QUESTIONS, "Is the summary short?")]
    shared = min(next(i for i, (a, b) in enumerate(zip(prompts[0], p)) if a != b) for p in prompts[1:])
    before = states.evaluated
    together = states.last_states(prompts)
    assert states.evaluated - before <= shared + sum(len(p) - shared for p in prompts)  # the context once at most
    alone = [states.states(p, len(p) - 1) for p in prompts]
    for (a, a_logits), (b, b_logits) in zip(together, alone):
        assert a.shape == (states.depth() + 1, 576)
        assert _cosine(a, b[:, -1]).min() > 0.999  # measured 0.9996 at worst: batch shapes round apart
        assert int(np.argmax(a_logits)) == int(np.argmax(b_logits))
    assert _cosine(together[0][0], alone[1][0][:, -1]).min() < 0.99  # each reading is its own prompt's
    again = states.last_states(prompts)  # the side sequences were dropped: a second pass reads the same
    assert all(_cosine(a, b).min() > 0.9999 for (a, _), (b, _) in zip(together, again))
