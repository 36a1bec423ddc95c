"""Each arm kind makes the program an experiment scores on test; optimizing arms resume from their own folder.

An arm returns the program and what its optimization cost (generation-time arms spend at test time instead,
which the runner measures for every arm alike). Everything an arm decides is kept under ``RUN_DIR/arms/NAME``:
the optimizer's audit and program, GEPA's program and log, so a rerun redoes nothing that finished.

Every kind is one ``ArmKind`` in ``ARMS``: its settings model (``experiment.params``), how it runs, what it costs at
most (``--dry-run``), its smoke-test size (``--tiny``) (those two in ``experiment.sizes``), the mode it needs and the splits it learns from. Config
parsing, the plan, the runner and the command line read the entry; a new kind is a model and an entry.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

import dspy
from pydantic import BaseModel, Field

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import Fingerprint, combined, digest, still_valid
from bineval_dspy.core.jsonio import load_model, write_text_atomic
from bineval_dspy.core.registry import Registry
from bineval_dspy.core.schema import Checklist
from bineval_dspy.core.settings import fingerprint_of, listed_digest
from bineval_dspy.enforce.plan import Source
from bineval_dspy.experiment import sizes
from bineval_dspy.experiment.params import (
    Arm,
    ArmFingerprint,
    ArmLM,
    BestOfArm,
    BinEvalArm,
    FinetuneArm,
    FinetuneFingerprint,
    GepaArm,
    GepaFingerprint,
    OfArm,
    OwnLMArm,
    ProbeArm,
    ProbeFingerprint,
    ProgramArm,
    RefineArm,
    SelectionDemosArm,
    StartArm,
)
from bineval_dspy.judges.base import Judge
from bineval_dspy.lm.budget import metered_map
from bineval_dspy.lm.runtime import LMOptions, checked_lm, env_key, lm_identity
from bineval_dspy.lm.usage import Cost, measuring
from bineval_dspy.optimize.config import RunConfig, build, run_fingerprint, splits_of
from bineval_dspy.optimize.feedback import FeedbackSource
from bineval_dspy.optimize.proposers import DemoProposer
from bineval_dspy.programs.generator import Generator, check_steerable
from bineval_dspy.programs.records import Selection, SelectionStats
from bineval_dspy.programs.refine import ChecklistBestOfN, SelfRefine
from bineval_dspy.programs.state import PROGRAM_FILE, ProgramFile, load_program
from bineval_dspy.suites.rows import SuiteRow

ARM_FILE = "arm.json"
LMFactory = Callable[[ArmLM, str], dspy.LM]  # an arm's own LM from its table and where it was given


def arm_key(table: ArmLM, source: str) -> str | None:
    """The API key of an arm's own servers: read from the variable its table names, None when it names none."""
    return env_key(table.api_key_env, f"{source} {table.spec}: api_key_env") if table.api_key_env else None


def table_lm(table: ArmLM, source: str) -> dspy.LM:
    """An arm's own LM as its table describes it, refused in one line when it cannot work."""
    options = LMOptions(spec=table.spec, api_base=table.api_base, replicas=tuple(table.replicas), api_key=arm_key(table, source), source=source)
    return checked_lm(options)


@dataclass
class ArmContext:
    """What every arm works from: the experiment's run description, its student and splits, its feedback and LM;
    ``lm_for`` makes an arm's own LM from its table (the CLI's adds the command line's options)."""

    config: RunConfig  # the experiment's (its arms are the runner's)
    student: dspy.Module
    train: list[dspy.Example]
    val: list[dspy.Example]
    test: list[dspy.Example]
    feedback: FeedbackSource
    lm: dspy.LM
    optimization_calls: dict[str, int]  # arms done so far: their optimization's LM calls (for GEPA's budget)
    programs: dict[str, dspy.Module] = field(default_factory=dict)  # arms done so far: their programs (Best-of-N's ``of``)
    lm_for: LMFactory = table_lm
    own_lms: dict[str, dspy.LM] = field(default_factory=dict)  # arm name -> its own LM, made once

    def folder(self, name: str) -> Path:
        return self.config.run_dir / "arms" / name

    def own_lm(self, arm: OwnLMArm) -> dspy.LM | None:
        """The arm's own LM (None: it runs on the config's), made at its first use."""
        if arm.lm is None:
            return None
        if arm.name not in self.own_lms:
            self.own_lms[arm.name] = self.lm_for(arm.lm, f"{self.config.source}: arm {arm.name!r} field 'lm' =")
        return self.own_lms[arm.name]


def on_own_lm(program: dspy.Module, arm: OwnLMArm, context: ArmContext) -> dspy.Module:
    """``program`` (a copy) running on the arm's own LM; itself when the arm names none."""
    lm = context.own_lm(arm)
    if lm is None:
        return program
    program = program.deepcopy()
    program.set_lm(lm)
    return program


class SavedArm(BaseModel):
    """An optimizing arm's outcome, kept so a rerun with the same settings does not optimize again."""

    fingerprint: Fingerprint | str  # field by field; older files hold one digest of it (``listed_digest``), still read
    program: ProgramFile
    usage: Cost


def start_arm(arm: StartArm, context: ArmContext) -> tuple[dspy.Module, Cost]:
    """The program as the config (and the arm's own ``program`` settings) describe it."""
    if arm.of is not None:
        return enforcing(on_own_lm(context.programs[arm.of], arm, context), arm.enforce, context), Cost()
    if not arm.program:
        return enforcing(on_own_lm(context.student.deepcopy(), arm, context), arm.enforce, context), Cost()
    student, _, _ = build(arm.run_config(context.config, context.folder(arm.name)))
    return enforcing(on_own_lm(student, arm, context), arm.enforce, context), Cost()


def bineval_arm(arm: BinEvalArm, context: ArmContext) -> tuple[dspy.Module, Cost]:
    """``BinEvalOptimizer`` on the experiment's splits, its settings over the config's; resumes from its audit."""
    config = context.config
    run = arm.run_config(config, context.folder(arm.name))
    student, optimizer, splits = build(run, progress=True, fingerprint=fingerprint_of(ArmFingerprint(experiment=_fingerprint(context), arm=arm)))
    splits_of(run, splits).save(run.run_dir)  # beside program.json: `generate --program ... --split test` finds it
    program = optimizer.compile(student, trainset=context.train, valset=context.val)
    assert optimizer.audit is not None
    return program, optimizer.audit.usage


def selection_demos_arm(arm: SelectionDemosArm, context: ArmContext) -> tuple[dspy.Module, Cost]:
    """Best-of-N on train; the samples that pass every check become the demonstrations the optimizer may try."""
    metric = getattr(context.feedback, "metric", None)
    judge: Judge = metric.judge  # type: ignore[union-attr]

    def passing(example: dspy.Example) -> dict[str, Any] | None:
        checklist = metric.checklist_for(example)  # type: ignore[union-attr]
        pick = ChecklistBestOfN(context.student, judge, arm.n, arm.temperature)(prompt=example.prompt, checklist=checklist)
        card = pick.scorecard
        return {"prompt": example.prompt, "response": pick.response} if card.complete and card.overall == 1.0 else None

    with measuring() as measurement:
        pool = [d for d, _ in metered_map(passing, context.train, "  train: best-of-n", threads=context.config.program.threads) if d]
    run = arm.run_config(context.config, context.folder(arm.name))
    student, optimizer, splits = build(run, progress=True, fingerprint=fingerprint_of(ArmFingerprint(experiment=_fingerprint(context), arm=arm)))
    splits_of(run, splits).save(run.run_dir)
    optimizer.proposers = [DemoProposer(pool)]
    program = optimizer.compile(student, trainset=context.train, valset=context.val)
    assert optimizer.audit is not None
    return program, measurement.cost + optimizer.audit.usage


def gepa_arm(arm: GepaArm, context: ArmContext) -> tuple[dspy.Module, Cost]:
    """``dspy.GEPA`` on the run's metric; its budget matched to an earlier arm's LM calls when ``calls_like``."""
    folder = context.folder(arm.name)
    m = arm.minibatch
    budget = arm.max_metric_calls
    if budget is None:  # GEPA spends one call per metric call (code verifiers judge) and one reflection call per
        spent = context.optimization_calls[arm.calls_like or ""]  # ~2m rollouts: this budget makes its total about equal
        budget = max(len(context.val) + 2 * m, round(spent * 2 * m / (2 * m + 1)))
    facts = GepaFingerprint(experiment=_fingerprint(context), arm=arm, budget=budget)

    def optimize() -> dspy.Module:
        metric = getattr(context.feedback, "metric", None)
        gepa = dspy.GEPA(
            metric, max_metric_calls=budget, reflection_lm=context.lm, reflection_minibatch_size=m,
            num_threads=context.config.program.threads, seed=context.config.data.seed, log_dir=str(folder / "gepa"),
        )
        with contextlib.redirect_stdout(sys.stderr):  # GEPA's evaluation bars would land in the table on stdout
            return gepa.compile(context.student, trainset=context.train, valset=context.val)

    return _saved(folder, facts, context.student, optimize)


def enforcing(program: dspy.Module, enforce: Source | None, context: ArmContext) -> dspy.Module:
    """``program`` (a copy) decoding under its prompts' constraints, refused in one line on an LM that cannot."""
    if enforce is not None:
        if not isinstance(program, Generator):
            raise InputError(f"{context.config.source}: field 'enforce': only a generator program decodes under constraints")
        program = program.deepcopy()
        program.enforce = enforce
        if enforce == "annotated":
            program.annotate([SuiteRow.from_example(ex) for ex in [*context.train, *context.val, *context.test]])
    if isinstance(program, Generator) and program.enforce is not None:
        check_steerable(program, program.generate.lm or context.lm)
    return program


def best_of_arm(arm: BestOfArm, context: ArmContext) -> tuple[dspy.Module, Cost]:
    program = on_own_lm(context.programs[arm.of] if arm.of is not None else context.student, arm, context)
    program = enforcing(program, arm.enforce, context)
    stick = Stick(context, best_of=arm.n, temperature=arm.temperature, program=program, stop_at_pass=arm.stop_at_pass, per_round=arm.per_round)
    return stick, Cost()


def check_inputs(context: ArmContext, arms: Sequence[Arm]) -> None:
    """Refuse, before any of ``arms`` runs, an arm input that would leak held-out items into training (a finetune arm's
    ``train_data`` holding a val or test prompt), a saved program that cannot be read or an arm's own LM that
    cannot work, rather than after the arms before it have spent their calls (each kind's own: ``ArmKind.check``)."""
    for arm in arms:
        if isinstance(arm, OwnLMArm):
            context.own_lm(arm)
        ARMS[arm.kind].check(arm, context)


def no_check(arm: Arm, context: ArmContext) -> None:
    """Nothing of the kind's own to refuse before the arms run."""


def check_enforce(arm: OfArm, context: ArmContext) -> None:
    """An arm decoding under constraints, refused on an LM that cannot steer."""
    enforce = arm.enforced()
    if enforce:
        probe = Generator(enforce=enforce)  # only its LM is asked
        try:
            check_steerable(probe, context.own_lm(arm) or context.lm)
        except InputError as exc:
            raise InputError(f"{context.config.source}: arm {arm.name!r} field 'enforce': {exc}") from None


def check_finetune(arm: FinetuneArm, context: ArmContext) -> None:
    """A ``train_data`` that cannot be read or holds a val or test prompt, or an LM that is not embedded (only its
    weights can be trained here), refused."""
    from bineval_dspy.finetune.config import extra_train
    from bineval_dspy.lm.engine import engine_of
    from bineval_dspy.lm.specs import is_embedded

    base = context.config.lm
    if (not is_embedded(base)) if base is not None else getattr(engine_of(context.lm), "model_path", None) is None:
        named = f"field 'lm' is {base!r}" if base is not None else f"the run's LM is {context.lm.model!r}"
        raise InputError(f"{context.config.source}: arm {arm.name!r}: fine-tuning trains an embedded model (smollm2, gemma3-270m or a .gguf path); {named}")
    extra_train(arm.train_data, [*context.val, *context.test], context.config.mode)


def check_program(arm: ProgramArm, context: ArmContext) -> None:
    """A saved program that cannot be read, or one on weights of its own given an LM too, refused."""
    if _saved_program(arm, context).weights is not None and arm.lm is not None:
        raise InputError(f"{context.config.source}: arm {arm.name!r} field 'lm': its program runs on its own weights; leave lm out")


def program_arm(arm: ProgramArm, context: ArmContext) -> tuple[dspy.Module, Cost]:
    """The saved program, built as ``generate --program`` (or ``judge --program``) builds it."""
    return on_own_lm(_saved_program(arm, context).build(), arm, context), Cost()


def _saved_program(arm: ProgramArm, context: ArmContext) -> ProgramFile:
    return load_program(arm.path, "generator" if context.config.mode == "self" else "judge")


def finetune_arm(arm: FinetuneArm, context: ArmContext) -> tuple[dspy.Module, Cost]:
    """``BinEvalFinetune`` on the train split and the arm's ``train_data``; every stage resumes from its folder."""
    from bineval_dspy.finetune.config import extra_train
    from bineval_dspy.finetune.optimizer import BinEvalFinetune
    from bineval_dspy.finetune.settings import FinetuneSettings

    folder = context.folder(arm.name)
    config = context.config
    extra = extra_train(arm.train_data, [*context.val, *context.test], config.mode)[: arm.train_data_rows]
    tuner = BinEvalFinetune(
        getattr(context.feedback, "metric", None),  # a judge learns from references, not from a metric
        run_dir=folder, settings=FinetuneSettings(**arm.finetune), base=config.lm, threads=config.program.threads,
        fingerprint=finetune_fingerprint(arm, context),
    )
    with measuring() as measurement:
        program = tuner.compile(context.student, trainset=[*context.train, *extra])
    ProgramFile.of(program).save(folder / PROGRAM_FILE)
    return program, measurement.cost


def probe_arm(arm: ProbeArm, context: ArmContext) -> tuple[dspy.Module, Cost]:
    """The start judge answering by a head on its LM's hidden state, trained on train, val and ``train_data``'s
    reference verdicts (``judges.probe.fit_probe``); the trained program is kept, and reused while the settings and
    data are the same (the states themselves are cached with the LM's replies)."""
    from bineval_dspy.core.fingerprint import file_digest
    from bineval_dspy.judges.probe import examples_file, fit_probe
    from bineval_dspy.lm.cache import installed_dir
    from bineval_dspy.lm.hidden import reader_for

    folder = context.folder(arm.name)
    where = f"{context.config.source}: arm {arm.name!r}"
    examples = [_labeled(example, where) for example in [*context.train, *context.val]]
    data: dict[str, str] = {}
    if arm.train_data is not None:
        examples += examples_file(arm.train_data)[: arm.train_data_rows]
        data[str(arm.train_data)] = file_digest(arm.train_data)
    facts = ProbeFingerprint(experiment=_fingerprint(context), arm=arm, train_data=sorted(data.values()))
    marker = folder / ARM_FILE
    if marker.is_file() and (folder / PROGRAM_FILE).is_file():
        recorded = json.loads(marker.read_text(encoding="utf-8")).get("fingerprint")
        if still_valid(recorded, _in_form_of(recorded, facts, sort_keys=False), str(marker)):
            return load_program(folder, "judge").apply(context.student.deepcopy()), Cost()
    judge = context.student.deepcopy()
    reader = reader_for(judge.answer_lm(), installed_dir(), f"{where}: the judge's LM")
    judge.probe = fit_probe(
        examples, reader, labels="reference verdicts of the train and val splits" + (f" and {arm.train_data.name}" if arm.train_data else ""),
        data=data, layers=arm.layers, strengths=arm.strengths, folds=arm.folds, seed=context.config.data.seed,
        test_groups=[str(example.get("example_id", "")) for example in context.test], label=f"  {arm.name}: reading states",
    )
    ProgramFile.of(judge).save(folder / PROGRAM_FILE)
    write_text_atomic(marker, json.dumps({"fingerprint": fingerprint_of(facts)}))
    return judge, Cost()


def _no_test_task(arm: ProbeArm, context: ArmContext) -> None:
    """Refuse a probe's ``train_data`` holding a task of the test split (its questions would be trained on)."""
    from bineval_dspy.judges.probe import examples_file

    if arm.train_data is None:
        return
    test = {str(example.get("example_id", "")) for example in context.test}
    leaked = sorted({e.group for e in examples_file(arm.train_data)[: arm.train_data_rows]} & test)
    if leaked:
        raise InputError(f"{arm.train_data}: field 'example_id': task {leaked[0]!r} is in the test split ({len(leaked)} task(s) on both sides)")


def _labeled(example: dspy.Example, where: str) -> Any:
    """A cross-mode example as a probe's training row; one without a recorded reference is refused."""
    from bineval_dspy.judges.probe import LabeledExample

    if example.get("reference") not in ("yes", "no"):
        raise InputError(f"{where}: a probe trains on recorded reference verdicts; example {example.get('question_id')!r} has none")
    return LabeledExample(
        input=example["input"], output=example["output"], question=example["question"], reference=example["reference"],
        group=str(example.get("example_id", "")),
    )


def refine_arm(arm: RefineArm, context: ArmContext) -> tuple[dspy.Module, Cost]:
    return Stick(context, refine=arm.iterations, program=on_own_lm(context.student, arm, context), lm=context.own_lm(arm)), Cost()


class Stick(dspy.Module):
    """The start program with STICK at generation time: each prompt's output chosen among ``best_of`` samples, or
    revised ``refine`` times, by the prompt's own checklist (the metric's: the suite's code verifiers); ``lm``, the
    LM that plans and rewrites (default: the configured one)."""

    def __init__(
        self, context: ArmContext, *, best_of: int = 1, refine: int = 0, temperature: float = 0.7, program: dspy.Module | None = None,
        stop_at_pass: bool = False, per_round: int | None = None, lm: dspy.LM | None = None,
    ) -> None:
        super().__init__()
        self.program = (program or context.student).deepcopy()
        metric = getattr(context.feedback, "metric", None)
        self.judge: Judge = metric.judge  # type: ignore[union-attr]
        self._checklist_for: Callable[[dspy.Example], Checklist] = metric.checklist_for  # type: ignore[union-attr]
        self.checklists = {str(ex.prompt): ex for ex in [*context.train, *context.val, *context.test]}
        self.best_of, self.refine, self.temperature, self.stop_at_pass = best_of, refine, temperature, stop_at_pass
        self.per_round, self.lm = per_round, lm
        self.selections: dict[str, Selection] = {}  # prompt -> its Best-of-N draw, for ``selection_stats``

    def forward(self, prompt: str) -> dspy.Prediction:
        checklist = self._checklist_for(self.checklists[prompt])
        card = None
        if self.best_of > 1:
            best = ChecklistBestOfN(
                self.program, self.judge, self.best_of, self.temperature, stop_at_pass=self.stop_at_pass, per_round=self.per_round
            )
            pick = best(prompt=prompt, checklist=checklist)
            response, card = pick.response, pick.scorecard
            self.selections[prompt] = pick.selection
        else:
            response = self.program(prompt=prompt).response
        if self.refine:
            max_tokens = getattr(self.program, "max_tokens", None) or 256
            refined = SelfRefine(self.judge, self.refine, max_tokens=max_tokens)
            refined.plan.lm = refined.rewrite.lm = self.lm  # the judge inside still answers on the configured LM
            response = refined(prompt=prompt, response=response, checklist=checklist, scorecard=card).response
        return dspy.Prediction(response=response)

    def selection_stats(self, prompts: list[str]) -> SelectionStats | None:
        """pass@k, samples drawn and selection efficiency over ``prompts`` (those drawn for; None without Best-of-N)."""
        return SelectionStats.of([self.selections[p] for p in prompts if p in self.selections])


def _saved(folder: Path, facts: BaseModel, student: dspy.Module, optimize: Callable[[], dspy.Module]) -> tuple[dspy.Module, Cost]:
    """The arm's saved program when ``facts`` (what decides it) made it, else ``optimize()``'s, saved with its cost."""
    path = folder / ARM_FILE
    if path.is_file():
        saved = load_model(path, SavedArm)
        if still_valid(saved.fingerprint, _in_form_of(saved.fingerprint, facts), str(path)):
            return saved.program.apply(student.deepcopy()), saved.usage
    with measuring() as measurement:
        program = optimize()
    state = ProgramFile.of(program)
    folder.mkdir(parents=True, exist_ok=True)
    state.save(folder / PROGRAM_FILE)
    path.write_text(SavedArm(fingerprint=fingerprint_of(facts), program=state, usage=measurement.cost).model_dump_json(indent=2), encoding="utf-8")
    return program, measurement.cost


def _in_form_of(recorded: object, facts: BaseModel, *, sort_keys: bool = True) -> Fingerprint | str:
    """The fingerprint of ``facts`` in the form ``recorded`` holds: field by field, or the one digest an ``arm.json``
    written before held (``listed_digest``: such a file is still reused while its settings are the same)."""
    return listed_digest(facts, sort_keys=sort_keys) if isinstance(recorded, str) else fingerprint_of(facts)


def _fingerprint(context: ArmContext) -> str:
    """What the arms share: the run description (data files' bytes, program, optimizer) and the LM."""
    return digest(json.dumps(_run_settings(context), sort_keys=True))


def _run_settings(context: ArmContext) -> Fingerprint:
    # the run description within the experiment, validated already (as a whole: its val may be 0 for fine-tuning)
    base = RunConfig.model_construct(**{name: getattr(context.config, name) for name in RunConfig.model_fields})
    return run_fingerprint(base, lm_identity(context.lm))


def finetune_fingerprint(arm: FinetuneArm, context: ArmContext) -> Fingerprint:
    """What decided a finetune arm's samples, field by field (a resume under other settings names the one that
    differs, not two digests): the run description, the arm and its ``train_data`` bytes."""
    data = digest(arm.train_data.read_bytes()) if arm.train_data is not None else None
    return combined(_run_settings(context), fingerprint_of(FinetuneFingerprint(arm=arm, train_data=data)))


# -- the registry ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArmKind:
    """One arm kind, registered once: its settings model (its ``kind`` literal names it), how it makes its program
    (``run``), what it costs at most (``plan``), its smoke-test size (``tiny``), the splits it learns from, the
    one mode it needs with the reason (``needs``; None: either mode), and what it refuses before any arm runs
    (``check``; the model itself checks what needs no run: ``Arm.check_fits``)."""

    params: type[Arm]
    run: Callable[[Any, ArmContext], tuple[dspy.Module, Cost]]
    plan: Callable[[Any, sizes.PlanBasis], sizes.ArmEstimate] = sizes.fixed_estimate
    tiny: Callable[[Any], Arm] = sizes.as_is
    learns_from: tuple[str, ...] = ("train", "val")
    needs: tuple[Literal["self", "cross"], str] | None = None
    check: Callable[[Any, ArmContext], None] = no_check

    @property
    def name(self) -> str:
        return str(self.params.model_fields["kind"].default)


ARMS: Registry[ArmKind] = Registry("arm kind")
GENERATOR: tuple[Literal["self"], str] = ("self", "needs a generator")
for _kind in (
    ArmKind(StartArm, start_arm, learns_from=(), check=check_enforce),
    ArmKind(BinEvalArm, bineval_arm, plan=sizes.optimizer_estimate),
    ArmKind(GepaArm, gepa_arm, plan=sizes.gepa_estimate, tiny=sizes.tiny_gepa, needs=GENERATOR),
    ArmKind(BestOfArm, best_of_arm, plan=sizes.best_of_estimate, tiny=sizes.tiny_samples, learns_from=(), needs=GENERATOR, check=check_enforce),
    ArmKind(SelectionDemosArm, selection_demos_arm, plan=sizes.optimizer_estimate, tiny=sizes.tiny_samples, needs=GENERATOR),
    ArmKind(RefineArm, refine_arm, plan=sizes.refine_estimate, tiny=sizes.tiny_refine, learns_from=(), needs=GENERATOR),
    ArmKind(FinetuneArm, finetune_arm, plan=sizes.finetune_estimate, tiny=sizes.tiny_finetune, learns_from=("train",), check=check_finetune),
    ArmKind(ProgramArm, program_arm, learns_from=(), check=check_program),
    ArmKind(ProbeArm, probe_arm, tiny=sizes.tiny_probe, needs=("cross", "trains a judge on reference verdicts"), check=_no_test_task),
):
    ARMS.add(_kind.name, _kind)

if TYPE_CHECKING:
    ArmConfig = Arm
else:  # an ``[[arms]]`` table, parsed by its ``kind`` into that kind's settings model (the kinds registered above)
    ArmConfig = Annotated[Union[tuple(kind.params for kind in ARMS.values())], Field(discriminator="kind")]  # noqa: UP007
