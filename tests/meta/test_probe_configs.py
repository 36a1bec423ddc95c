"""The probe configs at a tiny size on the embedded LM: the cross-fitted SummEval metric scores every output of every
document (no constant score, none missing), `bineval calibrate` trains the SummEval program from the same kind of
file, and the shipped config applies a trained program through meta-eval's `probe` key."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bineval_dspy import cli
from tests.meta.fixtures import summeval_files

pytestmark = pytest.mark.embedded
REPO = Path(__file__).resolve().parents[2]
DOCS = tuple(f"d{k}" for k in range(6))


def _config(shipped: Path, tmp_path: Path, **paths: Path) -> Path:
    text = shipped.read_text()
    for key, value in paths.items():
        text = re.sub(rf'^{key} = ".*"$', f'{key} = "{value}"', text, flags=re.M)
    text = re.sub(r"^resamples = \d+$", "resamples = 20", text, flags=re.M)
    path = tmp_path / shipped.name
    path.write_text(text)
    return path


def test_the_probe_configs_run_at_a_tiny_size(tmp_path):
    summaries, articles = summeval_files(tmp_path, DOCS)
    cache = str(tmp_path / "cache")
    cv = _config(REPO / "experiments/meta/summeval_probe_cv.toml", tmp_path, run_dir=tmp_path / "cv", summaries=summaries, articles=articles)
    assert cli.main(["meta-eval", str(cv), "--cache-dir", cache]) == 0
    records = [json.loads(line) for line in (tmp_path / "cv" / "scores.jsonl").read_text().splitlines()]
    probe = [r for r in records if r["method"] == "probe-cv"]
    assert len(probe) == 3 * len(DOCS) and all(None not in r["scores"].values() for r in probe)
    for doc in DOCS:  # no document whose outputs all get one score
        assert len({r["scores"]["coherence"] for r in probe if r["doc_id"] == doc}) > 1

    calibrate = _config(REPO / "experiments/calibrate_summeval.toml", tmp_path, run_dir=tmp_path / "program", summaries=summaries, articles=articles)
    calibrate.write_text(calibrate.read_text().replace("folds = 5", "folds = 2"))
    assert cli.main(["calibrate", str(calibrate), "--cache-dir", cache]) == 0
    assert (tmp_path / "program" / "program.json").is_file() and (tmp_path / "program" / "probe.json").is_file()

    applied = _config(REPO / "experiments/meta/summeval_probe.toml", tmp_path, run_dir=tmp_path / "applied", summaries=summaries, articles=articles)
    text = applied.read_text().replace('"summeval_probe_checklist.json"', f'"{REPO / "experiments/meta/summeval_probe_checklist.json"}"')
    applied.write_text(re.sub(r'^probe = ".*"$', f'probe = "{tmp_path / "program"}"', text, flags=re.M))
    assert cli.main(["meta-eval", str(applied), "--cache-dir", cache]) == 0
    scored = [json.loads(line) for line in (tmp_path / "applied" / "scores.jsonl").read_text().splitlines()]
    assert len(scored) == 3 * len(DOCS) and all(None not in r["scores"].values() for r in scored)
