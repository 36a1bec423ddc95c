"""What decoding under a prompt's constraints costs on the embedded LM: the same prompts answered greedy without
enforcement and with ``enforce = "extracted"``, interleaved prompt by prompt so machine load hits both alike, LM
cache off, one engine.

Per arm: seconds per prompt, tokens decoded per prompt (enforcement changes the length: a word floor decodes more,
a ceiling or a completed structure fewer) and seconds per decoded token, the per-step price of the masks, checks and
counters (forced text is evaluated in batches, not decoded). Only prompts whose extracted plan steers are timed.

Usage: python experiments/bench_enforce.py [--suite FILE] [--prompts N] [--max-tokens N] [--out PATH]
Ends with ``ratios: enforced/plain per prompt=A per token=B``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import dspy

from bineval_dspy.checklists.constraints import enforcement_plan
from bineval_dspy.lm.engine import engine_of
from bineval_dspy.lm.specs import make_lm
from bineval_dspy.programs.generator import Generator
from bineval_dspy.suites.rows import load_suite

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SUITE = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data")) / "ifeval" / "ifeval_shared.jsonl"
DEFAULT_OUT = REPO / "experiments" / "results" / "bench_enforce.json"
INSTRUCTIONS = (  # experiments/ifeval_enforce.toml's start program
    "Respond to the user's prompt helpfully and accurately. Follow every instruction and constraint the prompt "
    "states exactly: length, format, structure, keywords, letter case, language and wording."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, default=DEFAULT_SUITE)
    parser.add_argument("--prompts", type=int, default=40, help="steered prompts timed (the suite's first ones)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if args.prompts < 1 or args.max_tokens < 8:
        parser.error("--prompts must be >= 1 and --max-tokens >= 8")
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    lm = make_lm("smollm2")
    dspy.configure(lm=lm)
    engine = engine_of(lm)
    prompts = [row.prompt for row in load_suite(args.suite) if enforcement_plan(row.prompt, "extracted").steers][: args.prompts]
    arms = {"plain": Generator(INSTRUCTIONS, max_tokens=args.max_tokens), "enforced": Generator(INSTRUCTIONS, max_tokens=args.max_tokens, enforce="extracted")}
    seconds = {name: 0.0 for name in arms}
    tokens = {name: 0 for name in arms}
    arms["plain"](prompt=prompts[0])  # load the model and build the vocabulary's masks outside the timing
    arms["enforced"](prompt=prompts[0])
    for index, prompt in enumerate(prompts, start=1):
        for name, program in arms.items():
            before = engine.stats.generated_tokens
            started = time.perf_counter()
            program(prompt=prompt)
            seconds[name] += time.perf_counter() - started
            tokens[name] += engine.stats.generated_tokens - before
        print(f"{index}/{len(prompts)} prompts", flush=True)
    per_prompt = {name: seconds[name] / len(prompts) for name in arms}
    per_token = {name: seconds[name] / max(1, tokens[name]) for name in arms}
    result = {
        "prompts": len(prompts), "max_tokens": args.max_tokens, "seconds": seconds, "tokens": tokens,
        "seconds_per_prompt": per_prompt, "seconds_per_token": per_token,
        "ratio_per_prompt": per_prompt["enforced"] / per_prompt["plain"], "ratio_per_token": per_token["enforced"] / per_token["plain"],
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for name in arms:
        print(f"{name}: {per_prompt[name]:.2f} s a prompt, {tokens[name] / len(prompts):.0f} tokens a prompt, {1000 * per_token[name]:.1f} ms a token")
    print(f"ratios: enforced/plain per prompt={result['ratio_per_prompt']:.2f} per token={result['ratio_per_token']:.2f}")


if __name__ == "__main__":
    main()
