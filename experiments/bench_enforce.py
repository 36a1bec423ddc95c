"""What decoding under a prompt's constraints costs on the embedded LM: the same prompts answered greedy without
enforcement and steered, interleaved prompt by prompt so machine load hits both alike, LM cache off, one engine.

Per decoding step of the steered arm, in microseconds (p50 and p99), on the model's real 49,152-token vocabulary:

- **masks**: ``Steerer.masked`` (the precomputed vocabulary mask applied to the logits, every rule's ``mask`` hook,
  the end of text refused until it may come);
- **checks**: ``Steerer.allows`` (the fields' and every rule's ``allows`` hook on the chosen token, and on the next
  best while one is refused);
- **automata**: ``Steerer.accepted`` / ``Steerer.ended`` (counters, forced breaks, every rule's ``after`` hook);

timed around the steerer's own methods, so every rule kind registered under ``enforce/kinds`` is timed through its
hooks without this script naming it. Beside them the model's own step (``Llama.eval`` of one token) in both arms,
and how the forced text went in: batches of several tokens evaluated at once (prefill), never a step per token.

Per arm: seconds per prompt, tokens decoded per prompt and seconds per decoded token. Enforcement changes the
length (a word floor decodes more, a ceiling fewer), so the arms are compared at equal reply length: each prompt's
plain time rescaled to the steered reply's decoded tokens (its prefill kept, its decoding time per token times the
steered count).

Prompts: the first ones of each suite (IFEval's and IFBench's shared test files by default, alternately) whose plan
steers, from the suite's own instruction ids (``--source annotated``) or the prompt's words (``extracted``).

Usage: python experiments/bench_enforce.py [--suite FILE ...] [--source annotated|extracted] [--prompts N]
       [--max-tokens N] [--out PATH]
Ends with ``ratios: enforced/plain per prompt=A per token=B at equal length=C``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time
from collections.abc import Callable, Iterator
from itertools import chain, zip_longest
from pathlib import Path
from typing import Any

import dspy
import llama_cpp
import numpy as np

from bineval_dspy.checklists.stated import enforcement_plan
from bineval_dspy.enforce.runtime import Steerer
from bineval_dspy.lm._decoding import _Decoding
from bineval_dspy.lm.engine import engine_of
from bineval_dspy.lm.llama_engine import LlamaCppEngine
from bineval_dspy.lm.specs import make_lm
from bineval_dspy.programs.generator import Generator
from bineval_dspy.suites.rows import SuiteRow, load_suite

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))
DEFAULT_SUITES = [SHARED / "ifeval" / "ifeval_shared.jsonl", SHARED / "ifbench" / "ifbench_test_shared.jsonl"]
DEFAULT_OUT = REPO / "experiments" / "results" / "bench_enforce.json"
INSTRUCTIONS = (  # experiments/ifeval_enforce.toml's start program
    "Respond to the user's prompt helpfully and accurately. Follow every instruction and constraint the prompt "
    "states exactly: length, format, structure, keywords, letter case, language and wording."
)
PARTS = {"masks": ("masked",), "checks": ("allows",), "automata": ("accepted", "ended")}


class Clock:
    """Nanoseconds spent in the steerer's parts during the current step, and the finished steps' figures."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.now = dict.fromkeys(PARTS, 0)
        self.steps: dict[str, list[int]] = {part: [] for part in (*PARTS, "steering")}
        self.model: dict[str, list[int]] = {"plain": [], "enforced": []}
        self.arm = "plain"
        self.evaluations = 0  # of the current request: the first is its prompt (and forced opening)
        self.forced_batches = self.forced_tokens = 0

    def timed(self, part: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter_ns()
            try:
                return method(*args, **kwargs)
            finally:
                self.now[part] += time.perf_counter_ns() - started

        return wrapper

    def step_done(self) -> None:
        for part, ns in self.now.items():
            self.steps[part].append(ns)
        self.steps["steering"].append(sum(self.now.values()))
        self.now = dict.fromkeys(PARTS, 0)

    def install(self) -> None:
        """Wrap the steerer's hooks, the decoder's step and llama.cpp's evaluation (this process only)."""
        for part, names in PARTS.items():
            for name in names:
                setattr(Steerer, name, self.timed(part, getattr(Steerer, name)))
        accept = _Decoding.accept

        def accepted(decoding: _Decoding, token: int, logits: np.ndarray) -> bool:
            more = accept(decoding, token, logits)
            if decoding.steer is not None:
                self.step_done()
            return more

        _Decoding.accept = accepted  # type: ignore[method-assign,assignment]
        evaluate = llama_cpp.Llama.eval

        def evaluated(llama: Any, tokens: Any) -> None:
            started = time.perf_counter_ns()
            evaluate(llama, tokens)
            self.evaluations += 1
            if len(tokens) == 1:
                self.model[self.arm].append(time.perf_counter_ns() - started)
            elif self.evaluations > 1:  # the kept token and the text forced after it, in one batch
                self.forced_batches += 1
                self.forced_tokens += len(tokens) - 1

        llama_cpp.Llama.eval = evaluated  # type: ignore[method-assign,assignment]


def microseconds(values: list[int]) -> dict[str, float | int]:
    if not values:
        return {"steps": 0}
    array = np.asarray(values, dtype=np.float64) / 1000
    return {"steps": len(values), "p50": round(float(np.percentile(array, 50)), 1), "p99": round(float(np.percentile(array, 99)), 1),
            "mean": round(float(array.mean()), 1)}  # fmt: skip


def steered_rows(suites: list[Path], source: str) -> Iterator[SuiteRow]:
    """Rows whose plan steers, the suites taken in turn (so a short run still holds both benchmarks)."""
    def steering(path: Path) -> Iterator[SuiteRow]:
        for row in load_suite(path):
            annotated = list(zip(row.instruction_id_list, row.kwargs, strict=True)) if source == "annotated" else None
            if enforcement_plan(row.prompt, source, annotated).steers:  # type: ignore[arg-type]
                yield row

    for row in chain.from_iterable(zip_longest(*(steering(path) for path in suites))):
        if row is not None:
            yield row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, action="append", help="a suite of rows (again for more; default: IFEval's and IFBench's shared files)")
    parser.add_argument("--source", choices=("annotated", "extracted"), default="annotated", help="the constraints steered: the rows' ids, or the prompts' words")
    parser.add_argument("--prompts", type=int, default=40, help="steered prompts timed")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if args.prompts < 1 or args.max_tokens < 8:
        parser.error("--prompts must be >= 1 and --max-tokens >= 8")
    suites = args.suite or [path for path in DEFAULT_SUITES if path.is_file()]
    if not suites or any(not path.is_file() for path in suites):
        parser.error(f"--suite: no such file: {next((p for p in suites if not p.is_file()), DEFAULT_SUITES[0])}")
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    lm = make_lm("smollm2")
    dspy.configure(lm=lm)
    engine = engine_of(lm)
    assert isinstance(engine, LlamaCppEngine)  # the embedded model: its steps are what is timed
    rows = [row for row, _ in zip(steered_rows(suites, args.source), range(args.prompts), strict=False)]
    if not rows:
        parser.error(f"no prompt of {', '.join(map(str, suites))} steers under --source {args.source}")
    enforced = Generator(INSTRUCTIONS, max_tokens=args.max_tokens, enforce=args.source)  # type: ignore[arg-type]
    if args.source == "annotated":
        enforced.annotate(rows)
    arms = {"plain": Generator(INSTRUCTIONS, max_tokens=args.max_tokens), "enforced": enforced}
    clock = Clock()
    clock.install()
    for program in arms.values():  # load the model and build the vocabulary's masks outside the timing
        program(prompt=rows[0].prompt)
    clock.reset()  # the warm-up's figures are not kept
    seconds = {name: 0.0 for name in arms}
    tokens = {name: 0 for name in arms}
    at_equal_length = 0.0  # the plain arm's seconds, each prompt rescaled to the steered reply's decoded tokens
    for index, row in enumerate(rows, start=1):
        spent: dict[str, tuple[float, float, int]] = {}
        for name, program in arms.items():
            clock.arm, clock.evaluations = name, 0
            before, steps_before = engine.stats.generated_tokens, len(clock.model[name])
            started = time.perf_counter()
            program(prompt=row.prompt)
            took = time.perf_counter() - started
            decoding = sum(clock.model[name][steps_before:]) / 1e9
            spent[name] = (took, decoding, engine.stats.generated_tokens - before)
            seconds[name] += took
            tokens[name] += spent[name][2]
        (plain, plain_decoding, plain_tokens), (_, _, steered_tokens) = spent["plain"], spent["enforced"]
        at_equal_length += plain - plain_decoding + plain_decoding * steered_tokens / max(1, plain_tokens)
        print(f"{index}/{len(rows)} prompts", flush=True)
    per_prompt = {name: seconds[name] / len(rows) for name in arms}
    per_token = {name: seconds[name] / max(1, tokens[name]) for name in arms}
    result = {
        "prompts": len(rows), "source": args.source, "suites": [str(path) for path in suites], "max_tokens": args.max_tokens,
        "vocabulary": len(engine.vocabulary().pieces), "seconds": seconds, "tokens": tokens,
        "seconds_per_prompt": per_prompt, "seconds_per_token": per_token,
        "ratio_per_prompt": per_prompt["enforced"] / per_prompt["plain"], "ratio_per_token": per_token["enforced"] / per_token["plain"],
        "ratio_at_equal_length": seconds["enforced"] / at_equal_length,
        "steering_us_per_step": {part: microseconds(values) for part, values in clock.steps.items()},
        "model_us_per_step": {name: microseconds(values) for name, values in clock.model.items()},
        "forced": {"batches": clock.forced_batches, "tokens": clock.forced_tokens},
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{len(rows)} steered prompts ({args.source}), vocabulary of {result['vocabulary']} tokens, at most {args.max_tokens} tokens")
    for name in arms:
        print(f"{name}: {per_prompt[name]:.2f} s a prompt, {tokens[name] / len(rows):.0f} tokens a prompt, {1000 * per_token[name]:.1f} ms a token")
    for part, figures in result["steering_us_per_step"].items():
        print(f"steering per step, {part}: p50 {figures.get('p50', 0)} us, p99 {figures.get('p99', 0)} us ({figures['steps']} steps)")
    for name, figures in result["model_us_per_step"].items():
        print(f"model step ({name}): p50 {figures.get('p50', 0)} us, p99 {figures.get('p99', 0)} us")
    print(f"forced text: {clock.forced_tokens} tokens in {clock.forced_batches} batches (evaluated with the token before them, not decoded)")
    print(f"ratios: enforced/plain per prompt={result['ratio_per_prompt']:.2f} per token={result['ratio_per_token']:.2f} "
          f"at equal length={result['ratio_at_equal_length']:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
