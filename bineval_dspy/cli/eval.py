"""``bineval eval CONFIG.toml``: prompts x LMs on one suite, one matrix, each column's paired difference from a
baseline with its interval; resumable column by column."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bineval_dspy.cli.options import add_dry_run_option, add_example_option, lm_options
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode

if TYPE_CHECKING:  # DSPy loads when the command runs, never for the parser
    from bineval_dspy.core.schema import Checklist
    from bineval_dspy.evalmatrix import EvalConfig
    from bineval_dspy.experiment.grid import GridCell
    from bineval_dspy.lm.usage import Cost


def cmd_eval(args: argparse.Namespace) -> int:
    """Generate every column (resuming each), grade and judge every response, then write and print the matrix."""
    from bineval_dspy.core.jsonio import load_model
    from bineval_dspy.core.schema import Checklist
    from bineval_dspy.evalmatrix import load_eval_config
    from bineval_dspy.judges.code import check_verifiers
    from bineval_dspy.lm import runtime
    from bineval_dspy.suites.rows import load_suite

    config = load_eval_config(Path(args.config))
    rows = load_suite(config.suite)[: config.limit] if config.limit else load_suite(config.suite)
    checklist = load_model(config.checklist, Checklist) if config.checklist else None
    if checklist is not None:
        check_verifiers(checklist, str(config.checklist))
    plan = _plan(config, rows, checklist, args.api_base)
    if args.dry_run:
        shown.print(plan.summary())
        return ExitCode.OK
    judge_lm = runtime.configure(lm_options(args, spec=config.judge_lm, source=f"{config.source}: field 'judge_lm' ="), runtime.run_cache_dir(args.cache_dir, config.run_dir / "cache"))
    plan.save(config.run_dir)  # `show` holds it against what the run spent
    columns: dict[str, dict[str, GridCell]] = {}
    spent: dict[str, Cost] = {}
    for name, prompt, lm_spec in config.columns():
        columns[name], spent[name] = _column(config, name, prompt, lm_spec, rows, checklist, judge_lm, args)
    return _report(config, rows, columns, spent, checklist is not None)


def _column(
    config: EvalConfig, name: str, prompt: Any, lm_spec: Any, rows: list, checklist: Checklist | None, judge_lm: Any, args: argparse.Namespace
) -> tuple[dict[str, GridCell], Cost]:
    """One column: its responses (generated or resumed), each graded by code and judged by the checklist. Its LM
    takes the command's LM options (--api-base, --api-key-env, --timeout, --temperature) like the judge's."""
    import dspy

    from bineval_dspy.cli.generate import generated_log
    from bineval_dspy.core.jsonio import read_jsonl
    from bineval_dspy.evalmatrix import build_program, column_fingerprint, row_score
    from bineval_dspy.experiment.grid import Check, GridCell
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.lm.runtime import checked_lm, lm_identity
    from bineval_dspy.lm.usage import Cost, total
    from bineval_dspy.programs.generator import run_generation
    from bineval_dspy.suites.grading import grade

    program = build_program(prompt, lm_spec.max_tokens)
    options = lm_options(args, spec=lm_spec.lm, source=f"{config.source}: field 'lms' ({lm_spec.name}) =")
    lm = checked_lm(options.model_copy(update={"max_tokens": lm_spec.max_tokens}))
    out = config.run_dir / "columns" / name / "responses.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    generated_log(out).open(column_fingerprint(config.suite, program, lm_identity(lm)), args.overwrite)
    console.print(f"column {name}")
    with dspy.context(lm=lm):
        report = run_generation(rows, program, out)
    records = {str(r["key"]): r for _, r in read_jsonl(out)}
    cost = report.usage if not records else total(Cost.model_validate(r["usage"]) for r in records.values() if "usage" in r)  # resumed rows too
    failures = dict(report.failures)
    judge = BinaryJudge()
    cells: dict[str, GridCell] = {}
    for row in rows:
        record = records.get(row.key)
        if record is None or not str(record.get("response") or "").strip():
            cells[row.key] = GridCell(error=failures.get(row.key, "no response"))
            continue
        response = str(record["response"])
        followed = grade(row, response).follow_instruction_list
        checks = [Check(name=iid, by="code", passed=f) for iid, f in zip(row.instruction_id_list, followed, strict=True)]
        overall = None
        if checklist is not None:
            card, judged = _judged(judge, judge_lm, row.prompt, response, checklist)
            overall, cost = card.overall, cost + judged
            checks += [Check(name=v.question_id, by="llm", passed=None if v.answer == "unanswered" else v.answer == "yes", text=v.question or "") for v in card.verdicts]
        cells[row.key] = GridCell(output=response, checks=checks, checklist=overall, score=row_score(followed, overall, checklist is not None))
    return cells, cost


def _judged(judge: Any, lm: Any, prompt: str, response: str, checklist: Checklist) -> tuple[Any, Cost]:
    """One response judged against the checklist on the judge's LM, with what it cost."""
    import dspy

    from bineval_dspy.lm.usage import measured

    with dspy.context(lm=lm):
        return measured(lambda: judge(input=prompt, output=response, checklist=checklist))


def _report(config: EvalConfig, rows: list, columns: dict[str, dict[str, GridCell]], spent: dict[str, Cost], judged: bool) -> int:
    """results.json (one experiment arm per column), matrix.md and grid.jsonl, the matrix on stdout; exit 1 when a cell is
    incomplete (rerun to retry it)."""
    from bineval_dspy.core.jsonio import write_json, write_text_atomic
    from bineval_dspy.evalmatrix import MATRIX_FILE, matrix_markdown
    from bineval_dspy.experiment.grid import GridRow, write_grid
    from bineval_dspy.experiment.runner import ArmResult, Comparison, ExperimentResults
    from bineval_dspy.lm.usage import Cost, total
    from bineval_dspy.optimize.results import SplitScore
    from bineval_dspy.stats.bootstrap import Bootstrap

    keys = [row.key for row in rows]
    baseline = config.baseline or next(iter(columns))
    base = columns[baseline]
    arms, summary = [], {}
    for name, cells in columns.items():
        scored = [k for k in keys if cells[k].score is not None]
        boot = Bootstrap(scored, resamples=config.resamples, seed=config.seed)
        mean = boot.mean([cells[k].score or 0.0 for k in scored])
        paired = [k for k in scored if base[k].score is not None]
        diff = None
        if name != baseline:
            pairs = Bootstrap(paired, resamples=config.resamples, seed=config.seed)
            diff = Comparison(score=pairs.difference([cells[k].score or 0.0 for k in paired], [base[k].score or 0.0 for k in paired]))
        test = SplitScore(
            score=mean.estimate or 0.0, interval=mean, items=len(keys),
            unanswered=sum(cells[k].score is None and not cells[k].error for k in keys), errors=sum(bool(cells[k].error) for k in keys),
            item_scores={k: float(cells[k].score or 0.0) for k in scored},
            followed={k: (all(cells[k].followed) if None not in cells[k].followed else None) for k in keys if cells[k].followed},
        )
        arms.append(ArmResult(name=name, kind="eval", optimization=Cost(), test_usage=spent[name], test=test, vs_baseline=diff))
        summary[name] = mean.text() + ("" if diff is None else f"; vs {baseline} {diff.score.text(signed=True)}")
    results = ExperimentResults(name=Path(config.source).stem, mode="eval", splits={"test": len(keys)}, baseline=baseline, arms=arms)
    config.run_dir.mkdir(parents=True, exist_ok=True)
    write_json(config.run_dir / "results.json", results.model_dump(mode="json"))
    table = matrix_markdown(keys, columns, summary)
    write_text_atomic(config.run_dir / MATRIX_FILE, table)
    write_grid(config.run_dir, [GridRow(id=row.key, input=row.prompt, cells={name: cells[row.key] for name, cells in columns.items()}) for row in rows])
    print(table, end="")  # the matrix, on stdout, wide: never cut
    what = "Y followed, n not, ? ungraded" + ("; then the checklist score" if judged else "")
    shown.print(f"wrote results.json, {MATRIX_FILE} and grid.jsonl in {config.run_dir} ({what}; mean score with 95% interval, paired difference from {baseline})")
    console.print(f"cost: {total(spent.values()).summary()}")
    incomplete = sum(arm.test.unanswered + arm.test.errors for arm in arms)
    if incomplete:
        console.print(f"{incomplete} cell(s) incomplete (failed, ungraded or unanswered): rerun the same command to retry them", style="yellow")
        failed = next((f"column {name}, row {k}: {cells[k].error}" for name, cells in columns.items() for k in keys if cells[k].error), None)
        if failed:
            console.print(f"first failure: {failed}", style="yellow")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _plan(config: EvalConfig, rows: list, checklist: Checklist | None, api_base: str | None) -> Any:
    """Every column's responses, and with a checklist each response's LM questions (judge prompts estimated)."""
    from bineval_dspy.cli.dry_run import JUDGE_OVERHEAD_TOKENS
    from bineval_dspy.evalmatrix import build_program
    from bineval_dspy.lm.estimate import Plan, formatted, message_tokens, token_counter

    calls = tokens = 0
    asked = [q for q in checklist.questions if q.verifier is None] if checklist is not None else []
    exact = True
    for _, prompt, lm_spec in config.columns():
        program = build_program(prompt, lm_spec.max_tokens)
        count, counted = token_counter(lm_spec.lm)
        exact = exact and counted
        for row in rows:
            prompt_tokens = message_tokens(count, formatted(program.generate, program.adapter, {"prompt": row.prompt}))
            calls, tokens = calls + 1 + len(asked), tokens + prompt_tokens + len(asked) * (prompt_tokens + lm_spec.max_tokens + JUDGE_OVERHEAD_TOKENS)
    what = f"eval: {len(config.columns())} column(s) x {len(rows)} row(s), {len(asked)} checklist LM question(s) a response"
    limit = max(m.max_tokens for m in config.lms)
    models = " and ".join(dict.fromkeys(m.lm for m in config.lms))
    return Plan(what, calls, tokens, limit, exact, models, api_base, estimated="judge prompts" if asked else "")


def add_eval_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``bineval eval``."""
    parser = sub.add_parser("eval", parents=[common], help="prompts x LMs on one suite: a matrix with paired intervals against a baseline (TOML config)")
    parser.add_argument("config", help="an eval matrix description (TOML; its keys: bineval eval --example); writes RUN_DIR/results.json, matrix.md, columns/")
    add_example_option(parser, "bineval_dspy.evalmatrix.EvalConfig", "bineval eval: an eval matrix config")
    parser.add_argument("--overwrite", action="store_true", help="generate every column afresh instead of resuming it")
    add_dry_run_option(parser)
    parser.set_defaults(func=cmd_eval)
