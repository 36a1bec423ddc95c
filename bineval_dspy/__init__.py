"""bineval_dspy: evaluate LLM outputs with independent binary questions, and improve prompts from the answers.

Names are imported on first use, so ``import bineval_dspy`` loads neither DSPy's LMs nor llama.cpp.

Any module of the library imports this package first, so the setting below precedes every import of LiteLLM
(by DSPy or by us): LiteLLM would otherwise fetch its price map from GitHub when imported (about 7 s and warnings
when offline, and prices that change between runs). The map bundled with the installed LiteLLM is used instead;
export LITELLM_LOCAL_MODEL_COST_MAP=False to let LiteLLM fetch. Our own prices (``bineval_dspy.lm.prices``)
always come from the bundled file.

For the same reason the package chooses passive waiting for llama.cpp's OpenMP workers (``OMP_WAIT_POLICY``, read
once, when llama.cpp's library loads): they spin while waiting by default, and on a busy 2-core machine that starves
every other process and this one. It must precede the first ``import llama_cpp`` wherever that happens (an
experiment's plan counts tokens with the model's tokenizer before any engine exists; loaded spinning, that run
decoded about 10x slower). Export OMP_WAIT_POLICY to choose otherwise.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from bineval_dspy.core.version import __version__ as __version__  # its home is the bottom layer

_EXPORTS = {
    "BinaryJudge": "bineval_dspy.judges.binary",
    "BinEvalWriter": "bineval_dspy.checklists.bineval",
    "ChecklistWriter": "bineval_dspy.checklists.base",
    "QworldWriter": "bineval_dspy.checklists.qworld",
    "TickWriter": "bineval_dspy.checklists.tick",
    "make_writer": "bineval_dspy.checklists.writers",
    "Checklist": "bineval_dspy.core.schema",
    "JudgeSpec": "bineval_dspy.core.schema",
    "Question": "bineval_dspy.core.schema",
    "Scorecard": "bineval_dspy.core.schema",
    "Verdict": "bineval_dspy.core.schema",
    "rescale": "bineval_dspy.core.scoring",
    "score": "bineval_dspy.core.scoring",
    "make_lm": "bineval_dspy.lm.specs",
    "BinEvalOptimizer": "bineval_dspy.optimize.optimizer",
    "OptimizerSettings": "bineval_dspy.optimize.settings",
    "bineval_metric": "bineval_dspy.optimize.metric",
    "BinEvalMetric": "bineval_dspy.optimize.metric",
    "SelfUpdateFeedback": "bineval_dspy.optimize.feedback",
    "CrossModelFeedback": "bineval_dspy.optimize.feedback",
    "Proposer": "bineval_dspy.optimize.proposers",
    "Audit": "bineval_dspy.optimize.audit",
    "Generator": "bineval_dspy.programs.generator",
    "ProgramFile": "bineval_dspy.programs.state",
    "load_program": "bineval_dspy.programs.state",
    "hybrid_checklist": "bineval_dspy.checklists.hybrid",
    "SuiteRow": "bineval_dspy.suites.rows",
    "load_suite": "bineval_dspy.suites.rows",
    "Finding": "bineval_dspy.verifiers.registry",
    "verifier": "bineval_dspy.verifiers.user",
    "load_verifier_files": "bineval_dspy.verifiers.user",
    "Bootstrap": "bineval_dspy.stats.bootstrap",
    "Interval": "bineval_dspy.stats.bootstrap",
    # the seams an application builds on (issue 58)
    "BinevalError": "bineval_dspy.core.errors",
    "Engine": "bineval_dspy.lm.engine",
    "Judge": "bineval_dspy.judges.base",
    "Probe": "bineval_dspy.judges.probe",
    "ProgramState": "bineval_dspy.programs.state",
    "BinEvalFinetune": "bineval_dspy.finetune.optimizer",
    "RunSpec": "bineval_dspy.runs.spec",
    "UnitRunSpec": "bineval_dspy.runs.spec",
    "execute": "bineval_dspy.runs.execute",
    "load_run": "bineval_dspy.report.runs",
    "RunConfig": "bineval_dspy.optimize.config",
    "load_config": "bineval_dspy.optimize.config",
    "run_optimize": "bineval_dspy.optimize.run",
}

__all__ = [
    "Audit",
    "BinEvalFinetune",
    "BinEvalMetric",
    "BinEvalOptimizer",
    "BinEvalWriter",
    "BinaryJudge",
    "BinevalError",
    "Bootstrap",
    "Checklist",
    "ChecklistWriter",
    "CrossModelFeedback",
    "Engine",
    "Finding",
    "Generator",
    "Interval",
    "Judge",
    "JudgeSpec",
    "OptimizerSettings",
    "Probe",
    "ProgramFile",
    "ProgramState",
    "Proposer",
    "RunConfig",
    "Question",
    "QworldWriter",
    "RunSpec",
    "Scorecard",
    "SelfUpdateFeedback",
    "SuiteRow",
    "TickWriter",
    "UnitRunSpec",
    "Verdict",
    "bineval_metric",
    "execute",
    "hybrid_checklist",
    "load_config",
    "load_program",
    "load_run",
    "load_suite",
    "load_verifier_files",
    "make_lm",
    "make_writer",
    "rescale",
    "run_optimize",
    "score",
    "verifier",
]
assert sorted(__all__) == sorted(_EXPORTS)

if TYPE_CHECKING:
    from bineval_dspy.checklists.base import ChecklistWriter
    from bineval_dspy.checklists.bineval import BinEvalWriter
    from bineval_dspy.checklists.hybrid import hybrid_checklist
    from bineval_dspy.checklists.qworld import QworldWriter
    from bineval_dspy.checklists.tick import TickWriter
    from bineval_dspy.checklists.writers import make_writer
    from bineval_dspy.core.errors import BinevalError
    from bineval_dspy.core.schema import Checklist, JudgeSpec, Question, Scorecard, Verdict
    from bineval_dspy.core.scoring import rescale, score
    from bineval_dspy.finetune.optimizer import BinEvalFinetune
    from bineval_dspy.judges.base import Judge
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.judges.probe import Probe
    from bineval_dspy.lm.engine import Engine
    from bineval_dspy.lm.specs import make_lm
    from bineval_dspy.optimize.audit import Audit
    from bineval_dspy.optimize.config import RunConfig, load_config
    from bineval_dspy.optimize.feedback import CrossModelFeedback, SelfUpdateFeedback
    from bineval_dspy.optimize.metric import BinEvalMetric, bineval_metric
    from bineval_dspy.optimize.optimizer import BinEvalOptimizer
    from bineval_dspy.optimize.proposers import Proposer
    from bineval_dspy.optimize.run import run_optimize
    from bineval_dspy.optimize.settings import OptimizerSettings
    from bineval_dspy.programs.generator import Generator
    from bineval_dspy.programs.state import ProgramFile, ProgramState, load_program
    from bineval_dspy.report.runs import load_run
    from bineval_dspy.runs.execute import execute
    from bineval_dspy.runs.spec import RunSpec, UnitRunSpec
    from bineval_dspy.stats.bootstrap import Bootstrap, Interval
    from bineval_dspy.suites.rows import SuiteRow, load_suite
    from bineval_dspy.verifiers.registry import Finding
    from bineval_dspy.verifiers.user import load_verifier_files, verifier


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'bineval_dspy' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
