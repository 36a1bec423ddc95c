"""The registry of trial kinds: the ``[run] kind`` of a study config names one."""

from __future__ import annotations

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.registry import Registry
from bineval_dspy.tune.checklist_trials import checklist_kind
from bineval_dspy.tune.optimizer_trials import optimizer_runner
from bineval_dspy.tune.runners import RunnerFactory

KINDS: Registry[RunnerFactory] = Registry("trial kind")
KINDS.add("optimizer", optimizer_runner)
KINDS.add("checklist", checklist_kind())


def register_kind(name: str, factory: RunnerFactory) -> None:
    """Make ``kind = NAME`` build its runners with ``factory`` (a later registration of a name replaces it)."""
    KINDS.add(name, factory, replace=True)


def runner_factory(kind: str, source: str) -> RunnerFactory:
    if kind not in KINDS:
        raise InputError(f"{source}: field 'run.kind': unknown kind {kind!r}; one of {', '.join(sorted(KINDS))}")
    return KINDS[kind]
