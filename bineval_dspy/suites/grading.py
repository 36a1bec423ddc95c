"""Grading responses against a suite with the code verifiers, in the official IFBench/IFEval output format."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.runlog import RunLog, model_log
from bineval_dspy.suites.rows import ResponseRow, SuiteRow, load_responses, load_suite
from bineval_dspy.verifiers import Mode, follows


class ResultRow(BaseModel):
    """One graded response in the official IFBench/IFEval evaluation output format, plus ``key`` and ``ungraded``.

    An instruction whose kwargs its verifier rejects, or whose verifier fails, is ungraded: None in
    ``follow_instruction_list``, its reason in ``ungraded``. ``follow_all_instructions`` is False once a graded instruction failed, else None while any
    instruction is ungraded: a guess either way would skew the prompt-level accuracy.
    """

    key: int | str  # as the suite wrote it
    prompt: str
    response: str
    instruction_id_list: list[str]
    follow_instruction_list: list[bool | None]
    follow_all_instructions: bool | None
    ungraded: list[str] = []


class VerifyStats(BaseModel):
    """Counts behind the prompt-level and instruction-level accuracies, and what was left out.

    ``prompts`` and ``instructions`` count those with a known outcome; ungraded instructions and the prompts
    they leave without a known outcome are counted apart and stay out of both accuracies.
    """

    mode: Mode
    prompts: int
    prompts_followed: int
    instructions: int
    instructions_followed: int
    ungraded_prompts: int = 0
    ungraded_instructions: int = 0
    skipped_suite_rows: int = 0
    skipped_responses: int = 0
    suite_rows_without_response: int = 0

    @property
    def prompt_accuracy(self) -> float | None:
        """Fraction of prompts with a known outcome whose instructions were all followed."""
        return self.prompts_followed / self.prompts if self.prompts else None

    @property
    def instruction_accuracy(self) -> float | None:
        """Fraction of graded instructions that were followed."""
        return self.instructions_followed / self.instructions if self.instructions else None


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
    """Check one response against every instruction of its suite row; see ``ResultRow`` for ungraded ones."""
    followed: list[bool | None] = []
    ungraded: list[str] = []
    for index, check in enumerate(row.checks()):
        if isinstance(check, str):
            followed.append(None)
            ungraded.append(check)
            continue
        try:
            followed.append(follows(check, response, mode))
        except Exception as exc:  # a verifier that fails (one of the user's own) grades nothing, never a pass
            followed.append(None)
            ungraded.append(f"instruction_id_list.{index}: verifier failed: {exc}")
    if False in followed:
        follow_all: bool | None = False
    else:
        follow_all = None if ungraded else True
    return ResultRow(
        key=row.json_key,
        prompt=row.prompt,
        response=response,
        instruction_id_list=row.instruction_id_list,
        follow_instruction_list=followed,
        follow_all_instructions=follow_all,
        ungraded=ungraded,
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
    verdicts = [verdict for r in results for verdict in r.follow_instruction_list]
    outcomes = [r.follow_all_instructions for r in results]
    stats = VerifyStats(
        mode=mode,
        prompts=len(outcomes) - outcomes.count(None),
        prompts_followed=outcomes.count(True),
        instructions=len(verdicts) - verdicts.count(None),
        instructions_followed=verdicts.count(True),
        ungraded_prompts=outcomes.count(None),
        ungraded_instructions=verdicts.count(None),
        skipped_responses=skipped,
        suite_rows_without_response=len(suite) - len(results),
    )
    return results, stats


def verify_records(suite: Sequence[SuiteRow], records: Sequence[dict[str, Any]], mode: Mode = "strict") -> VerifyStats:
    """``verify``'s counts over the records a ``generate`` run wrote (key, response), as ``verify`` would grade its
    output file: a template suite declares its ``checks`` to have them run, so its run reports them without a
    second command. A row without a record (it failed) counts as a suite row without a response."""
    responses = [ResponseRow(where=f"record {r['key']}", key=str(r["key"]), response=str(r.get("response") or "")) for r in records]
    return verify(suite, responses, mode)[1]


def verify_files(
    suite_path: Path,
    responses_path: Path,
    mode: Mode = "strict",
    skip_invalid: bool = False,
    select: Callable[[list[SuiteRow]], list[SuiteRow]] | None = None,
) -> tuple[list[ResultRow], VerifyStats]:
    """Load both files and ``verify``; with ``skip_invalid`` invalid rows of either file are counted, not fatal;
    ``select`` keeps part of the suite (one split of an optimizer run)."""
    bad_suite: list[InputError] | None = [] if skip_invalid else None
    bad_responses: list[InputError] | None = [] if skip_invalid else None
    suite = load_suite(suite_path, bad_suite)
    suite = select(suite) if select is not None else suite
    if not suite and not bad_suite:
        raise InputError(f"{suite_path}: no suite rows")
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


def graded_log(out: Path) -> RunLog[ResultRow]:
    """`bineval verify` output as its run log (written whole, never resumed), for its readers (``show``, ``report``):
    a row that is no ``ResultRow`` is one located line."""
    return model_log(out, ResultRow, key=lambda row: str(row.key), hint="")
