"""No class name means one thing where a run is written and another where it is read: the reading side (``report/``)
names its report objects apart from the runs, results and records the rest of the package writes (``JudgeRun`` once
named both ``programs.judge_file``'s run and the report's reading of its output)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "bineval_dspy"


def classes(package: Path) -> dict[str, dict[str, list[str]]]:
    """Every class the package defines, by side (``reading``: under ``report/``; ``writing``: anywhere else), then by
    name, with the modules that define it."""
    sides: dict[str, dict[str, list[str]]] = {"reading": {}, "writing": {}}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        side = sides["reading" if relative.parts[0] == "report" else "writing"]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                side.setdefault(node.name, []).append(str(relative))
    return sides


def shared_names(package: Path) -> list[str]:
    sides = classes(package)
    return [f"{name}: {sides['reading'][name]} and {sides['writing'][name]}" for name in sorted(sides["reading"].keys() & sides["writing"].keys())]


def test_no_class_name_is_both_written_and_read():
    assert shared_names(PACKAGE) == []


def test_a_name_on_both_sides_is_found(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "programs").mkdir()
    (tmp_path / "report" / "runs.py").write_text("class JudgeRun:\n    pass\n")
    (tmp_path / "programs" / "judge_file.py").write_text("from dataclasses import dataclass\n\n@dataclass\nclass JudgeRun:\n    kind: str = 'judge'\n")
    assert shared_names(tmp_path) == ["JudgeRun: ['report/runs.py'] and ['programs/judge_file.py']"]
