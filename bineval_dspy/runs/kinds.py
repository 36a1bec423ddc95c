"""Every kind of run the library writes, named once: the kind a log's header or a results file's ``kind`` field
says (``runs.files.run_kind``), what the file holds, and the module that defines the run. ``report.runs.READERS``
holds a reader for exactly these kinds (a test fails on a kind without one), and ``runs.files.legacy_kind`` guesses
only among them. The defining module is named, not imported: it sits in a layer above this one.
"""

from __future__ import annotations

from dataclasses import dataclass

from bineval_dspy.core.registry import Registry


@dataclass(frozen=True)
class RunKind:
    """One kind of run: what its file holds (one line), the module that defines it, and the suffixes its files have."""

    description: str
    module: str
    suffixes: tuple[str, ...] = (".json",)


LOG = (".jsonl",)  # a JSON Lines run log, its header (``OUT.run.json``) beside it

RUN_KINDS: Registry[RunKind] = Registry("run kind")
for _name, _kind in (
    ("judge", RunKind(
        "`bineval judge` output: each data row with its judge result (judges.rows.JudgeResult)",
        "bineval_dspy.programs.judge_file", LOG,
    )),
    ("generate", RunKind(
        "`bineval generate` output: a response per suite row (programs.records.GenerationRecord)",
        "bineval_dspy.programs.generation", LOG,
    )),
    ("verify", RunKind(
        "`bineval verify` output: a response's instructions code-checked (suites.grading.ResultRow)",
        "bineval_dspy.suites.grading", LOG,
    )),
    ("meta-eval", RunKind(
        "a meta-evaluation: scores.jsonl (meta.runner.OutputScore) and results.json",
        "bineval_dspy.meta.runner", (".jsonl", ".json"),
    )),
    ("finetune-samples", RunKind(
        "fine-tuning's samples.jsonl: each train prompt's scored samples (finetune.data.PromptSamples)",
        "bineval_dspy.finetune.data", LOG,
    )),
    ("demo", RunKind("`bineval demo` output: the bundled article's summaries and their scorecards", "bineval_dspy.cli.demo")),
    ("optimizer-audit", RunKind("an optimizer run's audit.json: every iteration, lesson and edit", "bineval_dspy.optimize.audit")),
    ("optimizer-test", RunKind("an optimizer run's results.json: the test split's figures", "bineval_dspy.optimize.results")),
    ("experiment", RunKind(
        "`bineval experiment`'s results.json: every arm on the test split against the baseline",
        "bineval_dspy.experiment.runner",
    )),
    ("tune", RunKind("a tune study's results.json: every trial and the best one or the Pareto front", "bineval_dspy.tune.report")),
    ("phi", RunKind("`bineval analyze`'s phi.json: phi between questions per dimension", "bineval_dspy.analysis.phi")),
    ("pruning", RunKind("`bineval analyze`'s pruning.json: the questions dropped as repeats", "bineval_dspy.analysis.pruning")),
    ("weights", RunKind("`bineval analyze`'s weights.json: fitted weights and their cross-validation", "bineval_dspy.analysis.weights")),
    ("calibration", RunKind(
        "`bineval calibrate`'s results.json: how a probe judge was trained and did on held-out data",
        "bineval_dspy.optimize.calibrate",
    )),
):  # fmt: skip
    RUN_KINDS.add(_name, _kind)
