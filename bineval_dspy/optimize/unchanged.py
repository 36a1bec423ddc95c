"""Why an optimizer run kept its start program, in one line.

A run that accepted no candidate ends where it began, so its test difference from the start (``+0.000``) measures
no optimization; a table that shows the figure alone reads as "the optimizer did not help". The usual cause on a
suite whose rows each carry their own constraints (IFBench, IFEval) is that no failed rule is asked for by
``min_rule_share`` of the train rows, so no lesson was drawn at all; the line then says so, with what to change.
"""

from __future__ import annotations

from bineval_dspy.optimize.audit import Audit, IterationRecord

RECIPE = "README, \"Optimizing prompts\": rows with their own constraints"  # where the recipe for such suites is


def own_constraints(record: IterationRecord, min_share: float) -> tuple[int, int] | None:
    """(rules, train rows) when every failure ``record`` sampled is a code check whose rule fewer than
    ``min_share`` of the train rows ask for (each row's own constraint, so no lesson is drawn), else None."""
    failures = record.failures or []
    rare = [f for f in failures if f.rule is not None and f.rule_share is not None and f.rule_share < min_share]
    if not failures or len(rare) < len(failures):
        return None
    return len({f.rule for f in rare}), max(f.rows or 0 for f in rare)


def unchanged_note(audit: Audit) -> str | None:
    """The one line for a finished run that accepted no candidate: where and why it stopped, and, when its lessons
    were all rows' own constraints, the setting to change; None for a run that changed its program or is still going."""
    if audit.stopped is None or audit.best.iteration != 0:  # still going, or an accepted candidate is its best
        return None
    last = len(audit.iterations)
    line = f"kept its start program (its difference from the start measures no optimization): stopped at iteration {last}: {audit.stopped}"
    share = audit.settings.min_rule_share
    found = [own for record in audit.iterations if record.kind == "instructions" and not record.selected and (own := own_constraints(record, share))]
    if not found:
        return line
    rules, rows = max(found)
    return (
        f"{line}; each of the {rules} failed rule(s) is asked for by fewer than min_rule_share {share:g} of the {rows} train "
        "rows (every row states its own constraints, as in IFBench), so none became a lesson for every row: lower "
        f"[optimizer] min_rule_share, or state the general rule in [program] instructions and steer each row ({RECIPE})"
    )
