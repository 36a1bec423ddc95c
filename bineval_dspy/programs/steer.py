"""Steering settings: which of a prompt's constraints a generator decodes under, and how far a floor may stretch its
token limit. One typed value, so a run config, a program file, an optimizer's candidate and a tuning trial name the
same thing.

``enforce`` is where the constraints come from (the prompt's own words, or the suite's annotations; None: decode
plainly). ``only`` and ``exclude`` name constraints by instruction id (``change_case:english_lowercase``), by family
(the id before its colon: ``change_case``) or by how decoding keeps them (``mask``, ``forced``, ``automaton``);
``exclude`` also takes a steering rule kind (``enforce.rules``): a constraint whose spec needs it is left to the
model. A constraint left out is still decided in the row's plan, as not enforced, with the setting that left it out
as its reason. ``floor_tokens`` caps what a lower bound (at least N words) may add to ``max_tokens``: None lets it
add what it needs (the default), 0 never raises the limit."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bineval_dspy.checklists.stated import Annotated, extracted
from bineval_dspy.enforce.plan import Decision, Plan, Source
from bineval_dspy.enforce.rules import RULE_KINDS
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.verifiers.enforcement import Refuse, compile_plan
from bineval_dspy.verifiers.registry import VERIFIERS

HOWS = ("mask", "forced", "automaton")  # ``enforce.rules.HOW``'s values, as names a setting may give
PLAIN = "none"  # the shorthand of the settings that decode plainly


class SteeringSettings(BaseModel):
    """How a generator steers decoding; every default is today's behaviour for its ``enforce``. A TOML entry may be
    the shorthand ``"none"``, ``"extracted"`` or ``"annotated"``, or a table of these fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enforce: Source | None = Field(default=None, description="where the constraints come from: extracted or annotated (none: decode plainly)")
    only: tuple[str, ...] = Field(default=(), description="enforce only constraints of these ids, families or hows (empty: every one)")
    exclude: tuple[str, ...] = Field(default=(), description="never enforce constraints of these ids, families, hows or rule kinds")
    floor_tokens: int | None = Field(default=None, ge=0, description="the most tokens a lower bound may add to max_tokens (none: what it needs)")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {} if data == PLAIN else {"enforce": data}
        return data

    @model_validator(mode="after")
    def _meaningful(self) -> SteeringSettings:
        if self.enforce is None and (self.only or self.exclude or self.floor_tokens is not None):
            raise ValueError("only, exclude and floor_tokens narrow what is enforced: give enforce too")
        both = sorted(set(self.only) & set(self.exclude))
        if both:
            raise ValueError(f"{both[0]!r} is both in only and in exclude")
        return self

    @property
    def limited(self) -> bool:
        """Whether anything beyond ``enforce`` is set."""
        return bool(self.only or self.exclude) or self.floor_tokens is not None

    @property
    def label(self) -> str:
        """A short name for reports and the audit: ``extracted``, ``extracted, only change_case, floor +64``."""
        parts = [self.enforce or PLAIN]
        if self.only:
            parts.append("only " + " ".join(self.only))
        if self.exclude:
            parts.append("without " + " ".join(self.exclude))
        if self.floor_tokens is not None:
            parts.append(f"floor +{self.floor_tokens}")
        return ", ".join(parts)

    def left_out(self, instruction_id: str, how: str | None) -> str:
        """Why these settings leave a constraint to the model ('' when they let it be enforced); ``how`` is how its
        verifier's enforcement works (None: it declares none)."""
        names = {instruction_id, instruction_id.split(":", 1)[0], *([how] if how else [])}
        hit = next((name for name in self.exclude if name in names), None)
        if hit is not None:
            return f"left to the model by the steering settings (exclude {hit!r})"
        if self.only and not names & set(self.only):
            return f"left to the model by the steering settings (only {', '.join(self.only)})"
        return ""

    def refused_kinds(self, steering: Steering) -> str:
        """Why a merged spec needs a rule kind ``exclude`` names ('' when it does not): the constraint that brought
        the kind in is the one refused, as an engine refuses what it cannot execute."""
        kinds = {rule.kind for rule in steering.rules}
        hit = next((name for name in self.exclude if name in kinds), None)
        return f"left to the model by the steering settings (exclude rule kind {hit!r})" if hit is not None else ""

    def token_limit(self, max_tokens: int, floor: int) -> int:
        """The token limit of a reply whose constraints need ``floor`` tokens: raised to it, by at most
        ``floor_tokens``."""
        if self.floor_tokens is None:
            return max(max_tokens, floor)
        return max(max_tokens, min(floor, max_tokens + self.floor_tokens))

    def unknown_name(self) -> str:
        """The first name in ``only``/``exclude`` that no registered verifier id, family, how or rule kind answers to
        ('' when each does): a misspelt name would silently leave every constraint enforced (or none)."""
        import bineval_dspy.enforce.kinds  # noqa: F401  (the built-in rule kinds register on import)

        known = {*VERIFIERS, *(i.split(":", 1)[0] for i in VERIFIERS), *HOWS}
        return next((n for n in self.only if n not in known), None) or next((n for n in self.exclude if n not in known and n not in RULE_KINDS), "")


def steered_plan(prompt: str, settings: SteeringSettings, annotated: Annotated | None = None, refuse: Refuse | None = None) -> Plan:
    """``enforcement_plan`` under ``settings``: the constraints they leave out decided as not enforced (with the
    setting as the reason), in their place among the others, and the rest compiled as before; ``refuse`` is what
    the engine cannot execute."""
    assert settings.enforce is not None
    constraints = extracted(prompt) if settings.enforce == "extracted" else list(annotated or [])
    whys = [settings.left_out(i, _how(i)) for i, _ in constraints]

    def refused(steering: Steering) -> str:
        return settings.refused_kinds(steering) or (refuse(steering) if refuse is not None else "")

    plan = compile_plan([c for c, why in zip(constraints, whys, strict=True) if not why], prompt, settings.enforce, refused)
    compiled = iter(plan.decisions)
    decisions = [
        Decision(instruction_id=i, kwargs={k: v for k, v in (kw or {}).items() if v is not None}, status="unenforceable", reason=why) if why else next(compiled)
        for (i, kw), why in zip(constraints, whys, strict=True)
    ]
    return plan.model_copy(update={"decisions": decisions})


def _how(instruction_id: str) -> str | None:
    """How the verifier of ``instruction_id`` is enforced (None: it declares no enforcement, or is not registered)."""
    registered = VERIFIERS.get(instruction_id)
    return registered.enforce.how if registered is not None and registered.enforce is not None else None
