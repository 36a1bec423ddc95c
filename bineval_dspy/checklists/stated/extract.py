"""The constraints a prompt states, as code questions and as (instruction id, kwargs) pairs, and the decoding plan
they compile to."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from bineval_dspy.checklists.stated.ifbench_format import IFBENCH_FORMAT_RULES
from bineval_dspy.checklists.stated.ifbench_words import IFBENCH_WORD_RULES
from bineval_dspy.checklists.stated.ifeval import IFEVAL_RULES
from bineval_dspy.checklists.stated.rules import Rule, sentence_span
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.enforce.plan import Plan, Source
from bineval_dspy.verifiers import VerifierError, build_check
from bineval_dspy.verifiers.enforcement import Refuse, compile_plan

DIMENSION = "constraints"  # the dimension of the questions found here
# IFBench's rules first where both benchmarks could read one sentence ("Repeat the request, but change the first
# word" is repeat:repeat_change, not IFEval's repeat_prompt; "between 71 and 73 words" is a range, not a floor)
RULES: tuple[Rule, ...] = (*IFBENCH_WORD_RULES, *IFBENCH_FORMAT_RULES, *IFEVAL_RULES)
# a sentence one rule reads is not read again by these (the range's "73 words" is no ceiling of its own)
_CLAIMS = {
    "count:word_count_range": ("length_constraints:number_words",),
    "repeat:repeat_change": ("combination:repeat_prompt",),
    "repeat:repeat_span": ("combination:repeat_prompt",),
    "words:keywords_specific_position": ("sentence:keyword",),
    "count:keywords_multiple": ("keywords:frequency", "keywords:existence"),
    "count:conjunctions": ("keywords:existence",),
    "format:options": ("detectable_format:constrained_response",),
    "format:newline": ("keywords:existence",),
    "words:repeats": ("keywords:frequency", "keywords:forbidden_words"),
    "format:no_bullets_bullets": ("length_constraints:number_sentences", "detectable_format:number_bullet_lists"),
}


def _rest(task: str, spans: list[tuple[int, int]]) -> str:
    """``task`` without the sentences that state constraints: the text a reference-text rule compares with."""
    kept, at = [], 0
    for start, end in sorted(spans):
        if start >= at:
            kept.append(task[at:start])
            at = end
        else:
            at = max(at, end)
    kept.append(task[at:])
    return re.sub(r"[ \t]+", " ", "".join(kept)).strip()


def stated_constraints(task: str) -> list[Question]:
    """The code questions for the constraints ``task`` states, in the order the rules list them: at most one per
    verifier, each with kwargs its verifier accepts (a match whose kwargs it refuses is passed over for the rule's
    next match, and a rule with none is left to the LM)."""
    found: list[tuple[Rule, re.Match[str], Question]] = []
    claimed: dict[str, list[tuple[int, int]]] = {}
    for rule in RULES:
        if any(r.verifier == rule.verifier for r, _, _ in found):
            continue
        for match in rule.stated(task):
            span = sentence_span(task, match.start(), match.end())
            if any(a < span[1] and span[0] < b for a, b in claimed.get(rule.verifier, [])):
                continue  # another rule's sentence: "between 71 and 73 words" is not also "73 words"
            question = _question(rule, match, task, "")
            if question is None:
                continue
            found.append((rule, match, question))
            for other in _CLAIMS.get(rule.verifier, ()):
                claimed.setdefault(other, []).append(span)
            break
    # the rules that quote the request read it once every constraint's sentence is known
    rest = _rest(task, [sentence_span(task, m.start(), m.end()) for _, m, _ in found])
    questions = [_question(rule, match, task, rest) for rule, match, _ in found]
    kept = [q for q in questions if q is not None]
    cased = any(q.verifier in ("change_case:english_lowercase", "change_case:english_capital") for q in kept)
    # "in English, and in all capital letters": the case check already requires English
    return [q for q in kept if not (cased and q.verifier == "language:response_language" and q.verifier_kwargs == {"language": "en"})]


def _question(rule: Rule, match: re.Match[str], task: str, rest: str) -> Question | None:
    """The code question of one match, None where its kwargs are missing or its verifier refuses them."""
    try:
        kwargs = rule.kwargs(match, rest or task)
    except ValueError:  # a count too long for int() ("at least 999...9 words", thousands of digits): not read
        return None
    question = _ask(rule, kwargs)
    if question is None:
        return None
    kwargs.pop("name", None)  # words for the question only
    if any(value in ("", [], None) for value in kwargs.values()):
        return None
    try:
        build_check(rule.verifier, kwargs, prompt=task)
    except (VerifierError, TypeError, ValueError):
        return None
    return Question(text=question, dimension=DIMENSION, verifier=rule.verifier, verifier_kwargs=kwargs or None)


def _ask(rule: Rule, kwargs: dict[str, Any]) -> str | None:
    """The question of ``rule`` with ``kwargs``, None where they lack a field it names (a match the rule's kwargs
    reader turned down)."""
    try:
        return rule.question(kwargs)
    except (KeyError, IndexError):
        return None


def with_stated_constraints(task: str, checklist: Checklist | None, constraints: list[Question], duplicate: Callable[[str, str], bool]) -> Checklist | None:
    """``checklist`` (None: the writer gave no usable question) with the code questions first and every written
    question that ``duplicate``s one of them left out (code answers it exactly), renumbered."""
    if not constraints:
        return checklist
    kept = [q for q in (checklist.questions if checklist else []) if not any(duplicate(q.text, c.text) for c in constraints)]
    questions = [q.model_copy(update={"id": f"q{k}"}) for k, q in enumerate([*constraints, *kept], start=1)]
    dimensions = list(checklist.dimensions) if checklist else []
    return Checklist.of(task, [*dimensions, DIMENSION], questions)


Annotated = list[tuple[str, dict[str, Any]]]  # a suite row's (instruction id, kwargs), in its order


def extracted(prompt: str) -> Annotated:
    """The (instruction id, kwargs) of the constraints ``prompt`` states: a plain task's checks (``load_suite``)."""
    return [(q.verifier, dict(q.verifier_kwargs or {})) for q in stated_constraints(prompt) if q.verifier]


def enforcement_plan(prompt: str, source: Source, annotated: Annotated | None = None, refuse: Refuse | None = None) -> Plan:
    """The decoding plan for one prompt: from the constraints its own words state (``extracted``: what a user
    without annotations has, and what the headline figures use) or from the suite's instruction ids (``annotated``);
    ``refuse``: what the LM that will decode cannot execute (``compile_plan``)."""
    if source == "extracted":
        constraints = extracted(prompt)
    else:
        constraints = list(annotated or [])
    return compile_plan(constraints, prompt, source, refuse)
