"""Qworld: question-specific evaluation criteria grown by a recursive expansion tree (RET).

task -> scenarios (intent, audience, stakes, assumed knowledge) -> perspectives (evaluation axes) -> criteria
(yes/no conditions with integer weights in Qworld's bands: 1..10 for a criterion a good response meets, -1..-10
for a flaw to penalize if present; the question of a negative criterion asks whether the flaw is there, so "yes"
lowers the score, see ``core.scoring``). Each level is written by a hierarchical decomposition R_h of every node of
the level above, then up to ``w`` rounds of horizontal expansion R_w ("what is missing at this level?"): ``w1``
for scenarios, ``w2`` for perspectives (the paper's 3 and 4) and ``w3`` for criteria (0 in the paper).

Two things the paper leaves open are fixed here. Near-duplicates are merged at every level (exact text first, then
sentence-embedding cosine similarity at ``threshold``), since expansion rounds and sibling nodes repeat each other;
a round that adds nothing new ends that node's expansion early (at temperature 0 the next round would ask the same
prompt again). And every criterion keeps its scenario and perspective in ``Question.lineage``, so scores can be
reported per perspective and per scenario (``core.scoring.lineage_scores``). An answer that cannot be parsed adds
nothing and is counted, and is not retried: a node it left without children is not expanded. Criteria are never
invented.

LM calls per task (each at most, fewer when a round adds nothing or a cap is reached):
``1 + w1 + S * (1 + w2) + P * (1 + w3)``, S scenarios (<= ``max_scenarios``) and P perspectives after dedup
(<= S * ``max_perspectives``); decomposition of perspectives stops once ``max_criteria`` criteria are kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any, Literal

import dspy
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model

from bineval_dspy.checklists.bineval import QuestionText, ShortText
from bineval_dspy.checklists.routing import route_to_code
from bineval_dspy.core.errors import InputError, RunError
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.lm.usage import Cost, measured
from bineval_dspy.optimize.lessons import Embedder, minilm_embedder, normalize

DEFAULT_DIMENSION = "quality"
LEVELS = ("scenario", "perspective", "criterion")
WEIGHTS: tuple[int, ...] = (*range(1, 11), *range(-1, -11, -1))

Label = Annotated[str, StringConstraints(min_length=3, max_length=80)]
AxisName = Annotated[str, StringConstraints(min_length=3, max_length=40)]
# An enum, not an integer range: llama.cpp grammars enforce enums, so even a tiny model stays in Qworld's bands.
Weight = Literal[WEIGHTS]  # type: ignore[valid-type]


# -- what the LM writes --------------------------------------------------------------------------------------------
class ScenarioDraft(BaseModel):
    """One scenario in which the task is asked."""

    intent: ShortText = Field(description="what the asker wants to achieve in this scenario")
    audience: Label = Field(description="who the response is for")
    stakes: Literal["low", "medium", "high"] = Field(description="how much harm a poor response could do")
    assumed_knowledge: Label = Field(description="what the audience is assumed to know already")


class PerspectiveDraft(BaseModel):
    """One evaluation axis for responses in this scenario."""

    name: AxisName = Field(description="a short name for the axis, e.g. factual correctness")
    description: ShortText = Field(description="what a response is checked for along this axis")


class CriterionDraft(BaseModel):
    """One binary criterion: a yes/no question about the response, with its integer weight."""

    question: QuestionText = Field(description="one checkable condition, asked as a yes/no question")
    weight: Weight = Field(  # type: ignore[valid-type]
        description="1 to 10: importance of a condition a good response meets (yes = met); "
        "-1 to -10: a flaw to penalize, its question asking whether the flaw is present (yes = flawed)"
    )


def _items(item: type[BaseModel], low: int, high: int) -> type[BaseModel]:
    """A list holder whose bounds live on a field, so they reach the JSON schema (and a local model's grammar)."""
    return create_model(f"{item.__name__}List", __doc__=item.__doc__, items=(list[item], Field(min_length=low, max_length=high)))  # type: ignore[valid-type]


def _tagged(dimensions: list[str]) -> type[BaseModel]:
    """``PerspectiveDraft`` with a dimension the LM must pick from the given ones."""
    choice: Any = Literal[tuple(dimensions)]
    return create_model(
        "PerspectiveDraft", __base__=PerspectiveDraft, dimension=(choice, Field(description="the evaluation dimension this axis belongs to"))
    )


class DecomposeTask(dspy.Signature):
    """Ground the task in scenarios: the distinct situations in which it could be asked. For each scenario give
    the asker's intent, the audience of the response, the stakes and the knowledge the audience is assumed to have."""

    task: str = dspy.InputField(desc="the task whose responses will be evaluated")


class ExpandScenarios(dspy.Signature):
    """What is missing? Read the task and the scenarios found so far, and add only scenarios that are missing:
    other intents, audiences or stakes an evaluation of responses must consider. Add none if nothing is missing."""

    task: str = dspy.InputField(desc="the task whose responses will be evaluated")
    scenarios: str = dspy.InputField(desc="the scenarios found so far, one per line")


class DecomposeScenario(dspy.Signature):
    """List the perspectives from which a response to the task should be evaluated in this scenario: distinct
    evaluation axes (such as factual correctness, completeness, reasoning, safety, clarity, tone), each named and
    described for this scenario."""

    task: str = dspy.InputField(desc="the task whose responses will be evaluated")
    scenario: str = dspy.InputField(desc="the scenario: intent, audience, stakes, assumed knowledge")


class ExpandPerspectives(dspy.Signature):
    """What is missing? Read the scenario and the evaluation axes found so far, and add only axes that are missing.
    Add none if nothing is missing."""

    task: str = dspy.InputField(desc="the task whose responses will be evaluated")
    scenario: str = dspy.InputField(desc="the scenario: intent, audience, stakes, assumed knowledge")
    perspectives: str = dspy.InputField(desc="the evaluation axes found so far, one per line")


CRITERIA_RULES = """Each criterion is a yes/no question about the response that checks one condition. A condition a
good response meets gets a weight from 1 to 10 (its importance) and is asked so that "yes" means it is met. A flaw
to penalize gets a weight from -1 to -10 and is asked so that "yes" means the flaw is present."""


class DecomposePerspective(dspy.Signature):
    __doc__ = "Write the criteria that check a response to the task along this evaluation axis, in this scenario.\n" + CRITERIA_RULES

    task: str = dspy.InputField(desc="the task whose responses will be evaluated")
    scenario: str = dspy.InputField(desc="the scenario: intent, audience, stakes, assumed knowledge")
    perspective: str = dspy.InputField(desc="the evaluation axis")


class ExpandCriteria(dspy.Signature):
    __doc__ = (
        "What is missing? Read the evaluation axis and the criteria found so far, and add only criteria that are\n"
        "missing. Add none if nothing is missing.\n" + CRITERIA_RULES
    )

    task: str = dspy.InputField(desc="the task whose responses will be evaluated")
    scenario: str = dspy.InputField(desc="the scenario: intent, audience, stakes, assumed knowledge")
    perspective: str = dspy.InputField(desc="the evaluation axis")
    criteria: str = dspy.InputField(desc="the criteria found so far, one per line with its weight")


# -- the tree ------------------------------------------------------------------------------------------------------
class QworldConfig(BaseModel):
    """The tree's shape: expansion rounds, dedup threshold, how many nodes each call may write, and caps."""

    model_config = ConfigDict(extra="forbid")

    w1: int = Field(default=3, ge=0, le=20, description="horizontal expansion rounds for scenarios")
    w2: int = Field(default=4, ge=0, le=20, description="horizontal expansion rounds for perspectives (per scenario)")
    w3: int = Field(default=0, ge=0, le=20, description="horizontal expansion rounds for criteria (per perspective)")
    threshold: float = Field(default=0.8, gt=0, le=1, description="cosine similarity at which two nodes are duplicates")
    scenarios_per_call: int = Field(default=3, ge=1, le=10, description="most scenarios the first decomposition writes")
    perspectives_per_call: int = Field(default=4, ge=1, le=10, description="most perspectives one scenario's decomposition writes")
    criteria_per_call: int = Field(default=3, ge=1, le=10, description="most criteria one perspective's decomposition writes")
    new_per_round: int = Field(default=1, ge=1, le=10, description="most nodes one expansion round adds")
    # the caps leave room for the default rounds (3 + 3 scenarios, 4 + 4 perspectives each); max_criteria bounds
    # what judging one response costs
    max_scenarios: int = Field(default=8, ge=1, le=50)
    max_perspectives: int = Field(default=8, ge=1, le=50, description="per scenario")
    max_criteria: int = Field(default=60, ge=1, le=500, description="in the whole checklist")
    max_tokens: int = Field(default=600, ge=16, description="per LM call")
    code_checks: bool = Field(default=True, description="mark positive criteria a grounded code check answers")


class Scenario(BaseModel):
    id: str
    intent: str
    audience: str
    stakes: str
    assumed_knowledge: str

    def describe(self) -> str:
        return f"{self.intent} (audience: {self.audience}; stakes: {self.stakes}; assumed knowledge: {self.assumed_knowledge})"


class Perspective(BaseModel):
    """An evaluation axis; ``scenario`` wrote it first, ``shared_with`` lists scenarios that proposed it again."""

    id: str
    scenario: str
    name: str
    description: str
    dimension: str
    shared_with: list[str] = Field(default_factory=list)

    def describe(self) -> str:
        return f"{self.name}: {self.description}"


class Criterion(BaseModel):
    id: str
    scenario: str
    perspective: str
    question: str
    weight: int


class QworldStats(BaseModel):
    """What growing the tree asked and got, per level: operator calls, unparseable answers, merged duplicates."""

    decompose_calls: dict[str, int] = Field(default_factory=dict)
    expand_calls: dict[str, int] = Field(default_factory=dict)
    unparseable: dict[str, int] = Field(default_factory=dict)
    merged: dict[str, int] = Field(default_factory=dict)
    cost: Cost = Field(default_factory=Cost)


class QworldTree(BaseModel):
    task: str
    dimensions: list[str]
    scenarios: list[Scenario] = Field(default_factory=list)
    perspectives: list[Perspective] = Field(default_factory=list)
    criteria: list[Criterion] = Field(default_factory=list)
    stats: QworldStats = Field(default_factory=QworldStats)

    def checklist(self, code_checks: bool = True) -> Checklist:
        """The criteria as a checklist: weight = the criterion's weight, lineage = its scenario and perspective."""
        scenarios = {s.id: s for s in self.scenarios}
        perspectives = {p.id: p for p in self.perspectives}
        questions = []
        for c in self.criteria:
            p, s = perspectives[c.perspective], scenarios[c.scenario]
            lineage = {"scenario": s.id, "scenario_text": s.intent, "perspective": p.id, "perspective_text": p.name}
            questions.append(Question(text=c.question, dimension=p.dimension, weight=c.weight, lineage=lineage))
        checklist = Checklist(task=self.task, dimensions=list(self.dimensions), questions=questions)
        return route_to_code(checklist) if code_checks else checklist


class NearDuplicates:
    """One level's kept texts: a new text duplicates a kept one if equal after normalizing, or if their embeddings'
    cosine similarity reaches ``threshold``. The embedder is made on first need (MiniLM loads in seconds)."""

    def __init__(self, threshold: float, embedder: Callable[[], Embedder]) -> None:
        self.threshold = threshold
        self._embedder = embedder
        self._keys: list[str] = []
        self._kept: list[np.ndarray] = []
        self._vectors: dict[str, np.ndarray] = {}

    def embed_ahead(self, texts: list[str]) -> None:
        """Embed the texts about to be looked up in one call (one per LM answer, not one per node)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if not missing:
            return
        vectors = np.asarray(self._embedder()(missing), dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        self._vectors.update(zip(missing, unit))

    def duplicate_of(self, text: str) -> int | None:
        """The index of the kept text this one duplicates, or None."""
        key = normalize(text)
        if key in self._keys:
            return self._keys.index(key)
        if not self._kept:
            return None
        self.embed_ahead([text])
        sims = np.stack(self._kept) @ self._vectors[text]
        best = int(np.argmax(sims))
        return best if sims[best] >= self.threshold - 1e-9 else None  # inclusive, despite rounding

    def keep(self, text: str) -> None:
        self.embed_ahead([text])
        self._keys.append(normalize(text))
        self._kept.append(self._vectors[text])


def _predict(signature: type[dspy.Signature], output: str, item: type[BaseModel], low: int, high: int) -> dspy.Predict:
    """An operator's predictor: the signature with its output, a list of ``low`` to ``high`` items."""
    return dspy.Predict(signature.append(output, dspy.OutputField(), type_=_items(item, low, high)))


def _listing(lines: list[str]) -> str:
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, start=1)) or "(none yet)"


class QworldWriter(dspy.Module):
    """Qworld's recursive expansion tree as a ``ChecklistWriter``: ``forward(task, dimensions) -> Checklist``.

    Six predictors, one per operator and level (R_h and R_w for scenarios, perspectives, criteria), so an optimizer
    can tune each. Given dimensions are a choice the LM makes for each perspective (one given: all of them); else
    every criterion is in ``DEFAULT_DIMENSION``. After a call, ``self.tree`` holds the tree, its operator counts,
    unparseable answers, merged duplicates and LM cost. ``embed`` (texts -> vectors) defaults to offline MiniLM.
    A tree with no criterion raises ``RunError``.
    """

    def __init__(self, config: QworldConfig | None = None, *, embed: Embedder | None = None) -> None:
        super().__init__()
        self.config = config or QworldConfig()
        self.embed = embed
        c = self.config
        self.decompose_task = _predict(DecomposeTask, "scenarios", ScenarioDraft, 1, c.scenarios_per_call)
        self.expand_scenarios = _predict(ExpandScenarios, "missing", ScenarioDraft, 0, c.new_per_round)
        self.decompose_scenario = _predict(DecomposeScenario, "perspectives", PerspectiveDraft, 1, c.perspectives_per_call)
        self.expand_perspectives = _predict(ExpandPerspectives, "missing", PerspectiveDraft, 0, c.new_per_round)
        self.decompose_perspective = _predict(DecomposePerspective, "criteria", CriterionDraft, 1, c.criteria_per_call)
        self.expand_criteria = _predict(ExpandCriteria, "missing", CriterionDraft, 0, c.new_per_round)
        self.tree: QworldTree | None = None

    def forward(self, task: str, dimensions: list[str] | None = None) -> Checklist:
        if not task or not task.strip():
            raise InputError("task: the task description is empty")
        dims = list(dict.fromkeys(d.strip().lower() for d in (dimensions or []) if d.strip())) or [DEFAULT_DIMENSION]
        tree, cost = measured(lambda: _Growth(self, task, dims).grow())
        tree.stats.cost = cost
        self.tree = tree
        if not tree.criteria:
            failed = sum(tree.stats.unparseable.values())
            raise RunError(f"qworld: the LM gave no usable criteria ({failed} unparseable answer(s))")
        return tree.checklist(self.config.code_checks)

    def _embedder(self) -> Embedder:
        if self.embed is None:
            self.embed = minilm_embedder()
        return self.embed


class _Growth:
    """One task's tree as it grows: the three levels, their dedup state and the counts."""

    def __init__(self, writer: QworldWriter, task: str, dimensions: list[str]) -> None:
        self.w = writer
        self.c = writer.config
        self.task = task
        self.dims = dimensions
        self.tree = QworldTree(task=task, dimensions=dimensions)
        self.seen = {level: NearDuplicates(self.c.threshold, writer._embedder) for level in LEVELS}
        self.counts: dict[str, Counter[str]] = {k: Counter() for k in ("decompose", "expand", "unparseable", "merged")}

    def grow(self) -> QworldTree:
        self._scenarios()
        self._perspectives()
        self._criteria()
        s = self.tree.stats
        s.decompose_calls, s.expand_calls, s.unparseable, s.merged = (
            {level: self.counts[kind][level] for level in LEVELS} for kind in ("decompose", "expand", "unparseable", "merged")
        )
        return self.tree

    def _ask(self, level: str, op: str, predictor: dspy.Predict, retype: type[BaseModel] | None = None, **inputs: Any) -> list[Any]:
        """One operator call; an answer that cannot be parsed (or breaks the bounds) gives nothing, counted.
        ``retype`` replaces the output type for this call only (the predictor, its demos and instructions stay)."""
        self.counts[op][level] += 1
        name = next(iter(predictor.signature.output_fields))
        call: dict[str, Any] = {}
        if retype is not None:
            signature = predictor.signature.delete(name).append(name, dspy.OutputField(), type_=retype)
            call["signature"] = signature.with_instructions(predictor.signature.instructions)
        try:
            with dspy.context(adapter=dspy.JSONAdapter()):
                pred = predictor(**inputs, config={"max_tokens": self.c.max_tokens}, **call)
        except dspy.utils.exceptions.AdapterParseError:
            self.counts["unparseable"][level] += 1
            return []
        return list(pred[name].items)

    def _perspective_type(self, low: int, high: int) -> type[BaseModel] | None:
        """With several given dimensions, perspectives name the one they belong to (an enum the LM must pick)."""
        return _items(_tagged(self.dims), low, high) if len(self.dims) > 1 else None

    def _accept(self, level: str, texts: list[str], room: int) -> list[tuple[int, int | None]]:
        """For each text in order: (its index, the kept node it duplicates or None if new). New ones are kept until
        ``room`` is used up; the rest are left out."""
        seen = self.seen[level]
        seen.embed_ahead(texts)
        decided: list[tuple[int, int | None]] = []
        for i, text in enumerate(texts):
            dup = seen.duplicate_of(text)
            if dup is not None:
                self.counts["merged"][level] += 1
                decided.append((i, dup))
            elif room > 0:
                seen.keep(text)
                room -= 1
                decided.append((i, None))
        return decided

    # -- level 1 --
    def _add_scenarios(self, drafts: list[ScenarioDraft]) -> int:
        scenarios = self.tree.scenarios
        texts = [_scenario(d, "").describe() for d in drafts]
        added = 0
        for i, dup in self._accept("scenario", texts, self.c.max_scenarios - len(scenarios)):
            if dup is None:
                scenarios.append(_scenario(drafts[i], f"s{len(scenarios) + 1}"))
                added += 1
        return added

    def _scenarios(self) -> None:
        self._add_scenarios(self._ask("scenario", "decompose", self.w.decompose_task, task=self.task))
        for _ in range(self.c.w1 if self.tree.scenarios else 0):
            if len(self.tree.scenarios) >= self.c.max_scenarios:
                break
            listing = _listing([s.describe() for s in self.tree.scenarios])
            if not self._add_scenarios(self._ask("scenario", "expand", self.w.expand_scenarios, task=self.task, scenarios=listing)):
                break

    # -- level 2 --
    def _group(self, scenario: Scenario) -> list[Perspective]:
        return [p for p in self.tree.perspectives if scenario.id in (p.scenario, *p.shared_with)]

    def _add_perspectives(self, scenario: Scenario, drafts: list[PerspectiveDraft]) -> int:
        perspectives = self.tree.perspectives
        room = self.c.max_perspectives - len(self._group(scenario))
        added = 0
        for i, dup in self._accept("perspective", [f"{d.name}: {d.description}" for d in drafts], room):
            if dup is not None:
                kept = perspectives[dup]
                if scenario.id not in (kept.scenario, *kept.shared_with):
                    kept.shared_with.append(scenario.id)
                continue
            d = drafts[i]
            perspectives.append(
                Perspective(
                    id=f"p{len(perspectives) + 1}",
                    scenario=scenario.id,
                    name=d.name.strip(),
                    description=d.description.strip(),
                    dimension=str(getattr(d, "dimension", self.dims[0])).lower(),
                )
            )
            added += 1
        return added

    def _perspectives(self) -> None:
        for s in self.tree.scenarios:
            tagged = self._perspective_type(1, self.c.perspectives_per_call)
            self._add_perspectives(s, self._ask("perspective", "decompose", self.w.decompose_scenario, tagged, task=self.task, scenario=s.describe()))
        open_ = [s for s in self.tree.scenarios if self._group(s)]
        for _ in range(self.c.w2):
            still = []
            for s in open_:
                if len(self._group(s)) >= self.c.max_perspectives:
                    continue
                listing = _listing([p.describe() for p in self._group(s)])
                tagged = self._perspective_type(0, self.c.new_per_round)
                drafts = self._ask("perspective", "expand", self.w.expand_perspectives, tagged, task=self.task, scenario=s.describe(), perspectives=listing)
                if self._add_perspectives(s, drafts):
                    still.append(s)
            open_ = still

    # -- level 3 --
    def _add_criteria(self, perspective: Perspective, drafts: list[CriterionDraft]) -> int:
        criteria = self.tree.criteria
        added = 0
        for i, dup in self._accept("criterion", [d.question for d in drafts], self.c.max_criteria - len(criteria)):
            if dup is None:
                d = drafts[i]
                criteria.append(
                    Criterion(id=f"c{len(criteria) + 1}", scenario=perspective.scenario, perspective=perspective.id, question=d.question.strip(), weight=d.weight)
                )
                added += 1
        return added

    def _criteria(self) -> None:
        # scenario by scenario in turn, so a checklist cut short by max_criteria still covers every scenario
        scenarios = {s.id: s for s in self.tree.scenarios}
        place = {s.id: i for i, s in enumerate(self.tree.scenarios)}
        order = sorted(self.tree.perspectives, key=lambda p: (self._rank(p), place[p.scenario]))
        for p in order:
            if len(self.tree.criteria) >= self.c.max_criteria:
                break
            drafts = self._ask("criterion", "decompose", self.w.decompose_perspective, task=self.task, scenario=scenarios[p.scenario].describe(), perspective=p.describe())
            self._add_criteria(p, drafts)
        open_ = [p for p in order if any(c.perspective == p.id for c in self.tree.criteria)]
        for _ in range(self.c.w3):
            still = []
            for p in open_:
                if len(self.tree.criteria) >= self.c.max_criteria:
                    break
                listing = _listing([f"{c.question} (weight {c.weight})" for c in self.tree.criteria if c.perspective == p.id])
                drafts = self._ask(
                    "criterion", "expand", self.w.expand_criteria,
                    task=self.task, scenario=scenarios[p.scenario].describe(), perspective=p.describe(), criteria=listing,
                )
                if self._add_criteria(p, drafts):
                    still.append(p)
            open_ = still

    def _rank(self, perspective: Perspective) -> int:
        """The perspective's place among those its scenario wrote."""
        return [p.id for p in self.tree.perspectives if p.scenario == perspective.scenario].index(perspective.id)


def _scenario(draft: ScenarioDraft, id: str) -> Scenario:
    return Scenario(
        id=id, intent=draft.intent.strip(), audience=draft.audience.strip(), stakes=draft.stakes, assumed_knowledge=draft.assumed_knowledge.strip()
    )
