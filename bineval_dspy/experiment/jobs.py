"""An experiment's arms as separate jobs on one run directory: each arm's optimization runs alone (``bineval
experiment CONFIG --arm NAME`` in any process, or a Ray task with ``--ray``), resumable in its own folder as
today; a final ``bineval experiment CONFIG`` scores every arm on test, finding the optimized ones done. Jobs share
the run's LM cache (a disk cache that several processes may open), so nothing is asked twice."""

from __future__ import annotations

from pathlib import Path

from bineval_dspy.experiment.config import ExperimentConfig
from bineval_dspy.lm.runtime import LMOptions
from bineval_dspy.lm.usage import Cost


def _optimize_one(config_json: str, options_json: str, cache: str | None, name: str) -> str:
    """One arm's optimization in a Ray worker: the run's LM configured there, the arm run in its folder."""
    from bineval_dspy.experiment.runner import optimize_arms
    from bineval_dspy.lm import runtime
    from bineval_dspy.verifiers import load_verifier_files

    config = ExperimentConfig.model_validate_json(config_json)
    load_verifier_files(config.verifiers)  # the driver's, resolved by its load_experiment
    lm = runtime.configure(LMOptions.model_validate_json(options_json), Path(cache) if cache else None)
    return optimize_arms(config, lm, [name])[name].model_dump_json()


def arms_on_ray(config: ExperimentConfig, options: LMOptions, cache: Path | None, names: list[str], address: str, workers: int) -> dict[str, Cost]:
    """Each named arm's optimization as a Ray task (retried in a new worker when one dies: the arm resumes from its
    folder); what each spent, by name."""
    from bineval_dspy.core.cluster import connect

    ray = connect(address, workers)
    task = ray.remote(num_cpus=1, max_retries=2)(_optimize_one)
    config_json, options_json = config.model_dump_json(), options.model_dump_json()
    futures = {name: task.remote(config_json, options_json, str(cache) if cache else None, name) for name in names}
    return {name: Cost.model_validate_json(ray.get(future)) for name, future in futures.items()}
