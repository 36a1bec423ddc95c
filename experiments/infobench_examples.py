"""Write InFoBench judge examples as three split files for `bineval experiment experiments/infobench.toml`.

One example per decomposed question of every instruction: the instruction (and its input) as ``input``, GPT-4's
output as ``output``, GPT-4's recorded verdict on that question as ``reference`` (silver labels, 87.6% yes).
Seeded choice of instructions among those whose output has at most ``--max-output-chars`` characters: train among
instructions with at least one "no" (else the optimizer sees almost no disagreement), val and test from the rest,
so both keep the natural yes-rate. What a config cannot say is only this selection; the run itself is the config.

``more_train.jsonl`` holds every other eligible instruction's examples (shuffled by instruction): extra training
data for a distilled judge (experiments/infobench_distill.toml), never in val or test.

Usage: python experiments/infobench_examples.py [--data DIR] [--out DIR] [--train 30] [--val 30] [--test 80]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data")) / "infobench"


def records(folder: Path) -> list[dict]:
    """A judge example per decomposed question, in dataset order."""
    read = lambda name: [json.loads(line) for line in (folder / name).read_text(encoding="utf-8").splitlines() if line.strip()]  # noqa: E731
    answers = {row["id"]: row for row in read("infobench_gpt4_outputs_gpt4_judgments.jsonl")}
    out = []
    for task in read("infobench.jsonl"):
        answer = answers[task["id"]]
        context = task["input"].strip()
        task_input = f"{task['instruction'].strip()}\n\n{context}" if context else task["instruction"].strip()
        for k, (question, label, verdict) in enumerate(zip(task["decomposed_questions"], task["question_label"], answer["eval"], strict=True)):
            out.append({
                "input": task_input, "output": answer["output"], "question": question, "dimension": label[0],
                "question_id": f"{task['id']}#{k}", "example_id": task["id"], "reference": "yes" if verdict is True else "no",
            })
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the folder with infobench.jsonl and the GPT-4 judgments")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "infobench_examples")
    parser.add_argument("--train", type=int, default=30)
    parser.add_argument("--val", type=int, default=30)
    parser.add_argument("--test", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-output-chars", type=int, default=1500)
    args = parser.parse_args()
    rows = records(args.data)
    eligible = sorted({r["example_id"] for r in rows if len(r["output"]) <= args.max_output_chars})
    with_no = sorted({r["example_id"] for r in rows if r["reference"] == "no"} & set(eligible))
    if len(with_no) < args.train or len(eligible) < args.train + args.val + args.test:
        sys.exit(f"not enough instructions: {len(eligible)} eligible ({len(with_no)} with a 'no')")
    rng = random.Random(args.seed)
    train = rng.sample(with_no, args.train)
    rest = rng.sample(sorted(set(eligible) - set(train)), args.val + args.test)
    chosen = {"train": train, "val": rest[: args.val], "test": rest[args.val :]}
    unused = sorted(set(eligible) - set(train) - set(rest))
    chosen["more_train"] = rng.sample(unused, len(unused))  # for fine-tuning a judge: every other instruction, shuffled
    args.out.mkdir(parents=True, exist_ok=True)
    for name, ids in chosen.items():
        order = {example_id: k for k, example_id in enumerate(ids)}
        kept = [r for r in rows if r["example_id"] in order]
        if name == "more_train":  # in its shuffled order, so its first rows are a seeded sample of instructions
            kept.sort(key=lambda r: order[r["example_id"]])
        lines = [json.dumps(r, ensure_ascii=False) for r in kept]
        (args.out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{args.out / name}.jsonl: {len(ids)} instructions, {len(lines)} questions")


if __name__ == "__main__":
    main()
