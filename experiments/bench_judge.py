"""What BinaryJudge costs on the embedded LM: today's default, the batched judge, verdict-first decoding, the
naive DSPy way, and two llama.cpp floors, measured side by side in one process on the same pairs and questions.

Arms (each on its own engine, interleaved pair by pair so machine load hits them alike):

- today: the previous default, ``BinaryJudge()`` one question at a time on an engine without parallel sequences
  or flash attention;
- new: ``BinaryJudge()`` on the default engine: the questions of one output decoded as parallel sequences;
- verdict_only: ``BinaryJudge(explanations="none")``: generation stops after the answer;
- one_token: ``BinaryJudge(explanations="none", verdict_format="prefilled")``: the verdict's JSON start is in the
  prompt, so a verdict is one generated token (its answers are compared with verdict_only's);
- probe: a probe judge (``judges.probe``): each question's hidden state read by one prefill in transformers (the
  questions of one output share it), a linear head applied, nothing decoded; uncached, its head a placeholder (the
  cost of a verdict does not depend on the weights, so its answers are not compared);
- probe_llama: the same probe through the library's own path with ``HiddenStates(backend="llama")``: its states read
  from llama.cpp's quantized forward pass (``lm.llama_states``: the evaluation callback hands out every layer), one
  question's prompt at a time, each continuing from the cells the last one shares (the output's context read once);
- naive: one plain ``dspy.Predict`` per question with ChatAdapter and no prefix reuse;
- floor: llama.cpp alone doing today's model work (same prompt tokens evaluated, as many tokens generated);
- batched_floor: llama.cpp alone, the physical floor of one output: one prefill of the shared context, one
  batched pass over all question suffixes, one decoding step for every question's verdict token.

Usage: python experiments/bench_judge.py [--data DIR] [--pairs N] [--questions N] [--arms A,B,...] [--pair-tokens N]
       [--naive-max-tokens N] [--out PATH]
Prints a table and ends with ``ratios: today/new=A today/verdict_only=B verdict_only/batched_floor=C naive/new=D
one_token/batched_floor=E probe/one_token=F probe/verdict_only=G probe_llama/one_token=H probe_llama/probe=I``
(with ``--arms``, the ratios of the arms that ran: ``--arms verdict_only,batched_floor`` measures the one target
pair side by side at a tenth of the time; ``floor`` needs ``today``, ``batched_floor`` needs ``verdict_only``).
``--pair-tokens`` and ``--naive-max-tokens`` shrink the prompts and the naive arm's rambling replies: the smoke test's
size, not one to measure at.
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
import llama_cpp
import numpy as np
from dspy.lm15 import Request, Response

from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm.hidden import Backend
from bineval_dspy.lm.llama_engine import LlamaCppEngine
from bineval_dspy.lm.specs import embedded_model_path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))
DEFAULT_OUT = REPO / "experiments" / "results" / "bench_judge.json"
PAIR_TOKENS = 500
SUMMARY_TOKENS = 100
MAX_TOKENS = 256  # every arm's LM token limit per reply
PROMPT_ROOM = 400  # a judge prompt's tokens beside its pair (instructions, the question): what the warm-up sizes for

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


def load_pairs(data_dir: Path, n: int, count_tokens, pair_tokens: int) -> list[Pair]:
    """The first ``n`` articles, each with the summary closest to 100 tokens, the article cut
    at a sentence boundary so that article and summary together stay within ``pair_tokens`` tokens."""
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
        text = _truncate(article["source"], pair_tokens - summary_tokens, count_tokens)
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


def warm_up(engine: LlamaCppEngine, cells: int) -> None:
    """Load the weights (and, for an engine that batches, the context of parallel sequences the batched floor
    decodes on too, its streams of ``cells``) and run one small decode, so no measurement pays for loading."""
    engine.load(batched=cells if engine.parallel_sequences > 1 else 0)
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


def batched_floor(llama: Any, batch: Any, prompts: list[list[int]], meter: Meter) -> None:
    """The physical floor of one output: its shared prefix evaluated once (after what the cache already holds),
    every question's suffix in one batch on its own sequence, then one batched step decoding a verdict token."""
    memory = llama._ctx.memory
    prefix = prompts[0][: min(common_prefix(prompts[0], p) for p in prompts)]
    prefix = prefix[: min(map(len, prompts)) - 1]
    with meter:
        keep = common_prefix(llama.input_ids[: llama.n_tokens].tolist(), prefix)
        llama.n_tokens = keep
        llama.eval(prefix[keep:])
        rows = []
        for seq, tokens in enumerate(prompts, start=1):
            llama_cpp.llama_memory_seq_cp(memory, 0, seq, -1, -1)
            rows += [(t, len(prefix) + j, seq, j == len(tokens) - len(prefix) - 1) for j, t in enumerate(tokens[len(prefix) :])]
        last = _decode(llama, batch, rows)
        verdicts = [(int(np.argmax(last[k])), len(prompts[seq - 1]), seq, True) for seq, k in enumerate(sorted(last), 1)]
        _decode(llama, batch, verdicts)
        for seq in range(1, len(prompts) + 1):
            llama_cpp.llama_memory_seq_rm(memory, seq, -1, -1)
    meter.add(len(prompts), sum(map(len, prompts)), len(prefix) - keep + len(rows), len(prompts))


def _decode(llama: Any, batch: Any, rows: list[tuple[int, int, int, bool]]) -> dict[int, np.ndarray]:
    """Decode (token, position, sequence, wants logits) rows in chunks of n_batch; logits by row index."""
    found: dict[int, np.ndarray] = {}
    for start in range(0, len(rows), llama.n_batch):
        chunk = rows[start : start + llama.n_batch]
        for k, (token, position, seq, wants) in enumerate(chunk):
            batch.token[k], batch.pos[k], batch.n_seq_id[k], batch.logits[k] = token, position, 1, wants
            batch.seq_id[k][0] = seq
        batch.n_tokens = len(chunk)
        if llama_cpp.llama_decode(llama._ctx.ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")
        for k, (*_, wants) in enumerate(chunk):
            if wants:
                pointer = llama_cpp.llama_get_logits_ith(llama._ctx.ctx, k)
                found[start + k] = np.ctypeslib.as_array(pointer, shape=(llama.n_vocab(),)).copy()
    return found


def naive_call(predict: dspy.Predict, lm: dspy.LM, pair: Pair, question: Question, meter: Meter) -> None:
    try:
        with dspy.context(lm=lm, adapter=dspy.ChatAdapter()), meter:
            pred = predict(document=pair.article, summary=pair.summary, question=question.text)
        answer = "yes" if pred.answer is True else "no" if pred.answer is False else "unanswered"
    except Exception:  # a reply neither adapter could parse
        answer = "unanswered"
    meter.answers[answer] += 1


def local_lm(engine: LlamaCppEngine, name: str, max_tokens: int) -> dspy.LM:
    return dspy.LM(f"local/{name}", engine=engine, cache=False, num_retries=0, temperature=0.0, max_tokens=max_tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    parser.add_argument("--arms", type=arm_list, default=ARMS, help=f"comma-separated, from {','.join(ARMS)} (default: all)")
    parser.add_argument("--pair-tokens", type=int, default=PAIR_TOKENS, help="article and summary together, at most")
    parser.add_argument("--naive-max-tokens", type=int, default=MAX_TOKENS, help="the naive arm's token limit per reply")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    path = embedded_model_path()
    settings = {
        "today": dict(batching=False, flash_attn=False, record_calls=True),
        "new": {},
        "verdict_only": {},
        "one_token": {},
        "naive": dict(reuse_prefix=False, flash_attn=False),
        "floor": dict(batching=False, flash_attn=False),
        "batched_floor": {},
    }
    engines = {name: LlamaCppEngine(path, **settings[name]) for name in args.arms if name not in PROBES}
    readers: dict[str, Any] = {}  # probe arm -> its reader (no cache: every state read)
    probe_judges: dict[str, Any] = {}  # probe arm -> its placeholder head, recording the arm's backend
    if set(PROBES) & set(args.arms):
        from bineval_dspy.lm.specs import file_fingerprint

        model = f"local/bench@sha256-{file_fingerprint(path)}"
        from bineval_dspy.lm.hidden import HiddenStates

        for name in PROBES:
            if name in args.arms:
                readers[name] = HiddenStates(path, model, None, backend="llama" if name == "probe_llama" else "torch")
        for reader in readers.values():
            reader.tokenizer()
            reader.read(["Warm-up: the quick brown fox jumps over the lazy dog."])
        shape = next(iter(readers.values())).read(["x"])[0].hidden.shape
        probe_judges = {name: placeholder_probe(model, shape, reader.backend) for name, reader in readers.items()}
    lms = {name: local_lm(engine, name, args.naive_max_tokens if name == "naive" else MAX_TOKENS) for name, engine in engines.items()}
    judges = {
        "today": BinaryJudge(threads=1), "new": BinaryJudge(), "verdict_only": BinaryJudge(explanations="none"),
        "one_token": BinaryJudge(explanations="none", verdict_format="prefilled"),
    }  # fmt: skip
    judges = {name: judge for name, judge in judges.items() if name in engines}
    first = next(iter(engines.values())) if engines else LlamaCppEngine(path)  # one tokenizer: every engine loads the same model
    pairs = load_pairs(args.data, args.pairs, lambda text: len(first.tokenize(text)), args.pair_tokens)
    cells = max(p.article_tokens + p.summary_tokens for p in pairs) + PROMPT_ROOM + MAX_TOKENS
    for engine in engines.values():
        warm_up(engine, cells)
    checklist = Checklist(
        task="Summarize the news article.",
        dimensions=[],
        questions=[Question(text=text, dimension=dim) for dim, text in QUESTIONS[: args.questions]],
    )
    requests = {name: record_requests(engines[name]) for name in ("today", "verdict_only") if name in engines}
    predict = dspy.Predict("document, summary, question -> answer: bool, explanation: str")
    meters = {name: Meter(engine if name in (*judges, "naive") else None) for name, engine in engines.items()}
    for name in readers:
        meters[name] = Meter(None)
    floor_llama = engines["floor"]._load() if "floor" in engines else None
    batched_llama = engines["batched_floor"]._load() if "batched_floor" in engines else None
    batch = llama_cpp.llama_batch_init(batched_llama.n_batch, 0, 1) if batched_llama is not None else None
    answers: dict[str, list[list[str]]] = {name: [] for name in judges}
    explanations: dict[str, list[list[str]]] = {name: [] for name in judges}
    prompts: list[list[int]] = []
    prefixes: list[int] = []
    q = len(checklist.questions)
    for i, pair in enumerate(pairs, 1):
        for name, judge in judges.items():
            with dspy.context(lm=lms[name]), meters[name]:
                card = judge(input=pair.article, output=pair.summary, checklist=checklist)
            answers[name].append([v.answer for v in card.verdicts])
            explanations[name].append([v.explanation for v in card.verdicts])
            for verdict in card.verdicts:
                meters[name].answers[verdict.answer] += 1
        for name, reader in readers.items():
            evaluated = getattr(reader, "evaluated", 0)
            with meters[name]:
                verdicts = probe_judges[name].verdicts(reader, pair.article, pair.summary, checklist.questions, name)
            meters[name].add(len(verdicts), 0, getattr(reader, "evaluated", 0) - evaluated, 0)  # tokens: llama.cpp's reader counts them
            for verdict in verdicts.values():
                meters[name].answers[verdict.answer] += 1
        # the floors mirror what the judges asked: today's prompts and tokens, verdict_only's prompts
        recorded = next((name for name in ("today", "verdict_only") if name in requests), None)
        engine = engines[recorded] if recorded else None
        pair_prompts = [engine.tokenize(engine.render(r)) for r in requests[recorded][-q:]] if recorded and engine else []
        if floor_llama is not None:
            for tokens, call in zip(pair_prompts, engines["today"].stats.per_call[-q:]):
                floor_call(floor_llama, tokens, call["generated"], prompts[-1] if prompts else [], meters["floor"])
                prompts.append(tokens)
        else:
            prompts.extend(pair_prompts)
        if batched_llama is not None:
            verdict_prompts = [engines["verdict_only"].tokenize(engines["verdict_only"].render(r)) for r in requests["verdict_only"][-q:]]
            engines["batched_floor"].load(batched=max(map(len, verdict_prompts)) + 1)  # streams that hold them: made before timing
            batched_floor(batched_llama, batch, verdict_prompts, meters["batched_floor"])
        if "naive" in engines:
            for question in checklist.questions:
                naive_call(predict, lms["naive"], pair, question, meters["naive"])
        if pair_prompts:
            prefixes.append(min(common_prefix(pair_prompts[0], p) for p in pair_prompts))
        print(f"pair {i}/{len(pairs)}: " + "  ".join(f"{k} {m.figures.seconds:.1f}s" for k, m in meters.items()), flush=True)
    if batch is not None:
        llama_cpp.llama_batch_free(batch)

    compared = [name for name in ("new", "verdict_only") if name in answers] if "today" in answers else []
    same = {name: sum(a == b for x, y in zip(answers["today"], answers[name]) for a, b in zip(x, y)) for name in compared}
    one_token_alike = (
        sum(a == b for x, y in zip(answers["verdict_only"], answers["one_token"]) for a, b in zip(x, y))
        if {"verdict_only", "one_token"} <= set(answers) else None
    )  # fmt: skip
    explained_alike = sum(a == b for x, y in zip(explanations["today"], explanations["new"]) for a, b in zip(x, y)) if "new" in compared else None
    print(f"{len(pairs)} pairs x {q} questions; pair tokens (article+summary) mean "
          f"{sum(p.article_tokens + p.summary_tokens for p in pairs) / len(pairs):.0f}; "
          + (f"prompt mean {sum(map(len, prompts)) / len(prompts):.0f} tokens, shared prefix per pair "
             f"{sum(prefixes) / len(prefixes):.0f}" if prompts else "no recorded prompts (neither today nor verdict_only ran)"))
    print(f"{'mode':<14} {'wall s':>8} {'cpu s':>8} {'LM calls':>9} {'prompt tok':>11} {'evaluated':>10} {'generated':>10}")
    for name, m in meters.items():
        f = m.figures
        print(f"{name:<14} {f.seconds:>8.2f} {m.cpu:>8.2f} {f.calls:>9} {f.prompt_tokens:>11} "
              f"{f.evaluated_prompt_tokens:>10} {f.generated_tokens:>10}")
    total = len(pairs) * q
    print("answers: " + "; ".join(f"{name} {m.answers}" for name, m in meters.items() if name in judges or name == "naive"))
    if compared:
        alike = f"; new's explanations equal to today's: {explained_alike}/{total} (flash attention changes the numbers: see README)" if explained_alike is not None else ""
        print("answers equal to today's: " + ", ".join(f"{name} {same[name]}/{total}" for name in compared) + alike)
    if one_token_alike is not None:
        print(f"one_token's answers equal to verdict_only's: {one_token_alike}/{total}")
    seconds = {name: m.figures.seconds for name, m in meters.items()}
    ratios = {
        f"{a}/{b}": seconds[a] / seconds[b]
        for a, b in (
            ("today", "new"), ("today", "verdict_only"), ("verdict_only", "batched_floor"), ("naive", "new"), ("today", "floor"),
            ("one_token", "batched_floor"), ("probe", "one_token"), ("probe", "verdict_only"),
            ("probe_llama", "one_token"), ("probe_llama", "probe"),
        )  # fmt: skip
        if a in seconds and b in seconds
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "model": str(path),
        "arms": list(args.arms),
        "naive_max_tokens": args.naive_max_tokens,
        "pairs": [{k: v for k, v in asdict(p).items() if k not in ("article", "summary")} for p in pairs],
        "questions": [text for _, text in QUESTIONS[:q]],
        "shared_prefix_tokens": prefixes,
        **{name: {**asdict(m.figures), "cpu_seconds": m.cpu, "answers": m.answers} for name, m in meters.items()},
        "answers_equal_to_today": same,
        "explanations_equal_to_today": explained_alike,
        "one_token_answers_equal_to_verdict_only": one_token_alike,
        "ratios": ratios,
    }, indent=2) + "\n")
    shown = [
        k for k in ("today/new", "today/verdict_only", "verdict_only/batched_floor", "naive/new", "one_token/batched_floor", "probe/one_token", "probe/verdict_only",
                  "probe_llama/one_token", "probe_llama/probe")
        if k in ratios
    ]
    print("ratios: " + " ".join(f"{k}={ratios[k]:.2f}" for k in shown))


def placeholder_probe(model: str, shape: tuple[int, ...], backend: Backend = "torch") -> Any:
    """A probe whose head reads the last layer with zero weights: what a verdict costs, whatever the weights (its
    record names the arm's backend, as a trained head's would, or its verdicts are refused)."""
    from bineval_dspy.judges.probe import INSTRUCTIONS, Probe, ProbeHead, ProbeRecord

    layers, width = shape
    head = ProbeHead(layer=layers - 1, strength=1.0, mean=[0.0] * (width + 1), scale=[1.0] * (width + 1), weights=[0.0] * (width + 1), bias=0.0, threshold=0.5)
    record = ProbeRecord(model=model, labels="none (a timing placeholder)", rows=0, yes_share=0.0, groups=[], folds=2, candidates=[], validation={}, backend=backend)
    return Probe(instructions=INSTRUCTIONS, head=head, record=record)


ARMS = ("today", "new", "verdict_only", "one_token", "probe", "probe_llama", "naive", "floor", "batched_floor")
PROBES = ("probe", "probe_llama")  # arms that read states instead of running an engine
NEEDS = {"floor": "today", "batched_floor": "verdict_only"}  # a floor replays the prompts its judge arm recorded


def arm_list(text: str) -> tuple[str, ...]:
    """``--arms``: known arm names, each floor with the judge arm whose prompts it replays, in the table's order."""
    names = {name.strip() for name in text.split(",") if name.strip()}
    unknown = sorted(names - set(ARMS))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown arm(s) {', '.join(unknown)}; choose from {', '.join(ARMS)}")
    missing = [f"{floor} needs {judge}" for floor, judge in NEEDS.items() if floor in names and judge not in names]
    if missing:
        raise argparse.ArgumentTypeError("; ".join(missing))
    if not names & {"today", "new", "verdict_only", "one_token", *PROBES}:
        raise argparse.ArgumentTypeError("name at least one judge arm (today, new, verdict_only, one_token, probe, probe_llama)")
    return tuple(name for name in ARMS if name in names)


if __name__ == "__main__":
    main()
