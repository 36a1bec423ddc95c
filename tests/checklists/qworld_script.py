"""A scripted LM for Qworld's six operators, and a deterministic embedder: shared by the Qworld tests.

Every node a script writes carries a tag ``kN``; the fake embedder maps a text to the one-hot vector of its tags, so
two texts are near-duplicates (cosine 1) exactly when they carry the same tag, whatever their wording.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable

import numpy as np
from dspy.lm15 import Request

from bineval_dspy.testing import prompt_fields

OPS = {
    "Ground the task in scenarios": "decompose_task",
    "What is missing? Read the task and the scenarios": "expand_scenarios",
    "List the perspectives": "decompose_scenario",
    "What is missing? Read the scenario and the evaluation axes": "expand_perspectives",
    "Write the criteria that check": "decompose_perspective",
    "What is missing? Read the evaluation axis": "expand_criteria",
}
OUTPUT = {"decompose_task": "scenarios", "decompose_scenario": "perspectives", "decompose_perspective": "criteria"}
_TAG = re.compile(r"\bk(\d+)\b")


def op_of(request: Request) -> str:
    system = request.system or ""
    return next(op for marker, op in OPS.items() if marker in system)


def field(request: Request, name: str) -> str:
    """An input block of the prompt (``scenario``, ``perspective``, ...)."""
    return prompt_fields(request)[name]


def tags(text: str) -> list[int]:
    return [int(n) for n in _TAG.findall(text)]


def fake_embed(texts: list[str]) -> np.ndarray:
    vectors = np.zeros((len(texts), 512))
    for row, text in enumerate(texts):
        for tag in tags(text):
            vectors[row, tag % 512] = 1.0
    return vectors


def scenario(tag: int, audience: str = "curious adults") -> dict:
    return {"intent": f"learn about k{tag} in plain words", "audience": audience, "stakes": "low", "assumed_knowledge": "none"}


def perspective(tag: int, name: str = "") -> dict:
    return {"name": name or f"axis k{tag}", "description": f"how well the response handles k{tag}"}


def criterion(tag: int, weight: int = 5, wording: str = "") -> dict:
    return {"question": wording or f"Does the response address point k{tag} clearly?", "weight": weight}


def reply(request: Request, items: list[dict]) -> str:
    op = op_of(request)
    return json.dumps({OUTPUT.get(op, "missing"): {"items": items}})


Handler = Callable[[Request], list[dict] | str]


def script_of(handlers: dict[str, Handler]) -> Callable[[Request], str]:
    """A script answering each operator with its handler (a list of items, or raw text such as broken JSON)."""

    def script(request: Request) -> str:
        answer = handlers[op_of(request)](request)
        return answer if isinstance(answer, str) else reply(request, answer)

    return script


def always_new(per_decompose: int = 2, per_expand: int = 1, weight: int = 5) -> Callable[[Request], str]:
    """Every call writes fresh nodes (new tags), so nothing merges and every expansion round adds something."""
    fresh = itertools.count(1)

    def new(make: Callable[[int], dict], n: int) -> Handler:
        return lambda request: [make(next(fresh)) for _ in range(n)]

    return script_of(
        {
            "decompose_task": new(scenario, per_decompose),
            "expand_scenarios": new(scenario, per_expand),
            "decompose_scenario": new(perspective, per_decompose),
            "expand_perspectives": new(perspective, per_expand),
            "decompose_perspective": new(lambda t: criterion(t, weight), per_decompose),
            "expand_criteria": new(lambda t: criterion(t, -weight), per_expand),
        }
    )
