"""Every kind of run the library writes, one ``RunKind`` entry each, in one registry (``RUN_KINDS``).

An entry is filled from both sides where each side is defined, never from a list kept here: the writing side
registers the kind beside its run (``writes``: a decorator on the run class or on the results model the run
writes, naming the settings model it is made from), and the reading side (``report/``, above this layer) registers
how a file of that kind is read into a report object and shown (``reads``, ``shows``, ``pages``). The kind a file
holds is its header's (``runs.header``, ``OUT.run.json``), or for older output its ``kind`` field or the keys its
entry registers as its old files' (``legacy``, read by ``runs.files`` for header-less output only); ``show``, ``report``, ``view``, ``load_run`` and ``bineval show --kinds`` all list and dispatch
through this registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from bineval_dspy.core.registry import Registry

T = TypeVar("T")

LOG = (".jsonl",)  # a JSON Lines run log, its header (``OUT.run.json``) beside it


@dataclass
class RunKind:
    """One kind of run: what writes it (``spec``: the settings model a run is made from; ``results``: the model its
    file holds, a log's record), the suffixes its files have, and how the reading side reads and shows it."""

    name: str
    spec: type | None = None
    results: type | None = None
    written_by: str = ""  # the qualified name of what registered the writing side (None registered: "")
    read: Callable[[Path], Any] | None = None  # a file of this kind -> its report object (report.runs)
    suffixes: tuple[str, ...] = (".json",)  # the files ``read`` takes
    title: str = ""  # the report object's heading, in `show` and on the page
    show: Callable[[Any], None] | None = None  # the terminal view (report.text)
    page: Callable[[Any, Any], dict[str, Any]] | None = None  # the page view's data (report.html) ...
    macro: str = ""  # ... and the template macro that draws it
    # the key sets that tell a file of this kind written before headers and kind fields (a log: its first row's keys)
    legacy: tuple[frozenset[str], ...] = ()
    legacy_first: bool = False  # its old rows keep the fields of the rows it read (a judge's): its keys are tried first

    @property
    def description(self) -> str:
        """What a file of this kind holds: the first line of its results model's docstring."""
        doc = (self.results.__doc__ or "") if self.results is not None else ""
        return doc.strip().splitlines()[0] if doc.strip() else ""


class RunKinds(Registry[RunKind]):
    """The registry of run kinds; an entry is made by whichever side registers it first."""

    def entry(self, name: str) -> RunKind:
        """The entry ``name``, made empty when no side has registered it yet."""
        return self[name] if name in self else self.add(name, RunKind(name))

    def writes(
        self, name: str, *, spec: type | None = None, results: type | None = None, legacy: tuple[set[str], ...] = (), legacy_first: bool = False
    ) -> Callable[[T], T]:
        """A decorator for the run class, settings or results model of kind ``name`` (settings decorated are the
        ``spec`` itself, a results model the ``results``): registers the writing side, refusing a second writer.
        ``legacy``: the key sets its files had before headers, registered here (the writer's module is what every
        reader of old output imports) rather than in a table of every kind's."""

        def register(defined: T) -> T:
            entry = self.entry(name)
            where = f"{getattr(defined, '__module__', '')}.{getattr(defined, '__qualname__', defined)}"
            if entry.written_by and entry.written_by != where:
                raise RuntimeError(f"run kind {name!r}: written by {entry.written_by} already, not also {where}")
            model = defined if isinstance(defined, type) and issubclass(defined, BaseModel) else None
            settings = model if model is not None and _is_spec(model) else None
            entry.spec = spec or settings
            entry.results = results or (model if settings is None else None)
            entry.written_by = where
            entry.legacy, entry.legacy_first = _joined(entry.legacy, legacy), legacy_first
            return defined

        return register

    def reads(
        self, name: str, *, title: str, suffixes: tuple[str, ...] = (".json",), legacy: tuple[set[str], ...] = ()
    ) -> Callable[[Callable[[Path], T]], Callable[[Path], T]]:
        """A decorator for the reader of kind ``name``'s files (``suffixes``): ``read(path)`` -> its report object,
        shown as ``title``. ``legacy``: as ``writes`` takes them, for a kind whose writer is a command (``cli/``,
        which no reader imports)."""

        def register(read: Callable[[Path], T]) -> Callable[[Path], T]:
            entry = self.entry(name)
            entry.read, entry.title, entry.suffixes = read, title, suffixes
            entry.legacy = _joined(entry.legacy, legacy)
            return read

        return register

    def shows(self, *names: str) -> Callable[[T], T]:
        """A decorator for the terminal view of the report object kinds ``names`` are read into."""

        def register(show: T) -> T:
            for name in names:
                self.entry(name).show = show  # type: ignore[assignment]
            return show

        return register

    def pages(self, *names: str, macro: str) -> Callable[[T], T]:
        """A decorator for the page view of kinds ``names``: the data the template macro ``macro`` draws."""

        def register(page: T) -> T:
            for name in names:
                entry = self.entry(name)
                entry.page, entry.macro = page, macro  # type: ignore[assignment]
            return page

        return register


def _joined(known: tuple[frozenset[str], ...], more: tuple[set[str], ...]) -> tuple[frozenset[str], ...]:
    """``known`` and ``more``, each key set once (a module imported again registers its sets again)."""
    return tuple(dict.fromkeys((*known, *map(frozenset, more))))


def _is_spec(model: type) -> bool:
    """Whether ``model`` is a run's settings (imported here, late: ``runs.spec`` loads the LM options, which a command
    line parser registering its own kinds leaves unloaded)."""
    from bineval_dspy.runs.spec import RunSpec

    return issubclass(model, RunSpec)


RUN_KINDS = RunKinds("run kind")
