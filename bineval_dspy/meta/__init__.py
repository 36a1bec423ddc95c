"""Meta-evaluation: how well a judge agrees with reference labels (people, or a stronger judge).

``run_meta_eval(config)`` scores a dataset (``datasets``) with every configured method (``methods``: BinEval and
the holistic, UniEval-style and ROUGE-L baselines) and correlates each with the human scores (``correlation``);
``report`` writes the tables. ``bineval meta-eval CONFIG.toml`` is the same from the command line.
"""

from bineval_dspy.meta.agreement import agreement, cohen_kappa
from bineval_dspy.meta.config import MetaEvalConfig, load_config
from bineval_dspy.meta.correlation import correlate, kendall_tau_b, pearson, spearman
from bineval_dspy.meta.datasets import (
    MetaRow,
    load_infobench,
    load_qags,
    load_summeval,
    load_topical_chat,
    sample_documents,
)
from bineval_dspy.meta.results import MetaEvalResults
from bineval_dspy.meta.runner import run_meta_eval

__all__ = [
    "MetaEvalConfig",
    "MetaEvalResults",
    "MetaRow",
    "agreement",
    "cohen_kappa",
    "correlate",
    "kendall_tau_b",
    "load_config",
    "load_infobench",
    "load_qags",
    "load_summeval",
    "load_topical_chat",
    "pearson",
    "run_meta_eval",
    "sample_documents",
    "spearman",
]
