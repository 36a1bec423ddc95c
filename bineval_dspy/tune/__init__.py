"""Tuning settings with Optuna: a study of trials (optimizer runs, checklist writers, or a registered kind),
one or several objectives, pruning, several workers on one storage, and resume."""

from bineval_dspy.tune.checklist_trials import ChecklistRunner, checklist_kind
from bineval_dspy.tune.config import CategoricalParam, FloatParam, IntParam, PrunerConfig, TuneConfig, load_config
from bineval_dspy.tune.kinds import KINDS, register_kind
from bineval_dspy.tune.optimizer_trials import OptimizerRunner
from bineval_dspy.tune.report import TrialRecord, TuneResults, best_table, collect, plot_trials, write_results
from bineval_dspy.tune.runners import Objective, TrialContext, TrialEnv, TrialRunner
from bineval_dspy.tune.sampler import TrialSeededSampler
from bineval_dspy.tune.study import StudyObjective, SurplusTrial, Tuning, open_study, prepare, run_workers, work

__all__ = [
    "KINDS", "CategoricalParam", "ChecklistRunner", "FloatParam", "IntParam", "Objective", "OptimizerRunner", "PrunerConfig",
    "StudyObjective", "SurplusTrial", "TrialContext", "TrialEnv", "TrialRecord", "TrialRunner", "TrialSeededSampler", "TuneConfig", "TuneResults",
    "Tuning", "best_table", "checklist_kind", "collect", "load_config", "open_study", "plot_trials", "prepare", "register_kind",
    "run_workers", "work", "write_results",
]
