"""Verifiers users write themselves: a decorated function in a Python file of their own, loaded by path.

``@verifier("mine:no_emoji", rule="...", kwargs=NoEmojiArgs)`` registers ``(response, **kwargs) -> bool | Finding``
in the registry the built-in verifiers are in (``register_typed``), so checklists, suite rows, grading, Best-of-N
and fine-tuning find it by id. Each file's bytes join ``code_digest``: a run resumed after the file changed is
refused, never continued with verdicts its old version gave.

``enforce=`` makes the rule true while decoding (``generate --enforce``) with the built-in building blocks: a
function of the verifier's kwargs returning a ``Steering``, a rule kind or several (``bineval_dspy.enforce``: a
word predicate by name, ``words("mine:short", most=5)`` after ``@word_predicate("mine:short")``, or a
``RuleKind`` of one's own registered with ``@rule_kind``). A rule whose code is in the file keys the steered
request's cache by the file's bytes (``enforce.steering.metadata``).
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import digest, file_digest
from bineval_dspy.core.jsonio import describe_validation_error
from bineval_dspy.enforce.rules import RuleKind, rules
from bineval_dspy.enforce.steering import HOW, Steering
from bineval_dspy.verifiers.guard import guarded
from bineval_dspy.verifiers.registry import (
    USER_FILES,
    VERIFIERS,
    Enforcement,
    Judged,
    NoKwargs,
    Rule,
    register_typed,
    typed_factory,
)

Steers = Callable[..., "Steering | RuleKind | Sequence[RuleKind]"]  # the verifier's kwargs -> what decoding keeps

_ID = re.compile(r"[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+")
SOURCES: dict[str, Path] = {}  # a user verifier's id -> the file that defines it


def _source_of(judged: Judged) -> Path:
    """The file ``judged`` is defined in, resolved."""
    return Path(inspect.getsourcefile(judged) or judged.__code__.co_filename).resolve()


def _enforcement(instruction_id: str, steers: Steers, kwargs: type[BaseModel], how: HOW) -> Enforcement:
    """``steers`` as a registered enforcement: given a row's kwargs checked by ``kwargs`` (the verifier's model),
    its answer made a ``Steering``; anything else it returns is a TypeError (the row's decision: invalid)."""

    def steering(**given: Any) -> Steering:
        try:
            values = kwargs.model_validate(given)
        except ValidationError as exc:
            raise ValueError(describe_validation_error(exc)) from None
        given_kwargs = {field.alias or name: getattr(values, name) for name, field in type(values).model_fields.items()}
        # run as a check runs: whatever it raises (``sys.exit`` included) or its not finishing is one VerifierError,
        # the row's decision "invalid", never a traceback, an exit or a hang of the run
        made = guarded(instruction_id, lambda: steers(**given_kwargs))
        if isinstance(made, Steering):
            return made
        kinds = [made] if isinstance(made, RuleKind) else list(made) if isinstance(made, list | tuple) else [made]
        if not all(isinstance(kind, RuleKind) for kind in kinds):
            raise TypeError(f"{instruction_id}: enforce returned {type(made).__name__}, not a Steering or rule kinds")
        return Steering(rules=rules(*kinds))

    steering.__signature__ = inspect.signature(typed_factory(instruction_id, lambda response: True, kwargs))  # type: ignore[attr-defined]
    return Enforcement(how, steering)


def verifier(
    instruction_id: str,
    *,
    rule: Rule,
    kwargs: type[BaseModel] = NoKwargs,
    enforce: Steers | None = None,
    how: HOW = "mask",
    unenforceable: str = "",
) -> Callable[[Judged], Judged]:
    """Register ``judged(response, **kwargs) -> bool | Finding`` as the code verifier ``instruction_id``
    ("group:name"); ``rule`` says what it demands (a ``str.format`` template over the kwargs), ``kwargs`` is the
    pydantic model its kwargs are checked by. An id a built-in verifier or another file has is refused.

    ``enforce``: a function of the same kwargs returning a ``Steering`` or rule kinds, which decoding keeps
    (``how``: by a mask, forced text or an automaton, as ``bineval verifiers`` shows it); ``unenforceable``: why
    decoding cannot make the rule true, where it cannot."""

    def decorate(judged: Judged) -> Judged:
        source = _source_of(judged)
        where = f"{source}:{judged.__code__.co_firstlineno}"
        if not _ID.fullmatch(instruction_id):
            raise InputError(f"{where}: verifier id {instruction_id!r} is not 'group:name'")
        owner = SOURCES.get(instruction_id)
        if instruction_id in VERIFIERS and owner is None:
            raise InputError(f"{where}: verifier id {instruction_id!r} is a built-in verifier's; rename yours")
        if owner is not None and owner != source:
            raise InputError(f"{where}: verifier id {instruction_id!r} is already defined in {owner}")
        if owner == source and source in _LOADING:  # the file was forgotten before this load: it says the id twice
            raise InputError(f"{where}: verifier id {instruction_id!r} is defined twice in this file")
        if enforce is not None:  # the enforcement takes the verifier's kwargs, named as a row names them
            takes = inspect.signature(enforce).parameters
            named = {field.alias or name for name, field in kwargs.model_fields.items()}
            if set(takes) != named and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in takes.values()):
                raise InputError(f"{where}: enforce of {instruction_id!r} takes {sorted(takes)}, its kwargs are {sorted(named)}")
        VERIFIERS.pop(instruction_id, None)  # this file's own, from an earlier version of it
        try:
            enforcement = _enforcement(instruction_id, enforce, kwargs, how) if enforce is not None else None
            register_typed(instruction_id, rule=rule, kwargs=kwargs, enforce=enforcement, unenforceable=unenforceable)(judged)
        except RuntimeError as exc:  # a rule naming a kwarg the model lacks
            raise InputError(f"{where}: {exc}") from None
        SOURCES[instruction_id] = source
        with suppress(InputError):  # no file to read (defined in an interactive session): nothing to fingerprint
            USER_FILES.setdefault(source, file_digest(source))
        return judged

    return decorate


_LOADING: set[Path] = set()  # the files being imported now (an id said twice in one of them is refused)


def _failed_line(exc: BaseException, path: Path) -> int | None:
    """The line of ``path`` where importing it raised ``exc`` (the deepest frame in the file)."""
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == path:
        return exc.lineno
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if Path(frame.filename).resolve() == path]
    return frames[-1].lineno if frames else None


def _forget(path: Path) -> None:
    """Unregister the verifiers ``path`` defined."""
    for instruction_id in [i for i, source in SOURCES.items() if source == path]:
        del SOURCES[instruction_id]
        VERIFIERS.pop(instruction_id, None)
    USER_FILES.pop(path, None)


def load_verifier_file(path: Path | str) -> list[str]:
    """Import a Python file of ``@verifier`` functions and return the ids it defines. Loading a file again is a
    no-op unless its bytes changed; a file that cannot be read or imported, or defines no verifier, is one located
    InputError, never a traceback."""
    path = Path(path).resolve()
    if path.suffix != ".py":
        raise InputError(f"{path}: verifiers come from a Python file (.py)")
    content = file_digest(path)
    if USER_FILES.get(path) == content:
        return sorted(i for i, source in SOURCES.items() if source == path)
    _forget(path)  # an earlier version's verifiers
    USER_FILES[path] = content
    name = f"bineval_user_verifiers_{digest(str(path))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a .py path always has one
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a pydantic model in the file resolves its annotations through it
    _LOADING.add(path)
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        _forget(path)
        sys.modules.pop(name, None)
        if isinstance(exc, InputError | KeyboardInterrupt):
            raise  # an InputError is the decorator's own, located at the function
        line = _failed_line(exc, path)
        first = (str(exc).splitlines() or [""])[0] if not isinstance(exc, SyntaxError) else exc.msg
        raise InputError(f"{path}{f':{line}' if line else ''}: cannot load verifiers: {type(exc).__name__}: {first}") from None
    finally:
        _LOADING.discard(path)
    ids = sorted(i for i, source in SOURCES.items() if source == path)
    if not ids:
        _forget(path)
        raise InputError(f"{path}: defines no verifier; decorate a function with @bineval_dspy.verifier(\"group:name\", rule=...)")
    return ids


def load_verifier_files(paths: Iterable[Path | str]) -> list[str]:
    """``load_verifier_file`` for each path, in order; every id they define."""
    return [instruction_id for path in paths for instruction_id in load_verifier_file(path)]


def load_config_verifiers(paths: Sequence[Path], config: Path) -> list[Path]:
    """A config's ``verifiers`` key: each file taken from the config's folder and loaded; the files, resolved."""
    resolved = [(config.parent / path).resolve() for path in paths]
    for index, path in enumerate(resolved):
        if not path.is_file():
            raise InputError(f"{config}: field 'verifiers.{index}': no file {path}")
        load_verifier_file(path)
    return resolved
