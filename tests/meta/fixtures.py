"""Tiny data files in the shared datasets' published formats (SOURCES.md), and a scripted LM that judges them."""

from __future__ import annotations

import json
from pathlib import Path

from dspy.lm15 import Request

from bineval_dspy.testing import prompt_fields, verdict_json

# Three articles, three systems each; the human scores order the summaries good > fair > bad on every dimension.
QUALITY = {"good": 5.0, "fair": 3.0, "bad": 1.0}
DOCS = ("doc-a", "doc-b", "doc-c")


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def summeval_files(folder: Path, docs: tuple[str, ...] = DOCS) -> tuple[Path, Path]:
    """``summaries.jsonl`` and ``articles.jsonl``: per document a good, a fair and a bad summary."""
    articles = [
        {
            "doc_id": doc,
            "source": f"Article {doc} about the harbour.",
            "source_bartscore": f"Article {doc} about the harbour .",
            "reference": f"the harbour {doc} reopened",
            "references": [f"the harbour {doc} reopened after repairs", f"repairs reopened harbour {doc}"],
        }
        for doc in docs
    ]
    summaries = []
    for doc in docs:
        for system, (quality, value) in enumerate(QUALITY.items()):
            words = {"good": f"the harbour {doc} reopened after repairs", "fair": f"the harbour {doc} reopened", "bad": "a cat sat"}
            summaries.append(
                {
                    "id": f"{doc}/M{system}",
                    "doc_id": doc,
                    "system_id": f"M{system}",
                    "summary": f"{quality} : {words[quality]} .",
                    "summary_bartscore": f"{quality.capitalize()}: {words[quality]}.",
                    "scores": {"coherence": value, "consistency": value, "fluency": value, "relevance": value},
                }
            )
    return write_jsonl(folder / "summaries.jsonl", summaries), write_jsonl(folder / "articles.jsonl", articles)


def topical_chat_file(folder: Path) -> Path:
    rows = []
    for dialogue in range(2):
        for system, quality in enumerate(QUALITY):
            value = QUALITY[quality]
            rows.append(
                {
                    "id": f"tc-{dialogue:02d}/S{system}",
                    "dialogue_id": dialogue,
                    "system_id": f"S{system}",
                    "source": "hi there \n do you like films ?\n\n",
                    "context": "studio ghibli made spirited away",
                    "system_output": f"{quality} reply ",
                    "scores": {
                        "understandability": 1.0,
                        "naturalness": value / 5 * 3,
                        "coherence": value / 5 * 3,
                        "engagingness": value / 5 * 3,
                        "groundedness": value / 5,
                        "overall": value,
                    },
                }
            )
    return write_jsonl(folder / "topical_chat.jsonl", rows)


def vote(*answers: str) -> list[dict]:
    return [{"worker_id": k, "response": a} for k, a in enumerate(answers)]


def qags_files(folder: Path) -> tuple[Path, Path]:
    """``mturk`` and ``unieval`` copies of the same two items."""
    mturk = [
        {
            "article": "The council met on Monday.",
            "summary_sentences": [
                {"sentence": "The council met.", "responses": vote("yes", "yes", "no")},
                {"sentence": "It met on Friday.", "responses": vote("no", "no", "yes")},
            ],
        },
        {"article": "Rain fell all week.", "summary_sentences": [{"sentence": "It rained.", "responses": vote("yes", "yes", "yes")}]},
    ]
    unieval = [
        {"doc_id": 0, "system_id": 0, "source": "The council met on Monday .", "reference": "The council met on Monday .",
         "system_output": "The council met . It met on Friday .", "scores": {"consistency": 0.5}},
        {"doc_id": 1, "system_id": 0, "source": "Rain fell all week .", "reference": "Rain fell all week .",
         "system_output": "It rained .", "scores": {"consistency": 1.0}},
    ]
    return write_jsonl(folder / "mturk.jsonl", mturk), write_jsonl(folder / "unieval_qags.jsonl", unieval)


def infobench_files(folder: Path) -> tuple[Path, Path]:
    instructions = [
        {"id": "task_1", "input": "", "category": "Quora", "instruction": "Write a title.", "subset": "Easy_set",
         "decomposed_questions": ["Is it a title?", "Is it short?"], "question_label": [["Format"], ["Content", "Style"]]},
        {"id": "task_2", "input": "Some context.", "category": "Quora", "instruction": "Write a poem.", "subset": "Hard_set",
         "decomposed_questions": ["Is it a poem?", "Does it rhyme?", "Is it a poem?"], "question_label": [["Format"], ["Style"], ["Format"]]},
    ]
    outputs = [
        {"id": "task_1", "output": "A good title", "eval": [True, False]},
        {"id": "task_2", "output": "roses are red", "eval": [True, True, False]},
    ]
    return write_jsonl(folder / "infobench.jsonl", instructions), write_jsonl(folder / "infobench_outputs.jsonl", outputs)


CHECKLIST = {
    "task": "Summarize the article.",
    "dimensions": ["coherence", "consistency", "fluency", "relevance"],
    "questions": [
        {"text": "Is the summary well organized?", "dimension": "coherence"},
        {"text": "Is every fact supported by the article?", "dimension": "consistency"},
        {"text": "Does it mention the harbour?", "dimension": "consistency"},
        {"text": "Is the summary fluent?", "dimension": "fluency"},
        {"text": "Does it keep the main point?", "dimension": "relevance"},
    ],
}


def field_of(request: Request, name: str) -> str:
    """One input field of a DSPy prompt."""
    return prompt_fields(request)[name]


def quality_of(request: Request) -> str:
    output = field_of(request, "output").lower()
    return next(q for q in QUALITY if q in output)


def judge_script(request: Request) -> str:
    """Answers like a sensible judge: yes for a good summary, yes on 'harbour' questions for a fair one, a 1-5 score
    that follows the quality, and a BinEval checklist when asked to write one."""
    asked = prompt_fields(request)
    if "question" in asked:
        quality, question = quality_of(request), field_of(request, "question")
        return verdict_json("yes" if quality == "good" or (quality == "fair" and "harbour" in question) else "no")
    if "dimension" in asked:
        return json.dumps({"score": {"good": 5, "fair": 3, "bad": 2}[quality_of(request)]})
    if "requirement" in asked:
        requirement = field_of(request, "requirement")
        return json.dumps({"questions": {"items": [{"question": f"Does the summary meet: {requirement}?", "no_example": "It does not meet it at all."}]}})
    items = [{"requirement": f"The summary is good on {dim}.", "dimension": dim} for dim in ("coherence", "consistency", "fluency", "relevance")]
    return json.dumps({"requirements": {"items": items}})
