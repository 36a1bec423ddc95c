"""The counts of issue 58's targets (``house_counts.py`` prints them beside issue 48's), each a rule over the package's
syntax trees or lines, written in its function's docstring. Paths are relative to the package folder.

Which counts ``--check`` enforces is ``Target.checked``: the ones this part of issue 58 owns (console prints, error
classes, digest functions, modules over 500 lines but the two other parts own, arrows up). The others are reported
with their targets until the work that meets them lands; then their ``checked`` turns true.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Site:
    """One counted instance: where it is and what it is."""

    path: str  # relative to the package folder
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


@functools.cache
def _sources(package: Path) -> tuple[tuple[str, str, ast.Module], ...]:
    """(path relative to the package, text, syntax tree) of every module, in path order."""
    out = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        out.append((path.relative_to(package).as_posix(), text, ast.parse(text)))
    return tuple(out)


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _called(node: ast.AST) -> str:
    if not isinstance(node, ast.Call):
        return ""
    return node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else ""


# --- run kinds ------------------------------------------------------------------------------------------------------
ALIASES = {"meta": "meta-eval", "finetune": "finetune-samples"}  # the second vocabulary issue 58 found


def run_kinds(package: Path) -> set[str]:
    """The kinds of run: the string keys of a dict display assigned to ``RUN_KINDS``, the ``kind`` of a class
    registered as a run kind (``@run_kind("...")``, should the registry land), and their older aliases."""
    kinds: set[str] = set()
    for _, _, tree in _sources(package):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "RUN_KINDS" for t in targets):
                    kinds |= {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if isinstance(node, ast.Call) and _called(node) == "run_kind" and node.args:
                kinds |= set(_strings(node.args[0]))
    return kinds | {alias for alias, kind in ALIASES.items() if kind in kinds}


def _run_classes(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id.endswith("Run") and n.id != "Run"}


def lists_of_run_kinds(package: Path) -> list[Site]:
    """Each place that lists run kinds: a tuple, list, set, dict (its keys) or ``Literal[...]`` naming three or more
    run kinds (``run_kinds``) or three or more classes ending in ``Run``; a union (``A | B | C``) of three or more
    such classes; a function whose ``isinstance`` calls name three or more of them (a chain deciding by kind). A
    registry defined once and read everywhere lists them once."""
    kinds = run_kinds(package)
    sites = []
    for path, _, tree in _sources(package):
        unions = {id(n.left) for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr)}
        for node in ast.walk(tree):
            elements: list[ast.AST] = []
            if isinstance(node, ast.Tuple | ast.List | ast.Set):
                elements = list(node.elts)
            elif isinstance(node, ast.Dict):
                elements = [k for k in node.keys if k is not None]
            elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal":
                elements = [node.slice]
            named = {s for e in elements if isinstance(e, ast.Constant | ast.Tuple) for s in _strings(e) if s in kinds}
            classes = {e.id for e in elements if isinstance(e, ast.Name)} & _run_classes(node)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) and id(node) not in unions:
                classes = _run_classes(node)  # the whole union, counted at its top
            if len(named) >= 3 or len(classes) >= 3:
                sites.append(Site(path, getattr(node, "lineno", 0), f"{max(len(named), len(classes))} run kinds"))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                checked = {
                    name for call in ast.walk(node) if isinstance(call, ast.Call) and _called(call) == "isinstance" and len(call.args) == 2
                    for name in _run_classes(call.args[1])
                }  # fmt: skip
                if len(checked) >= 3:
                    sites.append(Site(path, node.lineno, f"{node.name}: isinstance over {len(checked)} run classes"))
    return sorted(set(sites), key=lambda s: (s.path, s.line))


def kind_carriers(package: Path) -> list[Site]:
    """The ways a new output states its kind, each counted once where first seen: the header beside a log
    (``RunHeader(kind=...)``), a ``kind`` field with a ``Literal`` default on a model named ``*Results`` (an inline
    kind in ``results.json``), and a kind guessed from keys (a function named ``legacy_kind``) where a reader can
    reach the guess for output that has a header: it counts unless every function that names it reads the header
    first (``h = read_header(...)``, then ``if h is not None: return ...``, both above the first use), so keys are
    guessed for header-less old output only, as issue 58 allows."""
    found: dict[str, Site] = {}
    guesser: Site | None = None
    for path, _, tree in _sources(package):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called(node) == "RunHeader" and any(k.arg == "kind" for k in node.keywords):
                found.setdefault("header", Site(path, node.lineno, "the header beside the output"))
            elif isinstance(node, ast.ClassDef) and node.name.endswith("Results"):
                for statement in node.body:
                    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.target.id == "kind":
                        found.setdefault("inline", Site(path, statement.lineno, "a kind field inside the results"))
            elif isinstance(node, ast.FunctionDef) and node.name == "legacy_kind":
                guesser = guesser or Site(path, node.lineno, "a kind guessed from keys")
    if guesser is not None and not _guessed_for_headerless_only(package):
        found["guessed"] = guesser
    return sorted(found.values(), key=lambda s: (s.path, s.line))


def _guessed_for_headerless_only(package: Path) -> bool:
    """Whether every use of ``legacy_kind`` (outside itself and its imports) sits in a function that returned the
    header's kind above it whenever there is a header; a use at module level, or passing it on, fails."""
    for _, _, tree in _sources(package):
        functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name != "legacy_kind"]
        inside = {id(n) for f in functions for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "legacy_kind" and id(node) not in inside:
                return False  # named outside any function (a table of guessers, an alias): reachable from anywhere
        for function in functions:
            uses = [n.lineno for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == "legacy_kind"]
            if uses and not _returns_the_header_above(function, min(uses)):
                return False
    return True


def _returns_the_header_above(function: ast.FunctionDef | ast.AsyncFunctionDef, line: int) -> bool:
    headers = {
        t.id for n in ast.walk(function) if isinstance(n, ast.Assign) and n.lineno < line and _called(n.value) == "read_header"
        for t in n.targets if isinstance(t, ast.Name)
    }  # fmt: skip
    return any(
        isinstance(n, ast.If) and n.lineno < line and isinstance(n.test, ast.Compare) and isinstance(n.test.left, ast.Name)
        and n.test.left.id in headers and isinstance(n.test.ops[0], ast.IsNot) and isinstance(n.test.comparators[0], ast.Constant)
        and n.test.comparators[0].value is None and isinstance(n.body[-1], ast.Return)
        for n in ast.walk(function)
    )  # fmt: skip


def fingerprint_files(package: Path) -> list[Site]:
    """The files a log's fingerprint is written to, each counted once: the header (``RunHeader(...,
    fingerprint=...)``) and the sidecar (a scope that calls ``sidecar(...)`` and writes: ``write_json``,
    ``write_text`` or ``write_text_atomic``)."""
    found: dict[str, Site] = {}
    for path, _, tree in _sources(package):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called(node) == "RunHeader" and any(k.arg == "fingerprint" for k in node.keywords):
                found.setdefault("header", Site(path, node.lineno, "OUT.run.json"))
            if isinstance(node, ast.FunctionDef):
                names = {_called(n) for n in ast.walk(node)}
                if "sidecar" in names and names & {"write_json", "write_text", "write_text_atomic"}:
                    found.setdefault("sidecar", Site(path, node.lineno, f"OUT.fingerprint.json ({node.name})"))
    return sorted(found.values(), key=lambda s: (s.path, s.line))


def config_bases(package: Path) -> list[Site]:
    """The bases run configs sit on: ``RunSpec`` when a class derives from it, and each class named ``*Config`` that
    declares a field ``source`` and derives from no class of the package that declares one (a config made on a base
    of its own). One base, ``source`` declared once, is the target."""
    classes: dict[str, tuple[str, int, list[str], bool]] = {}
    for path, _, tree in _sources(package):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                declares = any(isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == "source" for s in node.body)
                classes.setdefault(node.name, (path, node.lineno, [ast.unparse(b).split(".")[-1] for b in node.bases], declares))
    roots = {}
    for name, (path, line, bases, declares) in classes.items():
        if "RunSpec" in bases and "RunSpec" in classes:
            roots["RunSpec"] = Site(*classes["RunSpec"][:2], "RunSpec")
        elif name.endswith("Config") and declares and not any(_declares_above(b, classes) for b in bases):
            roots[name] = Site(path, line, f"{name} declares `source`")
    return sorted(roots.values(), key=lambda s: (s.path, s.line))


def _declares_above(name: str, classes: dict[str, tuple[str, int, list[str], bool]], seen: frozenset[str] = frozenset()) -> bool:
    """Whether the class ``name`` or a class up its chain declares ``source``."""
    if name not in classes or name in seen:
        return False
    _, _, bases, declares = classes[name]
    return declares or any(_declares_above(b, classes, seen | {name}) for b in bases)


def verdict_parses(package: Path) -> list[Site]:
    """The definitions of a verdict's request and reply parse: modules under ``judges/`` or ``lm/`` with a function
    that reads a judge's reply (calls ``check_reply`` or ``parsed_reply``), one site per module. The DSPy path and
    the fast path sharing one definition is the target."""
    sites = []
    for path, _, tree in _sources(package):
        if not path.startswith(("judges/", "lm/")) or path == "judges/replies.py":
            continue
        readers = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and any(_called(c) in {"check_reply", "parsed_reply"} for c in ast.walk(n))]
        if readers:
            sites.append(Site(path, readers[0].lineno, f"reads a verdict reply in {', '.join(r.name for r in readers)}"))
    return sites


# --- the public face ----------------------------------------------------------------------------------------------
PRINTS_ALLOWED = ("cli/", "report/")  # the layers that speak to the terminal
CONSOLES = {"console", "shown"}  # ``core.console``'s two consoles


def _own_command(tree: ast.Module) -> bool:
    """A module that is a command of its own (``if __name__ == "__main__":``): its prints are its output."""
    return any(isinstance(n, ast.If) and "__name__" in ast.unparse(n.test) and "__main__" in ast.unparse(n.test) for n in tree.body)


def console_prints(package: Path) -> list[Site]:
    """Console output in library modules outside ``cli/`` and ``report/``, ``core/console.py`` and ``core/terminal.py``
    (the console itself: its progress bars and the log handler the CLI installs), and modules that are a command of
    their own: calls of the builtin ``print``, of ``sys.stdout.write``/``sys.stderr.write``, and of ``print``,
    ``log`` or ``rule`` on ``console``/``shown`` (``core.console``'s) or a ``rich`` ``Console(...)``. A library
    module logs instead; the CLI shows the log."""
    sites = []
    for path, _, tree in _sources(package):
        if path.startswith(PRINTS_ALLOWED) or path in {"core/console.py", "core/terminal.py"} or _own_command(tree):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            text = ast.unparse(func)
            if (isinstance(func, ast.Name) and func.id == "print") or text in {"sys.stdout.write", "sys.stderr.write"}:
                sites.append(Site(path, node.lineno, text))
            elif isinstance(func, ast.Attribute) and func.attr in {"print", "log", "rule"}:
                owner = func.value
                if (isinstance(owner, ast.Name) and owner.id in CONSOLES) or _called(owner) == "Console":
                    sites.append(Site(path, node.lineno, text))
    return sorted(sites, key=lambda s: (s.path, s.line))


BUILTIN_ERRORS = {name for name in dir(builtins) if isinstance(getattr(builtins, name), type) and issubclass(getattr(builtins, name), BaseException)}


def errors_outside_the_base(package: Path) -> list[Site]:
    """Public exception classes (no leading underscore) that do not derive from ``BinevalError``: a class is an
    exception when a base (by name, followed within the package) is a builtin exception; it is under the base when a
    base chain reaches ``BinevalError``."""
    classes: dict[str, list[tuple[str, int, list[str]]]] = {}
    for path, _, tree in _sources(package):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append((path, node.lineno, [ast.unparse(b).split(".")[-1] for b in node.bases]))

    def reaches(name: str, goal: Callable[[str], bool], seen: frozenset[str] = frozenset()) -> bool:
        if goal(name):
            return True
        return name not in seen and any(reaches(b, goal, seen | {name}) for _, _, bases in classes.get(name, []) for b in bases)

    return sorted(
        (Site(path, line, name) for name, defs in classes.items() for path, line, bases in defs
         if not name.startswith("_") and name != "BinevalError"
         and any(reaches(b, BUILTIN_ERRORS.__contains__) for b in bases) and not any(reaches(b, "BinevalError".__eq__) for b in bases)),
        key=lambda s: (s.path, s.line),
    )  # fmt: skip


READS_SOURCE = re.compile(r"__file__|getsource|glob\(\"\*\.py\"\)")


def digest_functions(package: Path) -> list[Site]:
    """Functions that digest source code by hand: a function (nested ones in it included) that hashes
    (``hashlib``'s ``sha256``/``md5``/``blake2b``, or ``digest(...)``) and reads source (names ``__file__``,
    calls ``getsource``/``getsourcefile``, or globs ``*.py``). ``core.source.source_digest`` is meant to be the one."""
    sites = []
    for path, _, tree in _sources(package):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                code = ast.unparse(node)
                hashes = any(_called(c) in {"sha256", "md5", "blake2b", "digest"} for c in ast.walk(node))
                if hashes and (READS_SOURCE.search(code) or any(_called(c) == "source_files" for c in ast.walk(node))):
                    sites.append(Site(path, node.lineno, node.name))
    return sites


LONG = 500


def long_modules(package: Path) -> list[Site]:
    """Modules over ``LONG`` lines (their line count)."""
    return [Site(path, 0, f"{text.count(chr(10))} lines") for path, text, _ in _sources(package) if text.count("\n") > LONG]


def arrows_up(package: Path) -> list[Site]:
    """Imports that point sideways or up the layer table, the package face's own imports (``__init__``) included:
    the layer test's own reading (``tests/test_layers.py``), so the count and the test cannot disagree."""
    sys.path.insert(0, str(ROOT))
    from tests.test_layers import TOP, imports, layer_of, layers

    table = layers()
    sites = []
    for path in sorted(package.rglob("*.py")):
        source = path.relative_to(package).parts[0].removesuffix(".py")
        if source in TOP or source not in table:
            continue
        for line, target in imports(path, package):
            layer = layer_of(table, target)
            if layer is not None and target != source and layer >= table[source]:
                sites.append(Site(path.relative_to(package).as_posix(), line, f"{source} imports {target}"))
    return sites


def command_files(package: Path) -> list[Site]:
    """The files a new resumable command with a view of its own touches, measured on the one that exists
    (``meta-eval``): modules that hold its kind's name (``"meta-eval"`` or its alias ``"meta"``) as a string or
    name the classes of its writing or reading side (``MetaRun``, ``MetaEvalResults``, ``MetaWorker``), outside
    its own package (``meta/``) and its command (``cli/meta.py``), plus those two."""
    names = {"MetaRun", "MetaEvalResults", "MetaWorker"}
    sites = [Site("meta/", 0, "its own package"), Site("cli/meta.py", 0, "its command")]
    for path, _, tree in _sources(package):
        if path.startswith("meta/") or path == "cli/meta.py":
            continue
        held = {s for s in _strings(tree) if s in {"meta-eval", "meta"}} | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in names}
        held |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names if a.name in names}
        if held:
            sites.append(Site(path, 0, ", ".join(sorted(held))))
    return sites


@dataclass(frozen=True)
class Target:
    name: str
    target: int
    rule: Callable[[Path], list[Site]]
    checked: bool  # ``--check`` fails when the count is over its target


TARGETS = [
    Target("lists of run kinds", 1, lists_of_run_kinds, True),
    Target("kind carriers for new output", 1, kind_carriers, True),
    Target("fingerprint files per log", 1, fingerprint_files, True),
    Target("config bases", 1, config_bases, True),
    Target("code-digest functions", 1, digest_functions, True),
    Target("verdict request/parse definitions", 1, verdict_parses, True),
    Target("library console prints", 0, console_prints, True),
    Target("error classes outside the base", 0, errors_outside_the_base, True),
    Target("modules over 500 lines", 0, long_modules, True),
    Target("files a new resumable command with its own view touches", 4, command_files, True),
    Target("arrows up", 0, arrows_up, True),
]
