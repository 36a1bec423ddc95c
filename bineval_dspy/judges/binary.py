"""BinaryJudge: answer every checklist question independently, one LM call per question (or, with
``scoring="batch"``, all questions of one output in one call: ``judges.batch``).

The shared context (input, output) precedes the question in every prompt, so an in-process
model reuses its KV cache across the questions of one output. A question with a code
verifier is answered by code, never by the LM. Any failure to get a parseable answer
(garbage, an exception, a timeout) is an "unanswered" verdict, never a yes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, Literal

import dspy
from dspy.utils.exceptions import LMAuthError
from pydantic import ValidationError

from bineval_dspy.core.errors import InputError, one_line, redacted
from bineval_dspy.core.schema import (
    Calibration,
    Checklist,
    Explanations,
    JudgeFields,
    JudgeOptions,
    JudgeSpec,
    Question,
    Scorecard,
    Scoring,
    Verdict,
    VerdictFormat,
    options_problem,
)
from bineval_dspy.core.scoring import met, score
from bineval_dspy.judges import batch
from bineval_dspy.judges.base import CodeRouter
from bineval_dspy.judges.code import make_code_router
from bineval_dspy.judges.logprobs import p_yes_from_logprobs
from bineval_dspy.judges.probe import Probe
from bineval_dspy.judges.verdict import (
    EXPLANATION_STOP,
    REPLY_START,
    AnswerQuestion,
    BatchAdapter,
    PrefilledVerdictAdapter,
    StrictJSONAdapter,
    VerdictFirstAdapter,
)
from bineval_dspy.lm._batching import call_order
from bineval_dspy.lm.budget import metered_map
from bineval_dspy.lm.cache import reply_journal
from bineval_dspy.lm.engine import engine_of
from bineval_dspy.verifiers import Mode

# What the judge sees in place of the output when it measures its own bias for a question (contextual calibration,
# Zhao et al. 2021): an output with no content, so whatever P(yes) it gets is the question's prior, not evidence.
CONTENT_FREE_OUTPUT = "N/A"
# The mark of a verdict that probability mode or calibration should have read P(yes) for, from an LM that sent no
# logprobs: scored by its answer, and saying so, never silently.
NO_P_YES = "[no P(yes): the LM sent no logprobs at the verdict token; scored by its answer]"
LOCAL_PARALLEL = 16  # questions sent together to an in-process model, which decodes them as one batch


def _continues_prefill(lm: dspy.LM | None) -> bool:
    """Whether ``lm`` continues a reply from the assistant's prefill (the embedded engine does; an OpenAI-style
    server may answer after it instead)."""
    return engine_of(lm).supports_prefill


class BinaryJudge(dspy.Module):
    """Answers each question of a checklist on its own and aggregates the verdicts into a Scorecard.

    Options: ``chain_of_thought`` (reason before answering), ``samples`` (k-sample majority vote,
    as in TICK), ``probability`` (score with P(yes)/(P(yes)+P(no)) read from token logprobs), ``partial``
    (score a dimension over its answered questions instead of leaving it unscored when one is unanswered),
    ``calibration`` (``content_free``: divide out the LM's yes-bias per question, measured by asking the same
    question about a content-free output; the answer becomes yes exactly when P(yes) beats that prior, and the
    score uses the answers, or the calibrated P(yes) with ``probability``), ``thresholds`` (per dimension: the answer
    is yes exactly when P(yes) reaches the dimension's threshold instead of the LM's own choice; the optimizer fits
    them against a reference judge), ``scoring`` (``per_question``: one independent call per question; ``batch``:
    one call per output with one verdict per question in its schema, a missing verdict unanswered; a failure's
    explanation, a calibration prior and each sample are one batch call too).
    Questions that name a code verifier are answered by it (``verifier_mode`` strict or loose), never by
    the LM; ``code_router`` replaces that routing. ``probe``: the LM questions are answered by a trained head on the
    LM's hidden state (``judges.probe``: one prefill each, nothing decoded), not by what the LM says.

    ``explanations``: ``all`` (every verdict explained), ``failures`` (the answer first, then an explanation only
    for a failed criterion, a "no" or a "yes" to a negative-weight one: what the optimizer and a reader need) or
    ``none`` (answers only). The questions of one output are asked concurrently: an in-process model decodes them
    as one batch, a remote one gets ``threads`` at once.
    """

    repeat = 0  # which of a row's repeated judgings this judge asks for (``judges.repeats``): its calls' rollouts

    def __init__(
        self,
        *,
        chain_of_thought: bool = False,
        samples: int = 1,
        probability: bool = False,
        sample_temperature: float = 0.7,
        adapter: dspy.Adapter | None = None,
        code_router: CodeRouter | None = None,
        verifier_mode: Mode = "strict",
        partial: bool = False,
        explanations: Explanations = "all",
        threads: int | None = None,
        calibration: Calibration = "none",
        thresholds: dict[str, float] | None = None,
        scoring: Scoring = "per_question",
        verdict_format: VerdictFormat = "json",
        probe: Probe | None = None,
    ) -> None:
        super().__init__()
        try:  # the options are validated in one place, the model every judge config shares
            JudgeSpec(
                model="", chain_of_thought=chain_of_thought, samples=samples, probability=probability, verifier_mode=verifier_mode,
                partial=partial, explanations=explanations, calibration=calibration, thresholds=thresholds or {},
                scoring=scoring, verdict_format=verdict_format,
            )
        except ValidationError as exc:
            raise ValueError(options_problem(exc)) from None
        if probe is not None and (clash := probe_clash(chain_of_thought, samples, calibration, scoring, verdict_format)):
            raise ValueError(f"probe: {clash}")
        self.probe = probe
        self.answer = dspy.ChainOfThought(AnswerQuestion) if chain_of_thought else dspy.Predict(AnswerQuestion)
        self.samples = samples
        self.probability = probability
        self.sample_temperature = sample_temperature
        self.adapter = adapter or StrictJSONAdapter()
        self.verifier_mode = verifier_mode
        self.partial = partial
        self.code_router = code_router or make_code_router(verifier_mode)
        self.explanations = explanations
        self.threads = threads
        self.calibration = calibration
        self.thresholds = dict(thresholds or {})
        self._verdict_adapter = VerdictFirstAdapter()
        self.verdict_format = verdict_format
        self._prefilled = {explain: PrefilledVerdictAdapter(explain) for explain in (False, True)}
        self.scoring = scoring
        # only a batch judge has the batch predictor: a per-question judge's predictors (what optimizers and saved
        # programs name) stay the one ``answer``
        self.answer_all = dspy.Predict(batch.AnswerQuestions.append("verdicts", dspy.OutputField(), type_=dict)) if scoring == "batch" else None
        self._batch_adapter = BatchAdapter()

    @classmethod
    def from_spec(cls, spec: JudgeSpec | JudgeOptions, **runtime: Any) -> BinaryJudge:
        """The judge ``spec`` describes (what ``spec()`` returns; its ``model`` is a record: the judge calls the
        configured LM), or the one ``JudgeOptions`` give. ``runtime``: what no spec records (``threads``,
        ``adapter``, ``code_router``)."""
        if isinstance(spec, JudgeSpec):
            runtime = {"thresholds": spec.thresholds, **runtime}
            if spec.sample_temperature is not None:
                runtime = {"sample_temperature": spec.sample_temperature, **runtime}
        return cls(**spec.model_dump(include=set(JudgeFields.model_fields)), **runtime)

    def forward(self, input: str, output: str, checklist: Checklist) -> Scorecard:
        self.check_format()
        routed = {q.id: self.code_router(q, input, output) for q in checklist.questions}
        asked = [q for q in checklist.questions if routed[q.id] is None]
        if self.probe is not None:
            answers = self._probe_verdicts(input, output, asked)
            verdicts = [routed[q.id] or self.decided(answers[q.id], None, q) for q in checklist.questions]
            card = score(checklist, verdicts, use_probability=self.probability, partial=self.partial)
            return card.model_copy(update={"judge": self.spec()})
        if self.scoring == "batch":
            answers = self._batch_votes(input, output, asked)
            priors = self._batch(input, CONTENT_FREE_OUTPUT, asked, 0, False) if self.calibration == "content_free" else {}
        else:
            answers = self._each(asked, lambda q: self._ask_votes(input, output, q))
            priors = self._each(asked, lambda q: self._prior(input, q)) if self.calibration == "content_free" else {}
        answers = {q.id: self.decided(answers[q.id], priors.get(q.id), q) for q in asked}
        if self.explanations == "failures":
            failed = [q for q in asked if met(q, answers[q.id]) is False]
            explained = self._each(failed, lambda q: self._ask(input, output, q, 0, explain=True))
            answers.update({qid: self.explained_by(answers[qid], v) for qid, v in explained.items()})
        verdicts = [routed[q.id] or answers[q.id] for q in checklist.questions]
        card = score(checklist, verdicts, use_probability=self.probability, partial=self.partial)
        return card.model_copy(update={"judge": self.spec()})

    def _each(self, questions: Sequence[Question], ask: Callable[[Question], Verdict]) -> dict[str, Verdict]:
        """``ask`` for every question, concurrently when the LM allows it; verdicts by question id."""
        lm = self.answer_lm()
        engine = engine_of(lm)
        local = engine.in_process
        threads = min(len(questions), self.threads or (LOCAL_PARALLEL if local else 1))
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

    def _prior(self, input: str, question: Question) -> Verdict:
        """The question asked about a content-free output: the LM's yes-bias for it on this input."""
        return self._ask(input, CONTENT_FREE_OUTPUT, question, 0, explain=False)

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

    def spec(self) -> JudgeSpec:
        """The model string of the LM this judge calls, and its options."""
        lm = self.answer_lm()
        return JudgeSpec(
            model=getattr(lm, "model", "unknown-lm"),
            chain_of_thought=isinstance(self.answer, dspy.ChainOfThought),
            samples=self.samples,
            probability=self.probability,
            sample_temperature=self.sample_temperature if self.samples > 1 else None,
            verifier_mode=self.verifier_mode,
            partial=self.partial,
            explanations=self.explanations,
            calibration=self.calibration,
            thresholds=self.thresholds,
            scoring=self.scoring,
            verdict_format=self.verdict_format,
            probe=self.probe.digest() if self.probe is not None else None,
        )

    def _probe_verdicts(self, input: str, output: str, questions: Sequence[Question]) -> dict[str, Verdict]:
        """The probe's verdicts for ``questions`` (its reader is the judge LM's model, refused in one line when that
        model gives no hidden states)."""
        from bineval_dspy.lm.cache import installed_dir
        from bineval_dspy.lm.hidden import reader_for

        assert self.probe is not None
        lm = self.answer_lm()
        reader = reader_for(lm, installed_dir(), backend=self.probe.record.backend)  # the states its head was trained on
        return self.probe.verdicts(reader, input, output, questions, PROBE_JUDGE + getattr(lm, "model", "unknown-lm"))

    def check_format(self) -> None:
        lm = self.answer_lm()
        if self.verdict_format == "prefilled" and not _continues_prefill(lm):
            model = getattr(lm, "model", "the LM")
            raise InputError(f"{model}: the prefilled verdict format needs an LM that continues the assistant's prefill (the embedded model); use verdict format json")

    def judge_question(self, input: str, output: str, question: Question) -> Verdict:
        """One verdict for one question: by code when a verifier applies, else by the LM."""
        self.check_format()
        routed = self.code_router(question, input, output)
        if routed is not None:
            return routed
        if self.probe is not None:
            return self.decided(self._probe_verdicts(input, output, [question])[question.id], None, question)
        prior = self._prior(input, question) if self.calibration == "content_free" else None
        verdict = self.decided(self._ask_votes(input, output, question), prior, question)
        if self.explanations == "failures" and met(question, verdict) is False:
            verdict = self.explained_by(verdict, self._ask(input, output, question, 0, explain=True))
        return verdict

    def _ask_votes(self, input: str, output: str, question: Question) -> Verdict:
        explain = self.explanations == "all"
        votes = [self._ask(input, output, question, i, explain) for i in range(self.samples)]
        return votes[0] if self.samples == 1 else majority(question.id, votes, self.partial)

    def _ask(self, input: str, output: str, question: Question, sample: int, explain: bool) -> Verdict:
        """One LM answer. Without ``explain`` generation stops after the answer (same prompt, fewer tokens)."""
        lm = self.answer_lm()
        judge_name = getattr(lm, "model", "unknown-lm")
        config = self.call_config(sample, explain)
        with reply_journal() as journal:
            verdict = self._read(input, output, question, config, explain, judge_name)
            if verdict.answer == "unanswered":
                journal.forget()  # a reply that gave no verdict is not replayed: a rerun asks again
        return verdict

    def call_config(self, sample: int, explain: bool) -> dict[str, Any]:
        """The LM settings of one per-question call: a sample's temperature and rollout, logprobs where P(yes) is
        read, and the stop after the answer of a call that does not explain."""
        config: dict[str, Any] = self.rollout(sample)
        reads_p = self.probability or self.calibration != "none" or bool(self.thresholds)
        if reads_p:
            config.update(logprobs=True, top_logprobs=10)
        if not explain:
            config.update(stop=['"'] if self.verdict_format == "prefilled" else [EXPLANATION_STOP])
        return config

    def rollout(self, sample: int) -> dict[str, Any]:
        """The settings that set one call apart in the cache: a sample's temperature and rollout, and under
        ``repeat`` R (``judges.repeats``) rollouts of their own, R x samples on, so no repeat replays another's
        call; repeat 0 is the run without repeats, its cache entries included."""
        rollout = self.repeat * self.samples + sample
        if self.samples > 1:
            return {"temperature": self.sample_temperature, "rollout_id": rollout}
        return {"rollout_id": rollout} if rollout else {}

    def _batch_votes(self, input: str, output: str, questions: Sequence[Question]) -> dict[str, Verdict]:
        """Every question's verdict from one batch call per sample (a majority per question when several)."""
        explain = self.explanations == "all"
        votes = [self._batch(input, output, questions, i, explain) for i in range(self.samples)]
        if self.samples == 1:
            return votes[0]
        return {q.id: majority(q.id, [vote[q.id] for vote in votes], self.partial) for q in questions}

    def _batch(self, input: str, output: str, questions: Sequence[Question], sample: int, explain: bool) -> dict[str, Verdict]:
        """One LM call answering every question; an error or a reply with no verdicts leaves them all unanswered."""
        if not questions:
            return {}
        lm = self.answer_lm()
        judge_name = getattr(lm, "model", "unknown-lm")
        config: dict[str, Any] = {"max_tokens": batch.max_tokens(len(questions), explain, int((getattr(lm, "kwargs", None) or {}).get("max_tokens") or 0))}
        config.update(self.rollout(sample))
        reads_p = self.probability or self.calibration != "none" or bool(self.thresholds)
        if reads_p:
            config.update(logprobs=True, top_logprobs=10)
        assert self.answer_all is not None  # built with scoring="batch"
        signature = batch.batch_signature(len(questions), explain).with_instructions(self.answer_all.signature.instructions)
        with reply_journal() as journal:
            try:
                with dspy.context(adapter=self._batch_adapter):
                    pred = self.answer_all(input=input, output=output, questions=batch.numbered(questions), config=config, signature=signature)
                verdicts = batch.read_batch(pred.verdicts, questions, getattr(pred, "logprobs", None), judge_name, reads_p)
            except LMAuthError as exc:
                raise InputError(f"{judge_name}: the LM refused the API key ({one_line(exc)}); check `api_key_env`") from None
            except Exception as exc:  # any other LM or parse failure leaves every question unanswered, never yes
                why = f"no usable batch answer: {one_line(exc)}"
                verdicts = {q.id: Verdict(question_id=q.id, answer="unanswered", explanation=why, judge=judge_name) for q in questions}
            if any(v.answer == "unanswered" for v in verdicts.values()):
                journal.forget()  # a reply that left a verdict out is not replayed: a rerun asks again
        if self._needs_p_yes():
            verdicts = {
                qid: v.model_copy(update={"explanation": f"{v.explanation} {NO_P_YES}".strip()}) if v.p_yes is None and v.answer != "unanswered" else v
                for qid, v in verdicts.items()
            }
        return verdicts

    def _read(self, input: str, output: str, question: Question, config: dict[str, Any], explain: bool, judge_name: str) -> Verdict:
        """The LM's verdict for one call through DSPy (``verdict_of``)."""

        def predicted() -> tuple[Any, Any]:
            with dspy.context(adapter=self.adapter_for(explain)):
                pred = self.answer(input=input, output=output, question=question.text, config=config)
            return pred.verdict, getattr(pred, "logprobs", None)

        return self.verdict_of(question, config, judge_name, predicted)

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
        if p_yes is None and self._needs_p_yes():  # the answer stands, but never passes for a probability
            explanation = f"{explanation} {NO_P_YES}".strip()
        return Verdict(question_id=question.id, answer=answer, p_yes=p_yes, explanation=redacted(explanation), judge=judge_name)

    def adapter_for(self, explain: bool) -> dspy.Adapter:
        """The adapter of a per-question call: the verdict format's, reading the whole reply or only its answer."""
        if self.verdict_format == "prefilled":
            return self._prefilled[explain]
        return self.adapter if explain else self._verdict_adapter

    def _needs_p_yes(self) -> bool:
        """Whether a verdict without P(yes) cannot be scored as asked: probability mode or calibration on one sample
        (a vote's P(yes) is its share of the samples)."""
        return self.samples == 1 and (self.probability or self.calibration != "none")

    def answer_lm(self) -> dspy.LM | None:
        """The LM this judge calls: its own if set, else the configured one."""
        return self.answer.predictors()[0].lm or dspy.settings.lm


PROBE_JUDGE = "probe:"  # a probe verdict's judge: "probe:<model>", so a report's judge filter tells it from a spoken one


def probe_clash(chain_of_thought: bool, samples: int, calibration: str, scoring: str, verdict_format: str) -> str | None:
    """Why a probe cannot go with these options (it decodes nothing: no reasoning, no votes, no prior), or None."""
    if chain_of_thought or samples > 1:
        return "a probe reads one state per question: no chain of thought, no samples"
    if calibration != "none":
        return "a probe's threshold is its calibration: no content-free calibration"
    if scoring != "per_question" or verdict_format != "json":
        return "a probe answers each question from its own prompt: per-question scoring, json verdict format"
    return None


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

