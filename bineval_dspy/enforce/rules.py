"""Rules a reply must keep that the fixed fields of a ``Steering`` do not name: a predicate every word must meet, a
budget over the whole reply, a structure of sentences or lines, text forced at a place. IFBench's constraints and a
user's own are built from these few kinds rather than one field per constraint.

A rule travels as data (``Rule``: its kind and parameters, part of the request's cache key) and is executed by the
kind registered under its name (``RuleKind``, a pydantic model of the parameters with the decoding hooks). The
steerer (``enforce.runtime``) builds one executor per reply and asks each rule, beside its own fields:

- ``bans(piece)``: a token no position may hold (computed once per vocabulary into the static mask);
- ``mask(logits, reply)``: tokens refused at this step, in place (cheap array operations only);
- ``allows(reply, piece)``: whether the chosen token may come next given the text so far (checked on the best token,
  then the next best when refused, so it may read the text);
- ``after(reply, piece)``: text to force after a kept token, or ``END``;
- ``may_end(reply)`` / ``at_end(reply)``: whether the end of text may come now / text to force instead of it;
- ``finish(text)``: the reply's last form (closing text appended).

Each kind names how it works (``how``: a mask, forced text, an automaton), the text it forces (checked against the
masks of the other constraints), the tokens it needs (a floor raises ``max_tokens``) and, for two rules of the same
kind, whether they combine (``combine``) or conflict.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bineval_dspy.core.errors import BinevalError
from bineval_dspy.core.jsonio import describe_validation_error
from bineval_dspy.core.registry import Registry

HOW = Literal["mask", "forced", "automaton"]  # how a constraint is made true: a token mask, forced text, a counter


class Reply(Protocol):
    """What a rule may read of the reply being decoded (the steerer)."""

    text: str  # the reply so far as the user will read it, forced text included
    tokens: int  # decoded tokens so far
    limit: int  # the most tokens the reply may take

    @property
    def pieces(self) -> list[str]: ...  # the vocabulary's token texts

    @property
    def new_word(self) -> np.ndarray: ...  # per token: it begins a new word (whitespace, then a letter or digit)


class RuleConflict(BinevalError, ValueError):
    """Two rules (or a rule and a field of the steering) ask for incompatible things."""


class RuleKind(BaseModel):
    """A rule's parameters and how a decoder keeps it. Subclasses register with ``@rule_kind``; a fresh instance
    is built per reply (``Rule.build``), so private attributes may hold per-reply state."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: ClassVar[str] = ""
    how: ClassVar[HOW] = "automaton"
    static: ClassVar[bool] = False  # ``bans`` says something (it is folded into the precomputed mask)

    # -- checks before decoding --------------------------------------------------------------------
    def forced_texts(self) -> list[str]:
        """Every literal this rule writes by force (checked against the other constraints' masks)."""
        return []

    def min_tokens(self) -> int:
        """Reply tokens this rule needs at least (0: none beyond what the model writes)."""
        return 0

    def combine(self, other: RuleKind) -> RuleKind:
        """This rule and ``other`` (same kind) as one; RuleConflict when they cannot both hold."""
        if other == self:
            return self
        raise RuleConflict(f"two different {self.name} rules")

    def conflict(self, steering: Any) -> str:
        """Why this rule cannot hold beside the rest of ``steering`` ('' when it can). ``steering`` is the whole
        ``enforce.steering.Steering`` (typed Any here only because that module imports this one; kinds annotate it)."""
        return ""

    # -- decoding ----------------------------------------------------------------------------------
    def bans(self, piece: str) -> bool:
        """Whether no position of the reply may hold a token with this text (``static`` kinds only)."""
        return False

    def prefix(self) -> str:
        """Text the reply opens with (after the steering's own opening)."""
        return ""

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        """Set to -inf, in place, the logits of tokens that may not come next."""

    def allows(self, reply: Reply, piece: str) -> bool:
        """Whether ``piece`` (not masked) may come next given ``reply.text``."""
        return True

    def after(self, reply: Reply, piece: str) -> str | None:
        """Called with ``piece`` kept (``reply.text`` ends with it): text to force now, ``END``, or None."""
        return None

    def may_end(self, reply: Reply) -> bool:
        """Whether the end of text may come now."""
        return True

    def at_end(self, reply: Reply) -> str | None:
        """The model chose the end of text: text to force and continue from instead, or None to end."""
        return None

    def finish(self, text: str) -> str:
        """The reply's last form, after the last decoded token."""
        return text

    # -- the code behind it --------------------------------------------------------------------------
    def sources(self) -> list[Path]:
        """Files of code outside this library the rule runs (a user's own kind): their bytes join the steered
        request's cache key (``steering.metadata``), so an edited file never replays replies its old code made."""
        source = user_source(type(self))
        return [source] if source is not None else []


_PACKAGE = Path(__file__).resolve().parents[1]


def user_source(obj: object) -> Path | None:
    """The file ``obj`` (a class or function) is defined in, when that is not this library's own code."""
    try:
        path = Path(inspect.getsourcefile(obj) or "").resolve()  # type: ignore[arg-type]
    except TypeError:
        return None
    return None if not path.is_file() or _PACKAGE in path.parents else path


RULE_KINDS: Registry[type[RuleKind]] = Registry("steering rule kind")


def rule_kind(cls: type[RuleKind]) -> type[RuleKind]:
    """Register a ``RuleKind`` subclass under its ``name`` (a user's file may add its own)."""
    return RULE_KINDS.named(cls)


class Rule(BaseModel):
    """A rule as data, as it travels with a request: the registered kind's name and its parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    params: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, rule: RuleKind) -> Rule:
        return cls(kind=rule.name, params=rule.model_dump(mode="json"))

    def build(self) -> RuleKind:
        """A fresh executor of this rule (ValueError, one line, for an unknown kind or bad parameters)."""
        kind = RULE_KINDS.get(self.kind)
        if kind is None:  # the built-in kinds register on import
            import bineval_dspy.enforce.kinds  # noqa: F401

            kind = RULE_KINDS.get(self.kind)
        if kind is None:
            raise ValueError(f"unknown steering rule kind {self.kind!r} (known: {', '.join(RULE_KINDS) or 'none'})")
        try:
            return kind.model_validate(self.params)
        except ValidationError as exc:
            raise ValueError(f"steering rule {self.kind}: {describe_validation_error(exc)}") from None


def rules(*kinds: RuleKind) -> tuple[Rule, ...]:
    """The wire form of ``kinds``, for ``Steering(rules=...)``."""
    return tuple(Rule.of(kind) for kind in kinds)


def merge_rules(base: tuple[Rule, ...], part: tuple[Rule, ...]) -> tuple[Rule, ...]:
    """``base`` with ``part`` added: rules of a kind already there combine (RuleConflict when they cannot), others
    join."""
    merged: dict[str, RuleKind] = {r.kind: r.build() for r in base}
    order = [r.kind for r in base]
    for rule in part:
        built = rule.build()
        if rule.kind in merged:
            merged[rule.kind] = merged[rule.kind].combine(built)
        else:
            merged[rule.kind] = built
            order.append(rule.kind)
    return tuple(Rule.of(merged[k]) for k in order)

