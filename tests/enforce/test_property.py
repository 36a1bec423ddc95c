"""Every enforceable verifier's enforcement makes text its verifier passes, whatever the decoder would have said:
a random "model" (seeded logits over a small vocabulary that holds every hazard: capitals, commas, newlines,
asterisks, brackets, forbidden words split into pieces) is steered as the embedded engine steers it, and the
verifier checks the result. Combinations the compiler accepts must all hold together."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bineval_dspy.enforce.runtime import END, Steerer
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.enforce.vocabulary import Vocabulary
from bineval_dspy.verifiers import build_check
from bineval_dspy.verifiers.enforcement import compile_plan, enforceable_ids
from tests.enforce.random_kwargs import EXTRA_PIECES, MAKERS

PIECES = [
    " the",
    " cat",
    " sat",
    " on",
    " mat",
    " Dog",
    " RUNS",
    " blue",
    " bl",
    "ue",
    "berry",
    " and",
    " so",
    ",",
    ".",
    "!",
    "?",
    "\n",
    "\n\n",
    ".\n",
    "\nNext",
    " *",
    "*",
    "***",
    " <<",
    ">>",
    "<",
    ">",
    '"',
    "'",
    " {",
    "}",
    " [x]",
    " 42",
    " é",
    " ok",
    " Paris",
    " is",
    " big",
    " my",
    " answer",
    " My",
    " yes",
    " no",
    " maybe",
    " M",
    "y",
    " a",
    "nswer",
    " Section",
    " P.S.",
]
PIECES += [p for p in EXTRA_PIECES if p not in PIECES]  # what each benchmark's rules need to be satisfiable
END_ID = len(PIECES)
VOCAB = Vocabulary([*PIECES, ""], [END_ID])


def drive(steering: Steering, seed: int, limit: int = 160, sample: bool = False) -> str:
    """The engine's loop (``lm._decoding._Decoding`` with a steerer) over random logits."""
    rng = np.random.default_rng(seed)
    steerer = Steerer(steering, VOCAB, max(limit, steering.min_tokens))
    steerer.start()
    decoded = 0
    while decoded < steerer.limit:  # the loop of ``lm._decoding._Decoding``: choose, then accept or end
        logits = steerer.masked(
            rng.normal(size=len(VOCAB.pieces)).astype(np.float32)
            + np.where(np.arange(len(VOCAB.pieces)) == END_ID, 1.5, 0.0)
        )
        token = steerer.choose(
            logits,
            lambda x: int(rng.choice(len(x), p=_softmax(x))) if sample and np.isfinite(x).any() else int(np.argmax(x)),
        )
        if token == END_ID:
            if steerer.ended() is None:
                break
            continue
        decoded += 1
        if steerer.accepted(token) == END:
            break
    return steerer.finish()


def _softmax(logits: np.ndarray) -> np.ndarray:
    finite = np.isfinite(logits)
    p = np.exp(np.where(finite, logits - logits[finite].max(), -np.inf))
    return p / p.sum()


def random_kwargs(instruction_id: str, rng: random.Random) -> dict:
    """Kwargs a suite row could give ``instruction_id`` (each benchmark's makers in ``random_kwargs/``)."""
    return MAKERS[instruction_id](rng)


def test_every_enforceable_id_is_tested_here():
    """A verifier given an enforcement later fails here (KeyError) until it has kwargs in ``random_kwargs/``."""
    for instruction_id in enforceable_ids():
        random_kwargs(instruction_id, random.Random(0))


# JSON is a grammar the engine applies (llama.cpp's), not the steerer: its closing is tested apart.
ALONE = sorted(set(enforceable_ids()) - {"detectable_format:json_format"})


@pytest.mark.parametrize("instruction_id", ALONE)
@pytest.mark.parametrize("sample", [False, True])
def test_each_enforcement_makes_its_verifier_pass(instruction_id: str, sample: bool):
    rng = random.Random(instruction_id)
    failures = []
    for seed in range(12):
        kwargs = random_kwargs(instruction_id, rng)
        plan = compile_plan([(instruction_id, kwargs)], "a prompt", "annotated")
        assert [d.status for d in plan.decisions] == ["enforced"], plan.decisions
        text = drive(plan.steering, seed, sample=sample)
        finding = build_check(instruction_id, kwargs, "a prompt")(text)
        if not finding.passed and "reads as" not in finding.detail:  # langdetect's English on random words is not ours
            failures.append((kwargs, finding.detail, text[:200]))
    assert failures == []


def test_combinations_the_compiler_accepts_all_hold():
    rng = random.Random(7)
    checked = 0
    failures = []
    for seed in range(150):
        ids = rng.sample(ALONE, rng.randint(2, 3))
        constraints = [(i, random_kwargs(i, rng)) for i in ids]
        plan = compile_plan(constraints, "a prompt", "annotated")
        text = drive(plan.steering, seed, sample=bool(seed % 2))
        for decision in plan.enforced:
            checked += 1
            finding = build_check(decision.instruction_id, decision.kwargs, "a prompt")(text)
            if not finding.passed and "reads as" not in finding.detail:
                failures.append((ids, decision.instruction_id, finding.detail, text[:160]))
    assert checked > 200
    assert failures == []


def test_conflicts_are_named_and_not_half_applied():
    plan = compile_plan(
        [
            ("change_case:english_lowercase", {}),
            ("startend:end_checker", {"end_phrase": "Is there anything else?"}),
            ("detectable_format:json_format", {}),
            ("startend:quotation", {}),
        ],
        "p",
        "annotated",
    )
    statuses = {d.instruction_id: (d.status, d.reason) for d in plan.decisions}
    assert statuses["change_case:english_lowercase"][0] == "enforced"
    assert statuses["startend:end_checker"][0] == "conflict" and "capitals" in statuses["startend:end_checker"][1]
    assert statuses["detectable_format:json_format"][0] == "enforced"
    assert statuses["startend:quotation"][0] == "conflict"
    assert plan.steering.end_phrase == "" and plan.steering.opening == ""  # the conflicting ones left no trace


def test_unenforceable_and_invalid_ids_are_named():
    plan = compile_plan(
        [
            ("keywords:existence", {"keywords": ["x"]}),
            ("detectable_format:number_bullet_lists", {"num_bullets": -1}),
            ("no:such", {}),
        ],
        "p",
        "extracted",
    )
    assert [(d.status, bool(d.reason)) for d in plan.decisions] == [
        ("unenforceable", True),
        ("invalid", True),
        ("invalid", True),
    ]
    assert not plan.steers


@pytest.mark.parametrize(
    "prefix",
    ['{\n "description": "Ava-1000', '{"a": [1, 2,', '{"a', '{"a":', '[{"x": {"y": tr', '{"a": 1,', "[1.", '{"a\\\\', "", '{"a": -', "[1e", '{"a": nu', "[f", '["x", {"k": [true, fals'],
)
def test_a_json_reply_cut_at_its_token_limit_is_closed_into_a_value(prefix: str):
    import json

    from bineval_dspy.enforce.runtime import json_closing

    json.loads(prefix + json_closing(prefix))


def test_a_steered_request_carries_the_steering_codes_digest():
    """A cached reply made by other steering code has another key, so it is never replayed as this code's."""
    from bineval_dspy.enforce.steering import CODE_KEY, METADATA_KEY, code_digest, from_metadata, metadata

    steering = Steering(case="lower", banned=(",",))
    sent = metadata(steering)
    assert sent[CODE_KEY] == code_digest() and len(code_digest()) == 16
    assert from_metadata({"metadata": sent}) == steering and METADATA_KEY in sent


def test_a_title_keeps_the_paragraph_count_and_the_first_word_of_a_later_paragraph():
    """Found by the grammar's own driver: the title was a paragraph of its own, and the word forced after it could
    glue to the next token."""
    for seed in range(20):
        kwargs = {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "then"}
        plan = compile_plan([("detectable_format:title", {}), ("length_constraints:nth_paragraph_first_word", kwargs)], "p", "annotated")
        text = drive(plan.steering, seed, sample=bool(seed % 2))
        assert build_check("length_constraints:nth_paragraph_first_word", kwargs, "p")(text).passed, text
        assert build_check("detectable_format:title", {}, "p")(text).passed, text
    plan = compile_plan([("detectable_format:title", {}), ("length_constraints:nth_paragraph_first_word", {**kwargs, "nth_paragraph": 1})], "p", "annotated")
    assert [d.status for d in plan.decisions] == ["enforced", "conflict"]


def test_every_pair_the_compiler_accepts_holds_together():
    import itertools

    rng = random.Random(11)
    failures = []
    for first, second in itertools.combinations(ALONE, 2):
        for seed in range(2):
            constraints = [(first, random_kwargs(first, rng)), (second, random_kwargs(second, rng))]
            plan = compile_plan(constraints, "a prompt", "annotated")
            text = drive(plan.steering, seed, sample=bool(seed))
            for decision in plan.enforced:
                finding = build_check(decision.instruction_id, decision.kwargs, "a prompt")(text)
                if not finding.passed and "reads as" not in finding.detail:
                    failures.append((first, second, decision.instruction_id, finding.detail, text[:120]))
    assert failures == []


def test_a_character_spread_over_byte_tokens_is_kept_and_a_token_that_writes_nothing_is_never_chosen():
    """Issue 54: under the lowercase mask the embedded model answered a prompt with emojis, each character three
    byte tokens whose pieces alone are empty: the steerer kept no text, refused the end (no letter yet) up to the
    token limit, and the reply came back empty, failing the row on every rerun. The reply is decoded from the
    tokens' bytes, and a token that writes nothing (a chat template's control token) is masked."""
    emoji = "\N{EARTH GLOBE EUROPE-AFRICA}".encode()
    raw = [emoji[:2], emoji[2:3], emoji[3:], b"", b" hi", b""]
    vocab = Vocabulary([b.decode("utf-8", "ignore") for b in raw], [5], raw)
    steerer = Steerer(Steering(case="lower"), vocab, 16)
    steerer.start()
    logits = steerer.masked(np.array([0, 0, 0, 9, 0, 9], dtype=np.float32))
    assert logits[3] == -np.inf and logits[5] == -np.inf  # the silent token always; the end while no letter is written
    for token in (0, 1, 2, 0, 1, 2, 4):
        steerer.accepted(token)
    assert steerer.finish() == "\N{EARTH GLOBE EUROPE-AFRICA}" * 2 + " hi"
    assert Vocabulary([" a", ""], [1]).silent.tolist() == [False, True]  # the bytes default to the pieces'


def test_a_reply_whose_every_token_is_masked_before_it_has_text_takes_the_models_own_best_token():
    """Issue 54: an enforced decode must never end before the reply has content. Where the masks leave no token at
    all (here: every piece has a capital, under "all lowercase"), the empty reply takes the model's own best token
    that writes something, and its broken constraint is left for the check after decoding; a reply with text ends."""
    vocab = Vocabulary([" A", " B", "", ""], [2], [b" A", b" B", b"", b""])
    steerer = Steerer(Steering(case="lower"), vocab, 8)
    steerer.start()
    raw = np.array([1.0, 3.0, 5.0, 9.0], dtype=np.float32)  # the end and a silent token lead: neither writes text
    masked = steerer.masked(raw.copy())
    assert not np.isfinite(masked).any()
    assert steerer.choose(masked.copy(), lambda x: int(np.argmax(x))) == 2  # no raw logits (a grammar decides): the end
    assert steerer.choose(masked.copy(), lambda x: int(np.argmax(x)), raw=raw) == 1
    steerer.accepted(1)
    assert steerer.choose(steerer.masked(raw.copy()), lambda x: int(np.argmax(x)), raw=raw) == 2  # text now: it may end
