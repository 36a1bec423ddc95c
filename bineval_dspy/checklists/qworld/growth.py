"""Growing one Qworld tree: decomposition and horizontal expansion level by level, near-duplicates merged."""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

import dspy
from pydantic import BaseModel

from bineval_dspy.checklists.qworld.signatures import (
    CriterionDraft,
    PerspectiveDraft,
    ScenarioDraft,
    items_of,
    tagged_with,
)
from bineval_dspy.checklists.qworld.tree import LEVELS, Criterion, Perspective, QworldConfig, QworldTree, Scenario
from bineval_dspy.core.embeddings import Embedder, NearDuplicateIndex


class Operators(Protocol):
    """What a tree grows with: the writer's config, embedder and six predictors (``QworldWriter`` is one; named here
    so this module need not import the writer that imports it)."""

    config: QworldConfig
    embed: Embedder | None
    decompose_task: dspy.Predict
    expand_scenarios: dspy.Predict
    decompose_scenario: dspy.Predict
    expand_perspectives: dspy.Predict
    decompose_perspective: dspy.Predict
    expand_criteria: dspy.Predict


class Growth:
    """One task's tree as it grows: the three levels, their dedup state and the counts."""

    def __init__(self, writer: Operators, task: str, dimensions: list[str]) -> None:
        self.w = writer
        self.c = writer.config
        self.task = task
        self.dims = dimensions
        self.tree = QworldTree(task=task, dimensions=dimensions)
        self.seen = {level: NearDuplicateIndex(self.c.threshold, writer.embed) for level in LEVELS}
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
        return items_of(tagged_with(self.dims), low, high) if len(self.dims) > 1 else None

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


def _listing(lines: list[str]) -> str:
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, start=1)) or "(none yet)"


def _scenario(draft: ScenarioDraft, id: str) -> Scenario:
    return Scenario(
        id=id, intent=draft.intent.strip(), audience=draft.audience.strip(), stakes=draft.stakes, assumed_knowledge=draft.assumed_knowledge.strip()
    )
