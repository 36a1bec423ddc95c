"""The per-question LM judge kind: every LM question in a call of its own, its verdict decided from the replies.

``QuestionJudge`` holds the options that decide a verdict (samples, P(yes) reading, calibration, thresholds,
explanations, verdict format); the calls go through the ``Front`` it is handed (the ``BinaryJudge``: its predictors,
LM, threads and repeat), so DSPy's optimizers and saved programs see the one predictor, however the judge is copied. The batch and
probe kinds (``judges.batch``, ``judges.probe``) keep these options and change only where the verdicts come from.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, ClassVar, Literal, Protocol

import dspy
from dspy.utils.exceptions import LMAuthError

from bineval_dspy.core.errors import InputError, one_line, redacted
from bineval_dspy.core.schema import Calibration, Explanations, Question, Scoring, Verdict, VerdictFormat
from bineval_dspy.core.scoring import met
from bineval_dspy.judges.logprobs import p_yes_from_logprobs
from bineval_dspy.judges.verdict import (
    EXPLANATION_STOP,
    REPLY_START,
    PrefilledVerdictAdapter,
    StrictJSONAdapter,
    VerdictFirstAdapter,
)
from bineval_dspy.lm._batching import call_order
from bineval_dspy.lm.budget import metered_map
from bineval_dspy.lm.cache import reply_journal
from bineval_dspy.lm.engine import engine_of

# What the judge sees in place of the output when it measures its own bias for a question (contextual calibration,
# Zhao et al. 2021): an output with no content, so whatever P(yes) it gets is the question's prior, not evidence.
CONTENT_FREE_OUTPUT = "N/A"
# The mark of a verdict that probability mode or calibration should have read P(yes) for, from an LM that sent no
# logprobs: scored by its answer, and saying so, never silently.
NO_P_YES = "[no P(yes): the LM sent no logprobs at the verdict token; scored by its answer]"
LOCAL_PARALLEL = 16  # questions sent together to an in-process model, which decodes them as one batch


class Front(Protocol):
    """What a judge kind asks through: the predictors, the LM, and the runner's settings (``BinaryJudge``)."""

    threads: int | None  # questions of one output asked at once; None: the LM's default
    repeat: int  # which of a row's repeated judgings this is (``judges.repeats``)

    @property
    def answer(self) -> dspy.Module: ...

    @property
    def answer_all(self) -> dspy.Predict | None: ...

    def answer_lm(self) -> dspy.LM | None: ...


class QuestionJudge:
    """One call per LM question (``AnswerQuestion``): ``samples`` votes, a content-free prior under
    ``calibration``, a dimension's P(yes) ``thresholds``, and under ``explanations="failures"`` a second call
    explaining each failed criterion. Any failure to get a parseable answer is an unanswered verdict, never a yes."""

    scoring: ClassVar[Scoring] = "per_question"

    def __init__(
        self,
        *,
        samples: int = 1,
        probability: bool = False,
        sample_temperature: float = 0.7,
        adapter: dspy.Adapter | None = None,
        partial: bool = False,
        explanations: Explanations = "all",
        calibration: Calibration = "none",
        thresholds: dict[str, float] | None = None,
        verdict_format: VerdictFormat = "json",
    ) -> None:
        self.samples = samples
        self.probability = probability
        self.sample_temperature = sample_temperature
        self.adapter = adapter or StrictJSONAdapter()
        self.partial = partial
        self.explanations = explanations
        self.calibration = calibration
        self.thresholds = dict(thresholds or {})
        self.verdict_format = verdict_format
        self.verdict_adapter = VerdictFirstAdapter()
        self._prefilled = {explain: PrefilledVerdictAdapter(explain) for explain in (False, True)}

    def options(self) -> dict[str, Any]:
        """The keywords that build this judge again (another kind over the same options: ``BinaryJudge.probe``)."""
        return {
            "samples": self.samples, "probability": self.probability, "sample_temperature": self.sample_temperature,
            "adapter": self.adapter, "partial": self.partial, "explanations": self.explanations,
            "calibration": self.calibration, "thresholds": self.thresholds, "verdict_format": self.verdict_format,
        }  # fmt: skip

    def recorded(self) -> dict[str, Any]:
        """The options as a ``JudgeSpec`` records them (a sampling temperature only where samples are drawn)."""
        options = {name: value for name, value in self.options().items() if name != "adapter"}
        return {**options, "sample_temperature": self.sample_temperature if self.samples > 1 else None, "scoring": self.scoring}

    def check_format(self, judge: Front) -> None:
        """Refuse the prefilled verdict format on an LM that does not continue the assistant's prefill."""
        lm = judge.answer_lm()
        if self.verdict_format == "prefilled" and not engine_of(lm).supports_prefill:
            model = getattr(lm, "model", "the LM")
            raise InputError(f"{model}: the prefilled verdict format needs an LM that continues the assistant's prefill (the embedded model); use verdict format json")

    def verdicts(self, judge: Front, input: str, output: str, questions: Sequence[Question]) -> dict[str, Verdict]:
        """Every question's verdict, the questions asked concurrently (``_each``)."""
        answers = self._each(judge, questions, lambda q: self._votes(judge, input, output, q))
        priors = self._each(judge, questions, lambda q: self._ask(judge, input, CONTENT_FREE_OUTPUT, q, 0, False)) if self.calibration == "content_free" else {}
        return self.settled(judge, input, output, questions, answers, priors)

    def verdict(self, judge: Front, input: str, output: str, question: Question) -> Verdict:
        """One question's verdict: its prior first, then its votes (``BinaryJudge.judge_question``)."""
        prior = self._ask(judge, input, CONTENT_FREE_OUTPUT, question, 0, False) if self.calibration == "content_free" else None
        verdict = self.decided(self._votes(judge, input, output, question), prior, question)
        if self.explanations == "failures" and met(question, verdict) is False:
            verdict = self.explained_by(verdict, self._ask(judge, input, output, question, 0, explain=True))
        return verdict

    def settled(
        self, judge: Front, input: str, output: str, questions: Sequence[Question], answers: dict[str, Verdict], priors: dict[str, Verdict]
    ) -> dict[str, Verdict]:
        """The verdicts the answers and priors decide, each failure explained by a call of its own when asked for."""
        decided = {q.id: self.decided(answers[q.id], priors.get(q.id), q) for q in questions}
        if self.explanations == "failures":
            failed = [q for q in questions if met(q, decided[q.id]) is False]
            explained = self._each(judge, failed, lambda q: self._ask(judge, input, output, q, 0, explain=True))
            decided.update({qid: self.explained_by(decided[qid], v) for qid, v in explained.items()})
        return decided

    def _each(self, judge: Front, questions: Sequence[Question], ask: Callable[[Question], Verdict]) -> dict[str, Verdict]:
        """``ask`` for every question, concurrently when the LM allows it; verdicts by question id."""
        engine = engine_of(judge.answer_lm())
        local = engine.in_process
        threads = min(len(questions), judge.threads or (LOCAL_PARALLEL if local else 1))
        if threads <= 1:
            return {q.id: ask(q) for q in questions}
        hint = engine.expect(len(questions)) if local else nullcontext()
        group = object()

        def ask_in_order(item: tuple[int, Question]) -> Verdict:
            with call_order(group, item[0]):  # an in-process batch decodes them in checklist order, as one at a time
                return ask(item[1])

        with hint:
            asked = [v for v, _ in metered_map(ask_in_order, list(enumerate(questions)), "questions", threads=threads, show=False)]
        return {q.id: v for q, v in zip(questions, asked)}

    def decided(self, verdict: Verdict, prior: Verdict | None, question: Question) -> Verdict:
        """The LM's verdict, calibrated against ``prior`` when given, then decided by the dimension's P(yes)
        threshold when one is set and P(yes) was read: the one place the answer may differ from the LM's own."""
        if prior is not None:
            verdict = calibrated(verdict, prior)
        threshold = self.thresholds.get(question.dimension)
        if threshold is None or verdict.p_yes is None or verdict.answer == "unanswered":
            return verdict
        answer: Literal["yes", "no"] = "yes" if verdict.p_yes >= threshold else "no"
        return verdict.model_copy(update={"answer": answer})

    def explained_by(self, verdict: Verdict, explained: Verdict) -> Verdict:
        """The verdict with the explanation a second, explaining call gave: that call's verdict itself (greedy
        decoding repeats the answer), unless calibration or a threshold decided the answer, which keeps its place.
        An explaining call that answers otherwise (a sampled or nondeterministic LM) leaves the question unanswered:
        one answer would explain the other."""
        decided = self.calibration != "none" or bool(self.thresholds)  # the answer is not the LM's own
        if not decided and explained.answer not in ("unanswered", verdict.answer):
            why = f"the explaining call answered {explained.answer!r} where the verdict said {verdict.answer!r}"
            return verdict.model_copy(update={"answer": "unanswered", "p_yes": None, "explanation": why})
        if not decided or explained.answer == "unanswered":
            return verdict if decided else explained
        return verdict.model_copy(update={"explanation": f"{explained.explanation} {verdict.explanation}".strip()})

    def _votes(self, judge: Front, input: str, output: str, question: Question) -> Verdict:
        explain = self.explanations == "all"
        votes = [self._ask(judge, input, output, question, i, explain) for i in range(self.samples)]
        return votes[0] if self.samples == 1 else majority(question.id, votes, self.partial)

    def _ask(self, judge: Front, input: str, output: str, question: Question, sample: int, explain: bool) -> Verdict:
        """One LM answer through DSPy. Without ``explain`` generation stops after the answer (same prompt, fewer
        tokens)."""
        config = self.call_config(judge, sample, explain)

        def predicted() -> tuple[Any, Any]:
            with dspy.context(adapter=self.adapter_for(explain)):
                pred = judge.answer(input=input, output=output, question=question.text, config=config)
            return pred.verdict, getattr(pred, "logprobs", None)

        with reply_journal() as journal:
            verdict = self.verdict_of(question, config, getattr(judge.answer_lm(), "model", "unknown-lm"), predicted)
            if verdict.answer == "unanswered":
                journal.forget()  # a reply that gave no verdict is not replayed: a rerun asks again
        return verdict

    def call_config(self, judge: Front, sample: int, explain: bool) -> dict[str, Any]:
        """The LM settings of one per-question call: a sample's temperature and rollout, logprobs where P(yes) is
        read, and the stop after the answer of a call that does not explain."""
        config: dict[str, Any] = self.rollout(judge, sample)
        if self.reads_p_yes():
            config.update(logprobs=True, top_logprobs=10)
        if not explain:
            config.update(stop=['"'] if self.verdict_format == "prefilled" else [EXPLANATION_STOP])
        return config

    def rollout(self, judge: Front, sample: int) -> dict[str, Any]:
        """The settings that set one call apart in the cache: a sample's temperature and rollout, and under the
        judge's ``repeat`` R (``judges.repeats``) rollouts of their own, R x samples on, so no repeat replays
        another's call; repeat 0 is the run without repeats, its cache entries included."""
        rollout = judge.repeat * self.samples + sample
        if self.samples > 1:
            return {"temperature": self.sample_temperature, "rollout_id": rollout}
        return {"rollout_id": rollout} if rollout else {}

    def verdict_of(self, question: Question, config: dict[str, Any], judge_name: str, read: Callable[[], tuple[Any, Any]]) -> Verdict:
        """The verdict of one call, whose parsed verdict and logprobs ``read`` gives, or an unanswered one saying
        why (an error, a reply that does not parse); a verdict whose P(yes) the score needs but the reply lacks is
        marked ``NO_P_YES``. The one reading of a call, whichever path made it (``judges.fast``)."""

        def unanswered(why: str) -> Verdict:
            return Verdict(question_id=question.id, answer="unanswered", explanation=why, judge=judge_name)

        try:
            given, logprobs = read()
            answer, explanation = given.answer, given.explanation
        except LMAuthError as exc:  # a refused key fails every call alike: the run's setup is wrong, not this answer
            raise InputError(f"{judge_name}: the LM refused the API key ({one_line(exc)}); check `api_key_env`") from None
        except Exception as exc:  # any other LM or parse failure is an unanswered question, never a yes
            return unanswered(f"no usable answer: {one_line(exc)}")
        if answer not in ("yes", "no"):
            return unanswered(f"unparseable answer {answer!r}")
        # P(yes) is read at the verdict token and kept beside the parsed answer; it never overrides it
        at = (REPLY_START,) if self.verdict_format == "prefilled" else ()  # where the verdict token is
        p_yes = p_yes_from_logprobs(logprobs, *at) if "logprobs" in config else None
        if p_yes is None and self.needs_p_yes():  # the answer stands, but never passes for a probability
            explanation = f"{explanation} {NO_P_YES}".strip()
        return Verdict(question_id=question.id, answer=answer, p_yes=p_yes, explanation=redacted(explanation), judge=judge_name)

    def adapter_for(self, explain: bool) -> dspy.Adapter:
        """The adapter of a per-question call: the verdict format's, reading the whole reply or only its answer."""
        if self.verdict_format == "prefilled":
            return self._prefilled[explain]
        return self.adapter if explain else self.verdict_adapter

    def reads_p_yes(self) -> bool:
        """Whether the calls ask for logprobs: P(yes) scores, calibrates or meets a threshold."""
        return self.probability or self.calibration != "none" or bool(self.thresholds)

    def needs_p_yes(self) -> bool:
        """Whether a verdict without P(yes) cannot be scored as asked: probability mode or calibration on one sample
        (a vote's P(yes) is its share of the samples)."""
        return self.samples == 1 and (self.probability or self.calibration != "none")


def majority(question_id: str, votes: list[Verdict], partial: bool = False) -> Verdict:
    """Majority of the votes. A failed sample is an unanswered vote, and any unanswered vote leaves the verdict
    unanswered unless ``partial`` (then the answered votes decide); a tie or no answered vote is unanswered."""
    counts = Counter(v.answer for v in votes)
    yes, no, missing = counts["yes"], counts["no"], counts["unanswered"]
    answer: Literal["yes", "no", "unanswered"] = "unanswered" if yes == no else ("yes" if yes > no else "no")
    if missing and not partial:
        answer = "unanswered"
    winner = next((v for v in votes if v.answer == answer), votes[0])  # its explanation, or a failed sample's reason
    p_yes = yes / (yes + no) if yes + no and answer != "unanswered" else None
    tally = f"{yes} yes / {no} no" + (f" / {missing} unanswered" if missing else "")
    return Verdict(
        question_id=question_id,
        answer=answer,
        p_yes=p_yes,
        explanation=f"{tally} of {len(votes)} samples. {winner.explanation}".strip(),
        judge=votes[0].judge,
    )


def calibrated(verdict: Verdict, prior: Verdict) -> Verdict:
    """Contextual calibration of one verdict: P(yes) reweighted by the question's content-free P(yes) ``c``,
    p' = (p/c) / (p/c + (1-p)/(1-c)), and the answer yes exactly when p' >= 0.5 (p >= c). Calibration that cannot
    be done (no P(yes) read for the verdict, or the prior's call failed or gave none) leaves the question unanswered:
    the LM's own answer is the yes-biased one calibration was asked to correct."""
    p, c = verdict.p_yes, prior.p_yes
    if verdict.answer == "unanswered":
        return verdict
    reason = (
        "no P(yes) was read for the verdict" if p is None
        else f"no content-free P(yes) was read ({prior.explanation or prior.answer})" if c is None
        else f"a content-free P(yes) of {c} divides nothing out" if not 0 < c < 1
        else None
    )
    if reason is not None or p is None or c is None:
        failed = {"answer": "unanswered", "p_yes": None, "explanation": f"calibration failed: {reason}. {verdict.explanation}".strip()}
        return verdict.model_copy(update=failed)
    yes, no = p / c, (1 - p) / (1 - c)
    p_cal = yes / (yes + no)
    answer: Literal["yes", "no"] = "yes" if p_cal >= 0.5 else "no"
    note = f"[calibrated: P(yes) {p:.2f} against {c:.2f} for a content-free output]"
    update = {"answer": answer, "p_yes": p_cal, "p_yes_content_free": c, "explanation": f"{verdict.explanation} {note}".strip()}
    return verdict.model_copy(update=update)
