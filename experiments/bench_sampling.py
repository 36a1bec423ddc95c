"""What Best-of-N's draw and greedy generation cost on the embedded LM: N samples of a prompt one after another
(the old draw) or decoded together as parallel sequences sharing the prompt's prefill (the new one), and one greedy
answer per prompt, at each thread count, beside llama.cpp's own ceiling for the same tokens. Measured side by side in
one process on the same IFEval prompts.

Arms, interleaved prompt by prompt so machine load hits them alike (one engine per thread count T, LM cache off):

- greedy@T: ``Generator``'s greedy answer, one call (decoded alone on every thread);
- sequential@T: ``Generator`` sampled N times, one call after another, each prefilled from an empty cache (the
  previous release's draw; its one-token steps on one thread, as every release's were);
- together@T: the same N calls drawn at once (``programs.sampling.draw``), as Best-of-N now draws them;
- ceiling@T: llama.cpp alone (``llama_decode`` on T threads for everything, as llama-batched-bench runs) feeding
  the tokens the together arm produced: one prefill and all live sequences in one batch each step, against N
  prefills and one sequence a step. Its ratio is the most batching can buy on this machine.

The seeded samples of both sampling arms are compared: ``same samples`` counts those that are identical.

Usage: python experiments/bench_sampling.py [--suite FILE] [--prompts N] [--samples N] [--threads 1,2] [--out PATH]
Ends with ``ratios: together/sequential@T=A ceiling@T=C ... greedy@1/greedy@T=D`` (one per thread count T; the
last compares greedy generation at each thread count with the first).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import dspy
import llama_cpp

from bineval_dspy.lm._decoding import _OwnedBatch
from bineval_dspy.lm.llama_engine import STREAM_CELLS, LlamaCppEngine
from bineval_dspy.lm.specs import embedded_model_path
from bineval_dspy.programs.generator import Generator
from bineval_dspy.programs.sampling import draw

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SUITE = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data")) / "ifeval" / "ifeval_shared.jsonl"
DEFAULT_OUT = REPO / "experiments" / "results" / "bench_sampling.json"
INSTRUCTIONS = (  # experiments/ifeval_finetune.toml's start program
    "Respond to the user's prompt helpfully and accurately. Follow every instruction and constraint the prompt "
    "states exactly: length, format, structure, keywords, letter case, language and wording."
)
MAX_TOKENS = 128
TEMPERATURE = 0.7


def thread_list(text: str) -> list[int]:
    threads = [int(t) for t in text.split(",") if t.strip()]
    if not threads or min(threads) < 1:
        raise argparse.ArgumentTypeError("thread counts are positive integers, comma-separated")
    return threads


def ceiling(llama: Any, batch: Any, prompt: list[int], outputs: list[list[int]], together: bool, threads: int) -> float:
    """Seconds llama.cpp alone takes to prefill ``prompt`` and feed each output's tokens: with ``together``, one
    prefill copied to every sequence and one batch a step holding every live sequence; else each output on its
    own, prefill included."""
    memory = llama._ctx.memory
    llama_cpp.llama_memory_seq_rm(memory, -1, -1, -1)
    llama_cpp.llama_set_n_threads(llama._ctx.ctx, threads, threads)

    def decode(rows: list[tuple[int, int, int]]) -> None:
        for start in range(0, len(rows), llama.n_batch):
            chunk = rows[start : start + llama.n_batch]
            for k, (token, position, seq) in enumerate(chunk):
                batch.token[k], batch.pos[k], batch.n_seq_id[k], batch.seq_id[k][0], batch.logits[k] = token, position, 1, seq, True
            batch.n_tokens = len(chunk)
            if llama_cpp.llama_decode(llama._ctx.ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")

    started = time.perf_counter()
    if together:
        decode([(t, j, 1) for j, t in enumerate(prompt)])
        for seq in range(2, len(outputs) + 1):
            llama_cpp.llama_memory_seq_cp(memory, 1, seq, -1, -1)
        for step in range(max(map(len, outputs), default=0)):
            decode([(out[step], len(prompt) + step, seq) for seq, out in enumerate(outputs, 1) if step < len(out)])
    else:
        for out in outputs:
            llama_cpp.llama_memory_seq_rm(memory, 1, -1, -1)
            decode([(t, j, 1) for j, t in enumerate(prompt)])
            for step, token in enumerate(out):
                decode([(token, len(prompt) + step, 1)])
    seconds = time.perf_counter() - started
    llama_cpp.llama_memory_seq_rm(memory, -1, -1, -1)
    return seconds


def restore_threads(engine: LlamaCppEngine) -> None:
    """After the ceiling set its own thread counts: the engine sets its own again at its next call."""
    engine._single_threads = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, default=DEFAULT_SUITE)
    parser.add_argument("--prompts", type=int, default=20, help="the suite's first N prompts")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--threads", type=thread_list, default=[1, 2], help="llama.cpp thread counts, comma-separated")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if not args.suite.is_file():
        parser.error(f"--suite {args.suite}: no such file (set BINEVAL_SHARED_DATA or give --suite)")
    rows = [json.loads(line) for line in args.suite.read_text().splitlines() if line.strip()][: args.prompts]
    prompts = [str(row["prompt"]) for row in rows]
    path = embedded_model_path()
    program = Generator(INSTRUCTIONS, max_tokens=MAX_TOKENS)
    engines = {threads: LlamaCppEngine(path, n_threads=threads) for threads in args.threads}
    lms = {t: dspy.LM(f"local/bench-{t}", engine=e, cache=False, num_retries=0) for t, e in engines.items()}
    for engine in engines.values():
        engine.load(batched=STREAM_CELLS)
    batches = {t: _OwnedBatch(e._load().n_batch) for t, e in engines.items()}
    seconds: dict[str, float] = {}
    same = {t: 0 for t in args.threads}
    tokens = 0
    rollouts = range(args.samples)

    def timed(name: str, work: Any) -> Any:
        started = time.perf_counter()
        result = work()
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started
        return result

    for i, prompt in enumerate(prompts, 1):
        for threads, engine in engines.items():
            with dspy.context(lm=lms[threads]):
                timed(f"greedy@{threads}", lambda prompt=prompt: program(prompt=prompt).response)
                one_by_one = timed(f"sequential@{threads}", lambda prompt=prompt: [
                    draw(program, prompt, [r], temperature=TEMPERATURE, seed=0, read=lambda p: p.response)[0] for r in rollouts
                ])  # fmt: skip
                together = timed(f"together@{threads}", lambda prompt=prompt: draw(program, prompt, rollouts, temperature=TEMPERATURE, seed=0, read=lambda p: p.response))
            for text in [*one_by_one, *together]:
                if isinstance(text, Exception):
                    raise text
            same[threads] += sum(a == b for a, b in zip(one_by_one, together))
            llama = engine._load()
            rendered = engine.tokenize(engine.render(_request(program, prompt)))
            outputs = [engine.tokenize(text)[:MAX_TOKENS] for text in together]
            tokens += sum(map(len, outputs)) if threads == args.threads[0] else 0
            for mode in ("one", "together"):
                seconds[f"ceiling_{mode}@{threads}"] = seconds.get(f"ceiling_{mode}@{threads}", 0.0) + ceiling(
                    llama, batches[threads].batch, rendered, outputs, together=mode == "together", threads=threads
                )
            llama.reset()
            restore_threads(engine)
        print(f"prompt {i}/{len(prompts)}: " + " ".join(f"{k}={v:.1f}s" for k, v in seconds.items()), flush=True)

    print(f"\n{len(prompts)} prompts x {args.samples} samples, {MAX_TOKENS} tokens at most ({tokens} generated per arm)")
    print(f"{'arm':<22}{'seconds':>10}")
    for name, value in seconds.items():
        print(f"{name:<22}{value:>10.1f}")
    ratios = {}
    for t in args.threads:
        ratios[f"together/sequential@{t}"] = seconds[f"together@{t}"] / seconds[f"sequential@{t}"]
        ratios[f"ceiling@{t}"] = seconds[f"ceiling_together@{t}"] / seconds[f"ceiling_one@{t}"]
    first = args.threads[0]
    for t in args.threads[1:]:
        for arm in ("greedy", "sequential", "together"):
            ratios[f"{arm}@{first}/{arm}@{t}"] = seconds[f"{arm}@{first}"] / seconds[f"{arm}@{t}"]
    samples = len(prompts) * args.samples
    print("same samples: " + " ".join(f"@{t}={same[t]}/{samples}" for t in args.threads))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "prompts": len(prompts), "samples": args.samples, "max_tokens": MAX_TOKENS, "threads": args.threads,
        "seconds": seconds, "ratios": ratios, "same_samples": same, "generated_tokens": tokens, "cores": os.cpu_count(),
    }, indent=2) + "\n")  # fmt: skip
    print("ratios: " + " ".join(f"{k}={v:.2f}" for k, v in ratios.items()))


def _request(program: Generator, prompt: str) -> Any:
    """The request the generator sends for ``prompt`` (for the ceiling's prompt tokens)."""
    from dspy.lm15 import Config, Message, Request

    adapter = program.adapter
    messages = adapter.format(program.generate.signature, demos=[], inputs={"prompt": prompt})
    system = next((m["content"] for m in messages if m["role"] == "system"), None)
    turns = tuple(Message.user(m["content"]) for m in messages if m["role"] == "user")
    return Request(model="bench", messages=turns, system=system, config=Config(max_tokens=MAX_TOKENS))


if __name__ == "__main__":
    main()
