"""``BinEvalFinetune``: an optimizer that changes weights, not prompts, from the library's exact feedback.

``compile(student, trainset)`` samples a generator on every train prompt and keeps what the checklists say is good
(``sft``: samples passing every code check; ``dpo``: passing/failing pairs a margin apart), or takes a judge's
reference verdicts; trains a LoRA adapter of the embedded model on that with trl, exports it to GGUF and returns
the student running on it. Each stage resumes from ``run_dir/finetune``: samples per prompt, the data set, trainer
checkpoints, the adapter.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import Fingerprint, combined, still_valid
from bineval_dspy.core.jsonio import read_text, write_text_atomic
from bineval_dspy.core.settings import fingerprint_of, listed_digest
from bineval_dspy.finetune.data import PromptSamples, collect, preference_pairs, reference_verdicts, sft_examples
from bineval_dspy.finetune.settings import FinetuneSettings
from bineval_dspy.finetune.train import ADAPTER_FILE, TrainingReport
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.verdict import EXPLANATION_STOP
from bineval_dspy.lm.engine import engine_of
from bineval_dspy.optimize.metric import BinEvalMetric
from bineval_dspy.programs.weights import Weights, attach, weights_of

logger = logging.getLogger(__name__)

FOLDER = "finetune"
TRAINING_KEY_FILE = "training.key"


class SamplesFingerprint(BaseModel):
    """What decides the samples besides the caller's fingerprint (the data, the LM): the program sampled (its
    identity) and how (``sampling``: the sampling settings given, an unset ``enforce`` left out)."""

    program: str
    sampling: dict[str, Any]


class TrainingKey(BaseModel):
    """What decides a trained adapter: the base model, the program, the settings and the training rows."""

    base: str | None
    program: str
    settings: FinetuneSettings
    data: list[dict[str, Any]]


class BinEvalFinetune:
    """Fine-tune ``base`` (an embedded model spec) for a single-predictor program scored by ``metric``, or for a
    ``BinaryJudge`` from its train examples' reference verdicts (no metric needed).

    ``method``, and any ``FinetuneSettings`` field as a keyword, override ``settings``. ``base`` defaults to the
    configured embedded LM (the one the student is sampled from). ``fingerprint`` is what else decided the samples
    (the data, the LM): a resumed run made under another one is refused.
    """

    def __init__(
        self,
        metric: BinEvalMetric | None = None,
        method: str | None = None,
        *,
        run_dir: Path,
        settings: FinetuneSettings | None = None,
        base: str | None = None,
        threads: int = 1,
        fingerprint: Fingerprint | None = None,
        **overrides: Any,
    ) -> None:
        fields = (settings or FinetuneSettings()).model_dump() | overrides | ({"method": method} if method else {})
        self.settings = FinetuneSettings(**fields)
        self.metric = metric
        self.run_dir = Path(run_dir)
        self.base = base
        self.threads = threads
        self.fingerprint = dict(fingerprint or {})
        self.samples: list[PromptSamples] = []
        self.data: list[dict[str, Any]] = []

    @property
    def folder(self) -> Path:
        return self.run_dir / FOLDER

    def compile(self, student: dspy.Module, *, trainset: Sequence[dspy.Example], valset: Sequence[dspy.Example] | None = None) -> dspy.Module:
        """The student on a fine-tuned adapter, or the student itself when nothing made training data (``valset`` is
        not used: no choice is made on held-out data). A generator learns from its own samples, scored by the metric;
        a ``BinaryJudge`` from the ``reference`` verdicts its train examples carry (distillation)."""
        from bineval_dspy.core.fingerprint import sha256_of
        from bineval_dspy.lm.specs import is_embedded, model_file

        self.base = self.base or _configured_base()
        if not is_embedded(self.base):
            raise InputError(f"base {self.base!r}: fine-tuning trains an embedded model (smollm2, gemma3-270m or a .gguf path)")
        if weights_of(student) is not None:
            raise InputError("the student already runs on fine-tuned weights; fine-tune its base program instead")
        settings = self.settings
        state = _program_identity(student)
        base_path = model_file(self.base, "base")
        render = _Renderer(base_path)
        if isinstance(student, BinaryJudge):
            self.data = self._judge_dataset(student, trainset, render)
        else:
            predictor, adapter = self._predictor(student)
            metric = self._metric()
            metric.check_examples(trainset, "train")
            sampling = settings.model_dump(include={"samples", "temperature", "greedy_too", "seed", "enforce"}, exclude_none=True)
            fingerprint = combined(self.fingerprint, fingerprint_of(SamplesFingerprint(program=state, sampling=sampling)))
            self.samples = collect(_sampler(student, settings, trainset), metric, trainset, settings, self.folder, fingerprint, self.threads)
            self.data = self._dataset(predictor, adapter, render)
        self._save_dataset()
        if not self.data:  # nothing to learn from: the start program is the honest result, as an optimizer's
            logger.warning(
                f"finetune: no training data (no train prompt gave {'a passing sample' if settings.method == 'sft' else 'a pair'} "
                f"in {settings.samples} sample(s)); the start program is kept. Sample more, or give more train prompts"
            )
            return student.deepcopy()
        report = self._train(base_path, state, render)
        weights = Weights(
            base=self.base, base_sha256=sha256_of(base_path), adapter=self.folder / ADAPTER_FILE,
            adapter_sha256=report.adapter_sha256, method=settings.method,  # the digest training recorded, never re-read
            training={"settings": settings.model_dump(), **report.model_dump(exclude={"adapter_sha256"})},
        )
        return attach(student.deepcopy(), weights)

    # -- stages ------------------------------------------------------------------------
    def _metric(self) -> BinEvalMetric:
        if self.metric is None:
            raise InputError("a generator learns from its samples' checklist scores: give BinEvalFinetune a metric (bineval_metric(...))")
        return self.metric

    @staticmethod
    def _predictor(student: dspy.Module) -> tuple[dspy.Predict, dspy.Adapter]:
        predictors = student.named_predictors()
        if len(predictors) != 1:
            raise InputError(f"fine-tuning trains a program with one predictor; this one has {len(predictors)}")
        adapter = getattr(student, "adapter", None) or dspy.settings.adapter or dspy.ChatAdapter()
        return predictors[0][1], adapter

    def _dataset(self, predictor: dspy.Predict, adapter: dspy.Adapter, render: _Renderer) -> list[dict[str, Any]]:
        """A generator's rows: its passing samples (sft) or its pairs (dpo), with their provenance."""
        metric = self._metric()
        field = metric.output_field

        def prompt(text: str) -> str:
            return render.prompt(adapter, predictor, {metric.input_field: text})

        def reply(text: str) -> str:
            return render.reply(adapter, predictor, {field: text})

        if self.settings.method == "sft":
            return [
                {"prompt": prompt(ex.prompt), "completion": reply(ex.response), "source": ex.model_dump()}
                for ex in sft_examples(self.samples, self.settings)
            ]
        return [
            {"prompt": prompt(p.prompt), "chosen": reply(p.chosen), "rejected": reply(p.rejected), "source": p.model_dump()}
            for p in preference_pairs(self.samples, self.settings)
        ]

    def _judge_dataset(self, judge: BinaryJudge, examples: Sequence[dspy.Example], render: _Renderer) -> list[dict[str, Any]]:
        """A judge's rows: each question's prompt as the judge sends it, answered with the reference verdict (sft), or
        the reference verdict chosen over the other (dpo). Only the answer is taught: the reply is cut where the judge
        stops reading it, so judges that explain every verdict (which needs a reference explanation) are refused."""
        kind = judge.kind
        if kind.explanations == "all" or kind.scoring != "per_question" or isinstance(judge.answer, dspy.ChainOfThought):
            raise InputError(
                "a distilled judge answers first and learns only its answers: give it explanations = \"none\" (or \"failures\"), "
                "per-question scoring and no chain of thought"
            )
        predictor, adapter = judge.answer, kind.verdict_adapter

        def reply(answer: str) -> str:  # the schema's start, as the verdict-first adapter reads it and the grammar allows
            full = json.dumps({"verdict": {"answer": answer, "explanation": ""}})
            return full[: full.index(EXPLANATION_STOP)].rstrip()

        rows = []
        for example, answer in reference_verdicts(examples, self.settings.balance):
            prompt = render.prompt(adapter, predictor, {name: example[name] for name in ("input", "output", "question")})
            source = {"question_id": str(example.get("question_id", "")), "example_id": str(example.get("example_id", "")), "reference": answer}
            if self.settings.method == "sft":
                rows.append({"prompt": prompt, "completion": reply(answer), "source": source})
            else:
                other = "no" if answer == "yes" else "yes"
                rows.append({"prompt": prompt, "chosen": reply(answer), "rejected": reply(other), "source": source})
        return rows

    def _save_dataset(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.data)
        write_text_atomic(self.folder / f"{self.settings.method}.jsonl", lines)

    def _train(self, base_path: Path, state: str, render: _Renderer) -> TrainingReport:
        """Train unless this very data set and these settings were trained already and their adapter is the file
        the report records (then read the report); a killed training run resumes from its last checkpoint, one made
        from other data starts over."""
        import shutil

        from bineval_dspy.finetune.train import TRAINED_FILE, train_adapter, trained_report

        data = [{k: v for k, v in r.items() if k != "source"} for r in self.data]
        key = listed_digest(TrainingKey(base=self.base, program=state, settings=self.settings, data=data))
        key_file = self.folder / TRAINING_KEY_FILE
        if still_valid(read_text(key_file).strip() if key_file.is_file() else None, key, str(key_file)):
            report = trained_report(self.folder)
            if report is not None:
                logger.info(f"finetune: reusing the adapter trained on these {len(self.data)} example(s)")
                return report
        else:
            for stale in (self.folder / "checkpoints", self.folder / TRAINED_FILE, self.folder / ADAPTER_FILE):
                if stale.is_dir():
                    shutil.rmtree(stale)
                elif stale.exists():
                    stale.unlink()
            write_text_atomic(key_file, key + "\n")
        columns = ("prompt", "completion") if self.settings.method == "sft" else ("prompt", "chosen", "rejected")
        rows = [{c: r[c] for c in columns} for r in self.data if render.fits(r, columns, self.settings.max_length)]
        if len(rows) < len(self.data):  # a truncated example would lose its reply, the one part it teaches
            logger.warning(f"finetune: {len(self.data) - len(rows)} example(s) longer than max_length = {self.settings.max_length} tokens left out")
        if not rows:
            raise InputError(f"no training example fits max_length = {self.settings.max_length} tokens; raise max_length")
        logger.info(f"finetune: training a LoRA adapter ({self.settings.method}) on {len(rows)} example(s)")
        return train_adapter(self.settings.method, rows, base_path, self.settings, self.folder)


class _Renderer:
    """Prompts and replies as the embedded engine sees them: the adapter's messages through the model's chat template."""

    def __init__(self, base_path: Path) -> None:
        from bineval_dspy.finetune.torch_model import load_tokenizer

        self.tokenizer = load_tokenizer(base_path)

    def prompt(self, adapter: dspy.Adapter, predictor: dspy.Predict, inputs: dict[str, Any]) -> str:
        messages = adapter.format(predictor.signature, [dict(d) for d in predictor.demos], inputs)
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

    def reply(self, adapter: dspy.Adapter, predictor: dspy.Predict, outputs: dict[str, Any]) -> str:
        return adapter.format_assistant_message_content(predictor.signature, outputs) + self.tokenizer.eos_token

    def fits(self, row: dict[str, Any], columns: tuple[str, ...], max_length: int) -> bool:
        """Whether the row's prompt with its longest reply fits a training sequence of ``max_length`` tokens."""
        count = lambda text: len(self.tokenizer(text, add_special_tokens=False).input_ids)  # noqa: E731
        return count(row["prompt"]) + max(count(row[c]) for c in columns[1:]) + 1 <= max_length


def _sampler(student: dspy.Module, settings: FinetuneSettings, trainset: Sequence[dspy.Example]) -> dspy.Module:
    """What draws the training samples: the student, or with ``enforce`` a copy decoding under each train prompt's
    constraints (the weights are then trained to produce what only the masks produced)."""
    if settings.enforce is None:
        return student
    from bineval_dspy.programs.generator import Generator, check_steerable
    from bineval_dspy.suites.rows import SuiteRow

    if not isinstance(student, Generator):
        raise InputError("enforce: only a generator program decodes under constraints")
    sampler = student.deepcopy()
    sampler.enforce = settings.enforce
    if settings.enforce == "annotated":
        sampler.annotate([SuiteRow.from_example(ex) for ex in trainset])
    check_steerable(sampler, student.generate.lm or dspy.settings.lm)
    return sampler


def _configured_base() -> str:
    """The configured LM as an embedded spec (its name where it is a bundled model, else its .gguf path)."""
    from bineval_dspy.lm.specs import EMBEDDED, embedded_model_path

    path = engine_of(dspy.settings.lm).model_path
    if path is None:
        raise InputError("fine-tuning trains an embedded model: configure one (bineval_dspy.lm.runtime.configure) or give base=")
    for name in EMBEDDED:
        try:
            if embedded_model_path(name).resolve() == Path(path).resolve():
                return name
        except InputError:  # that wheel is not installed
            continue
    return str(path)


def _program_identity(program: dspy.Module) -> str:
    """The student's instructions and demos: samples of another program are not this one's."""
    from bineval_dspy.programs.state import ProgramFile

    return ProgramFile.of(program).model_dump_json(exclude={"weights"})
