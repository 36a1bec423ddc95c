"""Qworld's tree: its shape (``QworldConfig``), its nodes and what growing it cost, and the checklist it gives."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.checklists.routing import route_to_code
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.lm.usage import Cost

DEFAULT_DIMENSION = "quality"
LEVELS = ("scenario", "perspective", "criterion")


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
        checklist = Checklist.of(self.task, list(self.dimensions), questions)
        return route_to_code(checklist) if code_checks else checklist
