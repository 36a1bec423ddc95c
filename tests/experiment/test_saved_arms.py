"""An optimizing arm's saved program (``arm.json``) is reused while the settings that made it are the same; one made
with other settings is optimized again, and one line names what changed. Files holding the older digest still load."""

from __future__ import annotations

from bineval_dspy.core.settings import listed_digest
from bineval_dspy.experiment import arms
from bineval_dspy.experiment.params import GepaArm, GepaFingerprint
from bineval_dspy.lm.usage import Cost
from bineval_dspy.programs.generator import Generator
from bineval_dspy.programs.state import ProgramFile, instructions_of

FACTS = GepaFingerprint(experiment="E", arm=GepaArm(name="gepa", max_metric_calls=20), budget=20)


def optimizing(runs: list[str]):
    def optimize() -> Generator:
        runs.append(f"Try {len(runs) + 1}.")
        return Generator(instructions=runs[-1])

    return optimize


def saved_instructions(program) -> str:
    return next(iter(instructions_of(program).values()))


def test_a_saved_arm_is_reused_under_the_same_settings_and_redone_in_one_line_under_others(tmp_path, capsys):
    runs: list[str] = []
    arms._saved(tmp_path, FACTS, Generator(), optimizing(runs))
    program, _ = arms._saved(tmp_path, FACTS, Generator(), optimizing(runs))
    assert runs == ["Try 1."] and saved_instructions(program) == "Try 1."
    assert capsys.readouterr().err == ""
    program, _ = arms._saved(tmp_path, FACTS.model_copy(update={"budget": 30}), Generator(), optimizing(runs))
    assert runs == ["Try 1.", "Try 2."] and saved_instructions(program) == "Try 2."
    said = f"{tmp_path / arms.ARM_FILE}: made with other settings (budget: '20' -> '30'); redoing it"
    assert "".join(capsys.readouterr().err.split()) == "".join(said.split())  # the console wraps a long path anywhere


def test_an_arm_json_holding_the_older_digest_is_still_reused(tmp_path):
    state = ProgramFile.of(Generator(instructions="Saved before."))
    saved = arms.SavedArm(fingerprint=listed_digest(FACTS), program=state, usage=Cost())
    (tmp_path / arms.ARM_FILE).write_text(saved.model_dump_json())
    runs: list[str] = []
    program, _ = arms._saved(tmp_path, FACTS, Generator(), optimizing(runs))
    assert runs == [] and saved_instructions(program) == "Saved before."
    arms._saved(tmp_path, FACTS.model_copy(update={"budget": 30}), Generator(), optimizing(runs))
    assert runs == ["Try 1."]
