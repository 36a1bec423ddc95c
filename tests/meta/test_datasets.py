"""Dataset loaders on small files in the published formats: typed rows, one located line per bad row, sampling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy.core.errors import InputError
from bineval_dspy.meta.datasets import (
    MetaRow,
    load_infobench,
    load_qags,
    load_summeval,
    load_topical_chat,
    sample_documents,
)
from tests.conftest import SHARED_DATA
from tests.meta.fixtures import infobench_files, qags_files, summeval_files, topical_chat_file, write_jsonl


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def spoil(path: Path, line: int, change) -> None:
    """Apply ``change`` to the object on ``line`` (1-based) of a JSON Lines file."""
    rows = rows_of(path)
    change(rows[line - 1])
    write_jsonl(path, rows)


# -- SummEval ------------------------------------------------------------------------------------------------------
def test_summeval_rows_join_articles_and_keep_the_scores(tmp_path):
    summaries, articles = summeval_files(tmp_path)
    rows = list(load_summeval(summaries, articles))
    assert len(rows) == 9 and {r.doc_id for r in rows} == {"doc-a", "doc-b", "doc-c"}
    first = rows[0]
    assert first.id == "doc-a/M0" and first.system_id == "M0"
    assert first.input == "Article doc-a about the harbour ." and first.output == "Good: the harbour doc-a reopened after repairs."
    assert first.references == ["the harbour doc-a reopened after repairs", "repairs reopened harbour doc-a"]
    assert first.scores == {"coherence": 5.0, "consistency": 5.0, "fluency": 5.0, "relevance": 5.0}
    release = next(load_summeval(summaries, articles, text="release"))
    assert release.input == "Article doc-a about the harbour." and release.output == "good : the harbour doc-a reopened after repairs ."


@pytest.mark.parametrize(
    "line, change, message",
    [
        (2, lambda r: r["scores"].pop("relevance"), "summaries.jsonl:2: field 'scores.relevance': Field required"),
        (3, lambda r: r["scores"].update(fluency="high"), "summaries.jsonl:3: field 'scores.fluency': Input should be a valid number"),
        (4, lambda r: r.update(doc_id="nowhere"), "summaries.jsonl:4: field 'doc_id': no article 'nowhere' in"),
        (5, lambda r: r.update(id="doc-a/M0"), "summaries.jsonl:5: field 'id': 'doc-a/M0' repeats line 1"),
        (1, lambda r: r.pop("summary_bartscore"), "summaries.jsonl:1: field 'summary_bartscore': Field required"),
        (6, lambda r: r.update(summary=7), "summaries.jsonl:6: field 'summary': Input should be a valid string"),
    ],
)
def test_a_bad_summeval_summary_is_one_located_error(tmp_path, line, change, message):
    summaries, articles = summeval_files(tmp_path)
    spoil(summaries, line, change)
    with pytest.raises(InputError) as error:
        list(load_summeval(summaries, articles))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_bad_summeval_article_or_json_line_is_located(tmp_path):
    summaries, articles = summeval_files(tmp_path)
    spoil(articles, 2, lambda r: r.update(references=[]))
    with pytest.raises(InputError, match=r"articles.jsonl:2: field 'references': List should have at least 1 item"):
        list(load_summeval(summaries, articles))
    summaries, articles = summeval_files(tmp_path)
    summaries.write_text(summaries.read_text() + "{not json\n")
    with pytest.raises(InputError, match=r"summaries.jsonl:10: malformed JSON"):
        list(load_summeval(summaries, articles))


# -- Topical-Chat --------------------------------------------------------------------------------------------------
def test_topical_chat_rows_group_by_dialogue(tmp_path):
    rows = list(load_topical_chat(topical_chat_file(tmp_path)))
    assert [r.doc_id for r in rows] == ["tc-00"] * 3 + ["tc-01"] * 3
    assert rows[0].input == "Dialogue history:\nhi there \n do you like films ?\n\nKnowledge fact:\nstudio ghibli made spirited away"
    assert rows[0].output == "good reply" and rows[0].references == []
    assert set(rows[0].scores) == {"naturalness", "coherence", "engagingness", "groundedness", "understandability", "overall"}


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r.update(dialogue_id="3"), "field 'dialogue_id': Input should be a valid integer"),
        (lambda r: r["scores"].pop("groundedness"), "field 'scores.groundedness': Field required"),
        (lambda r: r.pop("system_output"), "field 'system_output': Field required"),
    ],
)
def test_a_bad_topical_chat_row_is_located(tmp_path, change, message):
    path = topical_chat_file(tmp_path)
    spoil(path, 4, change)
    with pytest.raises(InputError, match="topical_chat.jsonl:4: " + message):
        list(load_topical_chat(path))


# -- QAGS ----------------------------------------------------------------------------------------------------------
def test_qags_consistency_is_the_share_of_majority_yes_sentences(tmp_path):
    mturk, unieval = qags_files(tmp_path)
    raw = list(load_qags(mturk))
    assert [(r.doc_id, r.scores["consistency"]) for r in raw] == [("qags-0", 0.5), ("qags-1", 1.0)]
    assert raw[0].output == "The council met. It met on Friday." and raw[0].references == []
    copy = list(load_qags(unieval, format="unieval"))
    assert [(r.doc_id, r.scores) for r in copy] == [(r.doc_id, r.scores) for r in raw]
    assert copy[0].references == ["The council met on Monday ."]


def test_a_bad_qags_row_is_located(tmp_path):
    mturk, unieval = qags_files(tmp_path)
    spoil(mturk, 2, lambda r: r["summary_sentences"][0]["responses"][1].update(response="maybe"))
    with pytest.raises(InputError, match=r"mturk.jsonl:2: field 'summary_sentences.0.responses.1.response': Input should be 'yes' or 'no'"):
        list(load_qags(mturk))
    spoil(unieval, 2, lambda r: r.update(doc_id=0))
    with pytest.raises(InputError, match=r"unieval_qags.jsonl:2: field 'doc_id': '0' repeats line 1"):
        list(load_qags(unieval, format="unieval"))


# -- InFoBench -----------------------------------------------------------------------------------------------------
def test_infobench_rows_carry_labeled_questions_and_drfr(tmp_path):
    instructions, outputs = infobench_files(tmp_path)
    first, second = load_infobench(instructions, outputs)
    assert first.input == "Write a title." and second.input == "Write a poem.\n\nSome context."
    assert [(q.text, q.dimension, q.label) for q in first.questions] == [("Is it a title?", "Format", "yes"), ("Is it short?", "Content", "no")]
    assert first.scores == {"Format": 1.0, "Content": 0.0, "overall": 0.5}
    assert second.scores == pytest.approx({"Format": 0.5, "Style": 1.0, "overall": 2 / 3})


def test_bad_infobench_rows_are_located(tmp_path):
    instructions, outputs = infobench_files(tmp_path)
    spoil(outputs, 2, lambda r: r.update(eval=[True]))
    with pytest.raises(InputError, match=r"infobench_outputs.jsonl:2: field 'eval': 1 verdicts for 3 decomposed questions"):
        list(load_infobench(instructions, outputs))
    spoil(outputs, 2, lambda r: r.update(id="task_9", eval=[True, True, False]))
    with pytest.raises(InputError, match=r"infobench_outputs.jsonl:2: field 'id': no instruction 'task_9'"):
        list(load_infobench(instructions, outputs))
    spoil(outputs, 1, lambda r: r.update(eval=[1, 0]))
    with pytest.raises(InputError, match=r"infobench_outputs.jsonl:1: field 'eval.0': Input should be a valid boolean"):
        list(load_infobench(instructions, outputs))
    spoil(instructions, 2, lambda r: r.update(question_label=[["Format"]]))
    with pytest.raises(InputError, match=r"infobench.jsonl:2: field 'question_label': needs one non-empty label list"):
        list(load_infobench(instructions, outputs))


# -- sampling ------------------------------------------------------------------------------------------------------
def row(doc: str, k: int) -> MetaRow:
    return MetaRow(id=f"{doc}/{k}", doc_id=doc, system_id=str(k), input="i", output="o")


def test_limit_draws_whole_documents_seeded_in_file_order():
    rows = [row(doc, k) for k in range(3) for doc in ("d1", "d2", "d3", "d4", "d5")]  # documents interleaved
    chosen = sample_documents(rows, 2, seed=7)
    docs = {r.doc_id for r in chosen}
    assert len(docs) == 2 and len(chosen) == 6  # every output of each chosen document
    assert chosen == [r for r in rows if r.doc_id in docs]  # in file order
    assert sample_documents(list(reversed(rows)), 2, seed=7) == list(reversed(chosen))  # file order does not pick
    assert [{r.doc_id for r in sample_documents(rows, 2, seed=s)} for s in range(6)].count(docs) < 6  # the seed does
    assert sample_documents(rows, None, 0) == rows and sample_documents(rows, 9, 0) == rows


# -- the shared data, when present ---------------------------------------------------------------------------------
@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="no shared data beside the checkout")
def test_the_shared_files_load():
    summeval = list(load_summeval(SHARED_DATA / "summeval/summaries.jsonl", SHARED_DATA / "summeval/articles.jsonl"))
    assert len(summeval) == 1280 and len({r.doc_id for r in summeval}) == 80 and all(len(r.references) == 11 for r in summeval)
    assert len(list(load_topical_chat(SHARED_DATA / "topical_chat/topical_chat_usr.jsonl"))) == 360
    for part, n in (("cnndm", 235), ("xsum", 239)):
        raw = list(load_qags(SHARED_DATA / f"qags/mturk_{part}.jsonl"))
        copy = list(load_qags(SHARED_DATA / f"qags/unieval_qags_{part}.jsonl", format="unieval"))
        assert len(raw) == len(copy) == n
        assert [r.scores["consistency"] for r in raw] == pytest.approx([r.scores["consistency"] for r in copy])
    infobench = list(load_infobench(SHARED_DATA / "infobench/infobench.jsonl", SHARED_DATA / "infobench/infobench_gpt4_outputs_gpt4_judgments.jsonl"))
    assert len(infobench) == 500 and sum(len(r.questions) for r in infobench) == 2250
