"""Kind ``checklist``: each trial writes a checklist for every task with one writer setting, scored against gold.

The writer comes from a factory, ``make_writer(method, **params) -> ChecklistWriter``, and the score from a
scorer, ``score(generated, gold) -> Covered`` (Qworld's Coverage and Uniqueness of a generated checklist against
a gold one). Both are injected, so the kind is tested with fakes; by default they are
``bineval_dspy.checklists.writers.make_writer`` and ``bineval_dspy.analysis.coverage.coverage`` with the matcher
``[run] match`` names, looked up when a study is built. A trial's checklists and values are saved in its
``run_dir``, so a repeated parameter set reuses them.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.checklists.base import ChecklistWriter
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import Fingerprint, file_digest, still_valid
from bineval_dspy.core.jsonio import load_model, read_jsonl_models, write_json
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.lm import runtime
from bineval_dspy.lm.specs import DEFAULT_LM
from bineval_dspy.lm.usage import Cost, measured
from bineval_dspy.tune.config import Param
from bineval_dspy.tune.runners import Objective, TrialContext, TrialEnv, run_settings, trial_fingerprint


class Covered(Protocol):
    """What a scorer returns for one checklist: Coverage and Uniqueness, each from 0 to 1."""

    coverage: float
    uniqueness: float


WriterFactory = Callable[..., ChecklistWriter]
"""``make_writer(method, **params)``: a checklist writer by method name and parameters (w1, w2, w3, ...)."""
Scorer = Callable[[Checklist, Checklist], Covered]
"""``score(generated, gold)``: how the generated checklist covers the gold one."""

OBJECTIVES: Mapping[str, Objective] = {
    "coverage": Objective("mean share of each task's gold questions some written question matches"),
    "uniqueness": Objective("mean share of written questions that match no gold question"),
    "lm_calls": Objective("LM calls spent writing every task's checklist, cache hits included"),
    "questions": Objective("mean number of questions per checklist"),
}
RESULT_FILE = "checklists.json"


class ChecklistRunSettings(BaseModel):
    """The ``[run]`` table of kind ``checklist``."""

    model_config = ConfigDict(extra="forbid")

    tasks: Path = Field(description="JSON Lines: 'task' and 'gold' (a checklist, or its questions as text)")
    method: str = Field(min_length=1, description="the writer method make_writer knows (bineval, tick, qworld)")
    lm: str = DEFAULT_LM
    params: dict[str, Any] = Field(default_factory=dict, description="writer parameters every trial shares")
    match: Literal["embedding", "llm"] = Field(default="embedding", description="how a written question matches a gold one")
    threshold: float | None = Field(default=None, ge=-1, le=1, description="embedding cosine that counts as a match")


class GoldTask(BaseModel):
    """One task and the checklist experts wrote for it; plain question texts share one dimension, 'gold'."""

    model_config = ConfigDict(extra="ignore")

    task: str = Field(min_length=1)
    gold: Checklist | list[str]

    def gold_checklist(self) -> Checklist:
        if isinstance(self.gold, Checklist):
            return self.gold
        return Checklist(task=self.task, dimensions=["gold"], questions=[Question(text=t, dimension="gold") for t in self.gold])


class ChecklistTrialFingerprint(BaseModel):
    """What decides a checklist trial besides its parameters: the tasks' bytes, the method and its shared
    parameters, how questions are matched, and the LM (behind its API base)."""

    tasks: str
    method: str
    params: dict[str, Any]
    match: str
    lm: str


class ChecklistTrialResult(BaseModel):
    """A trial's saved work: what made it, the values, every checklist (to read, and to reuse) and the cost of
    writing and matching them."""

    fingerprint: dict[str, str]
    values: dict[str, float]
    checklists: list[Checklist]
    usage: Cost = Field(default_factory=Cost)


def load_tasks(path: Path) -> list[GoldTask]:
    tasks = [task for _, task in read_jsonl_models(path, GoldTask, required=("task", "gold"))]
    if not tasks:
        raise InputError(f"{path}: no tasks")
    return tasks


def _library(module: str, name: str) -> Any:
    """A function another part of this library provides; a missing one is one line, before any trial."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise InputError(f"kind 'checklist' needs {module}.{name}, which this installation lacks") from None


def library_scorer(settings: ChecklistRunSettings) -> Scorer:
    """``analysis.coverage.coverage`` with the matcher the settings name (MiniLM embeddings, or the LM per pair)."""
    coverage = _library("bineval_dspy.analysis.coverage", "coverage")
    if settings.match == "llm":
        matcher = _library("bineval_dspy.analysis.coverage", "LLMMatcher")()
    else:
        threshold = {} if settings.threshold is None else {"threshold": settings.threshold}
        matcher = _library("bineval_dspy.analysis.coverage", "embedding_matcher")(**threshold)
    return lambda generated, gold: coverage(generated, gold, matcher)


class ChecklistRunner:
    """Trials of kind ``checklist``; parameters go to ``make_writer`` on top of the ``[run] params``."""

    objectives = OBJECTIVES

    def __init__(self, settings: ChecklistRunSettings, env: TrialEnv, make_writer: WriterFactory, score: Scorer) -> None:
        self.settings = settings
        self.path = (env.base / settings.tasks).resolve()
        self.tasks = load_tasks(self.path)
        self.env = env
        self.make_writer = make_writer
        self.score = score
        self.lm_spec = env.lm_spec or settings.lm
        self._configured = False

    def writer(self, params: Mapping[str, Any]) -> ChecklistWriter:
        """The trial's writer; parameters it cannot take are one InputError naming the method."""
        try:
            return self.make_writer(self.settings.method, **{**self.settings.params, **params})
        except InputError as exc:
            raise InputError(f"{self.env.source}: run.method {self.settings.method!r}: {exc}") from None

    def check(self, space: Mapping[str, Param]) -> None:
        self.env.check_priced(self.lm_spec)
        shared = sorted(set(space) & set(self.settings.params))
        if shared:
            raise InputError(f"{self.env.source}: field 'space.{shared[0]}': also fixed in run.params; keep one")
        for name, param in space.items():
            for value in param.examples():
                self.writer({name: value})

    def fingerprint(self) -> Fingerprint:
        api_base = self.env.lm_options.api_base
        settings = self.settings
        return trial_fingerprint(ChecklistTrialFingerprint(
            tasks=file_digest(self.path), method=settings.method, params=settings.params, match=f"{settings.match} {settings.threshold}",
            lm=f"{self.lm_spec} @ {api_base}" if api_base else self.lm_spec,
        ))

    def __call__(self, params: dict[str, Any], context: TrialContext) -> dict[str, float]:
        saved = context.run_dir / RESULT_FILE
        fingerprint = self.fingerprint()
        if saved.is_file():
            result = load_model(saved, ChecklistTrialResult)
            if still_valid(result.fingerprint, fingerprint, str(saved)):
                return result.values
        writer = self.writer(params)
        self._configure()
        checklists, cost = measured(lambda: [writer(task=t.task) for t in self.tasks])
        scores, matching = measured(lambda: [self.score(c, t.gold_checklist()) for c, t in zip(checklists, self.tasks)])
        context.charge(cost + matching)
        values = {
            "coverage": sum(s.coverage for s in scores) / len(scores),
            "uniqueness": sum(s.uniqueness for s in scores) / len(scores),
            "lm_calls": float(cost.lm_calls),
            "questions": sum(len(c.questions) for c in checklists) / len(checklists),
        }
        context.run_dir.mkdir(parents=True, exist_ok=True)
        write_json(saved, ChecklistTrialResult(fingerprint=fingerprint, values=values, checklists=checklists, usage=cost + matching).model_dump(mode="json"))
        return values

    def _configure(self) -> None:
        if not self._configured:
            source = "`lm`" if self.env.lm_spec else f"{self.env.source}: field 'run.lm' ="
            runtime.configure(self.env.lm_options.model_copy(update={"spec": self.lm_spec, "source": source}), self.env.lm_cache)
            self._configured = True


def checklist_kind(make_writer: WriterFactory | None = None, score: Scorer | None = None) -> Callable[[dict[str, Any], TrialEnv], ChecklistRunner]:
    """The ``RunnerFactory`` of kind ``checklist``: the library's writer factory and coverage unless given."""

    def factory(table: dict[str, Any], env: TrialEnv) -> ChecklistRunner:
        settings = run_settings(ChecklistRunSettings, table, env.source)
        writers = make_writer or _library("bineval_dspy.checklists.writers", "make_writer")
        return ChecklistRunner(settings, env, writers, score or library_scorer(settings))

    return factory
