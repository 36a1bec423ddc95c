"""Instruction id -> code verifier, built from one suite row's kwargs, with the rule it checks in words.

A verifier factory takes the row's kwargs (None values dropped) and returns a ``check(response) -> Finding``:
the verdict and, concretely, what decided it, so a failure can be turned into a lesson. Factories that declare a
``prompt`` parameter also receive the row's prompt. Strict and loose modes follow IFEval's definitions.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import string
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from bineval_dspy.core.errors import one_line
from bineval_dspy.core.jsonio import describe_validation_error
from bineval_dspy.core.registry import Registry
from bineval_dspy.core.source import source_digest
from bineval_dspy.enforce.rules import HOW
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.verifiers.guard import VerifierError, guarded


@dataclass(frozen=True)
class Finding:
    """What a check found in one response: whether it passed and, concretely, why."""

    passed: bool
    detail: str = ""

    def __post_init__(self) -> None:
        if not self.passed and not self.detail.strip():
            raise ValueError("a failing Finding needs a detail saying what was wrong")

    def __bool__(self) -> bool:
        return self.passed


Check = Callable[[str], Finding]
Factory = Callable[..., Check]
Rule = str | Callable[..., str]
Mode = Literal["strict", "loose"]

Enforce = Callable[..., Steering]  # the verifier's kwargs -> what a decoder must do so its check passes


@dataclass(frozen=True)
class Enforcement:
    """How a verifier's rule can be made true while decoding: the kind (a token mask, forced text, a counting
    automaton) and the part of a ``Steering`` its kwargs ask for."""

    how: HOW
    steering: Enforce


@dataclass(frozen=True)
class Registered:
    """A verifier as registered: its builder, its rule in words and, where decoding can guarantee it, how."""

    factory: Factory
    rule: Rule
    enforce: Enforcement | None = None
    unenforceable: str = ""  # why decoding cannot make the rule true (shown by ``bineval verifiers``)


VERIFIERS: Registry[Registered] = Registry("verifier")  # by instruction id


def _check_rule(rule: Rule | Enforce, factory: Factory) -> None:
    """Fail at import when a rule names a kwarg its factory lacks, so ``describe`` cannot hit a typo later."""
    params = set(inspect.signature(factory).parameters)
    if isinstance(rule, str):
        fields = {field.split(".")[0].split("[")[0] for _, field, _, _ in string.Formatter().parse(rule) if field}
        mismatch = fields - params
    else:
        mismatch = set(inspect.signature(rule).parameters) ^ params
    if mismatch:
        raise RuntimeError(f"rule of {factory.__name__} does not match its kwargs: {sorted(mismatch)}")


def register(
    *instruction_ids: str, rule: Rule, enforce: Enforcement | None = None, unenforceable: str = ""
) -> Callable[[Factory], Factory]:
    """Register ``factory`` as the verifier builder for each of ``instruction_ids``.

    ``rule`` says what the check demands, as an instruction to the writer: a ``str.format`` template over the
    factory's kwargs, or a callable taking the factory's keyword arguments (for defaults or grammar). ``enforce``:
    how a decoder makes the rule true (``bineval generate --enforce``), taking the same kwargs; ``unenforceable``:
    where it cannot, why (a decision's reason and what ``bineval verifiers`` shows).
    """

    def decorate(factory: Factory) -> Factory:
        _check_rule(rule, factory)
        if enforce is not None:
            _check_rule(enforce.steering, factory)
            if unenforceable:
                raise RuntimeError(f"{factory.__name__}: both an enforcement and a reason it has none")
        for instruction_id in instruction_ids:
            VERIFIERS.add(instruction_id, Registered(factory, rule, enforce, unenforceable))
        return factory

    return decorate


class NoKwargs(BaseModel):
    """The kwargs model of a verifier that takes none."""

    model_config = ConfigDict(extra="forbid")


Judged = Callable[..., "bool | Finding"]  # (response, **kwargs) -> bool | Finding


def typed_factory(instruction_id: str, judged: Judged, kwargs: type[BaseModel]) -> Factory:
    """A factory for ``judged(response, **kwargs)`` whose kwargs the pydantic model ``kwargs`` checks when the check
    is built (a bad one: ValueError, one line); a field with an alias is given by its alias (``schema``, a name a
    pydantic model cannot have).

    Its signature is the model's fields, so ``describe``, ``bineval verifiers`` and the unexpected-kwargs check read
    it as any factory's. A bool ``judged`` returns becomes a Finding; anything else it returns, or raises, is a
    VerifierError: the judge records it as unanswered and grading as ungraded, never as a pass.
    """

    def factory(**given: Any) -> Check:
        try:
            values = kwargs.model_validate(given)
        except ValidationError as exc:
            raise ValueError(describe_validation_error(exc)) from None
        args = {name: getattr(values, name) for name in type(values).model_fields}

        def check(response: str) -> Finding:
            try:
                result = judged(response, **args)
            except Exception as exc:
                raise VerifierError(f"{instruction_id} raised {one_line(exc)}") from exc
            if isinstance(result, Finding):
                return result
            if isinstance(result, bool | np.bool_):  # numpy's bool too (``np.all(...)``), read as the bool it is
                return Finding(bool(result), f"{getattr(judged, '__name__', 'the check')} returned {bool(result)}")
            kind = type(result)
            named = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
            raise VerifierError(f"{instruction_id} returned {named}, not a bool or a Finding")

        return check

    factory.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                field.alias or name,  # what a row's kwargs say
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True),
                annotation=field.annotation,
            )
            for name, field in kwargs.model_fields.items()
        ]
    )
    factory.__name__ = getattr(judged, "__name__", instruction_id)
    return factory


def register_typed(
    *instruction_ids: str,
    rule: Rule,
    kwargs: type[BaseModel] = NoKwargs,
    enforce: Enforcement | None = None,
    unenforceable: str = "",
) -> Callable[[Judged], Judged]:
    """Register ``judged(response, **kwargs) -> bool | Finding`` with the pydantic model of its kwargs (see
    ``typed_factory``) for each of ``instruction_ids``; ``rule``, ``enforce`` and ``unenforceable`` as in
    ``register``."""

    def decorate(judged: Judged) -> Judged:
        for instruction_id in instruction_ids:
            factory = typed_factory(instruction_id, judged, kwargs)
            register(instruction_id, rule=rule, enforce=enforce, unenforceable=unenforceable)(factory)
        return judged

    return decorate


USER_FILES: dict[Path, str] = {}  # a Python file of the user's own verifiers (``user``) -> the digest of its bytes as run


@functools.cache
def _builtin_digest() -> str:
    return source_digest(sys.modules[__package__])


def code_digest() -> str:
    """A digest of the verifiers' own source files and of the user's verifier files in use: recorded in a run's
    fingerprint, so that verdicts made by other verifier code (a fixed bug, a changed rule, an edited file of
    one's own) are not resumed into as if they were this code's."""
    if not USER_FILES:
        return _builtin_digest()
    return hashlib.sha256("\0".join([_builtin_digest(), *sorted(USER_FILES.values())]).encode()).hexdigest()[:16]


def known_instruction_ids() -> list[str]:
    """All instruction ids that have a code verifier."""
    return sorted(VERIFIERS)


def unknown_id(instruction_id: str, noun: str = "instruction id") -> str:
    """"unknown instruction id 'x'", with the nearest known ids when a typo or half an id is likely
    ("lowercase" -> change_case:english_lowercase)."""
    import difflib

    ids = known_instruction_ids()
    wanted = instruction_id.casefold()
    near = difflib.get_close_matches(instruction_id, ids, n=3, cutoff=0.75)
    near += [i for i in ids if wanted and wanted in i.casefold() and i not in near][: 3 - len(near)]
    hint = f"; did you mean {' or '.join(repr(i) for i in near)}?" if near else "; `bineval verifiers` lists them"
    return f"unknown {noun} {instruction_id!r}{hint}"


def _arguments(instruction_id: str, kwargs: Mapping[str, Any] | None, prompt: str) -> tuple[Factory, dict[str, Any]]:
    """The factory of ``instruction_id`` and the arguments a row gives it (None values dropped, prompt added)."""
    if instruction_id not in VERIFIERS:
        raise VerifierError(unknown_id(instruction_id))
    factory = VERIFIERS[instruction_id].factory
    args = {k: v for k, v in (kwargs or {}).items() if v is not None}
    params = inspect.signature(factory).parameters
    if "prompt" in params:
        args.setdefault("prompt", prompt)
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unexpected = sorted(set(args) - set(params)) if not accepts_any else []
    if unexpected:
        raise VerifierError(f"{instruction_id}: unexpected kwargs {', '.join(unexpected)}")
    return factory, args


def build_check(instruction_id: str, kwargs: Mapping[str, Any] | None, prompt: str = "") -> Check:
    """Build the check for one instruction of one suite row. Building it and every call of it go through
    ``guard.guarded``: whatever the verifier's code raises (an exit included), or its not finishing in time, is
    a VerifierError, never the end of a run."""
    factory, args = _arguments(instruction_id, kwargs, prompt)

    def build() -> Check:
        try:
            return factory(**args)
        except (TypeError, ValueError) as exc:
            raise VerifierError(f"{instruction_id}: bad kwargs ({exc})") from None

    check = guarded(instruction_id, build)
    return lambda response: guarded(instruction_id, lambda: check(response))


def _plain(value: Any) -> Any:
    """IFBench stores counts as floats (5.0); a rule should say "5"."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def describe(instruction_id: str, kwargs: Mapping[str, Any] | None, prompt: str = "") -> str:
    """The rule sentence for one instruction of one suite row; kwargs the verifier rejects raise VerifierError."""
    build_check(instruction_id, kwargs, prompt)  # the same validation, and the same errors, as grading
    factory, args = _arguments(instruction_id, kwargs, prompt)
    args = {name: _plain(value) for name, value in args.items()}
    rule = VERIFIERS[instruction_id].rule
    if not isinstance(rule, str):
        return guarded(instruction_id, lambda: rule(**args))  # a user's own rule is the user's code too
    defaults = {
        name: param.default
        for name, param in inspect.signature(factory).parameters.items()
        if param.default is not inspect.Parameter.empty
    }
    return rule.format(**(defaults | args))


@dataclass(frozen=True)
class VerifierInfo:
    """One verifier as ``bineval verifiers`` lists it: its id, its rule in words, and the kwargs it takes."""

    instruction_id: str
    rule: str
    kwargs: dict[str, str]  # name -> its default as text, or "required"
    enforce: str | None = None  # how decoding can guarantee it (mask, forced, automaton), None: it cannot
    unenforceable: str = ""  # why it cannot, where the verifier says


def _kwarg_defaults(factory: Factory) -> dict[str, str]:
    params = inspect.signature(factory).parameters.items()
    return {
        name: "required" if param.default is inspect.Parameter.empty else repr(param.default)
        for name, param in params
        if name != "prompt" and param.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    }


def _placeholder(name: str, param: inspect.Parameter) -> Any:
    """``{name}`` where a required kwarg goes, as a one-item list for a kwarg that takes a list (keywords)."""
    return [f"{{{name}}}"] if any(t in str(param.annotation) for t in ("list", "Sequence")) else f"{{{name}}}"


def _rule_text(instruction_id: str) -> str:
    """The rule with its defaults filled in; where a kwarg is required, the template with ``{name}`` left in it."""
    try:
        return describe(instruction_id, {})
    except (VerifierError, TypeError, ValueError, KeyError):
        rule = VERIFIERS[instruction_id].rule
        if isinstance(rule, str):
            return rule
        params = inspect.signature(rule).parameters.items()
        declared = inspect.signature(VERIFIERS[instruction_id].factory).parameters  # the rule's kwargs, with their types
        # Kwargs without a value (required, or None by default while the check needs one of them: "give min_words,
        # max_words or both") are named where they go, never shown as a number the rule would make of None.
        unset = (inspect.Parameter.empty, None)
        placeholders = {n: _placeholder(n, declared.get(n, p)) if p.default in unset else p.default for n, p in params}
        try:
            return rule(**placeholders)  # a rule with grammar over its kwargs, told their names
        except Exception:  # one that computes with its kwargs: say which it needs
            return f"(its rule needs {', '.join(n for n, p in params if p.default is inspect.Parameter.empty)})"


def catalog(text: str = "") -> list[VerifierInfo]:
    """Every verifier whose id or rule holds ``text`` (any case), by id: what a checklist's ``verifier`` may name."""
    wanted = text.casefold()
    infos = [
        VerifierInfo(
            i,
            _rule_text(i),
            _kwarg_defaults(VERIFIERS[i].factory),
            getattr(VERIFIERS[i].enforce, "how", None),
            VERIFIERS[i].unenforceable,
        )
        for i in known_instruction_ids()
    ]
    return [info for info in infos if wanted in info.instruction_id.casefold() or wanted in info.rule.casefold()]


def loose_variants(response: str) -> list[str]:
    """IFEval's loose mode: the response with first/last/both lines cut, each with and without '*'."""
    lines = response.split("\n")
    cut = [
        response,
        "\n".join(lines[1:]).strip(),
        "\n".join(lines[:-1]).strip(),
        "\n".join(lines[1:-1]).strip(),
    ]
    return cut + [text.replace("*", "") for text in cut]


def diagnose(check: Check, response: str, mode: Mode = "strict") -> Finding:
    """What ``check`` finds in ``response``; an empty response never passes.

    Loose mode reports the first loose variant that passes, else what the unmodified response shows.
    """
    if not response.strip():
        return Finding(False, "the response is empty")
    finding = check(response)
    if finding or mode == "strict":
        return finding
    for text in loose_variants(response)[1:]:
        if text.strip():
            variant = check(text)
            if variant:
                return variant
    return finding


def follows(check: Check, response: str, mode: Mode = "strict") -> bool:
    """Whether ``response`` passes ``check``; an empty response never passes."""
    return diagnose(check, response, mode).passed


# --------------------------------------------------------------------------- wording of details
# Details quote what a check found briefly, so one stays under ~160 characters.


def quote(text: str, width: int = 30) -> str:
    """``text`` in single quotes, whitespace runs shown as one space, cut to ``width`` with '…'."""
    flat = " ".join(text.split())
    return f"'{flat if len(flat) <= width else flat[: width - 1] + '…'}'"


def quote_tail(text: str, width: int = 30) -> str:
    """The end of ``text`` in single quotes, cut at the front with '…'."""
    flat = " ".join(text.split())
    return f"'{flat if len(flat) <= width else '…' + flat[-(width - 1) :]}'"


def quote_list(items: Sequence[str], limit: int = 3, width: int = 24) -> str:
    """The first ``limit`` items quoted, comma-separated, with ', …' when there are more."""
    shown = ", ".join(quote(item, width) for item in items[:limit])
    return shown + (", …" if len(items) > limit else "")


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """'1 word', '3 words' (``nouns`` for irregular plurals)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def tally(items: Sequence[str]) -> str:
    """'0', or '3: 'a', 'b', 'c'' (how many were found, and the first few)."""
    return f"{len(items)}: {quote_list(items)}" if items else "0"


def joined(items: Sequence[str]) -> str:
    """Every item quoted, as an English list: "'a'", "'a' and 'b'", "'a', 'b' and 'c'"."""
    quoted = [quote(item, 60) for item in items]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st, ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
