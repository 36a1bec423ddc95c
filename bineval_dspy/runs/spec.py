"""``RunSpec``: the base of every run config (the file it was read from, for error messages), and ``UnitRunSpec``:
the settings every run done unit by unit through ``runs.execute`` shares (where its log goes, whether to overwrite
it, the LM, the cache, the budget, the executor), so each runner declares only its own and
``core.settings.fingerprint_of`` derives the fingerprint from the fields instead of each runner assembling one by
hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import SOURCE
from bineval_dspy.core.settings import unrecorded
from bineval_dspy.lm.budget import Budget
from bineval_dspy.lm.runtime import LMOptions


class RunSpec(BaseModel):
    """A run's settings: frozen, no key the model does not name, and the config file they were read from. Only what
    every run config has is here, so no config takes a key it does not use; ``source`` is set while the file is
    validated (``core.jsonio.load_toml`` passes it in the validation context), never assigned afterwards."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str = unrecorded("", exclude=True, description="the config file, for error messages")

    @model_validator(mode="before")
    @classmethod
    def _read_from(cls, data: Any, info: ValidationInfo) -> Any:
        """The file being validated is the source, whatever the file itself says."""
        source = info.context.get(SOURCE) if isinstance(info.context, dict) else None
        return {**data, "source": source} if source is not None and isinstance(data, dict) else data


class UnitRunSpec(RunSpec):
    """Where a run writes, on which LM, within which limits, on which executor. What decides its records is in the
    subclass's fields (and the facts the run resolves: the LM's identity, a program's text); these decide only
    where and how the work is done, so none of them is fingerprinted (the LM is, through its resolved identity)."""

    output: Path = unrecorded(Path("run.jsonl"))  # the log: one record per finished unit, resumed when it exists
    overwrite: bool = unrecorded(False)  # replace earlier output instead of resuming it
    lm: LMOptions = unrecorded(LMOptions())
    cache_dir: Path | None = unrecorded(None)
    budget: Budget = unrecorded(Budget())
    threads: int | None = unrecorded(None)  # units at once in this process (a remote LM; the embedded one runs one)
    ray: str | None = unrecorded(None)  # a Ray cluster does the units: "local" (started here) or its address
    workers: int = unrecorded(2, ge=1)  # with ``ray``: actors at once

    def check_executor(self) -> None:
        """Refuse, in one line and before any work, an executor the settings cannot run on."""
        check_cluster(self.ray, self.budget)


def check_cluster(address: str | None, budget: Budget) -> None:
    """A Ray cluster (``address``; None: this process) takes no budget, and needs Ray installed: one line, before any work."""
    if address is None:
        return
    if budget.limited:
        raise InputError("`ray`: a cluster run takes no budget (`max_cost`, `max_calls`): size it with `limit`")
    from bineval_dspy.core.cluster import ray_module

    ray_module()
