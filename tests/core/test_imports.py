"""Importing the library or a console helper loads no LM code; the top-level names the README shows import."""

from __future__ import annotations

import subprocess
import sys

from bineval_dspy import cli


def loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_import_loads_no_llama_cpp():
    assert "llama_cpp" not in loaded_after("import bineval_dspy")
    assert "llama_cpp" not in loaded_after("from bineval_dspy.core.console import console, progress_bar")


def test_readme_names_import_from_the_top_level():
    import importlib

    import bineval_dspy

    for name in bineval_dspy.__all__:
        value = getattr(bineval_dspy, name)  # loaded on first access, from the module its export names
        assert value is getattr(importlib.import_module(bineval_dspy._EXPORTS[name]), name)
        assert callable(value) and value.__name__ == name, name  # the thing itself, not an alias of another name


def test_version(capsys):
    import pytest

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    from bineval_dspy import __version__

    assert __version__ in capsys.readouterr().out


def test_the_top_level_names_the_seams_users_build_on():
    import bineval_dspy

    seams = {"Judge", "Engine", "BinevalError", "RunSpec", "execute", "load_run", "ProgramState", "BinEvalFinetune", "Probe"}
    assert seams <= set(bineval_dspy.__all__)
    assert "llama_cpp" not in loaded_after("import bineval_dspy; bineval_dspy.BinevalError")  # a seam is loaded when used


def test_the_version_has_one_value():
    import tomllib
    from pathlib import Path

    from bineval_dspy import __version__
    from bineval_dspy.core.version import __version__ as low

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert __version__ is low and low == project["version"]


def test_every_public_error_derives_from_the_base():
    """An application catches every error the library raises on purpose with one ``except BinevalError`` (issue 58);
    a private control-flow signal (``_Twice``) is no error of the API."""
    import importlib
    import inspect
    import pkgutil

    import bineval_dspy
    from bineval_dspy.core.errors import BinevalError

    bypass = set()
    for info in pkgutil.walk_packages(bineval_dspy.__path__, "bineval_dspy."):
        if info.name.endswith("__main__"):  # runs a command when imported
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed
            continue
        for name, value in vars(module).items():
            public = inspect.isclass(value) and value.__module__ == info.name and not name.startswith("_")
            if public and issubclass(value, BaseException) and not issubclass(value, BinevalError):
                bypass.add(f"{info.name}.{name}")
    assert not bypass, sorted(bypass)
