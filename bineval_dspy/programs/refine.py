"""STICK (Self-TICK): improve generation with checklist self-evaluation.

``SelfRefine`` turns the failed checks of a response into a plan and a rewrite that must fix them
while keeping what passed, re-judges, and keeps the best version seen (never a lower-scoring one).
``ChecklistBestOfN`` samples N responses and keeps the one the checklist scores highest, or stops at the first
that passes every check (``stop_at_pass``: with exact code checks a passing sample cannot be beaten).
"""

from __future__ import annotations

from typing import Any

import dspy

from bineval_dspy.core.errors import one_line
from bineval_dspy.core.schema import Checklist, Scorecard
from bineval_dspy.core.scoring import join, outcomes
from bineval_dspy.judges.base import Judge
from bineval_dspy.programs.records import Selection
from bineval_dspy.programs.sampling import draw

DEFAULT_MAX_TOKENS = 256  # a response's token limit: the Generator's, `generate`'s and an optimize config's alike
PLAN_MAX_TOKENS = 300


class PlanFixes(dspy.Signature):
    """A response to the prompt failed some checks of its evaluation checklist. Write a short, concrete plan to
    revise the response so that every failed check passes, while every passed check keeps passing."""

    prompt: str = dspy.InputField(desc="the prompt the response answers")
    response: str = dspy.InputField(desc="the current response")
    failed_checks: str = dspy.InputField(desc="checks the response failed, each with the reason")
    passed_checks: str = dspy.InputField(desc="checks the response passed; the revision must keep them")
    plan: str = dspy.OutputField(desc="the changes to make, as short steps")


class RewriteResponse(dspy.Signature):
    """Rewrite the response to the prompt following the plan: fix every failed check and keep every passed one.
    Keep the original formatting where it does not conflict with a check. Reply with the full rewritten
    response only, no commentary."""

    prompt: str = dspy.InputField(desc="the prompt the response answers")
    response: str = dspy.InputField(desc="the current response")
    failed_checks: str = dspy.InputField(desc="checks the response failed, each with the reason")
    passed_checks: str = dspy.InputField(desc="checks the response passed; the revision must keep them")
    plan: str = dspy.InputField(desc="the revision plan")
    revised_response: str = dspy.OutputField(desc="the complete rewritten response")


def rank(card: Scorecard | None) -> float:
    """The value compared across versions: the overall score; a card with nothing answered ranks last."""
    return -1.0 if card is None or card.overall is None else card.overall


def passes(card: Scorecard | None) -> bool:
    """Every criterion met and every question answered: the only sample stop-at-pass may stop at."""
    return card is not None and card.complete and card.overall == 1.0


def check_lists(checklist: Checklist, card: Scorecard) -> tuple[list[str], list[str]]:
    """Failed checks (question and the judge's reason) and passed checks, one line each.

    Unanswered questions are neither: they carry no feedback to act on.
    """
    split = outcomes(join(checklist, card.verdicts))
    failed = [f"- {q.text} Reason: {v.explanation}" for q, v in split["failed"]]
    passed = [f"- {q.text}" for q, v in split["passed"]]
    return failed, passed


class SelfRefine(dspy.Module):
    """STICK self-refinement: ``forward(prompt, response, checklist, scorecard=None) -> Prediction``.

    Returns ``response`` (the best version), ``scorecard`` (its verdicts) and ``iterations`` (one record per
    rewrite: plan, text, score, whether it became the best, or the error that stopped refinement). A response
    with no failed check is returned unchanged without any LM call. Each rewrite starts from the previous one,
    as in the paper; refinement stops early once nothing fails or a rewrite changes nothing.
    """

    def __init__(self, judge: Judge, max_iterations: int = 1, max_tokens: int = DEFAULT_MAX_TOKENS) -> None:
        super().__init__()
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        self.judge = judge
        self.max_iterations = max_iterations
        self.max_tokens = max_tokens
        self.plan = dspy.Predict(PlanFixes)
        self.rewrite = dspy.Predict(RewriteResponse)

    def forward(
        self, prompt: str, response: str, checklist: Checklist, scorecard: Scorecard | None = None
    ) -> dspy.Prediction:
        card = scorecard if scorecard is not None else self.judge(input=prompt, output=response, checklist=checklist)
        best, best_card = response, card
        current, current_card = response, card
        iterations: list[dict[str, Any]] = []
        for number in range(1, self.max_iterations + 1):
            failed, passed = check_lists(checklist, current_card)
            if not failed:
                break
            record: dict[str, Any] = {"iteration": number, "failed": failed}
            try:
                revised, record["plan"] = self._revise(prompt, current, failed, passed)
            except Exception as exc:  # a failed LM call ends refinement; the best version so far stands
                record["error"] = one_line(exc)
                iterations.append(record)
                break
            if revised.strip() == current.strip():
                record.update(response=revised, score=current_card.overall, kept=False, unchanged=True)
                iterations.append(record)
                break
            revised_card = self.judge(input=prompt, output=revised, checklist=checklist)
            kept = rank(revised_card) > rank(best_card)
            record.update(response=revised, score=revised_card.overall, kept=kept)
            iterations.append(record)
            if kept:
                best, best_card = revised, revised_card
            current, current_card = revised, revised_card
        return dspy.Prediction(response=best, scorecard=best_card, initial_score=card.overall, iterations=iterations)

    def _revise(self, prompt: str, response: str, failed: list[str], passed: list[str]) -> tuple[str, str]:
        checks = {"failed_checks": "\n".join(failed), "passed_checks": "\n".join(passed) or "(none)"}
        with dspy.context(adapter=dspy.JSONAdapter()):
            plan = self.plan(prompt=prompt, response=response, **checks, config={"max_tokens": PLAN_MAX_TOKENS}).plan
            revised = self.rewrite(
                prompt=prompt, response=response, plan=plan, **checks, config={"max_tokens": self.max_tokens}
            ).revised_response
        return revised, plan


class ChecklistBestOfN(dspy.Module):
    """STICK Best-of-N: ``forward(prompt, checklist) -> Prediction(response, scorecard, candidates, chosen, selection)``
    (``selection``: the draw as output records keep it, for N of 2 or more).

    Samples up to ``n`` responses from ``program`` (called as ``program(prompt=..., config=...)``, returning a
    prediction with ``.response``) at ``temperature``, each with its own ``rollout_id`` and seed (``seed`` plus the
    rollout) so samples differ, the same command draws the same ones and a rerun replays them; judges each;
    returns a passing sample before any other, then the highest overall score, the first on ties. Samples are drawn
    ``per_round`` at a time (decoded together: see ``programs.sampling``); ``stop_at_pass`` draws no round after one
    holding a passing sample, and keeps the first passing one, so the response does not depend on ``per_round``
    (default: all ``n`` at once, or one at a time with ``stop_at_pass``). A sample whose call fails is recorded with
    its error and was not drawn: it is never chosen nor counted in pass@k, and a caller that keeps the result treats it
    as unfinished (``Selection.failed``), so a rerun draws it again; only if all fail does the error propagate.
    """

    def __init__(
        self, program: dspy.Module, judge: Judge, n: int, temperature: float = 0.7, stop_at_pass: bool = False,
        *, per_round: int | None = None, seed: int = 0,
    ) -> None:
        super().__init__()
        if n < 1 or (per_round is not None and per_round < 1):
            raise ValueError("n and per_round must be at least 1")
        self.program = program
        self.judge = judge
        self.n = n
        self.temperature = temperature
        self.stop_at_pass = stop_at_pass
        self.per_round = min(n, per_round or (1 if stop_at_pass else n))
        self.seed = seed

    def forward(self, prompt: str, checklist: Checklist) -> dspy.Prediction:
        candidates: list[dict[str, Any]] = []
        cards: list[Scorecard | None] = []
        last_error: Exception | None = None
        for start in range(0, self.n, self.per_round):
            rollouts = range(start, min(self.n, start + self.per_round))
            texts = draw(self.program, prompt, rollouts, temperature=self.temperature, seed=self.seed, read=lambda p: p.response)
            for rollout, text in zip(rollouts, texts):
                if isinstance(text, Exception):
                    last_error = text
                    candidates.append({"rollout_id": rollout, "error": one_line(text)})
                    cards.append(None)
                    continue
                card = self.judge(input=prompt, output=text, checklist=checklist)
                candidates.append({"rollout_id": rollout, "response": text, "score": card.overall, "passed": passes(card)})
                cards.append(card)
            if self.stop_at_pass and any(passes(card) for card in cards):
                break
        answered = [i for i, card in enumerate(cards) if card is not None]
        if not answered:
            assert last_error is not None
            raise last_error
        chosen = max(answered, key=lambda i: (passes(cards[i]), rank(cards[i])))  # max keeps the first of equals
        selection = Selection(n=self.n, candidates=candidates, chosen=chosen, stop_at_pass=self.stop_at_pass) if self.n > 1 else None
        return dspy.Prediction(
            response=candidates[chosen]["response"], scorecard=cards[chosen], candidates=candidates, chosen=chosen, selection=selection
        )
