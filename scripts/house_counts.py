"""The counts of issue 48's and issue 58's targets, read from the source, so that each review reruns them instead of
counting by hand (issue 58's rules are in ``house_rules58.py``, beside this file).

    .venv/bin/python scripts/house_counts.py            # one line per target: the count now and the target
    .venv/bin/python scripts/house_counts.py --where    # ... and every site counted (file:line)
    .venv/bin/python scripts/house_counts.py --check    # exit 1 when a count is over its target

Every count is a rule over the package's syntax trees (``ast``), written beside its function, and each is open-ended:
a new instance of the pattern raises the count. A "scope" below is a module-level function or a method (a function
nested in one belongs to it), a class body (its statements other than methods), or a module's remaining top-level
code. Paths are relative to the package folder (``bineval_dspy/`` by default). It exits 0 unless ``--check`` is given;
then it exits 1 when a checked count is over its target: every issue 48 count, and the issue 58 counts marked
``checked`` there (the others are printed as "reported": another part of issue 58 meets them).
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

PACKAGE = Path(__file__).resolve().parents[1] / "bineval_dspy"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import house_rules58  # noqa: E402  (beside this file: a script's sibling, not a package)
from house_rules58 import Site  # noqa: E402


@dataclass(frozen=True)
class Scope:
    name: str
    line: int
    nodes: list[ast.AST]  # every node inside, nested functions included


@functools.cache
def modules(package: Path) -> tuple[tuple[str, ast.Module], ...]:
    """(path relative to the package, syntax tree) of every module, in path order (parsed once a process)."""
    return tuple((path.relative_to(package).as_posix(), ast.parse(path.read_text(encoding="utf-8"))) for path in sorted(package.rglob("*.py")))


@functools.cache
def scopes(tree: ast.Module) -> list[Scope]:
    """The module's scopes (see the module's docstring): functions and methods, class bodies, the rest."""
    out: list[Scope] = []
    rest: list[ast.AST] = []

    def body(statements: list[ast.stmt], prefix: str, into: list[ast.AST]) -> None:
        for statement in statements:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append(Scope(prefix + statement.name, statement.lineno, list(ast.walk(statement))))
            elif isinstance(statement, ast.ClassDef):
                own: list[ast.AST] = [node for base in statement.bases for node in ast.walk(base)]
                body(statement.body, f"{prefix}{statement.name}.", own)
                out.append(Scope(prefix + statement.name, statement.lineno, own))
            else:
                into.extend(ast.walk(statement))

    body(tree.body, "", rest)
    return [*out, Scope("<module>", 1, rest)]


def called(node: ast.AST) -> str:
    """The name a call calls (``f`` of ``f(...)``, ``open`` of ``log.open(...)``); '' for anything else."""
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def is_call(node: ast.AST, *names: str) -> TypeGuard[ast.Call]:
    """Whether ``node`` calls one of ``names`` (``f(...)`` or ``x.f(...)``)."""
    return isinstance(node, ast.Call) and called(node) in names


def last_name(node: ast.AST) -> str:
    """``x`` of ``x``, ``a.x``, ``a["x"]`` and ``a.get("x")``; '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if is_call(node, "get") and node.args and isinstance(node.args[0], ast.Constant):
        return str(node.args[0].value)
    return ""


@functools.cache
def annotated(tree: ast.AST) -> set[int]:
    """ids of the nodes inside type annotations (a parameter's type lists classes without listing them as data)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        notes: list[ast.AST | None] = []
        if isinstance(node, ast.arg | ast.AnnAssign):
            notes.append(node.annotation)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            notes.append(node.returns)
        for note in notes:
            if note is not None and not (isinstance(node, ast.AnnAssign) and _is_literal(note)):
                inside.update(id(n) for n in ast.walk(note))
    return inside


def _is_literal(note: ast.AST) -> bool:
    return isinstance(note, ast.Subscript) and last_name(note.value) == "Literal"


# --- resume forms -----------------------------------------------------------------------------------------------
KERNEL = ("core/runlog.py", "core/fingerprint.py", "runs/")  # the run log: the one resume form


def _keyed(side: ast.AST, keys: set[str]) -> bool:
    """Whether one side of a comparison is a fingerprint: named so, or a ``listed_digest`` (the call, or in ``keys``)."""
    return last_name(side) == "fingerprint" or is_call(side, "listed_digest") or (isinstance(side, ast.Name) and side.id in keys)


def resume_forms(package: Path) -> list[Site]:
    """1 for the run log (``KERNEL``) when it exists, plus each scope outside it that decides by itself whether earlier
    output is reused: it calls ``first_difference``, or compares (``==``/``!=``) a fingerprint: something named
    ``fingerprint`` (a name, attribute, key or ``.get("fingerprint")``) or a ``listed_digest`` (the call, or a name
    the scope assigned it to: the one string saved work is keyed by), or it reads a JSONL file back and rewrites a
    file (``read_jsonl`` with ``write_text``/``write_text_atomic``/``rewrite_jsonl``: a log repaired by hand). A scope
    that asks the kernel (``resume_check``, ``still_valid``) decides nothing by itself."""
    sites: list[Site] = []
    for path, tree in modules(package):
        if path.startswith(KERNEL):
            if not sites or sites[0].path != "<kernel>":
                sites.insert(0, Site("<kernel>", 0, "the run log"))
            continue
        for scope in scopes(tree):
            names = {called(node) for node in scope.nodes}
            keys = {
                target.id for node in scope.nodes if isinstance(node, ast.Assign) and is_call(node.value, "listed_digest")
                for target in node.targets if isinstance(target, ast.Name)
            }  # fmt: skip
            compares = any(
                isinstance(node, ast.Compare) and any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops)
                and any(_keyed(side, keys) for side in [node.left, *node.comparators])
                for node in scope.nodes
            )  # fmt: skip
            rewrites = "read_jsonl" in names and bool(names & {"write_text", "write_text_atomic", "rewrite_jsonl"})
            if "first_difference" in names or compares or rewrites:
                sites.append(Site(path, scope.line, f"{scope.name} reuses earlier output by itself"))
    return sites


# --- hand-built fingerprints --------------------------------------------------------------------------------------
RESUME_CALLS = {"open_for_resume", "open"}  # ``fingerprint.open_for_resume``, ``RunLog.open``


def _built(node: ast.AST) -> bool:
    """A value assembled by hand: a dict display, ``dict(...)`` with keywords, or a digest/``json.dumps`` of a
    list, tuple or dict display (``digest(json.dumps([...]))``). ``dict(x)`` alone is a copy, not counted."""
    if isinstance(node, ast.Dict):
        return True
    if is_call(node, "dict"):
        return bool(node.keywords)
    if is_call(node, "digest", "sha256_of", "dumps"):
        return any(isinstance(n, ast.List | ast.Tuple | ast.Dict) for arg in node.args for n in ast.walk(arg))
    return False


def hand_built_fingerprints(package: Path) -> list[Site]:
    """Each fingerprint assembled by hand (``_built``) that is assigned to a target named ``*fingerprint*``, passed as
    ``fingerprint=``, passed to ``open_for_resume``/``.open`` (directly, or through a name it was assigned to in the
    same scope), or returned by a function named ``*fingerprint*``. A fingerprint derived from a model
    (``core.settings.fingerprint_of``) is none of these."""
    sites: list[Site] = []
    for path, tree in modules(package):
        for scope in scopes(tree):
            held: dict[str, ast.AST] = {}  # name -> the built value assigned to it
            found: dict[int, ast.AST] = {}
            for node in scope.nodes:
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and _built(node.value):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if "fingerprint" in last_name(target):
                            found[id(node.value)] = node.value
                        if isinstance(target, ast.Name):
                            held[target.id] = node.value
                elif isinstance(node, ast.Return) and node.value is not None and _built(node.value) and "fingerprint" in scope.name.lower():
                    found[id(node.value)] = node.value
            for node in scope.nodes:
                if not isinstance(node, ast.Call):
                    continue
                given = [kw.value for kw in node.keywords if kw.arg == "fingerprint"]
                if called(node) in RESUME_CALLS:
                    given += node.args
                for arg in given:
                    value = held.get(arg.id, arg) if isinstance(arg, ast.Name) else arg
                    if _built(value):
                        found[id(value)] = value
            sites += [Site(path, getattr(v, "lineno", scope.line), f"in {scope.name}") for v in found.values()]
    return sorted(sites, key=lambda s: (s.path, s.line))


# --- "added later" lists ------------------------------------------------------------------------------------------
LATER = re.compile(r"(^|_)LATER_|_ADDED_|^ADDED_")


def added_later_lists(package: Path) -> list[Site]:
    """Module-level names matching ``LATER_`` or ``_ADDED_`` (a runner's own list of settings added later; the
    release a field was added in belongs on the field: ``core.settings.added``)."""
    sites = []
    for path, tree in modules(package):
        for statement in tree.body:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target] if isinstance(statement, ast.AnnAssign) else []
            sites += [Site(path, statement.lineno, t.id) for t in targets if isinstance(t, ast.Name) and LATER.search(t.id)]
    return sites


# --- Ray branches -------------------------------------------------------------------------------------------------
EXECUTOR = "runs/"  # the one module folder that may put a run on Ray actors


def ray_branches(package: Path) -> list[Site]:
    """Call sites of ``core.cluster.on_actors``: the one in ``EXECUTOR`` (the run executor) counts as the one branch,
    every other is a runner putting itself on Ray by hand."""
    return [
        Site(path, node.lineno, "the run executor" if path.startswith(EXECUTOR) else "on_actors(...)")
        for path, tree in modules(package)
        for node in ast.walk(tree) if is_call(node, "on_actors")
    ]  # fmt: skip


# --- parallel maps --------------------------------------------------------------------------------------------------
THE_MAP = "lm/budget.py"  # ``metered_map`` and its coroutine form ``metered_amap``: one loop (``_metered``), counted once
POOLS = {"ThreadPoolExecutor", "ProcessPoolExecutor"}


def parallel_maps(package: Path) -> list[Site]:
    """1 for ``THE_MAP`` when it holds a map, plus, outside it: each function whose name ends in ``map`` and that takes
    a parameter annotated ``Callable`` (a parallel-map helper), and each ``ThreadPoolExecutor(...)`` or
    ``ProcessPoolExecutor(...)`` outside those helpers (an ad-hoc pool), except a single worker
    (``max_workers=1``: a serial background thread maps nothing)."""
    sites: list[Site] = []
    for path, tree in modules(package):
        helpers = [
            node for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.endswith("map")
            and any("Callable" in ast.unparse(a.annotation) for a in [*node.args.args, *node.args.kwonlyargs] if a.annotation is not None)
        ]  # fmt: skip
        if path == THE_MAP:
            sites += [Site(path, helpers[0].lineno, "the parallel map")] if helpers else []
            continue
        inside = {id(n) for helper in helpers for n in ast.walk(helper)}
        sites += [Site(path, h.lineno, f"helper {h.name}") for h in helpers]
        for node in ast.walk(tree):
            if is_call(node, *POOLS) and id(node) not in inside:
                workers = [kw.value for kw in node.keywords if kw.arg == "max_workers"] + node.args[:1]
                if not (workers and isinstance(workers[0], ast.Constant) and workers[0].value == 1):
                    sites.append(Site(path, node.lineno, f"ad-hoc {called(node)}"))
    return sorted(sites, key=lambda s: (s.path != THE_MAP, s.path, s.line))


# --- readers that skip the log --------------------------------------------------------------------------------------
RAW_READERS = {"read_jsonl", "read_jsonl_models"}
LOG_HOME = ("core/", "runs/")  # where a run file is read through its log
LOG_MARKERS = {"JUDGE_KEY", "SCORES_FILE", "SAMPLES_FILE"}  # names a reader of a run log refers to
LOG_FIELDS = {"method", "response", "samples"}  # fields only a log's records have (meta-eval scores, generate, samples)


def readers_skipping_the_log(package: Path) -> list[Site]:
    """Calls of ``read_jsonl``/``read_jsonl_models`` outside ``LOG_HOME`` that read a run log as raw JSON lines,
    not through their run's log: the call's ``required=`` names ``JUDGE_KEY`` (the key a judged row keeps its
    results under) or a field only a log's records have (``LOG_FIELDS``), or it has no ``required=`` and its scope names a log's marker (``LOG_MARKERS``: the judge key,
    the meta-eval's and fine-tuning's log file names; a reader that looks for them, as a kind guesser does). A
    reader of input data names the fields it needs, and may refuse ``JUDGE_KEY``."""
    sites = []
    for path, tree in modules(package):
        if path.startswith(LOG_HOME):
            continue
        for scope in scopes(tree):
            judged = any(isinstance(node, ast.Name) and node.id in LOG_MARKERS for node in scope.nodes)
            for n in scope.nodes:
                if not is_call(n, *RAW_READERS):
                    continue
                required = [kw.value for kw in n.keywords if kw.arg == "required"]
                names_key = any(
                    (isinstance(x, ast.Name) and x.id == "JUDGE_KEY") or (isinstance(x, ast.Constant) and x.value in LOG_FIELDS)
                    for r in required for x in ast.walk(r)
                )  # fmt: skip
                if names_key or (judged and not required):
                    sites.append(Site(path, n.lineno, f"{called(n)} in {scope.name}"))
    return sorted(sites, key=lambda s: (s.path, s.line))


# --- places listing arm kinds ---------------------------------------------------------------------------------------
def arm_kinds(package: Path) -> tuple[set[str], dict[str, str]]:
    """(kind names, arm class name -> its kind): classes named ``*Arm`` with a ``kind: Literal["..."]`` field, and
    the first argument of ``ARMS.add("...", ...)``."""
    kinds: set[str] = set()
    classes: dict[str, str] = {}
    for _, tree in modules(package):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Arm"):
                for statement in node.body:
                    if isinstance(statement, ast.AnnAssign) and last_name(statement.target) == "kind" and _is_literal(statement.annotation):
                        values = [n.value for n in ast.walk(statement.annotation) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
                        kinds.update(values)
                        if values:
                            classes[node.name] = values[0]
            if is_call(node, "add") and isinstance(node.func, ast.Attribute) and last_name(node.func.value) == "ARMS":
                kinds.update(a.value for a in node.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return kinds, classes


def _kind_mentions(nodes: list[ast.AST], kinds: set[str], classes: dict[str, str], noted: set[int]) -> set[str]:
    """The arm kinds ``nodes`` name: an arm class's name, outside annotations and not called (``isinstance(arm,
    GepaArm)``, a union of arm classes; making an arm of a kind is a use, not a listing); a kind string that is an
    element of a tuple, list or set display (a dict display: a key) whose elements are all kind strings, two or
    more, or compared
    with an attribute ``kind`` (``arm.kind == "probe"``, ``arm.kind in (...)``), or registered (``ARMS.add("start",
    ...)``)."""
    named: set[str] = set()
    made = {id(n.func) for n in nodes if isinstance(n, ast.Call)}

    def strings(values: Iterable[ast.AST | None]) -> set[str]:
        return {v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value in kinds}

    for n in nodes:
        if isinstance(n, ast.Name) and n.id in classes and id(n) not in noted and id(n) not in made:
            named.add(classes[n.id])
        elif isinstance(n, ast.Tuple | ast.List | ast.Set | ast.Dict):
            elements = list(n.keys if isinstance(n, ast.Dict) else n.elts)
            found = strings(elements)
            named |= found if len(found) >= 2 and len(found) == len(elements) else set()
        elif isinstance(n, ast.Compare) and last_name(n.left) == "kind":
            named |= strings([c for side in n.comparators for c in ast.walk(side)])
        elif is_call(n, "add") and isinstance(n.func, ast.Attribute) and last_name(n.func.value) == "ARMS":
            named |= strings(n.args[:1])
    return named


def places_listing_arm_kinds(package: Path) -> list[Site]:
    """Scopes that name two or more arm kinds (``arm_kinds``, ``_kind_mentions``): every place a new arm kind must
    also be added to, or that decides by kind what the kind's own entry could say."""
    kinds, classes = arm_kinds(package)
    sites = []
    for path, tree in modules(package):
        noted = annotated(tree)
        for scope in scopes(tree):
            named = _kind_mentions(scope.nodes, kinds, classes, noted)
            if len(named) >= 2:
                sites.append(Site(path, scope.line, f"{scope.name} names {len(named)} arm kinds"))
    return sites


# --- embedded-model string checks -----------------------------------------------------------------------------------
def _embedded_check(node: ast.AST) -> TypeGuard[ast.expr]:
    """``x in EMBEDDED`` / ``not in``, ``x.endswith(".gguf")``, ``x.startswith("local/")``, ``"@sha256" in x``."""
    if isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
        if any(last_name(c) == "EMBEDDED" for c in node.comparators):
            return True
        return isinstance(node.left, ast.Constant) and isinstance(node.left.value, str) and node.left.value.startswith("@sha256")
    if is_call(node, "endswith", "startswith") and node.args:
        arg = node.args[0]
        return isinstance(arg, ast.Constant) and arg.value in {".gguf", "local/"}
    return False


def embedded_model_checks(package: Path) -> list[Site]:
    """Modules that tell an embedded model from the string that names it (``_embedded_check``), one site each (the
    first check): ``lm.specs.is_embedded`` is meant to be the only one."""
    sites = []
    for path, tree in modules(package):
        checks = sorted(n.lineno for n in ast.walk(tree) if _embedded_check(n))
        sites += [Site(path, checks[0], f"{len(checks)} check(s)")] if checks else []
    return sites


# --- import circles -------------------------------------------------------------------------------------------------
def import_circles(package: Path) -> list[list[str]]:
    """The layer test's own finder (``tests/test_layers.py``), so the count and the test cannot disagree."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.test_layers import import_circles as found

    return found(package)


def circle_sites(package: Path) -> list[Site]:
    return [Site(c[0].split(".", 1)[1].replace(".", "/") + ".py", 0, " <-> ".join(c)) for c in import_circles(package)]


# --- the targets ----------------------------------------------------------------------------------------------------
TARGETS: list[tuple[str, int, Callable[[Path], list[Site]]]] = [
    ("resume forms", 1, resume_forms),
    ("hand-built fingerprints", 0, hand_built_fingerprints),
    ('"added later" lists', 0, added_later_lists),
    ("Ray branches", 1, ray_branches),
    ("parallel-map helpers and ad-hoc pools", 1, parallel_maps),
    ("readers that skip the log", 0, readers_skipping_the_log),
    ("places listing arm kinds", 1, places_listing_arm_kinds),
    ("embedded-model string checks", 1, embedded_model_checks),
    ("import circles", 0, circle_sites),
]


def counts(package: Path = PACKAGE) -> list[tuple[str, int, list[Site]]]:
    """(target's name, target, the sites counted) for every target of issue 48."""
    return [(name, target, rule(package)) for name, target, rule in TARGETS]


def line_of(name: str, target: int, sites: list[Site], checked: bool = True) -> tuple[str, bool]:
    """The line a count prints, and whether it fails ``--check``: a checked count over its target."""
    over = checked and len(sites) > target
    note = "  OVER" if over else "" if checked else "  (reported, not checked)"
    return f"{name}: {len(sites)} (target {target}){note}", over


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("package", nargs="?", type=Path, default=PACKAGE, help="the package folder (default: bineval_dspy/)")
    parser.add_argument("--where", action="store_true", help="list every site counted")
    parser.add_argument("--check", action="store_true", help="exit 1 when a checked count is over its target")
    args = parser.parse_args(argv)
    rows: list[tuple[str, bool, list[Site]]] = []
    for name, target, sites in counts(args.package):
        rows.append((*line_of(name, target, sites), sites))
    for rule in house_rules58.TARGETS:
        found = rule.rule(args.package)
        rows.append((*line_of(rule.name, rule.target, found, rule.checked), found))
    for line, _, sites in rows:
        print(line)
        if args.where:
            for site in sites:
                print(f"    {site}")
    return 1 if args.check and any(over for _, over, _ in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
