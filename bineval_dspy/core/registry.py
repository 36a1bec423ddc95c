"""One mechanism for every place the library lets code be named in a config or on a command line: code verifiers
by instruction id, checklist writers and templates by method, experiment arms by kind. Each is a ``Registry``: a
dict of one kind of entry whose names are given once (a second, different entry under a taken name is refused),
and whose unknown name is one line listing the known ones."""

from __future__ import annotations

from typing import TypeVar

from bineval_dspy.core.errors import InputError

T = TypeVar("T")


class Registry(dict[str, T]):
    """Named entries of one ``kind`` ("verifier", "checklist template", "arm kind"), in the order added."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def add(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Register ``entry`` as ``name``; a name taken by another entry needs ``replace``."""
        if not replace and name in self and self[name] != entry:
            raise InputError(f"{self.kind} {name!r}: already registered with another entry; rename it")
        self[name] = entry
        return entry

    def named(self, entry: T) -> T:
        """Register ``entry`` under its own ``name`` attribute (a class decorator for kinds that name themselves)."""
        name = getattr(entry, "name", "")
        if not name:
            raise RuntimeError(f"{getattr(entry, '__name__', entry)} names no {self.kind}")
        return self.add(name, entry)

    def __missing__(self, name: str) -> T:
        raise InputError(f"unknown {self.kind} {name!r} (choose from {', '.join(self) or 'none'})")
