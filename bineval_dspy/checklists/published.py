"""Published checklist methods as template writers (docs/checklist_methods.md: what each takes, how it differs).

- ``checkeval``: deductive, from dimension definitions: seed questions, then elaboration and diversification, then
  a filter (Lee et al., EMNLP 2025).
- ``rocketeval``: from the instruction and a reference answer (Wei et al., ICLR 2025); judge it with P(yes).
- ``rlcf``: weighted requirements (importance 1-100) from the instruction alone (RLCF, direct).
- ``rlcf-contrastive``: weighted requirements that tell sampled candidate responses apart (RLCF, contrastive).
- ``feedback``: corpus-level, inductive: criteria from a set of observations or reviewer feedback, a few notes a
  call, near-duplicates merged by the shared embedding index (Feedback-to-Checklists).
"""

from __future__ import annotations

from bineval_dspy.checklists.templates import TemplateStep, WriterTemplate

_CHECKEVAL_SEED = """Task of the outputs: {task}

Evaluation dimension: {dimension}. Definition: {definition}

Write seed questions for this dimension: key yes/no questions, each checking one aspect of the definition, that an
evaluator answers about one output. "Yes" must mean the output is good in that aspect."""

_CHECKEVAL_EXPAND = """Task of the outputs: {task}

Evaluation dimension: {dimension}. Definition: {definition}

Seed questions so far:
{questions}

Write new questions for this dimension: elaborate the seed questions into more specific sub-questions, and
diversify them with aspects of the definition they miss. Do not repeat a listed question. "Yes" means good."""

_CHECKEVAL_FILTER = """Evaluation dimension: {dimension}. Definition: {definition}

Questions:
{questions}

Keep the questions that are about this dimension as defined, can be answered yes or no from one output alone,
where "yes" means good, and do not repeat an earlier question. Give the numbers of the questions to keep."""

_ROCKETEVAL = """Instruction:
{task}

Reference answer:
{reference}

Write a checklist of yes/no questions to judge a response to the instruction: each question checks one thing the
reference answer gets right that a good response must also get right, or one requirement of the instruction.
"Yes" means the response meets it. Number them from the most important."""

_RLCF_DIRECT = """Instruction:
{task}

Write the requirements a response to this instruction must meet, as yes/no questions ("yes": met), each with an
importance weight from 1 (a minor nicety) to 100 (essential: a response that fails it fails the instruction)."""

_RLCF_CONTRASTIVE = """Instruction:
{task}

Candidate responses:
{candidates}

Compare the candidate responses. Write yes/no questions ("yes": met) for the requirements of the instruction that
some candidates meet and others miss, the mistakes that separate a good response from a bad one, each with an
importance weight from 1 (minor) to 100 (essential)."""

_FEEDBACK = """Task of the outputs: {task}

Feedback that reviewers wrote about outputs of this task:
{observations}

Turn the feedback into general evaluation criteria: yes/no questions that check any output of the task for the
qualities the reviewers praise or miss ("yes": the output is good in that respect). Each criterion checks one
thing; leave out remarks about a single output only. Name the dimension each question belongs to, from: {dimensions}."""

CHECKEVAL = WriterTemplate(
    name="checkeval",
    description="deductive: seed questions from each dimension's definition, elaborated and diversified, then filtered",
    steps=[
        TemplateStep(name="seed", prompt=_CHECKEVAL_SEED, per_dimension=True, min_questions=2, max_questions=4),
        TemplateStep(name="expand", prompt=_CHECKEVAL_EXPAND, per_dimension=True, max_questions=4),
        TemplateStep(name="filter", prompt=_CHECKEVAL_FILTER, schema="keep", per_dimension=True),
    ],
)
ROCKETEVAL = WriterTemplate(
    name="rocketeval",
    description="instruction + reference answer -> binary questions; judge with `probability` (P(yes) confidence)",
    steps=[TemplateStep(prompt=_ROCKETEVAL, min_questions=2, max_questions=10)],
)
RLCF = WriterTemplate(
    name="rlcf",
    description="RLCF direct: weighted requirements (1-100) from the instruction",
    steps=[TemplateStep(prompt=_RLCF_DIRECT, schema="weighted", min_questions=2, max_questions=8)],
)
RLCF_CONTRASTIVE = WriterTemplate(
    name="rlcf-contrastive",
    description="RLCF contrastive: weighted requirements that separate sampled candidate responses",
    steps=[TemplateStep(prompt=_RLCF_CONTRASTIVE, schema="weighted", min_questions=2, max_questions=8, max_tokens=800)],
)
FEEDBACK = WriterTemplate(
    name="feedback",
    description="inductive, corpus-level: criteria from reviewer feedback, a few notes a call, near-duplicates merged",
    steps=[TemplateStep(prompt=_FEEDBACK, schema="categorized", observations_per_call=8, max_questions=6)],
    merge_threshold=0.8,
)
PUBLISHED = (CHECKEVAL, ROCKETEVAL, RLCF, RLCF_CONTRASTIVE, FEEDBACK)
