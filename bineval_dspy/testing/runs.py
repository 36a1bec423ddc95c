"""A large run without an LM, for load tests and benches of what reads runs (``bineval view``, ``report``).

``synthetic_judge_run`` writes `bineval judge` output in its real on-disk format (each row's ``JudgeResult`` under
``bineval``, scored by ``core.scoring``), so what reads it cannot tell it from a judged file, at any size in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

from bineval_dspy.core.schema import Checklist, Question, Verdict
from bineval_dspy.core.scoring import score
from bineval_dspy.judges.rows import JudgeResult

QUESTIONS = [Question(text="Is it short?", dimension="brevity"), Question(text="Is it polite?", dimension="tone"), Question(text="Is it warm?", dimension="tone")]


def synthetic_judge_run(out: Path, rows: int) -> Path:
    """`bineval judge` output of ``rows`` rows at ``out``: row ``k`` (id ``o{k}``) is judged impolite when
    ``k % 7 == 3``, and every other verdict is yes (three questions, two dimensions)."""
    checklist = Checklist(task="Reply.", dimensions=["brevity", "tone"], questions=QUESTIONS)
    cards = {}
    for rude in (False, True):
        answers = ["yes", "no" if rude else "yes", "yes"]
        verdicts = [
            Verdict(question_id=q.id, answer=a, explanation="it is not so" if a == "no" else "it is so", judge="custom/scripted")  # type: ignore[arg-type]
            for q, a in zip(checklist.questions, answers, strict=True)
        ]
        cards[rude] = score(checklist, verdicts)
    with out.open("w", encoding="utf-8") as handle:
        for k in range(rows):
            result = JudgeResult(line=k + 1, complete=True, scorecard=cards[k % 7 == 3])
            handle.write(json.dumps(result.row({"id": f"o{k}", "input": f"Complaint {k}", "output": f"Reply {k}"})) + "\n")
    return out
