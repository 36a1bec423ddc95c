"""A ``BinaryJudge``'s per-question verdicts on a remote server through the verdict fast path (``lm.fastpath``).

The same requests (captured from the judge's own predictor and adapter, once per call shape), the same cache
entries, and the same reading of each reply (the adapter's, then ``QuestionJudge.verdict_of``), so a row's scorecard
is the one ``BinaryJudge.forward`` gives; what is left out is DSPy's per-call work. Each row is one coroutine on
the I/O loop, its questions asked together; its code checks run off the loop (``off_loop``), so a slow verifier
never holds up another row's replies. Batch scoring, a probe judge, and an LM that is not one of our remote
engines keep DSPy's path (``FastJudge.of`` says None).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

import dspy

from bineval_dspy.core.errors import one_line
from bineval_dspy.core.schema import Checklist, Question, Scorecard, Verdict
from bineval_dspy.core.scoring import met, score
from bineval_dspy.judges.base import Judge
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.question import CONTENT_FREE_OUTPUT, QuestionJudge, majority
from bineval_dspy.judges.verdict import read_output
from bineval_dspy.lm.fastpath import FastLM, Reply, Template
from bineval_dspy.lm.usage import CallTally, Cost

T = TypeVar("T")
FIELDS = ("input", "output", "question")  # AnswerQuestion's inputs, in the order a call's inputs are given
Shape = tuple[int, bool]  # (sample, explain): what tells one per-question call's request from another


class FastJudge:
    """A ``BinaryJudge`` asking its questions through the fast path; ``score`` is its ``forward``, awaited."""

    def __init__(self, judge: BinaryJudge, fast: FastLM, shapes: dict[Shape, tuple[Template, dict[str, Any], dspy.Adapter]]) -> None:
        self.judge = judge
        self.kind = judge.kind
        self.fast = fast
        self.shapes = shapes
        self.spec = judge.spec()
        self.signature = judge.named_predictors()[0][1].signature  # what the adapter parses a reply against

    @classmethod
    def of(cls, judge: Judge) -> FastJudge | None:
        """``judge`` on the fast path, or None where it keeps DSPy's: not a per-question ``BinaryJudge`` on a remote
        server, or a call shape the fast path cannot fill exactly. A verdict format the LM cannot take is refused
        here, before any row, as ``forward`` refuses it."""
        if not isinstance(judge, BinaryJudge) or type(judge.kind) is not QuestionJudge:  # a batch or probe kind keeps DSPy's path
            return None
        fast = FastLM.of(judge.answer_lm())
        if fast is None:
            return None
        kind = judge.kind
        kind.check_format(judge)
        explain = kind.explanations == "all"
        wanted = {(sample, explain) for sample in range(kind.samples)}
        wanted |= {(0, False)} if kind.calibration == "content_free" else set()
        wanted |= {(0, True)} if kind.explanations == "failures" else set()
        shapes = {}
        for sample, explaining in sorted(wanted):
            config, adapter = kind.call_config(judge, sample, explaining), kind.adapter_for(explaining)

            def call(lm: dspy.LM, inputs: dict[str, str], config: dict[str, Any] = config, adapter: dspy.Adapter = adapter) -> None:
                with dspy.context(adapter=adapter):
                    judge.answer(**inputs, config=config, lm=lm)

            template = fast.template(call, FIELDS)
            if template is None:
                return None
            shapes[sample, explaining] = (template, config, adapter)
        return cls(judge, fast, shapes)

    def close(self) -> None:
        """Close the connections the fast path opened for this judge's server(s)."""
        self.fast.close()

    async def score(self, input: str, output: str, checklist: Checklist) -> tuple[Scorecard, Cost]:
        """The row's scorecard, as ``BinaryJudge.forward`` scores it per question, and what its calls cost. DSPy's
        callbacks are not called: the calls are counted here, and a reply that gave no verdict is forgotten here."""
        with dspy.context(callbacks=[]):  # the row's tasks inherit it
            return await self._score(input, output, checklist)

    async def _score(self, input: str, output: str, checklist: Checklist) -> tuple[Scorecard, Cost]:
        kind, tally = self.kind, CallTally()
        routed = await off_loop(lambda: {q.id: self.judge.code_router(q, input, output) for q in checklist.questions})
        asked = [q for q in checklist.questions if routed[q.id] is None]
        explain = kind.explanations == "all"
        answers = dict(zip([q.id for q in asked], await asyncio.gather(*(self._votes(input, output, q, explain, tally) for q in asked))))
        priors: dict[str, Verdict] = {}
        if kind.calibration == "content_free":
            priors = dict(zip([q.id for q in asked], await asyncio.gather(*(self._ask(input, CONTENT_FREE_OUTPUT, q, (0, False), tally) for q in asked))))
        answers = {q.id: kind.decided(answers[q.id], priors.get(q.id), q) for q in asked}
        if kind.explanations == "failures":
            failed = [q for q in asked if met(q, answers[q.id]) is False]
            explained = await asyncio.gather(*(self._ask(input, output, q, (0, True), tally) for q in failed))
            answers.update({q.id: kind.explained_by(answers[q.id], v) for q, v in zip(failed, explained)})
        verdicts = [routed[q.id] or answers[q.id] for q in checklist.questions]
        card = score(checklist, verdicts, use_probability=kind.probability, partial=kind.partial)
        return card.model_copy(update={"judge": self.spec}), tally.cost()

    async def _votes(self, input: str, output: str, question: Question, explain: bool, tally: CallTally) -> Verdict:
        if self.kind.samples == 1:
            return await self._ask(input, output, question, (0, explain), tally)
        votes = await asyncio.gather(*(self._ask(input, output, question, (i, explain), tally) for i in range(self.kind.samples)))
        return majority(question.id, list(votes), self.kind.partial)

    async def _ask(self, input: str, output: str, question: Question, shape: Shape, tally: CallTally) -> Verdict:
        """One call's verdict, read as ``QuestionJudge._ask`` reads DSPy's; a reply that gave none is forgotten."""
        template, config, adapter = self.shapes[shape]
        reply: Reply | None = None
        failure: Exception | None = None
        try:
            reply = await self.fast.ask(template, (input, output, question.text), tally)
        except Exception as exc:  # read by verdict_of, as DSPy's path reads a failed call
            failure = exc

        def read() -> tuple[Any, Any]:  # what DSPy's adapter makes of one output (``Adapter._call_postprocess``)
            if failure is not None:
                raise failure
            assert reply is not None
            return read_output(adapter, self.signature, reply.output)

        verdict = self.kind.verdict_of(question, config, self.fast.model, read)
        if verdict.answer == "unanswered" and reply is not None:
            self.fast.forget(reply)
        return verdict


async def off_loop(call: Callable[[], T]) -> T:
    """``call()`` run on a daemon thread while the I/O loop goes on serving every other row. A daemon thread, not
    the loop's executor: a verifier past its timeout (``verifiers.guard``) is left running, and the process must not
    wait for it at exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: list[T], failure: list[BaseException]) -> None:
        if future.done():  # the row was cancelled meanwhile
            return
        if failure:
            future.set_exception(failure[0])
        else:
            future.set_result(result[0])

    def run() -> None:
        result: list[T] = []
        failure: list[BaseException] = []
        try:
            result.append(call())
        except Exception as exc:  # handed to the row's coroutine, which records it as any failure of its own
            failure.append(exc)
        except BaseException as exc:  # an exit raised on the loop would end the loop, and every row with it
            failure.append(RuntimeError(f"code checks raised {one_line(exc)}"))
        with suppress(RuntimeError):  # the loop closed meanwhile: no row waits for this
            loop.call_soon_threadsafe(settle, result, failure)

    threading.Thread(target=run, name="code checks", daemon=True).start()
    return await future
