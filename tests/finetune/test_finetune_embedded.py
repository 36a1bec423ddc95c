"""Fine-tuning end to end on the embedded model at a tiny size: samples, pairs, one training step, the GGUF adapter,
``program.json``, and the commands that load it (no mocks: the real LM, verifiers, trainer and engine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli

pytestmark = pytest.mark.embedded

SHORT = {"instruction_id_list": ["length_constraints:number_words"], "kwargs": [{"relation": "less than", "num_words": 6}]}
PROMPTS = [
    "What color is the sky? Answer in one word.",
    "Name a fruit. Answer in one word.",
    "What is two plus two? Answer with a number.",
    "Name an animal. Answer in one word.",
    "What is the opposite of hot? Answer in one word.",
]


def _suite_and_config(tmp_path: Path, data: str, training: str) -> tuple[Path, Path]:
    """The five short-answer prompts as a suite, and a finetune config over it (sft, two hot samples a prompt)."""
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"key": f"k{i}", "prompt": p, **SHORT}) + "\n" for i, p in enumerate(PROMPTS)))
    config = tmp_path / "ft.toml"
    config.write_text(
        f'mode = "self"\nlm = "smollm2"\nrun_dir = "run"\n[data]\nsuite = "suite.jsonl"\n{data}\n'
        f'[finetune]\nmethod = "sft"\nsamples = 2\ntemperature = 1.2\n{training}\n'
    )
    return suite, config


def test_dpo_compile_trains_an_adapter_the_student_then_runs_on(tmp_path):
    import dspy

    from bineval_dspy.checklists.hybrid import hybrid_checklist
    from bineval_dspy.finetune import BinEvalFinetune
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.lm.runtime import configure
    from bineval_dspy.optimize.metric import bineval_metric
    from bineval_dspy.programs.generator import Generator
    from bineval_dspy.programs.state import ProgramFile
    from bineval_dspy.programs.weights import weights_of
    from bineval_dspy.suites.rows import SuiteRow

    configure("smollm2", tmp_path / "cache")
    train = [SuiteRow(key=f"k{i}", prompt=p, **SHORT).to_example() for i, p in enumerate(PROMPTS[:3])]
    metric = bineval_metric(BinaryJudge(), lambda ex: hybrid_checklist(SuiteRow.from_example(ex), n_llm_questions=(0, 0)))
    tuner = BinEvalFinetune(metric, "dpo", run_dir=tmp_path, samples=4, temperature=1.2, max_steps=1, batch_size=2, margin=0.5)
    program = tuner.compile(Generator(max_tokens=24), trainset=train)

    pairs = [json.loads(line) for line in (tmp_path / "finetune" / "dpo.jsonl").read_text().splitlines()]
    assert pairs and all(p["source"]["chosen_score"] - p["source"]["rejected_score"] >= 0.5 for p in pairs)
    assert all(p["source"]["rejected_failed"] for p in pairs)  # each pair says what its rejected sample failed
    weights = weights_of(program)
    assert weights is not None and weights.method == "dpo" and weights.training["steps"] == 1
    assert program.generate.lm.model.endswith(f"+lora-sha256-{weights.adapter_sha256[:12]}")
    assert program(prompt=PROMPTS[3]).response.strip()  # it runs on the adapted engine
    ProgramFile.of(program).save(tmp_path / "program.json")
    assert json.loads((tmp_path / "program.json").read_text())["weights"]["adapter"] == "finetune/adapter.gguf"
    assert dspy.settings.lm.model != program.generate.lm.model  # the configured LM is untouched


def test_finetune_command_resumes_a_killed_training_and_writes_a_program_generate_runs(tmp_path, capsys):
    """Killed after its first checkpoint, rerun: it resumes there; its program runs in ``generate``; a rerun reuses
    every stage; an adapter that is not the recorded one is refused in one line."""
    import os
    import signal
    import subprocess
    import sys
    import time

    suite, config = _suite_and_config(
        tmp_path, "train = 3\nval = 0\ntest = 1\n[program]\nmax_tokens = 16", "max_steps = 6\nbatch_size = 1\nsave_steps = 2"
    )
    cache = ["--cache-dir", str(tmp_path / "cache")]
    run = tmp_path / "run"
    argv = [sys.executable, "-m", "bineval_dspy.cli", "finetune", str(config), *cache]
    first = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    checkpoints = run / "arms" / "finetuned" / "finetune" / "checkpoints"
    while not list(checkpoints.glob("checkpoint-*/trainer_state.json")) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert list(checkpoints.glob("checkpoint-*/trainer_state.json")), "no checkpoint was written before the kill"
    assert cli.main(["finetune", str(config), *cache]) == 0
    assert "resuming training from checkpoint-" in capsys.readouterr().err
    results = json.loads((run / "results.json").read_text())
    assert [arm["name"] for arm in results["arms"]] == ["start", "finetuned"] and results["arms"][1]["test"]["items"] == 1
    assert results["arms"][1]["program"]["weights"]["adapter"] == "arms/finetuned/finetune/adapter.gguf"  # the results can move
    weights = json.loads((run / "program.json").read_text())["weights"]
    assert weights["adapter"] == "arms/finetuned/finetune/adapter.gguf" and weights["training"]["steps"] == 6
    stages = run / "arms" / "finetuned" / "finetune"
    assert (stages / "samples.jsonl").is_file() and (stages / "sft.jsonl").is_file()
    assert cli.main(["finetune", str(config), *cache]) == 0  # a rerun resumes every stage
    assert "reusing the adapter" in capsys.readouterr().err

    out = tmp_path / "responses.jsonl"
    assert cli.main(["generate", "--suite", str(suite), "--program", str(run), "--split", "test", "-o", str(out), *cache]) == 0
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    fingerprint = json.loads((tmp_path / "responses.jsonl.run.json").read_text())["fingerprint"]
    assert record["response"].strip() and len(fingerprint["weights"]) == 64

    adapter = stages / "adapter.gguf"
    adapter.write_bytes(adapter.read_bytes() + b"\0")
    capsys.readouterr()
    assert cli.main(["generate", "--suite", str(suite), "--program", str(run), "-o", str(tmp_path / "b.jsonl"), *cache]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "field 'weights.adapter'" in error and "sha256 differs" in error


# what transformers, datasets, peft and llama.cpp wrote on a finetune run's stderr before issue 47 (FutureWarnings
# and "Could not find a config file" UserWarnings with their source lines, the GGUF reader's and "Loading weights"
# bars, the datasets bars "Tokenizing train dataset ..."), and llama.cpp's log lines
LIBRARY_NOISE = ("Warning", "warnings.warn", "site-packages", "Converting and de-quantizing", "Loading weights",
                 "examples/s]", "train dataset", "llama_", "ggml_", "Traceback")


def test_a_tiny_finetune_without_val_runs_and_says_only_its_own_progress_and_notes_on_stderr(tmp_path):
    """Issue 47: `val = 0` (no val loop), `--tiny` as experiment has it, and stderr quiet from the backends."""
    import subprocess
    import sys

    _, config = _suite_and_config(tmp_path, "train = 3\nval = 0\ntest = 1", "max_steps = 1\nbatch_size = 1")
    argv = [sys.executable, "-m", "bineval_dspy.cli", "finetune", str(config), "--tiny", "--cache-dir", str(tmp_path / "cache")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    noise = [line for line in done.stderr.splitlines() if any(mark in line for mark in LIBRARY_NOISE)]
    assert not noise, "\n".join(noise)
    assert "finetune: training a LoRA adapter" in done.stderr and "wrote program.json" in done.stderr  # its own notes stay
    results = json.loads((tmp_path / "run-tiny" / "results.json").read_text())
    assert results["splits"] == {"train": 2, "val": 0, "test": 1}  # --tiny's sizes, in RUN_DIR-tiny


JUDGED = [
    ("Name a fruit.", "Apple.", "Does the output name a fruit?", "yes"),
    ("Name a fruit.", "Carrot.", "Does the output name a fruit?", "no"),
    ("Write one sentence.", "The sun is warm.", "Is the output one sentence?", "yes"),
    ("Write one sentence.", "Hi. Bye. See you.", "Is the output one sentence?", "no"),
]


def _judge_examples(path: Path | None = None) -> list:
    import dspy

    rows = [
        {"input": i, "output": o, "question": q, "dimension": "task", "question_id": f"e{k}#0", "example_id": f"e{k}", "reference": r}
        for k, (i, o, q, r) in enumerate(JUDGED)
    ]
    if path is not None:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [dspy.Example(**r).with_inputs("input", "output", "question") for r in rows]


def test_a_distilled_judge_learns_the_prompt_it_is_asked_and_judge_program_runs_it(tmp_path, capsys):
    from bineval_dspy.core.schema import Checklist, Question
    from bineval_dspy.finetune import BinEvalFinetune
    from bineval_dspy.finetune.torch_model import load_tokenizer
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.lm.runtime import configure
    from bineval_dspy.lm.specs import embedded_model_path
    from bineval_dspy.programs.state import ProgramFile
    from bineval_dspy.programs.weights import weights_of

    lm = configure("smollm2", tmp_path / "cache")
    examples = _judge_examples(tmp_path / "examples.jsonl")
    judge = BinaryJudge(explanations="none", probability=True)
    first = examples[0]
    checklist = Checklist(task="t", dimensions=["task"], questions=[Question(id="q", text=first.question, dimension="task")])
    judge(input=first.input, output=first.output, checklist=checklist)
    sent = load_tokenizer(embedded_model_path()).apply_chat_template(lm.history[-1]["messages"], tokenize=False, add_generation_prompt=True)

    with pytest.raises(Exception, match="explanations"):
        BinEvalFinetune(run_dir=tmp_path / "explained", max_steps=1).compile(BinaryJudge(), trainset=examples)
    tuner = BinEvalFinetune(method="sft", run_dir=tmp_path / "run", max_steps=1, batch_size=2, max_length=1024)
    program = tuner.compile(judge, trainset=examples)
    assert tuner.data[0]["prompt"] == sent  # trained on exactly the prompt the judge sends
    assert [row["completion"] for row in tuner.data[:2]] == ['{"verdict": {"answer": "yes",', '{"verdict": {"answer": "no",']
    assert weights_of(program) is not None and isinstance(program, BinaryJudge)
    card = program(input=first.input, output=first.output, checklist=checklist)
    assert card.verdicts[0].answer in ("yes", "no") and card.verdicts[0].p_yes is not None
    assert "+lora-sha256-" in card.verdicts[0].judge  # answered by the adapted model

    ProgramFile.of(program).save(tmp_path / "run" / "program.json")
    (tmp_path / "checklist.json").write_text(checklist.model_dump_json())
    data = tmp_path / "outputs.jsonl"
    data.write_text(json.dumps({"input": first.input, "output": first.output}) + "\n")
    out = tmp_path / "judged.jsonl"
    argv = ["judge", "--checklist", str(tmp_path / "checklist.json"), "--data", str(data), "--program", str(tmp_path / "run"), "-o", str(out)]
    assert cli.main([*argv, "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "+lora-sha256-" in out.read_text()
