"""``bineval eval``: prompts x LMs on one suite, side by side, with the paired difference of every column from a
baseline and its bootstrap interval.

Each column (one prompt on one LM) generates its responses into ``RUN_DIR/columns/NAME/responses.jsonl``,
fingerprinted and resumed as ``bineval generate`` does; every response is then graded by the suite's code
verifiers and, with a ``checklist``, judged by ``judge_lm``. A row's score is the share of its instructions
followed (ungraded ones leave the row incomplete, never a pass), or with a checklist the mean of that share and
the checklist's overall score. ``results.json`` is an experiment's results (one arm per column, so ``bineval show``
and ``report`` read it); ``matrix.md`` holds every row's verdicts, ``grid.jsonl`` every row's outputs with them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_toml, read_text
from bineval_dspy.experiment.grid import GridCell
from bineval_dspy.lm.specs import Servers

if TYPE_CHECKING:
    import dspy

    from bineval_dspy.core.schema import Checklist
    from bineval_dspy.experiment.runner import ExperimentResults
    from bineval_dspy.lm.estimate import Plan
    from bineval_dspy.lm.usage import Cost
    from bineval_dspy.suites.rows import SuiteRow

MATRIX_FILE = "matrix.md"


class PromptSpec(BaseModel):
    """One prompt: instructions given inline, from a file, or an optimizer's ``program.json``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_.+-]+$", description="the prompt's part of a column name")
    instructions: str | None = Field(default=None, description="the generator's instructions")
    file: Path | None = Field(default=None, description="a file holding the instructions")
    program: Path | None = Field(default=None, description="an optimizer's program.json (instructions and demos)")

    @model_validator(mode="after")
    def _one_source(self) -> PromptSpec:
        given = [n for n in ("instructions", "file", "program") if getattr(self, n) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of instructions, file and program, not {' and '.join(given)}")
        return self


class LMSpec(Servers):
    """One LM the prompts run on (through its own servers, when it names them)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.+-]+$", description="the LM's part of a column name")
    lm: str = Field(min_length=1, description="smollm2, gemma3-270m, a .gguf path or a LiteLLM string")
    max_tokens: int = Field(default=256, ge=8, description="token limit per response")


class EvalConfig(BaseModel):
    """An eval matrix: every prompt on every LM, graded by the suite's verifiers (and a checklist when given)."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(default="", exclude=True, description="the config file, for error messages")
    run_dir: Path = Field(description="where columns, results.json and matrix.md go")
    suite: Path = Field(description="JSONL suite: key, prompt, instruction_id_list, kwargs")
    limit: int | None = Field(default=None, ge=1, description="only the first N suite rows")
    checklist: Path | None = Field(default=None, description="a checklist every response is also judged against")
    judge_lm: str = Field(default="smollm2", description="the LM answering the checklist's questions")
    baseline: str | None = Field(default=None, description="the column (PROMPT@LM) others are compared with; default the first")
    resamples: int = Field(default=1000, ge=0, description="bootstrap resamples over rows")
    seed: int = 0
    prompts: list[PromptSpec] = Field(min_length=1)
    lms: list[LMSpec] = Field(min_length=1)

    def columns(self) -> list[tuple[str, PromptSpec, LMSpec]]:
        """Every prompt on every LM, named ``PROMPT@LM``, prompts first."""
        return [(f"{p.name}@{m.name}", p, m) for p in self.prompts for m in self.lms]

    @model_validator(mode="after")
    def _names(self) -> EvalConfig:
        names = [name for name, _, _ in self.columns()]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"column {repeated[0]!r} appears twice: give prompts and lms distinct names")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} is not a column ({', '.join(names)})")
        return self


def load_eval_config(path: Path) -> EvalConfig:
    """Read an eval config; relative paths are taken from its folder."""
    config = load_toml(path, EvalConfig)
    config.source = str(path)
    base = path.parent
    config.run_dir, config.suite = (base / config.run_dir).resolve(), (base / config.suite).resolve()
    if config.checklist is not None:
        config.checklist = (base / config.checklist).resolve()
    for prompt in config.prompts:
        for name in ("file", "program"):
            if getattr(prompt, name) is not None:
                setattr(prompt, name, (base / getattr(prompt, name)).resolve())
    return config


def build_program(prompt: PromptSpec, max_tokens: int) -> Any:
    """The generator a prompt describes (its demos too, from a program file)."""
    from bineval_dspy.programs.generator import Generator
    from bineval_dspy.programs.state import load_program

    if prompt.program is not None:
        program = load_program(prompt.program, kind="generator").build()
        program.max_tokens = max_tokens
        return program
    text = read_text(prompt.file) if prompt.file is not None else prompt.instructions
    if text is not None and not text.strip():
        raise InputError(f"prompt {prompt.name!r}: the instructions are empty")
    return Generator(text, max_tokens=max_tokens)


def row_score(followed: list[bool | None], checklist: float | None, judged: bool) -> float | None:
    """The share of instructions followed (with a checklist, its mean with the checklist score); None when an
    instruction is ungraded or the checklist has no score: an incomplete row is never scored as a pass."""
    if not followed or None in followed or (judged and checklist is None):
        return None
    share = sum(bool(f) for f in followed) / len(followed)
    return (share + checklist) / 2 if judged and checklist is not None else share


def matrix_markdown(keys: list[str], columns: dict[str, dict[str, GridCell]], summary: dict[str, str]) -> str:
    """Rows x columns, each verdict visible (Y followed, n not, ? ungraded; then the checklist score), and one
    summary line per column."""
    names = list(columns)
    lines = ["| row | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for key in keys:
        lines.append(f"| {key} | " + " | ".join(columns[n][key].text() if key in columns[n] else "-" for n in names) + " |")
    lines.append("| **mean** | " + " | ".join(summary[n] for n in names) + " |")
    return "\n".join(lines) + "\n"


def column_fingerprint(suite: Path, program: Any, lm_identity: str) -> dict[str, str]:
    """What decides a column's responses, as ``generate`` records it."""
    from bineval_dspy.core.fingerprint import digest, file_digest
    from bineval_dspy.programs.state import demos_of

    return {
        "suite": file_digest(suite),
        "instructions": digest(program.generate.signature.instructions),
        **({"demos": digest(json.dumps(demos_of(program), sort_keys=True))} if program.generate.demos else {}),
        "lm": lm_identity,
        "max_tokens": str(program.max_tokens),
        "refine": "0",
        "best_of": "1",
        "judge": "none",
    }


@dataclass(frozen=True)
class EvalRun:
    """What ``run_eval`` made and saved: the results (one experiment arm per column), the matrix's markdown, and
    the first failed cell's reason (None when none failed)."""

    results: ExperimentResults
    matrix: str
    first_failure: str | None

    @property
    def incomplete(self) -> int:
        """Cells failed, ungraded or unanswered: a rerun retries them."""
        return sum(arm.test.unanswered + arm.test.errors for arm in self.results.arms)


def run_eval(
    config: EvalConfig,
    rows: list[SuiteRow],
    checklist: Checklist | None,
    judge_lm: dspy.LM,
    column_lm: Callable[[LMSpec], dspy.LM],
    overwrite: bool = False,
    say: Callable[[str], None] = lambda text: None,
) -> EvalRun:
    """Every column generated (each resumed from its folder), graded by the suite's verifiers and judged by the
    checklist on ``judge_lm``; ``column_lm`` makes each column's LM. Writes results.json, matrix.md and grid.jsonl."""
    columns: dict[str, dict[str, GridCell]] = {}
    spent: dict[str, Cost] = {}
    for name, prompt, lm_spec in config.columns():
        say(f"column {name}")
        columns[name], spent[name] = _column(config, name, prompt, column_lm(lm_spec), lm_spec, rows, checklist, judge_lm, overwrite)
    return _saved(config, rows, columns, spent)


def _column(
    config: EvalConfig, name: str, prompt: PromptSpec, lm: dspy.LM, lm_spec: LMSpec, rows: list[SuiteRow], checklist: Checklist | None,
    judge_lm: dspy.LM, overwrite: bool,
) -> tuple[dict[str, GridCell], Cost]:
    """One column: its responses (generated or resumed), each graded by code and judged by the checklist."""
    import dspy

    from bineval_dspy.core.jsonio import read_jsonl
    from bineval_dspy.experiment.grid import Check
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.lm.runtime import lm_identity
    from bineval_dspy.lm.usage import Cost, total
    from bineval_dspy.programs.generator import generated_log, run_generation
    from bineval_dspy.suites.grading import grade

    program = build_program(prompt, lm_spec.max_tokens)
    out = config.run_dir / "columns" / name / "responses.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    generated_log(out).open(column_fingerprint(config.suite, program, lm_identity(lm)), overwrite)
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


def _judged(judge: Any, lm: dspy.LM, prompt: str, response: str, checklist: Checklist) -> tuple[Any, Cost]:
    """One response judged against the checklist on the judge's LM, with what it cost."""
    import dspy

    from bineval_dspy.lm.usage import measured

    with dspy.context(lm=lm):
        return measured(lambda: judge(input=prompt, output=response, checklist=checklist))


def _saved(config: EvalConfig, rows: list[SuiteRow], columns: dict[str, dict[str, GridCell]], spent: dict[str, Cost]) -> EvalRun:
    """results.json (one experiment arm per column, paired against the baseline), matrix.md and grid.jsonl."""
    from bineval_dspy.core.jsonio import write_json, write_text_atomic
    from bineval_dspy.experiment.grid import GridRow, write_grid
    from bineval_dspy.experiment.runner import ArmResult, Comparison, ExperimentResults
    from bineval_dspy.lm.usage import Cost
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
    failed = next((f"column {name}, row {k}: {cells[k].error}" for name, cells in columns.items() for k in keys if cells[k].error), None)
    return EvalRun(results=results, matrix=table, first_failure=failed)


def eval_plan(config: EvalConfig, rows: list[SuiteRow], checklist: Checklist | None, api_base: str | None) -> Plan:
    """Every column's responses, and with a checklist each response's LM questions (judge prompts estimated)."""
    from bineval_dspy.lm.estimate import JUDGE_OVERHEAD_TOKENS, Plan, formatted, message_tokens, token_counter

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
