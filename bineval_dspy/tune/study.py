"""Running a study: open (or resume) it in its storage, then run trials until it has its count, all workers together.

Counting. ``MaxTrialsCallback`` counts finished trials after a trial ends, so N workers overshoot by up to N-1.
Instead a trial runs only while fewer than ``trials`` trials that are not failed come before it (by number; the
storage numbers trials one at a time under a lock). A trial created when two workers ask at once beyond the count
is failed at once, before it takes parameters, with the user attribute ``surplus``. A worker returns when the
study has ``trials`` finished (complete or pruned) trials; while the rest are running elsewhere it waits, so
every worker ends with the study.

Dead workers. Every running trial beats a heartbeat into the storage; one that missed two is failed (Optuna's
``fail_stale_trials``, called before every trial and while waiting) and no longer counts, so another worker, or
a rerun of the command, runs a trial in its place. A killed trial never counts as finished, and the trials that
did finish are kept: rerunning the command continues the study.

Budgets. With ``--max-cost`` or ``--max-calls`` a worker starts a trial only when its budget lets it (a trial is
the unit: it is never cut short); each of ``--workers N`` gets an N-th of the budget. What a trial spent is its
user attribute ``usage``; a budget stops a worker with ``BudgetExhausted`` and the study resumes on a rerun.
"""

from __future__ import annotations

import fcntl
import json
import logging
import multiprocessing
import os
import random
import signal
import socket
import sys
import time
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import optuna
from dspy.utils.exceptions import LMError
from optuna.exceptions import ExperimentalWarning, StorageInternalError, UpdateFinishedTrialError
from optuna.storages import RDBStorage, fail_stale_trials
from optuna.trial import TrialState
from sqlalchemy.exc import DBAPIError

from bineval_dspy.core.console import logs_shown, show_logs
from bineval_dspy.core.errors import BinevalError, BudgetExhausted, ExitCode, InputError, RunError, one_line
from bineval_dspy.core.fingerprint import combined, digest, resume_check
from bineval_dspy.lm.budget import Budget, BudgetMeter
from bineval_dspy.lm.runtime import LMOptions
from bineval_dspy.lm.usage import Cost, total
from bineval_dspy.tune.config import PrunerConfig, TuneConfig, load_config
from bineval_dspy.tune.kinds import KINDS, register_kind, runner_factory
from bineval_dspy.tune.runners import RunnerFactory, TrialContext, TrialEnv, TrialRunner, never_prune
from bineval_dspy.tune.sampler import TrialSeededSampler

logger = logging.getLogger(__name__)

FINGERPRINT_ATTR = "bineval_tune"
TRIAL = "trial"  # the unit of work a budget counts in a study
MISSED_HEARTBEATS = 2  # a running trial whose heartbeat is this many intervals old is failed
STORAGE_ATTEMPTS = 5


class SurplusTrial(BinevalError):
    """A trial created after the study already had its count of live trials (two workers asked at once)."""


class _QuietSurplus(logging.Filter):
    """Drops Optuna's failure warnings (with traceback) for surplus trials (an expected race) and trials ended by
    their LM failing or by Ctrl-C: each is explained in one line."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers: set[int] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(record.getMessage().startswith(f"Trial {n} failed") for n in self.numbers)


_QUIET_SURPLUS = _QuietSurplus()
logging.getLogger("optuna.study._optimize").addFilter(_QUIET_SURPLUS)


@dataclass(frozen=True)
class Tuning:
    """A study config made ready: its runner built and checked against the space, the objectives and the pruner."""

    config: TuneConfig
    env: TrialEnv
    runner: TrialRunner
    pruner: PrunerConfig

    @property
    def folder(self) -> Path:
        return self.env.folder


def prepare(
    path: Path, lm_spec: str | None = None, lm_options: LMOptions = LMOptions(), cache_dir: Path | None = None, priced: bool = False
) -> Tuning:
    """Load a study config and build its runner; every config mistake is one InputError, before any trial.

    ``priced`` (a dollar budget): the runner's LMs must have a known price."""
    config = load_config(path)
    assert config.dir is not None  # load_config fills it
    env = TrialEnv(
        base=path.parent.resolve(), folder=config.dir, source=str(path), lm_spec=lm_spec, lm_options=lm_options, cache_dir=cache_dir, priced=priced
    )
    kind = config.run["kind"]
    runner = runner_factory(kind, env.source)({k: v for k, v in config.run.items() if k != "kind"}, env)
    for name in config.objectives:
        if name not in runner.objectives:
            raise InputError(f"{path}: field 'objectives.{name}': not a value of kind {kind!r}; one of {', '.join(runner.objectives)}")
    runner.check(config.space)
    return Tuning(config, env, runner, _pruner(config, runner))


def _pruner(config: TuneConfig, runner: TrialRunner) -> PrunerConfig:
    """The configured pruner, or median where it can act; a pruner that cannot act is refused in one line."""
    (first, *_) = config.objectives
    stepped = not config.multi_objective and runner.objectives[first].steps
    if config.pruner is None:
        return PrunerConfig(kind="median" if stepped else "none")
    if config.pruner.kind == "none":
        return config.pruner
    if config.multi_objective:
        raise InputError(f"{config.source}: field 'pruner': Optuna does not prune multi-objective studies; set kind = \"none\" or keep one objective")
    if not stepped:
        raise InputError(f"{config.source}: field 'pruner': objective {first!r} has no per-step value to prune on; set kind = \"none\"")
    return config.pruner


def shown_url(url: str) -> str:
    """A storage URL fit to print and save: the password hidden."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # a malformed URL is reported by the storage; here it is only shown
        return url.split("@")[-1]


def _storage(config: TuneConfig) -> RDBStorage:
    """The study's RDB storage with heartbeats; two workers starting at once on an empty database may race to
    create Optuna's tables, so a failed start is retried before it becomes one InputError."""
    url = config.storage_url
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
    for attempt in range(1, STORAGE_ATTEMPTS + 1):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExperimentalWarning)
                return RDBStorage(url, engine_kwargs=engine, heartbeat_interval=config.heartbeat, grace_period=MISSED_HEARTBEATS * config.heartbeat)
        except (DBAPIError, StorageInternalError) as exc:  # the server is down, or a lost race to create the tables
            if attempt == STORAGE_ATTEMPTS:
                raise InputError(f"{config.source}: field 'storage': cannot open {shown_url(url)} ({one_line(exc)})") from None
            time.sleep(random.uniform(0.2, 1.0))
        except Exception as exc:  # a malformed URL, an unknown dialect, a missing driver
            raise InputError(f"{config.source}: field 'storage': cannot open {shown_url(url)} ({one_line(exc)})") from None
    raise AssertionError("unreachable")


def open_study(tuning: Tuning) -> optuna.Study:
    """Create the study, or load it when it exists; a study made with other settings is refused in one line."""
    config = tuning.config
    tuning.folder.mkdir(parents=True, exist_ok=True)
    pruner: optuna.pruners.BasePruner = optuna.pruners.NopPruner()
    if tuning.pruner.kind == "median":
        pruner = optuna.pruners.MedianPruner(n_startup_trials=tuning.pruner.startup_trials, n_warmup_steps=tuning.pruner.warmup_steps)
    study = optuna.create_study(
        storage=_storage(config),
        study_name=config.name,
        directions=list(config.objectives.values()),
        sampler=TrialSeededSampler(config.seed),
        pruner=pruner,
        load_if_exists=True,
    )
    fingerprint = combined(config.fingerprint(), tuning.runner.fingerprint())
    recorded = study.user_attrs.get(FINGERPRINT_ATTR)
    where = f"study {config.name!r} in {shown_url(config.storage_url)}"
    if not resume_check(recorded, fingerprint, f"{config.source}: {where}", "; choose another name"):  # a new study
        if study.get_trials(deepcopy=False):
            raise InputError(f"{config.source}: {where} has trials but was not made by bineval tune; choose another name")
        study.set_user_attr(FINGERPRINT_ATTR, fingerprint)
    return study


class _Reporter:
    """``TrialContext.report`` for a pruned study: each step is reported once, then the pruner is asked."""

    def __init__(self, trial: optuna.Trial) -> None:
        self.trial = trial
        self.steps: set[int] = set()

    def __call__(self, step: int, value: float) -> bool:
        if step not in self.steps:
            self.trial.report(value, step)
            self.steps.add(step)
        return self.trial.should_prune()


@contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    """Hold ``RUN_DIR.lock`` while a trial works there: two workers drawing one parameter set take turns, and the
    second finds the first's finished run. The lock goes with its process, so a killed worker leaves none."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(run_dir.parent / f"{run_dir.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


@contextmanager
def _quiet_failures(number: int) -> Iterator[None]:
    """What ends a trial's runner early, in one line instead of Optuna's warning with a traceback: an LM error
    (a server failing every retry) stops the study as an LM failure (``RunError``, exit 3); Ctrl-C stops it as
    interrupted. Either way the trial is failed, and a rerun of the command retries it."""
    try:
        yield
    except LMError as exc:
        _QUIET_SURPLUS.numbers.add(number)
        raise RunError(f"trial {number}: the LM failed ({one_line(exc)}); rerun to retry the trial") from None
    except KeyboardInterrupt:
        _QUIET_SURPLUS.numbers.add(number)
        raise


def brief(params: dict[str, Any]) -> str:
    """Parameters in one short line: floats to four significant digits."""
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def params_digest(params: dict[str, Any]) -> str:
    """A trial's run directory name: the digest of its parameters."""
    return digest(json.dumps(params, sort_keys=True))


class StudyObjective:
    """The Optuna objective of a study: the count check, the suggestions, the runner under the run-dir lock; what
    the runner spent is charged to ``meter`` and kept as the trial's user attribute ``usage``."""

    def __init__(self, tuning: Tuning, meter: BudgetMeter | None = None) -> None:
        self.tuning = tuning
        self.meter = meter or BudgetMeter()

    def __call__(self, trial: optuna.Trial) -> float | list[float]:
        config = self.tuning.config
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")  # first: see _fail_stale
        earlier = sum(1 for t in trial.study.get_trials(deepcopy=False) if t.number < trial.number and t.state != TrialState.FAIL)
        if earlier >= config.trials:
            trial.set_user_attr("surplus", True)
            _QUIET_SURPLUS.numbers.add(trial.number)
            logger.info(f"trial {trial.number} not needed: {earlier} trials before it make the study's {config.trials}; marked failed")
            raise SurplusTrial(f"{earlier} trials before trial {trial.number} already make the study's {config.trials}")
        params = {name: param.suggest(trial, name) for name, param in config.space.items()}
        key = params_digest(params)
        trial.set_user_attr("run_dir", f"trials/{key}")
        run_dir = self.tuning.folder / "trials" / key
        report = _Reporter(trial) if self.tuning.pruner.kind != "none" else never_prune
        logger.info(f"trial {trial.number} starts: {brief(params)}")
        spent: list[Cost] = []
        self.meter.begin(TRIAL)  # ``work`` checked the budget before the trial was created
        try:
            with _locked(run_dir), _quiet_failures(trial.number):
                values = self.tuning.runner(params, TrialContext(run_dir=run_dir, number=trial.number, report=report, charge=spent.append))
        finally:
            cost = total(spent)
            self.meter.end(TRIAL, cost)
            trial.set_user_attr("usage", cost.model_dump(mode="json"))
        trial.set_user_attr("measured", {name: float(value) for name, value in values.items()})  # objectives or not
        ordered = [float(values[name]) for name in config.objectives]
        return ordered[0] if len(ordered) == 1 else ordered


def _fail_stale(study: optuna.Study, grace: int) -> None:
    """Fail the running trials of dead workers: heartbeats older than ``grace`` seconds (Optuna), and trials that
    never reached our objective (a worker killed between creating a trial and its first heartbeat, which no
    heartbeat covers) once they are ``grace`` seconds old."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        fail_stale_trials(study)
    cutoff = datetime.now() - timedelta(seconds=grace)
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if "worker" not in trial.user_attrs and trial.datetime_start is not None and trial.datetime_start < cutoff:
            try:
                study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
            except UpdateFinishedTrialError:  # another worker failed it first
                pass


def work(tuning: Tuning, study: optuna.Study, meter: BudgetMeter | None = None) -> None:
    """Run trials in this process until the study has its count of finished trials (see the module docstring).

    With ``meter``, a trial starts only when its budget lets it (trials are not cut short); else BudgetExhausted.
    """
    wanted = tuning.config.trials
    meter = meter or BudgetMeter()
    objective = StudyObjective(tuning, meter)
    waiting = False
    while True:
        _fail_stale(study, MISSED_HEARTBEATS * tuning.config.heartbeat)
        states = Counter(t.state for t in study.get_trials(deepcopy=False))
        finished = states[TrialState.COMPLETE] + states[TrialState.PRUNED]
        if finished >= wanted:
            return
        if finished + states[TrialState.RUNNING] >= wanted:
            if not waiting:
                logger.info(f"{finished} of {wanted} trials finished; waiting for {states[TrialState.RUNNING]} running elsewhere")
                waiting = True
            time.sleep(min(tuning.config.heartbeat, 5))
            continue
        waiting = False
        meter.check(TRIAL, f"{wanted - finished} of {wanted} trial(s) not finished and not started by this worker")
        study.optimize(objective, n_trials=1, catch=(SurplusTrial,))


def _worker(
    path: Path, lm_spec: str | None, lm_options: LMOptions, cache_dir: Path | None, budget: Budget, kinds: Mapping[str, RunnerFactory] | None = None
) -> tuple[int, str]:
    """One worker: the study from its config, trials until the study is done or its budget spent; (exit code, the
    line that says why it stopped early, or ""). ``kinds``: trial kinds registered where the worker was sent from."""
    for name, factory in (kinds or {}).items():
        register_kind(name, factory)
    try:
        tuning = prepare(path, lm_spec, lm_options, cache_dir, priced=budget.max_cost is not None)
        work(tuning, open_study(tuning), BudgetMeter(budget))
    except BudgetExhausted as exc:
        return ExitCode.BUDGET, f"stopped: {exc}"
    except InputError as exc:
        return ExitCode.INPUT, f"error: {exc}"
    except RunError as exc:
        return ExitCode.LM_FAILURE, f"error: {exc}"
    return ExitCode.OK, ""


def _worker_process(path: Path, lm_spec: str | None, lm_options: LMOptions, cache_dir: Path | None, budget: Budget, shown: bool) -> None:
    """A spawned worker (``_worker``), its outcome as an exit code; ``shown``: the library's log shown on the console,
    as the process that spawned it does (a spawned process starts with no logging set up)."""
    if shown:
        show_logs()
    try:
        code, line = _worker(path, lm_spec, lm_options, cache_dir, budget)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while exiting: no traceback
        sys.exit(ExitCode.INTERRUPTED)
    if line:
        logger.error(line)
    sys.exit(code)


def run_workers(
    path: Path,
    workers: int,
    lm_spec: str | None = None,
    lm_options: LMOptions = LMOptions(),
    cache_dir: Path | None = None,
    budget: Budget = Budget(),
    ray: str | None = None,
) -> int:
    """Run ``workers`` workers on the study of ``path`` and wait for them; the first nonzero exit code. Each gets an
    equal share of ``budget``, so that together they keep within it.

    Workers are spawned processes, not forked: each starts clean (no copied database connections, LM engines or
    threads) and builds its own study handle from the config, as separately started commands would. With ``ray``
    (a cluster's address; "local" starts one here) they are Ray tasks instead, sharing the study through its
    storage (an RDB URL where the tasks run on other machines); a task whose worker dies is run again, its running
    trial failed as stale and retried.
    """
    share = budget.share(workers)
    if ray is not None:
        return _on_ray(ray, workers, (path.resolve(), lm_spec, lm_options, cache_dir, share))
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_worker_process, args=(path, lm_spec, lm_options, cache_dir, share, logs_shown()), name=f"bineval-tune-{i}")
        for i in range(workers)
    ]
    for process in processes:
        process.start()
    try:
        for process in processes:
            process.join()
    except KeyboardInterrupt:
        for process in processes:
            process.terminate()  # their running trials go stale and are failed; a rerun resumes the study
        raise
    code = next((p.exitcode for p in processes if p.exitcode), 0) or 0
    return code if code >= 0 else ExitCode.INCOMPLETE  # a worker killed by a signal: rerun to finish the study


def _on_ray(address: str, workers: int, args: tuple[Path, str | None, LMOptions, Path | None, Budget]) -> int:
    """``workers`` Ray tasks of ``_worker(*args)``; a kind registered here (a plugin's) is registered in each too."""
    from bineval_dspy.core.cluster import connect

    ray = connect(address, workers)
    task = ray.remote(num_cpus=1, max_retries=2)(_worker)
    outcomes = ray.get([task.remote(*args, dict(KINDS)) for _ in range(workers)])
    for _, line in outcomes:
        if line:
            logger.info(line)
    return next((code for code, _ in outcomes if code), ExitCode.OK)
