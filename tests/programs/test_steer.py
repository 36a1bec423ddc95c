"""Steering settings (``programs.steer``): a constraint they leave out is not enforced (its decision says why, the
spec sent to the engine lacks it), ``only`` keeps the others out, a floor raises ``max_tokens`` by at most
``floor_tokens``, and the settings travel through ``program.json``."""

from __future__ import annotations

import dspy
import pytest
from pydantic import ValidationError

from bineval_dspy.enforce.steering import from_metadata
from bineval_dspy.programs.generator import Generator
from bineval_dspy.programs.state import ProgramFile
from bineval_dspy.programs.steer import SteeringSettings
from tests.programs.test_enforce_generate import steerable

PROMPT = "Write a poem about rain, all in lowercase letters, with at least 300 words."
CASE, WORDS = "change_case:english_lowercase", "length_constraints:number_words"


def statuses(program: Generator) -> dict[str, str]:
    plan = program.plan(PROMPT)
    assert plan is not None
    return {d.instruction_id: d.status for d in plan.decisions}


def sent(lm) -> tuple[object, int]:
    """The steering spec and token limit of the last request."""
    request = lm.engine.requests[-1]
    return from_metadata(request.config.extensions), request.config.max_tokens


def test_an_excluded_kind_is_not_enforced_and_its_decision_says_why():
    lm = steerable(lambda request: "rain")
    with dspy.context(lm=lm):
        assert statuses(Generator(enforce="extracted")) == {CASE: "enforced", WORDS: "enforced"}
        for exclude in (CASE, "change_case", "mask"):  # by id, by family, by how
            program = Generator(steering=SteeringSettings(enforce="extracted", exclude=(exclude,)))
            plan = program.plan(PROMPT)
            assert plan is not None
            case, words = plan.decisions  # in the prompt's order, the one left out in its place
            assert (case.instruction_id, case.status, words.status) == (CASE, "unenforceable", "enforced")
            assert case.reason == f"left to the model by the steering settings (exclude {exclude!r})"
            assert plan.steering.case is None and plan.steering.min_words == 300
            program(prompt=PROMPT)
            steering, _ = sent(lm)
            assert steering is not None and steering.case is None and steering.min_words == 300  # the decoder is not asked


def test_only_keeps_every_other_constraint_out():
    with dspy.context(lm=steerable(lambda request: "rain")):
        program = Generator(steering=SteeringSettings(enforce="extracted", only=("length_constraints",)))
        assert statuses(program) == {CASE: "unenforceable", WORDS: "enforced"}


def test_a_floor_raises_max_tokens_by_at_most_floor_tokens():
    lm = steerable(lambda request: "rain")
    with dspy.context(lm=lm):
        Generator(enforce="extracted", max_tokens=64)(prompt=PROMPT)
        assert sent(lm)[1] == 466  # 300 words need about 466 tokens: the floor raises the limit to that
        Generator(steering=SteeringSettings(enforce="extracted", floor_tokens=32), max_tokens=64)(prompt=PROMPT)
        assert sent(lm)[1] == 96
        Generator(steering=SteeringSettings(enforce="extracted", floor_tokens=0), max_tokens=64)(prompt=PROMPT)
        assert sent(lm)[1] == 64


def test_settings_read_their_shorthand_refuse_limits_without_a_source_and_name_typos():
    assert SteeringSettings.model_validate("none") == SteeringSettings()
    assert SteeringSettings.model_validate("extracted") == SteeringSettings(enforce="extracted")
    with pytest.raises(ValidationError, match="give enforce too"):
        SteeringSettings(exclude=("change_case",))
    with pytest.raises(ValidationError, match="both in only and in exclude"):
        SteeringSettings(enforce="extracted", only=("mask",), exclude=("mask",))
    assert SteeringSettings(enforce="extracted", exclude=("change_case", "forced", CASE)).unknown_name() == ""
    assert SteeringSettings(enforce="extracted", exclude=("chnage_case",)).unknown_name() == "chnage_case"
    label = SteeringSettings(enforce="extracted", exclude=("change_case",), floor_tokens=64).label
    assert label == "extracted, without change_case, floor +64"


def test_the_settings_travel_through_program_json(tmp_path):
    settings = SteeringSettings(enforce="extracted", exclude=("change_case",), floor_tokens=16)
    ProgramFile.of(Generator("Answer.", steering=settings)).save(tmp_path / "program.json")
    from bineval_dspy.programs.state import load_program

    built = load_program(tmp_path / "program.json", "generator").build()
    assert isinstance(built, Generator) and built.steering == settings and built.enforce == "extracted"
    plain = ProgramFile.of(Generator("Answer.", enforce="annotated")).model_dump(exclude_none=True)
    assert "steering" not in plain and plain["enforce"] == "annotated"  # a program without limits is written as before
