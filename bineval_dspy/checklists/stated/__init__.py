"""Constraints a task states that code can check, found in the task's own words and attached as code questions.

A 135M writer asked for a checklist for "Write a haiku about autumn, all in lowercase letters." wrote "Is it true
that the sky is blue?": it does not notice the one requirement a verifier could answer exactly. The phrasings of the
registry's rules ("do not use any commas", "at least 300 words", "each word must start with the next letter of the
alphabet") are few and regular, so patterns find them; each found constraint becomes a question answered by its
verifier, with the kwargs the task gives (a number, a keyword, a phrase). A constraint the patterns miss stays with
the LM writer; one they find is never left to the LM. A constraint only mentioned ("Is it true that some teachers ask
for at least 300 words?") or stated for a part of the reply ("each bullet at most 10 words") is not found.

``rules`` holds the shared machinery, ``ifeval``, ``ifbench_words`` and ``ifbench_format`` the rules by benchmark,
``extract`` what the rest of the library calls (also importable from ``checklists.stated``).
"""

from bineval_dspy.checklists.stated.extract import (
    DIMENSION,
    RULES,
    Annotated,
    enforcement_plan,
    extracted,
    stated_constraints,
    with_stated_constraints,
)
from bineval_dspy.checklists.stated.ifeval import LANGUAGES
from bineval_dspy.checklists.stated.rules import Rule, number

__all__ = [
    "DIMENSION",
    "LANGUAGES",
    "RULES",
    "Annotated",
    "Rule",
    "enforcement_plan",
    "extracted",
    "number",
    "stated_constraints",
    "with_stated_constraints",
]
