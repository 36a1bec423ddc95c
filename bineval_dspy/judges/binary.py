"""BinaryJudge: answer every checklist question independently and aggregate the verdicts into a Scorecard.

The judge is a front and a kind. The front (``BinaryJudge``, the ``dspy.Module`` users build, optimize and save)
answers every question that names a code verifier by code, never by an LM, and holds what DSPy and the runner touch:
the predictors, the code router, threads, repeat. Its kind answers the rest: ``QuestionJudge`` one LM call per
question (``judges.question``), ``BatchJudge`` all of an output's questions in one call (``judges.batch``),
``ProbeJudge`` a trained head on the LM's hidden state (``judges.probe``). Any failure to get a parseable answer
(garbage, an exception, a timeout) is an "unanswered" verdict, never a yes.
"""

from __future__ import annotations

from typing import Any

import dspy
from pydantic import ValidationError

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
from bineval_dspy.core.scoring import score
from bineval_dspy.judges import batch
from bineval_dspy.judges.base import CodeRouter
from bineval_dspy.judges.batch import BatchJudge
from bineval_dspy.judges.code import make_code_router
from bineval_dspy.judges.probe import Probe, ProbeJudge, probe_clash
from bineval_dspy.judges.question import QuestionJudge
from bineval_dspy.judges.verdict import AnswerQuestion
from bineval_dspy.verifiers import Mode


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
    one call per output with one verdict per question in its schema, a missing verdict unanswered).
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
        # the predictors live here, under the names optimizers and saved programs know them by: a per-question judge's
        # one ``answer``, a batch judge's ``answer_all`` beside it
        self.answer = dspy.ChainOfThought(AnswerQuestion) if chain_of_thought else dspy.Predict(AnswerQuestion)
        self.answer_all = dspy.Predict(batch.AnswerQuestions.append("verdicts", dspy.OutputField(), type_=dict)) if scoring == "batch" else None
        self.code_router = code_router or make_code_router(verifier_mode)
        self.verifier_mode = verifier_mode
        self.threads = threads
        self.kind = kind_of(
            chain_of_thought, scoring, probe, samples=samples, probability=probability, sample_temperature=sample_temperature, adapter=adapter,
            partial=partial, explanations=explanations, calibration=calibration, thresholds=thresholds, verdict_format=verdict_format,
        )  # fmt: skip

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

    @property
    def probe(self) -> Probe | None:
        """The head answering the LM questions, if any; one given later (an experiment's probe arm) makes this a
        probe judge over the same options."""
        return self.kind.probe if isinstance(self.kind, ProbeJudge) else None

    @probe.setter
    def probe(self, probe: Probe | None) -> None:
        self.kind = kind_of(isinstance(self.answer, dspy.ChainOfThought), self.kind.scoring, probe, **self.kind.options())

    @property
    def thresholds(self) -> dict[str, float]:
        """The kind's per-dimension P(yes) thresholds: the state an optimizer fits and a program saves."""
        return self.kind.thresholds

    @thresholds.setter
    def thresholds(self, thresholds: dict[str, float]) -> None:
        self.kind.thresholds = dict(thresholds)

    def forward(self, input: str, output: str, checklist: Checklist) -> Scorecard:
        self.kind.check_format(self)
        routed = {q.id: self.code_router(q, input, output) for q in checklist.questions}
        answers = self.kind.verdicts(self, input, output, [q for q in checklist.questions if routed[q.id] is None])
        verdicts = [routed[q.id] or answers[q.id] for q in checklist.questions]
        card = score(checklist, verdicts, use_probability=self.kind.probability, partial=self.kind.partial)
        return card.model_copy(update={"judge": self.spec()})

    def judge_question(self, input: str, output: str, question: Question) -> Verdict:
        """One verdict for one question: by code when a verifier applies, else by the kind."""
        self.kind.check_format(self)
        routed = self.code_router(question, input, output)
        return routed if routed is not None else self.kind.verdict(self, input, output, question)

    def spec(self) -> JudgeSpec:
        """The model string of the LM this judge calls, and its options."""
        model = getattr(self.answer_lm(), "model", "unknown-lm")
        chain_of_thought = isinstance(self.answer, dspy.ChainOfThought)
        return JudgeSpec(model=model, chain_of_thought=chain_of_thought, verifier_mode=self.verifier_mode, **self.kind.recorded())

    def answer_lm(self) -> dspy.LM | None:
        """The LM this judge calls: its own if set, else the configured one."""
        return self.answer.predictors()[0].lm or dspy.settings.lm


def kind_of(chain_of_thought: bool, scoring: Scoring, probe: Probe | None, **options: Any) -> QuestionJudge:
    """The kind that answers a judge's LM questions: a probe's, refused in one line with options it cannot go with,
    else the scoring's."""
    if probe is not None:
        if clash := probe_clash(chain_of_thought, options["samples"], options["calibration"], scoring, options["verdict_format"]):
            raise ValueError(f"probe: {clash}")
        return ProbeJudge(probe, **options)
    return BatchJudge(**options) if scoring == "batch" else QuestionJudge(**options)
