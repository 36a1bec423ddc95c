"""Grading responses against an IFBench/IFEval-style suite with the code verifiers (``bineval verify``).

A suite row gives a prompt and its verifiable instructions; a response file gives one response per
prompt. The result rows use the official evaluator's output format, so its report tools read them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, ValidationError
from rich.console import Console
from rich.table import Table

from bineval_dspy.errors import InputError
from bineval_dspy.jsonio import describe_validation_error, read_jsonl
from bineval_dspy.verifiers import Check, Mode, VerifierError, build_check, follows, known_instruction_ids

console = Console(stderr=True)


def _key_as_text(value: Any) -> Any:
    """IFEval files use integer keys, IFBench string keys: both become strings (booleans are not keys)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


Key = Annotated[str, BeforeValidator(_key_as_text)]


class SuiteRow(BaseModel):
    """One prompt with its instructions; ``kwargs[i]`` holds the arguments of ``instruction_id_list[i]``."""

    key: Key
    prompt: str
    instruction_id_list: list[str] = Field(min_length=1)
    kwargs: list[dict[str, Any]]

    def checks(self) -> list[Check]:
        """One check per instruction; raises VerifierError on an unknown id or kwargs its verifier rejects."""
        return [build_check(i, kw, self.prompt) for i, kw in zip(self.instruction_id_list, self.kwargs, strict=True)]


class ResponseRow(BaseModel):
    """One response, found by suite ``key`` when given, else by ``prompt``; ``where`` is its file:line."""

    where: str
    key: Key | None = None
    prompt: str | None = None
    response: str


class ResultRow(BaseModel):
    """One graded response in the official IFBench/IFEval evaluation output format (plus ``key``)."""

    key: str
    prompt: str
    response: str
    instruction_id_list: list[str]
    follow_instruction_list: list[bool]
    follow_all_instructions: bool


class VerifyStats(BaseModel):
    """Counts behind the prompt-level and instruction-level accuracies, and what was left out."""

    mode: Mode
    prompts: int
    prompts_followed: int
    instructions: int
    instructions_followed: int
    skipped_suite_rows: int = 0
    skipped_responses: int = 0
    suite_rows_without_response: int = 0

    @property
    def prompt_accuracy(self) -> float | None:
        """Fraction of graded prompts whose instructions were all followed."""
        return self.prompts_followed / self.prompts if self.prompts else None

    @property
    def instruction_accuracy(self) -> float | None:
        """Fraction of all graded instructions that were followed."""
        return self.instructions_followed / self.instructions if self.instructions else None


def _validated(model: type[BaseModel], obj: dict[str, Any], where: str) -> Any:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise InputError(f"{where}: {describe_validation_error(exc)}") from None


def _suite_row(obj: dict[str, Any], where: str) -> SuiteRow:
    """Validate one suite line: fields, matching kwargs, known instruction ids, kwargs the verifiers accept."""
    for field in SuiteRow.model_fields:
        if field not in obj:
            raise InputError(f"{where}: missing field '{field}'")
    row: SuiteRow = _validated(SuiteRow, obj, where)
    if len(row.kwargs) != len(row.instruction_id_list):
        raise InputError(
            f"{where}: mismatched kwargs: {len(row.kwargs)} kwargs for {len(row.instruction_id_list)} instruction ids"
        )
    known = set(known_instruction_ids())
    for index, instruction_id in enumerate(row.instruction_id_list):
        if instruction_id not in known:
            raise InputError(f"{where}: field 'instruction_id_list.{index}': unknown instruction id {instruction_id!r}")
        try:
            build_check(instruction_id, row.kwargs[index], row.prompt)
        except VerifierError as exc:
            raise InputError(f"{where}: field 'kwargs.{index}': {exc}") from None
    return row


def load_suite(path: Path, skipped: list[InputError] | None = None) -> list[SuiteRow]:
    """Read an IFBench-style suite (JSON Lines). Invalid rows raise InputError, or go to ``skipped`` when given.

    Malformed JSON always raises: the rest of such a file cannot be trusted.
    """
    rows: list[SuiteRow] = []
    first_line: dict[str, int] = {}
    for number, obj in read_jsonl(path):
        where = f"{path}:{number}"
        try:
            row = _suite_row(obj, where)
            if row.key in first_line:
                first = first_line[row.key]
                raise InputError(f"{where}: field 'key': duplicate key {row.key!r} (first at line {first})")
        except InputError as exc:
            if skipped is None:
                raise
            skipped.append(exc)
            continue
        first_line[row.key] = number
        rows.append(row)
    return rows


def _response_row(obj: dict[str, Any], where: str) -> ResponseRow:
    if "response" not in obj:
        raise InputError(f"{where}: missing field 'response'")
    if "key" not in obj and "prompt" not in obj:
        raise InputError(f"{where}: missing field 'key' or 'prompt'")
    fields = {name: obj[name] for name in ("key", "prompt", "response") if name in obj}
    return _validated(ResponseRow, {"where": where, **fields}, where)


def load_responses(path: Path, skipped: list[InputError] | None = None) -> list[ResponseRow]:
    """Read responses (JSON Lines with ``response`` and ``key`` or ``prompt``; other fields are ignored).

    Invalid rows raise InputError, or go to ``skipped`` when given; malformed JSON always raises.
    """
    rows: list[ResponseRow] = []
    for number, obj in read_jsonl(path):
        try:
            rows.append(_response_row(obj, f"{path}:{number}"))
        except InputError as exc:
            if skipped is None:
                raise
            skipped.append(exc)
    return rows


class _SuiteIndex:
    """Suite rows by key and by prompt; prompts are compared exactly, then with surrounding whitespace
    stripped (the official evaluator tolerates that too)."""

    def __init__(self, suite: Sequence[SuiteRow]) -> None:
        self.by_key = {row.key: row for row in suite}
        self.by_prompt: dict[str, list[SuiteRow]] = {}
        self.by_stripped: dict[str, list[SuiteRow]] = {}
        for row in suite:
            self.by_prompt.setdefault(row.prompt, []).append(row)
            self.by_stripped.setdefault(row.prompt.strip(), []).append(row)

    def match(self, response: ResponseRow) -> SuiteRow:
        if response.key is not None:
            if response.key not in self.by_key:
                raise InputError(f"{response.where}: field 'key': no suite row with key {response.key!r}")
            return self.by_key[response.key]
        assert response.prompt is not None  # load_responses guarantees key or prompt
        candidates = self.by_prompt.get(response.prompt) or self.by_stripped.get(response.prompt.strip(), [])
        if not candidates:
            raise InputError(f"{response.where}: field 'prompt': no suite row has this prompt")
        if len(candidates) > 1:
            keys = ", ".join(repr(row.key) for row in candidates)
            raise InputError(f"{response.where}: field 'prompt': matches suite rows {keys}; give a 'key'")
        return candidates[0]


def grade(row: SuiteRow, response: str, mode: Mode = "strict") -> ResultRow:
    """Check one response against every instruction of its suite row."""
    followed = [follows(check, response, mode) for check in row.checks()]
    return ResultRow(
        key=row.key,
        prompt=row.prompt,
        response=response,
        instruction_id_list=row.instruction_id_list,
        follow_instruction_list=followed,
        follow_all_instructions=all(followed),
    )


def verify(
    suite: Sequence[SuiteRow], responses: Sequence[ResponseRow], mode: Mode = "strict", skip_invalid: bool = False
) -> tuple[list[ResultRow], VerifyStats]:
    """Grade each response against its suite row, in suite order.

    A response with no suite row, or a second response for one, raises InputError unless ``skip_invalid``
    (then it is counted in ``skipped_responses``). Suite rows without a response are not graded.
    """
    index = _SuiteIndex(suite)
    matched: dict[str, ResponseRow] = {}
    skipped = 0
    for response in responses:
        try:
            row = index.match(response)
            if row.key in matched:
                raise InputError(
                    f"{response.where}: second response for suite key {row.key!r} (first at {matched[row.key].where})"
                )
        except InputError:
            if not skip_invalid:
                raise
            skipped += 1
            continue
        matched[row.key] = response
    results = [grade(row, matched[row.key].response, mode) for row in suite if row.key in matched]
    stats = VerifyStats(
        mode=mode,
        prompts=len(results),
        prompts_followed=sum(r.follow_all_instructions for r in results),
        instructions=sum(len(r.follow_instruction_list) for r in results),
        instructions_followed=sum(sum(r.follow_instruction_list) for r in results),
        skipped_responses=skipped,
        suite_rows_without_response=len(suite) - len(results),
    )
    return results, stats


def verify_files(
    suite_path: Path, responses_path: Path, mode: Mode = "strict", skip_invalid: bool = False
) -> tuple[list[ResultRow], VerifyStats]:
    """Load both files and ``verify``; with ``skip_invalid`` invalid rows of either file are counted, not fatal."""
    bad_suite: list[InputError] | None = [] if skip_invalid else None
    bad_responses: list[InputError] | None = [] if skip_invalid else None
    suite = load_suite(suite_path, bad_suite)
    responses = load_responses(responses_path, bad_responses)
    if not responses and not bad_responses:
        raise InputError(f"{responses_path}: no responses")
    results, stats = verify(suite, responses, mode, skip_invalid)
    return results, stats.model_copy(
        update={
            "skipped_suite_rows": len(bad_suite or []),
            "skipped_responses": stats.skipped_responses + len(bad_responses or []),
        }
    )


# -- command -----------------------------------------------------------------------------------
def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2%}"


def cmd_verify(args: argparse.Namespace) -> None:
    """Grade a responses file against a suite with the code verifiers; no LM is involved."""
    results, stats = verify_files(Path(args.suite), Path(args.responses), args.mode, args.skip_invalid)
    out = Path(args.output)
    out.write_text("".join(json.dumps(r.model_dump(), ensure_ascii=False) + "\n" for r in results), encoding="utf-8")
    table = Table(title=f"{stats.mode} verification of {stats.prompts} response(s)")
    for column in ("level", "followed", "total", "accuracy"):
        table.add_column(column, justify="left" if column == "level" else "right")
    table.add_row("prompt", str(stats.prompts_followed), str(stats.prompts), _percent(stats.prompt_accuracy))
    table.add_row(
        "instruction", str(stats.instructions_followed), str(stats.instructions), _percent(stats.instruction_accuracy)
    )
    console.print(table)
    if stats.skipped_suite_rows or stats.skipped_responses:
        console.print(
            f"[yellow]skipped {stats.skipped_suite_rows} invalid suite row(s) and "
            f"{stats.skipped_responses} invalid or unmatched response(s)[/]"
        )
    if stats.suite_rows_without_response:
        console.print(f"{stats.suite_rows_without_response} suite row(s) had no response and were not graded")
    console.print(f"wrote {out}")


def add_verify_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``bineval verify``; it takes none of the LM options in ``common`` (it calls no LM)."""
    verify_cmd = sub.add_parser(
        "verify", help="grade responses against an IFBench/IFEval-style suite with code verifiers (no LM)"
    )
    verify_cmd.add_argument("--suite", required=True, help="JSONL rows: key, prompt, instruction_id_list, kwargs")
    verify_cmd.add_argument("--responses", required=True, help="JSONL rows: response, and key or prompt")
    verify_cmd.add_argument("--mode", choices=("strict", "loose"), default="strict", help="IFEval's grading mode")
    verify_cmd.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip (and count) invalid or unmatched rows; malformed JSON still stops",
    )
    verify_cmd.add_argument("-o", "--output", default="results.jsonl", help="graded rows, official IFBench format")
    verify_cmd.set_defaults(func=cmd_verify)
