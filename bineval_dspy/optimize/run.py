"""``run_optimize``: one optimization run from its config, the library entry ``bineval optimize`` calls.

Why here and not in the CLI: an application (or a notebook) runs the same thing the command does, with the same
fingerprint, header and resume, by handing over the settings; nothing is set on the optimizer from outside.
"""

from __future__ import annotations

from bineval_dspy.lm.budget import BudgetMeter
from bineval_dspy.optimize.audit import AUDIT_FILE
from bineval_dspy.optimize.config import RunConfig, build, run_fingerprint, splits_of, test_scorer
from bineval_dspy.optimize.results import RESULTS_FILE, RunResults, score_test
from bineval_dspy.runs.header import headed


def run_optimize(config: RunConfig, lm_identity: str, meter: BudgetMeter | None = None, progress: bool = True) -> RunResults:
    """Optimize (or resume optimizing) the program ``config`` describes on the configured LM (``lm_identity`` names
    it in the fingerprint), then score the start and the final program on the test split. Writes ``run_dir``'s
    ``audit.json``, ``program.json``, ``splits.json`` and ``results.json``, each with its header; a test evaluation
    with unanswered verdicts or failed outputs leaves the results header ``incomplete``."""
    meter = meter or BudgetMeter()
    fingerprint = run_fingerprint(config, lm_identity)
    student, optimizer, (train, val, test) = build(config, progress=progress, fingerprint=fingerprint, meter=meter)
    splits_of(config, (train, val, test)).save(config.run_dir)
    with headed(config.run_dir / AUDIT_FILE, "optimizer-audit", fingerprint) as heading:
        optimizer.compile(student, trainset=train, valset=val)
        assert optimizer.audit is not None
        heading.usage = optimizer.audit.usage
    with headed(config.run_dir / RESULTS_FILE, "optimizer-test", fingerprint) as heading:
        results = RunResults(splits={"train": len(train), "val": len(val), "test": len(test)})
        if test:
            scorer = test_scorer(config, student, optimizer, test)
            with meter.unit("test evaluation", "the test evaluation not started") as measurement:
                results.test = score_test(scorer, optimizer.audit, every_step=config.test_every)
            results.usage = heading.usage = measurement.cost
        results.save(config.run_dir)
        if not results.complete:
            heading.status = "incomplete"
    return results
