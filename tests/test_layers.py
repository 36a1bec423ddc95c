"""The layering docs/architecture.md states holds: every `bineval_dspy` import (module-level or deferred) points
to a lower layer, never sideways to another package of the same layer nor up (issue 34, item 5)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bineval_dspy"
TOP = {"__init__", "__main__", "pytest_plugin"}  # above every layer: they may import anything


def layers() -> dict[str, int]:
    """Package (or top-level module) name -> layer, from the architecture document's table."""
    found: dict[str, int] = {}
    for layer, names in re.findall(r"^\| (\d+) \| (.+?) \|", (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"), flags=re.M):
        for name in re.findall(r"`([\w.]+?)/?`", names):
            found[name.removesuffix(".py")] = int(layer)
    return found


def imports(path: Path, package: Path = PACKAGE) -> list[tuple[int, str]]:
    """(line, the first name under bineval_dspy) of every import of the package in ``path``; a name taken from the
    package face itself (``from bineval_dspy import __version__``, ``import bineval_dspy``) is ``__init__``, above
    every layer (issue 58: the arrow up the layer test did not see)."""
    modules = {p.name for p in package.iterdir() if p.is_dir()} | {p.stem for p in package.glob("*.py")}
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (node.module + ".").startswith("bineval_dspy."):
            parts = node.module.split(".")
            names = [parts[1]] if len(parts) > 1 else [alias.name if alias.name in modules else "__init__" for alias in node.names]
            out += [(node.lineno, name) for name in names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, (alias.name + ".__init__").split(".")[1]) for alias in node.names if (alias.name + ".").startswith("bineval_dspy.")]
    return out


def layer_of(table: dict[str, int], name: str) -> int | None:
    """A package's layer; the top-level modules (``TOP``) sit above every layer."""
    return max(table.values()) + 1 if name in TOP else table.get(name)


def test_an_import_of_the_package_face_is_an_arrow_up(tmp_path):
    package = tmp_path / "bineval_dspy"
    (package / "runs").mkdir(parents=True)
    module = package / "runs" / "execute.py"
    module.write_text("import bineval_dspy\nfrom bineval_dspy import __version__, runs\nfrom bineval_dspy.core.version import __version__\n")
    found = imports(module, package)
    assert found == [(1, "__init__"), (2, "__init__"), (2, "runs"), (3, "core")]
    table = layers()
    assert layer_of(table, "__init__") == max(table.values()) + 1 and max(table.values()) >= table["runs"]


def test_the_table_names_every_package():
    table = layers()
    present = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} | {p.stem for p in PACKAGE.glob("*.py")}
    assert present - TOP == set(table), "docs/architecture.md's layer table and the package's folders differ"


def test_no_import_points_sideways_or_up():
    table = layers()
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if source in TOP:
            continue
        for line, target in imports(path):
            layer = layer_of(table, target)
            if layer is not None and target != source and layer >= table[source]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {source} (layer {table[source]}) imports {target} (layer {layer})")
    assert wrong == []


def _module_name(package_dir: Path, path: Path) -> str:
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports: ``import a.b``, ``from a.b import c`` and relative imports, at
    module level, under ``TYPE_CHECKING`` or deferred in a function. ``from a import b`` points to the module
    ``a.b`` when there is one, else to ``a`` (a name of its ``__init__``); the parent packages Python initializes
    on the way are not edges (every module would then import its own package's ``__init__``, a false circle)."""
    paths = {_module_name(package_dir, path): path for path in sorted(package_dir.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        here = (name if path.name == "__init__.py" else name.rpartition(".")[0]).split(".")  # where `from .` starts
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
                targets |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base for alias in node.names}
        graph[name] = {target for target in targets if target in paths and target != name}
    return graph


def import_circles(package_dir: Path) -> list[list[str]]:
    """The import circles inside each package under ``package_dir`` (a top-level module: in ``package_dir``'s
    own): modules that reach each other through imports within their package (a strongly connected component of
    more than one module), each sorted, in order. A circle works only while every module in it reaches the
    others' names in time; a DAG has no such order to keep."""
    graph = import_graph(package_dir)
    package = {
        _module_name(package_dir, path): ".".join((package_dir.name, *path.relative_to(package_dir).parts[:-1][:1]))
        for path in package_dir.rglob("*.py")
    }  # fmt: skip
    reach: dict[str, set[str]] = {}
    for start in graph:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for target in graph[todo.pop()]:
                if package[target] == package[start] and target not in seen:
                    seen.add(target)
                    todo.append(target)
        reach[start] = seen
    circles = {tuple(sorted({start} | {other for other in reach[start] if start in reach[other]})) for start in graph}
    return sorted(list(circle) for circle in circles if len(circle) > 1)


def test_no_import_circle_inside_a_package():
    """Each package's modules import one another in one direction, deferred imports included (issue 48): a
    circle breaks as soon as a module is imported first from elsewhere, or a deferred import moves to the top."""
    graph = import_graph(PACKAGE)
    found = [
        ", ".join(circle) + ": " + "; ".join(f"{m} imports {', '.join(sorted(graph[m] & set(circle)))}" for m in circle)
        for circle in import_circles(PACKAGE)
    ]
    assert not found, f"{len(found)} import circle(s) inside a package:\n" + "\n".join(found)


def test_an_import_circle_is_found(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for path, text in {
        "__init__.py": "from pkg.a import f\n",
        "a.py": "def f():\n    from pkg.b import g  # deferred: still an edge\n    return g\n",
        "b.py": "from . import a\ng = 1\n",
        "c.py": "import pkg.a\n",  # one way only: no circle
        "sub/__init__.py": "",
        "sub/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..sub.e import E\n",
        "sub/e.py": "from pkg.sub import d\nE = d\n",
    }.items():
        (package / path).write_text(text)
    assert import_circles(package) == [["pkg.a", "pkg.b"], ["pkg.sub.d", "pkg.sub.e"]]


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]+(?:-[a-z0-9]+)*")
SPEAKS_CLI = {"cli", "pytest_plugin", "__main__"}  # a command line of their own: bineval's, pytest's
OWN_COMMAND = {"testing/server.py"}  # `python -m bineval_dspy.testing.server`: a command line of its own


def strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string a module's code holds, docstrings left out (they may show a command line)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value) for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
        and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }  # fmt: skip
    return [
        (node.lineno, node.value) for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]  # fmt: skip


def test_no_library_string_names_a_cli_flag():
    """Library messages name parameters (`overwrite`); the CLI says its flags (issue 34, item 4)."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {FLAG.search(text).group()}"  # type: ignore[union-attr]
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0].removesuffix(".py") not in SPEAKS_CLI and path.relative_to(PACKAGE).as_posix() not in OWN_COMMAND
        for line, text in strings(path) if FLAG.search(text) and "pip install" not in text  # pip's own flags may be shown
    ]  # fmt: skip
    assert not found, f"{len(found)} library string(s) name a CLI flag:\n" + "\n".join(found)


def test_the_cli_says_a_library_message_in_its_flags():
    from bineval_dspy.cli.main import build_parser, flags_of, in_flags

    say = in_flags(flags_of(build_parser()))
    assert say("use `overwrite` or a new output path") == "use --overwrite or a new output path"
    assert say("drop `judge.chain_of_thought`; check `api_key`") == "drop --cot; check --api-key-env"
    assert say("field `dimension` stays") == "field `dimension` stays"  # not a parameter of any command
