"""Issue 57, item 15: docs/report.png showed runs (runs/optimize_suite/..., runs/meta-summeval) other than those the
command beside it named, and no command made those. `make report-png` now makes the run and the image, and the
run path it screenshots is the one its experiment command writes."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from bineval_dspy.cli.experiment import tiny
from bineval_dspy.experiment.config import load_experiment

ROOT = Path(__file__).resolve().parents[2]


def recipe(target: str) -> tuple[dict[str, str], list[list[str]]]:
    """The Makefile's variables and the commands of ``target``'s recipe, split as the shell would."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^([A-Z_]+) [:?]?= (.*)$", text, flags=re.M))
    body = re.search(rf"^{target}:.*\n((?:\t.*\n?)+)", text, flags=re.M)
    assert body is not None, f"no {target} target"
    expand = lambda line: re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), line)  # noqa: E731
    return variables, [shlex.split(expand(line.strip())) for line in body.group(1).splitlines()]


def test_the_readme_image_is_made_by_the_command_beside_it_from_the_run_that_command_writes():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    image = re.search(r"!\[[^\]]*\]\((docs/report\.png)\)\n\n([^\n]*\n[^\n]*)", readme)
    assert image is not None and "`make report-png`" in image.group(2)
    _, (experiment, screenshot) = recipe("report-png")
    assert experiment[1:3] == ["experiment", "experiments/ifeval.toml"] and "--tiny" in experiment
    arm = experiment[experiment.index("--arm") + 1]
    config = tiny(load_experiment(ROOT / experiment[2]))
    assert arm in [a.name for a in config.arms]
    assert screenshot[1:3] == ["-m", "tests.report.browser"] and screenshot[3] == image.group(1)
    assert (ROOT / screenshot[4]).resolve() == (config.run_dir / "arms" / arm).resolve()  # what the image shows is what the run writes
