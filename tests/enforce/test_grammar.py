"""The GBNF form of a ``Steering`` (``enforce.grammar``), as a llama.cpp server takes it: llama.cpp itself parses
every grammar and decodes under it, from random logits, on the bundled model's vocabulary (loaded without its
weights); the text it lets through passes the verifier of every constraint the grammar expresses, and the ones it
cannot express are named, never counted as enforced."""

from __future__ import annotations

import ctypes
import json
import random
from collections.abc import Iterator

import numpy as np
import pytest

from bineval_dspy.core.text import word_runs
from bineval_dspy.enforce.grammar import char_class, literal, to_gbnf, unexpressed
from bineval_dspy.enforce.steering import Steering, Structure
from bineval_dspy.lm.remote import RemoteEngine
from bineval_dspy.verifiers import build_check
from bineval_dspy.verifiers.enforcement import compile_plan, enforceable_ids
from tests.enforce.test_property import random_kwargs

llama_cpp = pytest.importorskip("llama_cpp")

WORDS = "the cat sat on a mat and so it is big blue yes no Paris RUNS Dog however first then my answer maybe".split()
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)
SERVER = RemoteEngine("llamacpp/smollm2", "http://127.0.0.1:1/v1")  # never called: its refusal is what is tested


class Decoder:
    """llama.cpp's grammar sampler over a small candidate vocabulary of the bundled model: every printable ASCII
    character and newline as a token of its own (so any literal can be spelled), a few words, and the end."""

    def __init__(self) -> None:
        from bineval_dspy.lm.specs import embedded_model_path

        self.llama = llama_cpp.Llama(model_path=str(embedded_model_path("smollm2")), vocab_only=True, verbose=False)
        self.vocab = self.llama._model.vocab
        self.end = self.llama.token_eos()
        singles = [self.llama.tokenize(c.encode(), add_bos=False, special=False) for c in map(chr, [10, *range(32, 127)])]
        words = [self.llama.tokenize(w.encode(), add_bos=False, special=False) for w in WORDS + [" " + w for w in WORDS]]
        self.candidates = np.array(sorted({t[0] for t in singles + words if len(t) == 1} | {self.end}), dtype=np.int32)

    def parses(self, grammar: str) -> bool:
        sampler = llama_cpp.llama_sampler_init_grammar(self.vocab, grammar.encode(), b"root")
        if sampler:
            llama_cpp.llama_sampler_free(sampler)
        return bool(sampler)

    def decode(self, grammar: str, seed: int, steps: int = 3000) -> str:
        """The text the grammar lets random logits write (the end a little favoured), token by token."""
        sampler = llama_cpp.llama_sampler_init_grammar(self.vocab, grammar.encode(), b"root")
        assert sampler, grammar
        rng = np.random.default_rng(seed)
        out: list[int] = []
        try:
            for _ in range(steps):
                data = np.zeros(len(self.candidates), dtype=_TOKEN_DATA)
                data["id"] = self.candidates
                data["logit"] = rng.normal(size=len(data)) + np.where(self.candidates == self.end, 2.0, 0.0)
                array = llama_cpp.llama_token_data_array(
                    data=data.ctypes.data_as(llama_cpp.llama_token_data_p), size=len(data), selected=-1, sorted=False
                )
                llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
                assert np.isfinite(data["logit"]).any(), f"a dead end after {self.text(out)!r}"
                token = int(data["id"][int(np.argmax(data["logit"]))])
                if token == self.end:
                    return self.text(out)
                llama_cpp.llama_sampler_accept(sampler, token)
                out.append(token)
        finally:
            llama_cpp.llama_sampler_free(sampler)
        raise AssertionError(f"no end within {steps} tokens: {self.text(out)[:200]!r}")

    def text(self, tokens: list[int]) -> str:
        return self.llama.detokenize(tokens).decode("utf-8")


@pytest.fixture(scope="module")
def decoder() -> Iterator[Decoder]:
    yield Decoder()


def test_literals_and_classes_are_escaped():
    assert literal('say "hi"\n') == '"say \\x22hi\\x22\\n"'
    assert char_class("ab-c]") == "[\\x2D\\x5Da-c]"
    assert char_class("\n ") == "[\\n\\x20]"


def test_every_grammar_parses_and_a_broken_one_does_not(decoder):
    assert not decoder.parses("root ::= (")
    for steering in (
        Steering(),
        Steering(lead="Say it.\n", case="lower", banned=(",",), end_phrase="peace."),
        Steering(json_value=True, case="upper", banned=(",",)),
        Steering(title=True, structure=Structure(kind="paragraphs", count=3, nth=2, first_word="however"), postscript="P.S."),
        Steering(min_words=1200),  # a repetition past llama.cpp's threshold unless each repeat is one rule
    ):
        assert decoder.parses(to_gbnf(steering, 2000)), steering


def _has_rules(instruction_id: str) -> bool:
    """Whether the id's enforcement carries rule kinds (``enforce.rules``): a grammar names them as unexpressed."""
    plan = compile_plan([(instruction_id, random_kwargs(instruction_id, random.Random(1)))], "p", "annotated")
    return bool(plan.steering.rules)


EXPRESSED = sorted(
    i for i in set(enforceable_ids()) - {"keywords:forbidden_words", "length_constraints:number_sentences"} if not _has_rules(i)
)


def test_what_a_grammar_cannot_express_is_named():
    assert unexpressed(Steering(forbidden_words=("cat",), min_sentences=2, banned=("ab", ","))) == (
        "forbidden_words", "min_sentences", "banned",
    )  # fmt: skip
    assert unexpressed(Steering(json_value=True, max_words=50)) == ("max_words",)
    assert unexpressed(Steering(choice=("My answer is yes.",), min_words=5)) == ("min_words",)  # the phrase has 4
    assert unexpressed(Steering(title=True, postscript="P.S.", max_words=4)) == ("max_words",)  # no word left to each
    first = Structure(kind="paragraphs", count=2, nth=1, first_word="then")
    assert unexpressed(Steering(title=True, structure=first)) == ("title",)  # no reply has both
    assert unexpressed(Steering(title=True, structure=first.model_copy(update={"nth": 2}))) == ()
    for instruction_id in EXPRESSED:
        plan = compile_plan([(instruction_id, random_kwargs(instruction_id, random.Random(1)))], "p", "annotated", SERVER.unsteerable)
        assert [d.status for d in plan.decisions] == ["enforced"], plan.decisions


def test_a_constraint_the_grammar_cannot_express_is_reported_and_left_out():
    constraints = [("punctuation:no_comma", {}), ("keywords:forbidden_words", {"forbidden_words": ["cat"]}),
                   ("length_constraints:number_sentences", {"num_sentences": 3, "relation": "less than"})]  # fmt: skip
    plan = compile_plan(constraints, "p", "extracted", SERVER.unsteerable)
    assert [(d.status, d.reason) for d in plan.decisions] == [
        ("enforced", ""),
        ("unenforceable", "this LM's grammar cannot express it (forbidden words)"),
        ("unenforceable", "this LM's grammar cannot express it (max sentences)"),
    ]
    assert plan.steering == Steering(banned=(",",))
    assert compile_plan(constraints, "p", "extracted").steering.forbidden_words == ("cat",)  # the embedded engine's


def passes(decoder: Decoder, constraints: list[tuple[str, dict]], seed: int, max_tokens: int = 160) -> list[tuple]:
    """Decode under the plan's grammar; the enforced constraints whose verifier fails, with the text."""
    plan = compile_plan(constraints, "a prompt", "annotated", SERVER.unsteerable)
    text = decoder.decode(to_gbnf(plan.steering, max(max_tokens, plan.steering.min_tokens)), seed)
    failures = []
    for decision in plan.enforced:
        finding = build_check(decision.instruction_id, decision.kwargs, "a prompt")(text)
        if not finding.passed and "reads as" not in finding.detail:  # langdetect's English on random words is not ours
            failures.append((decision.instruction_id, decision.kwargs, finding.detail, text[:300]))
    return failures


@pytest.mark.parametrize("instruction_id", EXPRESSED)
def test_each_expressed_constraint_makes_its_verifier_pass(decoder, instruction_id):
    rng = random.Random(instruction_id)
    failures = [f for seed in range(6) for f in passes(decoder, [(instruction_id, random_kwargs(instruction_id, rng))], seed)]
    assert failures == []


def test_every_pair_and_random_triples_hold_together(decoder):
    rng = random.Random(3)
    pairs = [[a, b] for k, a in enumerate(EXPRESSED) for b in EXPRESSED[k + 1 :] for _ in range(2)]
    failures = []
    for seed, ids in enumerate(pairs + [rng.sample(EXPRESSED, 3) for _ in range(40)]):
        failures += passes(decoder, [(i, random_kwargs(i, rng)) for i in ids], seed)
    assert failures == []


def test_word_bounds_are_counted_as_the_verifier_counts(decoder):
    for seed, (low, high) in enumerate([(3, 6), (20, 25), (1, 2)]):
        text = decoder.decode(to_gbnf(Steering(min_words=low, max_words=high, title=seed == 1), 200), seed)
        assert low <= len(word_runs(text)) < high, text


def test_json_in_capitals_without_commas(decoder):
    for seed in range(8):
        text = decoder.decode(to_gbnf(Steering(json_value=True, case="upper", banned=(",",)), 200), seed)
        json.loads(text)
        assert "," not in text and not any(c.islower() for c in text), text
