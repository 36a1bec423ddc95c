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
