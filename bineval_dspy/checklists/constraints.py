"""The extractor's public names where the library and users have always imported them from; the rules and the
machinery live in ``checklists.stated``."""

from bineval_dspy.checklists.stated import (
    DIMENSION,
    LANGUAGES,
    RULES,
    Annotated,
    Rule,
    enforcement_plan,
    extracted,
    number,
    stated_constraints,
    with_stated_constraints,
)

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
