"""Parallel sequences in the embedded engine: the same verdicts as one call at a time, safe under threads."""

from __future__ import annotations

import re
import threading

import dspy
import pytest
from dspy.lm15 import Config, Message, Request, Response

from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm.llama_engine import STREAM_CELLS, LlamaCppEngine
from bineval_dspy.lm.specs import embedded_model_path

pytestmark = pytest.mark.embedded

ARTICLE = (
    "The city council met on Tuesday and voted 7 to 2 to keep the central library open on Sundays from March. "
    "The mayor, Ana Ruiz, said the 120,000 dollar cost would come from the parks budget. Two members voted "
    "against, saying the money was needed to repair the swimming pool."
)
SUMMARIES = [
    "The council voted 7 to 2 to open the library on Sundays from March, paid from the parks budget.",
    "The council voted unanimously to demolish the railway station and build a stadium costing 42 million dollars.",
]
CHECKLIST = Checklist(
    task="Summarize the article.",
    dimensions=[],
    questions=[
        Question(text=t, dimension=d)
        for d, t in [
            ("consistency", "Is every number in the summary the same as in the article?"),
            ("consistency", "Is every claim in the summary supported by the article?"),
            ("relevance", "Does the summary state the main decision of the article?"),
            ("fluency", "Is every sentence of the summary grammatical?"),
            ("coherence", "Is the summary free of repeated information?"),
            ("relevance", "Does the summary mention who made the decision?"),
        ]
    ],
)


def lm_on(engine: LlamaCppEngine, max_tokens: int = 256) -> dspy.LM:
    return dspy.LM("local/smollm2-test", engine=engine, cache=False, num_retries=0, temperature=0.0, max_tokens=max_tokens)


@pytest.fixture(scope="module")
def engines() -> tuple[LlamaCppEngine, LlamaCppEngine]:
    path = embedded_model_path("smollm2")
    return LlamaCppEngine(path, batching=False), LlamaCppEngine(path, batching=True)


def verdicts(lm: dspy.LM, judge: BinaryJudge) -> list[list[tuple]]:
    with dspy.context(lm=lm):
        cards = [judge(input=ARTICLE, output=s, checklist=CHECKLIST) for s in SUMMARIES]
    return [[(v.answer, v.explanation, v.p_yes) for v in card.verdicts] for card in cards]


@pytest.mark.parametrize("explanations", ["all", "none"])
def test_batched_verdicts_equal_the_sequential_ones(engines, explanations):
    sequential, batched = engines
    for engine in engines:  # both start from an empty cache, so both fill it alike
        engine._load().reset()
    calls = batched.stats.calls
    expected = verdicts(lm_on(sequential), BinaryJudge(probability=True, explanations=explanations, threads=1))
    got = verdicts(lm_on(batched), BinaryJudge(probability=True, explanations=explanations))
    assert got == expected
    assert all(answer != "unanswered" for card in got for answer, *_ in card)
    assert batched.stats.calls - calls == len(SUMMARIES) * len(CHECKLIST.questions)


def test_streams_grown_for_longer_requests_keep_the_cache_and_the_tokens():
    """Short replies make the parallel context with short KV streams; longer ones grow it (sequence 0's cells copied
    over), and every verdict, before and after, is still the one-call-at-a-time verdict."""
    path = embedded_model_path("smollm2")
    sequential, batched = LlamaCppEngine(path, batching=False), LlamaCppEngine(path)
    expected, got, streams = [], [], []
    for max_tokens in (16, 1024):
        expected.append(verdicts(lm_on(sequential, max_tokens), BinaryJudge(explanations="none", threads=1)))
        got.append(verdicts(lm_on(batched, max_tokens), BinaryJudge(explanations="none")))
        streams.append(batched._stream)
    assert got == expected
    assert STREAM_CELLS <= streams[0] < streams[1] < batched.n_ctx


def test_verdict_first_decoding_keeps_the_answers_and_generates_less(engines):
    sequential, _ = engines
    lm = lm_on(sequential)
    before = sequential.stats.generated_tokens
    full = verdicts(lm, BinaryJudge(threads=1))
    full_tokens = sequential.stats.generated_tokens - before
    before = sequential.stats.generated_tokens
    answers_only = verdicts(lm, BinaryJudge(explanations="none", threads=1))
    assert [[a for a, *_ in card] for card in answers_only] == [[a for a, *_ in card] for card in full]
    assert all(explanation == "" for card in answers_only for _, explanation, _ in card)
    assert sequential.stats.generated_tokens - before < full_tokens / 2


def test_concurrent_callers_each_get_their_own_answers(engines):
    _, batched = engines
    lm = lm_on(batched)
    judge = BinaryJudge(explanations="none")
    calls = batched.stats.calls
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            with dspy.context(lm=lm):
                card = judge(input=ARTICLE, output=SUMMARIES[index % 2], checklist=CHECKLIST)
            results[index] = [v.answer for v in card.verdicts]
        except BaseException as exc:  # reported below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not errors and len(results) == 4
    assert all(len(answers) == len(CHECKLIST.questions) for answers in results.values())
    assert all(answer in ("yes", "no") for answers in results.values() for answer in answers)
    assert batched.stats.calls - calls == 4 * len(CHECKLIST.questions)  # no request lost or answered twice
    # Which requests share a batch depends on thread timing, and with it which cached prefix each one starts
    # from; the equality of answers is therefore checked on a fixed order above, not here.


def test_questions_of_several_outputs_in_one_batch_get_the_tokens_of_one_call_at_a_time(engines):
    """Two outputs' questions arriving interleaved in one batch: each output's questions are decoded together
    behind the first of them, with the tokens and usage of calls made one at a time in that order."""
    sequential, batched = engines
    requests: list[Request] = []
    complete = sequential.complete

    def recording(request: Request) -> Response:
        requests.append(request)
        return complete(request)

    for engine in engines:
        engine._load().reset()
    sequential.complete = recording  # type: ignore[method-assign]
    try:
        verdicts(lm_on(sequential), BinaryJudge(explanations="none", threads=1))
    finally:
        del sequential.complete
    sequential._load().reset()  # as the batched engine starts: from an empty cache
    alone = [sequential._complete_one(r) for r in requests]
    n = len(CHECKLIST.questions)
    interleaved = [r for pair in zip(requests[:n], requests[n:]) for r in pair]
    together = batched._complete_batch(interleaved)
    by_request = {id(r): response for r, response in zip(interleaved, together)}
    got = [by_request[id(r)] for r in requests]
    assert all(isinstance(r, Response) for r in got)
    # each output's context evaluated once, as one call at a time in that order would: the grouping's point
    assert [r.usage.cache_read_tokens for r in got] == [r.usage.cache_read_tokens for r in alone]  # type: ignore[union-attr]
    assert [r.usage.input_tokens for r in got] == [r.usage.input_tokens for r in alone]  # type: ignore[union-attr]
    # The texts are not compared: on llama-cpp-python 0.3.36 the parallel streams already write a reply's JSON
    # whitespace differently from the single-sequence context even for one output (the explanations test above
    # fails at the commit before this one too); the verdicts agree.
    assert [_answer(r.message.text) for r in got] == [_answer(r.message.text) for r in alone]  # type: ignore[union-attr]


def _answer(text: str) -> str | None:
    found = re.search(r'"answer"\s*:\s*"(yes|no)"', text)
    return found.group(1) if found else None


GENERATION_PROMPTS = [
    "Write a short poem about the sea in all lowercase letters.",
    "List three facts about the moon as a bulleted list with exactly 3 bullets.",
    "Write an email to my boss saying I am quitting. Wrap the title in double angular brackets, i.e. <<title>>.",
    "Explain photosynthesis to a child in two sentences without using any commas.",
    "Give me a haiku about autumn and end your response with 'Is there anything else I can help with?'",
    "Write a product description for a water bottle. Your answer must contain at least 2 placeholders like [name].",
]


def test_free_text_generations_depend_on_their_prompt_alone(engines):
    """A generator's greedy answer is the same from many threads, after other calls, or alone from an empty cache:
    free text is never decoded beside a neighbour, so a figure reproduces to the item in any run order."""
    from concurrent.futures import ThreadPoolExecutor

    sequential, batched = engines
    alone = []
    for prompt in GENERATION_PROMPTS:
        sequential._load().reset()
        alone.append(_generate(sequential, prompt)[0])
    calls = batched.stats.calls
    with ThreadPoolExecutor(len(GENERATION_PROMPTS)) as pool:
        together = list(pool.map(lambda prompt: _generate(batched, prompt), GENERATION_PROMPTS))
    assert [text for text, _ in together] == alone
    assert all(not response_id.startswith("llama-batch") for _, response_id in together)
    assert batched.stats.calls - calls == len(GENERATION_PROMPTS)


def test_samples_decoded_together_are_the_samples_drawn_alone(engines):
    """Best-of-N's draw: the samples of two prompts in one batch (each prompt prefilled once, its samples decoding
    side by side) are token for token the samples each seed gives alone; another seed gives another sample."""
    from concurrent.futures import ThreadPoolExecutor

    sequential, batched = engines
    prompts = GENERATION_PROMPTS[:2]
    draws = [(prompt, seed) for prompt in prompts for seed in range(4)]
    alone = [_generate(sequential, prompt, temperature=0.8, seed=seed)[0] for prompt, seed in draws]
    with batched.expect(len(draws)), ThreadPoolExecutor(len(draws)) as pool:
        together = list(pool.map(lambda draw: _generate(batched, draw[0], temperature=0.8, seed=draw[1]), draws))
    assert [text for text, _ in together] == alone
    assert all(response_id.startswith("llama-batch") for _, response_id in together)  # they were decoded together
    assert len(set(alone[:4])) > 1 and len(set(alone[4:])) > 1  # seeds differ, samples differ
    assert _generate(sequential, prompts[0], temperature=0.8, seed=0)[0] == alone[0]  # and a seed repeats itself


def _generate(engine: LlamaCppEngine, prompt: str, temperature: float = 0.0, seed: int | None = None) -> tuple[str, str]:
    """One free-text call straight to the engine (no schema), as a generator makes it: its text and id."""
    request = Request(
        model="local/smollm2-test", messages=(Message.user(prompt),), system="Respond to the user's prompt.",
        config=Config(temperature=temperature, max_tokens=48, seed=seed),
    )
    response = engine.complete(request)
    return response.message.text, response.id


def test_a_prefill_the_grammar_refuses_fails_its_request_alone(engines):
    """A reply prefill that does not fit the response format is an error for that request (llama.cpp's grammar
    would abort the process on it), in the sequential path and in a batch, where its neighbour still gets its answer."""
    from concurrent.futures import ThreadPoolExecutor

    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}}, "required": ["answer"]}
    config = Config(temperature=0.0, max_tokens=8, response_format={"type": "json_schema", "schema": schema})

    def ask(engine: LlamaCppEngine, prefill: str) -> Response:
        messages = (Message.user("Is the sky blue? Answer in JSON."), Message.assistant(prefill))
        return engine.complete(Request(model="local/smollm2-test", messages=messages, config=config))

    sequential, batched = engines
    with pytest.raises(ValueError, match="prefill does not fit"):
        ask(sequential, '{"nope": ')
    good = ask(sequential, '{"answer": "').message.text
    assert re.match(r"(yes|no)\"", good)
    with batched.expect(2), ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(ask, batched, prefill) for prefill in ('{"nope": ', '{"answer": "')]
    with pytest.raises(ValueError, match="prefill does not fit"):
        futures[0].result()
    assert futures[1].result().message.text == good
