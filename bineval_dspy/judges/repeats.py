"""A ``BinaryJudge`` asking each LM question of a row K times (``bineval judge --repeats K``); ``core.repeats`` says
which verdict counts and what a flip is.

Each repeat is the judge with rollouts of its own (``QuestionJudge.rollout``): its calls are cache entries of their
own, so repeat i never replays repeat j, and a rerun of the same command replays all K. Each asks in an order of its
own: repeat 0 in the checklist's order (it is the run without repeats, and answers from that run's cache), each later
one shuffled by a seed made of the row's key and the repeat, so a rerun shuffles alike. The order is what a
batch-scoring judge numbers the questions by and what an in-process model batches them in; a per-question call's
prompt is the same in any order, so there only the temperature and the server make repeats differ. Code checks are
deterministic: repeat 0 runs them, the later repeats ask the LM questions alone.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence

from bineval_dspy.core.repeats import Repeated, counted, repeated
from bineval_dspy.core.schema import Checklist, Scorecard, Verdict
from bineval_dspy.core.scoring import score
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.fast import FastJudge
from bineval_dspy.lm.usage import Cost, total


class Repeats:
    """``judge`` as K judges, one per repeat (sharing its predictors, LM and options), and a row judged by all."""

    def __init__(self, judge: BinaryJudge, k: int) -> None:
        if k < 2:
            raise ValueError(f"repeats must be at least 2, got {k}")
        self.k = k
        self.judges = [judge, *(_repeat_of(judge, r) for r in range(1, k))]

    def order(self, checklist: Checklist, key: str, repeat: int) -> list[str]:
        """The question ids in the order repeat ``repeat`` asks them on the row ``key``."""
        ids = [q.id for q in checklist.questions]
        if repeat:
            random.Random(f"{key}/{repeat}").shuffle(ids)
        return ids

    def __call__(self, key: str, input: str, output: str, checklist: Checklist) -> tuple[Scorecard, Repeated]:
        """The row judged K times: the card of the verdicts that count, and the record of the repeats."""
        first = self.judges[0](input=input, output=output, checklist=checklist)
        later = [self.judges[r](input=input, output=output, checklist=asked) for r, asked in self._later(key, checklist, first)]
        return self._combined(checklist, first, later)

    async def ascore(self, fasts: Sequence[FastJudge], key: str, input: str, output: str, checklist: Checklist) -> tuple[Scorecard, Cost, Repeated]:
        """``__call__`` through the verdict fast path (``fasts``: one per repeat), with what its calls cost."""
        first, cost = await fasts[0].score(input, output, checklist)
        costs, later = [cost], []
        for r, asked in self._later(key, checklist, first):
            card, cost = await fasts[r].score(input, output, asked)
            later.append(card)
            costs.append(cost)
        card, record = self._combined(checklist, first, later)
        return card, total(costs), record

    def fast(self) -> list[FastJudge] | None:
        """The repeats' judges on the verdict fast path, or None where it does not apply (``FastJudge.of``)."""
        fasts = [FastJudge.of(judge) for judge in self.judges]
        ready = [fast for fast in fasts if fast is not None]
        if len(ready) < len(fasts):
            for fast in ready:
                fast.close()
            return None
        return ready

    def _later(self, key: str, checklist: Checklist, first: Scorecard) -> list[tuple[int, Checklist]]:
        """Repeats 1..K-1, each with the row's LM questions (the ones repeat 0 did not answer by code) in its order;
        none when every question was code-checked."""
        coded = _coded(first)
        if all(q.id in coded for q in checklist.questions):
            return []
        by_id = {q.id: q for q in checklist.questions}
        return [
            (r, checklist.model_copy(update={"questions": [by_id[qid] for qid in self.order(checklist, key, r) if qid not in coded]}))
            for r in range(1, self.k)
        ]

    def _combined(self, checklist: Checklist, first: Scorecard, later: list[Scorecard]) -> tuple[Scorecard, Repeated]:
        judge = self.judges[0]
        coded = _coded(first)
        firsts = {v.question_id: v for v in first.verdicts}
        if not later:  # every question code-checked: each repeat would give repeat 0's card
            return first, repeated({}, [first] * self.k)
        repeats = [firsts, *({v.question_id: v for v in card.verdicts} for card in later)]
        answers = {q.id: [verdicts[q.id] for verdicts in repeats] for q in checklist.questions if q.id not in coded}

        def card_of(verdicts: dict[str, Verdict]) -> Scorecard:
            card = score(checklist, [coded.get(q.id) or verdicts[q.id] for q in checklist.questions], use_probability=judge.kind.probability, partial=judge.kind.partial)
            return card.model_copy(update={"judge": first.judge})

        cards = [first, *(card_of({qid: votes[r] for qid, votes in answers.items()}) for r in range(1, self.k))]
        return card_of({qid: counted(qid, votes) for qid, votes in answers.items()}), repeated(answers, cards)


def _coded(card: Scorecard) -> dict[str, Verdict]:
    """The card's code-checked verdicts by question id."""
    return {v.question_id: v for v in card.verdicts if v.judge.startswith("code:")}


def _repeat_of(judge: BinaryJudge, repeat: int) -> BinaryJudge:
    """``judge`` asking as repeat ``repeat``: the same predictors, LM and options, calls with rollouts of its own."""
    again = copy.copy(judge)
    again.repeat = repeat
    return again
