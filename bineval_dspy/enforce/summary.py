"""What steered decoding did over a run's rows, counted once: ``generate``'s summary line, its run header
(``runs.header.RunHeader.enforcement``), an experiment arm's figures and the report all read this one model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel, computed_field

from bineval_dspy.enforce.plan import Decision


class EnforcedRow(Protocol):
    """One row's enforcement record (``programs.records.Enforced``): its decisions, and each enforced id's check."""

    @property
    def decisions(self) -> Sequence[Decision]: ...

    @property
    def held(self) -> Mapping[str, bool]: ...


class EnforcementSummary(BaseModel):
    """What steered decoding did over a run's rows, from their ``enforcement`` records: rows steered (at least one
    constraint enforced), rows whose prompt states no constraint the extractor found (decoded plainly), constraints
    enforced and how many of them held when checked by code after decoding, and those not enforced by reason. A run
    whose rows were all decoded plainly says so (``nothing``, written with the counts), so it is never read as an
    enforced one."""

    rows: int = 0
    steered: int = 0
    no_constraint: int = 0
    enforced: int = 0
    held: int = 0
    conflicts: int = 0
    unenforceable: int = 0
    invalid: int = 0

    @classmethod
    def of(cls, records: Sequence[EnforcedRow]) -> EnforcementSummary:
        decisions = [d for r in records for d in r.decisions]
        statuses = [d.status for d in decisions]
        return cls(
            rows=len(records), steered=sum(any(d.status == "enforced" for d in r.decisions) for r in records),
            no_constraint=sum(not r.decisions for r in records), enforced=statuses.count("enforced"),
            held=sum(ok for r in records for ok in r.held.values()), conflicts=statuses.count("conflict"),
            unenforceable=statuses.count("unenforceable"), invalid=statuses.count("invalid"),
        )  # fmt: skip

    @computed_field  # type: ignore[prop-decorator]
    @property
    def nothing(self) -> bool:
        """Whether no constraint was enforced in any row: the replies were decoded as without steering."""
        return self.enforced == 0

    def text(self) -> str:
        """One line with every count."""
        return (
            f"{self.steered} of {self.rows} row(s) steered, {self.no_constraint} with no constraint found (decoded plainly); "
            f"{self.enforced} constraint(s) enforced, {self.held} held when checked after decoding; "
            f"not enforced: {self.conflicts} conflict(s), {self.unenforceable} unenforceable, {self.invalid} invalid"
        )

    def line(self) -> str:
        """``generate``'s summary line: the counts, after "enforced nothing" when nothing was."""
        return ("enforced nothing: every reply was decoded plainly; " if self.nothing else "enforcement: ") + self.text()
