"""A trial kind for tests: a cheap objective of numeric parameters, with steps for the pruner; no LM."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import optuna
from pydantic import BaseModel, ConfigDict

from bineval_dspy.tune.config import Param
from bineval_dspy.tune.runners import Objective, TrialContext, TrialEnv, run_settings

CALLS_FILE = "calls.txt"  # one line per time the runner did the work in a run_dir


class FakeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    delay: float = 0.0  # seconds a trial takes
    steps: int = 1


class FakeRunner:
    """loss = sum of (value - 0.3)^2 over the parameters; reported per step as loss * (1 + 1/step)."""

    objectives: Mapping[str, Objective] = {"loss": Objective("distance to 0.3", steps=True), "cost": Objective("sum of the parameters")}

    def __init__(self, settings: FakeSettings) -> None:
        self.settings = settings

    def check(self, space: Mapping[str, Param]) -> None:
        pass

    def fingerprint(self) -> dict[str, str]:
        return {"run.steps": str(self.settings.steps)}

    def __call__(self, params: dict[str, Any], context: TrialContext) -> dict[str, float]:
        context.run_dir.mkdir(parents=True, exist_ok=True)
        with (context.run_dir / CALLS_FILE).open("a") as handle:
            handle.write(f"{context.number}\n")
        loss = sum((float(v) - 0.3) ** 2 for v in params.values())
        for step in range(1, self.settings.steps + 1):
            time.sleep(self.settings.delay / self.settings.steps)
            if context.report(step, loss * (1 + 1 / step)):
                raise optuna.TrialPruned(f"step {step}")
        return {"loss": loss, "cost": sum(float(v) for v in params.values())}


def fake_runner(table: dict[str, Any], env: TrialEnv) -> FakeRunner:
    return FakeRunner(run_settings(FakeSettings, table, env.source))
