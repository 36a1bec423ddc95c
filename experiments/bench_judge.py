"""What BinaryJudge costs on the embedded LM, against the naive DSPy way and a llama.cpp floor.

Three measurements in one process, on SummEval (article, summary) pairs of about 500 tokens:

- default: ``BinaryJudge()`` (JSONAdapter, grammar-constrained JSON, KV-cache prefix reuse);
- naive: one plain ``dspy.Predict`` per question with ChatAdapter (JSON fallback on) and no prefix reuse;
- floor: llama.cpp alone doing default's model work: the same prompt tokens evaluated (each pair's
  shared prefix once, then each question's suffix) and greedy decoding of as many tokens as default
  generated, with no grammar, no DSPy and no per-token Python beyond the decode loop.

Usage: python experiments/bench_judge.py [--data DIR] [--pairs N] [--questions N] [--out PATH]
Prints a table and ends with ``ratios: default/floor=X naive/default=Y``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import dspy
from dspy.lm15 import Request, Response

from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm.llama_engine import LlamaCppEngine
from bineval_dspy.lm.specs import embedded_model_path, make_lm
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.core.scoring import score

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))
DEFAULT_OUT = REPO / "experiments" / "results" / "bench_judge.json"
PAIR_TOKENS = 500
SUMMARY_TOKENS = 100

QUESTIONS: list[tuple[str, str]] = [
    ("consistency", "Is every named entity in the summary present in the article?"),
    ("consistency", "Are all numbers, dates and amounts in the summary the same as in the article?"),
    ("consistency", "Is every claim in the summary supported by the article?"),
    ("consistency", "Does the summary avoid attributing statements or actions to the wrong person?"),
    ("relevance", "Does the summary state the main event of the article?"),
    ("relevance", "Does the summary leave out minor details that are not central to the article?"),
    ("relevance", "Does the summary mention who is involved in the main event?"),
    ("coherence", "Do the sentences of the summary follow a logical order?"),
    ("coherence", "Is the summary free of repeated information?"),
    ("fluency", "Is every sentence of the summary grammatical?"),
    ("fluency", "Is the summary free of unfinished sentences and stray fragments?"),
    ("conciseness", "Is the summary shorter than a quarter of the article?"),
]


@dataclass
class Pair:
    doc_id: str
    system_id: str
    article: str
    summary: str
    article_tokens: int
    summary_tokens: int


@dataclass
class Figures:
    """One measurement: wall time and the model work behind it."""

    seconds: float
    calls: int
    prompt_tokens: int
    evaluated_prompt_tokens: int
    generated_tokens: int


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_pairs(data_dir: Path, n: int, count_tokens) -> list[Pair]:
    """The first ``n`` articles, each with the summary closest to 100 tokens, the article cut
    at a sentence boundary so that article and summary together stay within 500 tokens."""
    articles = _jsonl(data_dir / "summeval" / "articles.jsonl")
    by_doc: dict[str, list[dict]] = {}
    for row in _jsonl(data_dir / "summeval" / "summaries.jsonl"):
        by_doc.setdefault(row["doc_id"], []).append(row)
    pairs = []
    for article in articles[:n]:
        candidates = sorted(by_doc[article["doc_id"]], key=lambda r: r["system_id"])
        best = min(candidates, key=lambda r: abs(count_tokens(r["summary"]) - SUMMARY_TOKENS))
        summary = best["summary"].strip()
        summary_tokens = count_tokens(summary)
        text = _truncate(article["source"], PAIR_TOKENS - summary_tokens, count_tokens)
        pairs.append(Pair(article["doc_id"], best["system_id"], text, summary, count_tokens(text), summary_tokens))
    return pairs


def _truncate(text: str, budget: int, count_tokens) -> str:
    """The longest run of leading sentences within ``budget`` tokens (words if one sentence is too long)."""
    kept = ""
    for sentence in re.split(r"(?<=[.!?'\"])\s+", text.strip()):
        candidate = f"{kept} {sentence}".strip()
        if count_tokens(candidate) > budget:
            break
        kept = candidate
    if kept:
        return kept
    for word in text.split():
        candidate = f"{kept} {word}".strip()
        if count_tokens(candidate) > budget:
            break
        kept = candidate
    return kept


def record_requests(engine: LlamaCppEngine) -> list[Request]:
    """Wrap the engine's ``complete`` on this instance so every request it serves is kept."""
    requests: list[Request] = []
    complete = engine.complete

    def recording(request: Request) -> Response:
        requests.append(request)
        return complete(request)

    engine.complete = recording  # type: ignore[method-assign]
    return requests


def _snapshot(engine: LlamaCppEngine) -> dict[str, int]:
    s = engine.stats
    return {
        "calls": s.calls,
        "prompt_tokens": s.prompt_tokens,
        "evaluated_prompt_tokens": s.evaluated_prompt_tokens,
        "generated_tokens": s.generated_tokens,
    }


def warm_up(engine: LlamaCppEngine) -> None:
    """Load the weights and run one small decode, so no measurement pays for loading."""
    llama = engine._load()
    llama.reset()
    llama.eval(engine.tokenize("Warm-up: the quick brown fox jumps over the lazy dog."))
    llama.reset()


class Meter:
    """Adds up one mode's wall time, process CPU time and engine counters over timed sections."""

    def __init__(self, engine: LlamaCppEngine | None = None) -> None:
        self.engine = engine
        self.figures = Figures(0.0, 0, 0, 0, 0)
        self.cpu = 0.0
        self.answers = {"yes": 0, "no": 0, "unanswered": 0}

    def __enter__(self) -> Meter:
        self._before = _snapshot(self.engine) if self.engine else None
        self._cpu, self._wall = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.figures.seconds += time.perf_counter() - self._wall
        self.cpu += time.process_time() - self._cpu
        if self._before is not None:
            self.add(**{k: v - self._before[k] for k, v in _snapshot(self.engine).items()})

    def add(self, calls: int, prompt_tokens: int, evaluated_prompt_tokens: int, generated_tokens: int) -> None:
        f = self.figures
        f.calls += calls
        f.prompt_tokens += prompt_tokens
        f.evaluated_prompt_tokens += evaluated_prompt_tokens
        f.generated_tokens += generated_tokens


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def floor_call(llama: Any, tokens: list[int], n: int, before: list[int], meter: Meter) -> None:
    """Default's model work for one call, with llama.cpp alone.

    ``before`` is the prompt default had in its KV cache before this call, so this evaluates
    exactly the prompt tokens default evaluated (a pair's shared prefix on its first question,
    then only each question's suffix). Then greedy decoding without grammar: ``n`` single-token
    evaluations and ``n + 1`` argmax samples (the last one is where default picked its
    end-of-generation token), with one llama.cpp greedy sampler per call.
    """
    in_kv = llama.input_ids[: llama.n_tokens].tolist()
    with meter:
        keep = min(common_prefix(before, tokens), common_prefix(in_kv, tokens), len(tokens) - 1)
        llama.n_tokens = keep  # eval() drops the KV entries from n_tokens on
        llama.eval(tokens[keep:])
        sampler = llama._init_sampler(temp=0.0, repeat_penalty=1.0)
        for _ in range(n):
            llama.eval([sampler.sample(llama._ctx, -1)])
        sampler.sample(llama._ctx, -1)
    meter.add(1, len(tokens), len(tokens) - keep, n)


def naive_call(predict: dspy.Predict, lm: dspy.LM, pair: Pair, question: Question, meter: Meter) -> None:
    try:
        with dspy.context(lm=lm, adapter=dspy.ChatAdapter()), meter:
            pred = predict(document=pair.article, summary=pair.summary, question=question.text)
        answer = "yes" if pred.answer is True else "no" if pred.answer is False else "unanswered"
    except Exception:  # a reply neither adapter could parse
        answer = "unanswered"
    meter.answers[answer] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    lm = make_lm("smollm2", cache=False)
    engine: LlamaCppEngine = lm._engine_spec
    engine.record_calls = True
    path = embedded_model_path()
    naive_engine = LlamaCppEngine(path, reuse_prefix=False)
    naive_lm = dspy.LM(
        f"local/naive-{path.stem.lower()}", engine=naive_engine, cache=False, num_retries=0, temperature=0.0, max_tokens=256
    )
    warm_up(engine)
    warm_up(naive_engine)

    pairs = load_pairs(args.data, args.pairs, lambda text: len(engine.tokenize(text)))
    checklist = Checklist(
        task="Summarize the news article.",
        dimensions=[],
        questions=[Question(text=text, dimension=dim) for dim, text in QUESTIONS[: args.questions]],
    )

    # Interleaved question by question (default, floor, naive), so load from other processes on
    # this machine hits the three alike; each mode adds up its own timed sections. The default
    # section is BinaryJudge.forward spelled out: judge_question for each question, then score().
    requests = record_requests(engine)
    judge = BinaryJudge()
    predict = dspy.Predict("document, summary, question -> answer: bool, explanation: str")
    meters = {"default": Meter(engine), "naive": Meter(naive_engine), "floor": Meter()}
    llama = engine._load()
    prompts: list[list[int]] = []
    prefixes: list[int] = []
    for i, pair in enumerate(pairs, 1):
        verdicts = []
        pair_prompts = []
        for question in checklist.questions:
            first_call = len(engine.stats.per_call)
            with dspy.context(lm=lm), meters["default"]:
                verdicts.append(judge.judge_question(pair.article, pair.summary, question))
            if len(engine.stats.per_call) != first_call + 1:
                raise RuntimeError("a default call failed inside the engine; the floor cannot mirror it")
            tokens = engine.tokenize(engine.render(requests[-1]))
            floor_call(llama, tokens, engine.stats.per_call[-1]["generated"], prompts[-1] if prompts else [], meters["floor"])
            naive_call(predict, naive_lm, pair, question, meters["naive"])
            prompts.append(tokens)
            pair_prompts.append(tokens)
        with meters["default"]:
            score(checklist, verdicts)
        for verdict in verdicts:
            meters["default"].answers[verdict.answer] += 1
        prefixes.append(min(common_prefix(pair_prompts[0], p) for p in pair_prompts))
        print(f"pair {i}/{len(pairs)}: " + "  ".join(f"{k} {m.figures.seconds:.1f}s" for k, m in meters.items()), flush=True)

    q = len(checklist.questions)
    rows = {name: m.figures for name, m in meters.items()}
    print(f"{len(pairs)} pairs x {q} questions; pair tokens (article+summary) mean "
          f"{sum(p.article_tokens + p.summary_tokens for p in pairs) / len(pairs):.0f}; "
          f"default prompt mean {sum(map(len, prompts)) / len(prompts):.0f} tokens, shared prefix per pair "
          f"{sum(prefixes) / len(prefixes):.0f}")
    print(f"{'mode':<8} {'wall s':>8} {'cpu s':>8} {'LM calls':>9} {'prompt tok':>11} {'evaluated':>10} {'generated':>10}")
    for name, m in meters.items():
        f = m.figures
        print(f"{name:<8} {f.seconds:>8.2f} {m.cpu:>8.2f} {f.calls:>9} {f.prompt_tokens:>11} "
              f"{f.evaluated_prompt_tokens:>10} {f.generated_tokens:>10}")
    print(f"answers: default {meters['default'].answers}; naive {meters['naive'].answers}")
    default, naive, floor = rows["default"], rows["naive"], rows["floor"]
    ratios = {"default/floor": default.seconds / floor.seconds, "naive/default": naive.seconds / default.seconds}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "model": str(path),
        "pairs": [{k: v for k, v in asdict(p).items() if k not in ("article", "summary")} for p in pairs],
        "questions": [text for _, text in QUESTIONS[:q]],
        "shared_prefix_tokens": prefixes,
        **{name: {**asdict(m.figures), "cpu_seconds": m.cpu, "answers": m.answers} for name, m in meters.items()},
        "ratios": ratios,
    }, indent=2) + "\n")
    print(f"ratios: default/floor={ratios['default/floor']:.2f} naive/default={ratios['naive/default']:.2f}")


if __name__ == "__main__":
    main()
