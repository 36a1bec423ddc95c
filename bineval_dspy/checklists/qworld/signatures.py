"""Qworld's prompts: what the LM writes at each level (scenario, perspective, criterion) and the six operators.

Bounds live on the fields (list lengths, text lengths, an enum of weights), so they reach the JSON schema and a
local model's grammar.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import dspy
from pydantic import BaseModel, Field, StringConstraints, create_model

from bineval_dspy.checklists.bineval import QuestionText, ShortText

WEIGHTS: tuple[int, ...] = (*range(1, 11), *range(-1, -11, -1))

Label = Annotated[str, StringConstraints(min_length=3, max_length=80)]
AxisName = Annotated[str, StringConstraints(min_length=3, max_length=40)]
# An enum, not an integer range: llama.cpp grammars enforce enums, so even a tiny model stays in Qworld's bands.
Weight = Literal[WEIGHTS]  # type: ignore[valid-type]


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
    weight: Weight = Field(
        description="1 to 10: importance of a condition a good response meets (yes = met); "
        "-1 to -10: a flaw to penalize, its question asking whether the flaw is present (yes = flawed)"
    )


def items_of(item: type[BaseModel], low: int, high: int) -> type[BaseModel]:
    """A list holder whose bounds live on a field, so they reach the JSON schema (and a local model's grammar)."""
    return create_model(f"{item.__name__}List", __doc__=item.__doc__, items=(list[item], Field(min_length=low, max_length=high)))  # type: ignore[valid-type]


def tagged_with(dimensions: list[str]) -> type[BaseModel]:
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
