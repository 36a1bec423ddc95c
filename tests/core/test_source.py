"""``core.source``: the one digest of code every cache key and fingerprint that names code uses (issue 58)."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

from bineval_dspy.core.source import source_digest, source_files


def package_at(root: Path, name: str):
    (root / name / "sub").mkdir(parents=True)
    for path, text in {"__init__.py": "", "a.py": "class A:\n    pass\n", "sub/__init__.py": "", "sub/b.py": "B = 1\n"}.items():
        (root / name / path).write_text(text)
    sys.path.insert(0, str(root))
    try:
        importlib.invalidate_caches()
        return importlib.import_module(name), importlib.import_module(f"{name}.a")
    finally:
        sys.path.remove(str(root))


def test_a_package_a_module_an_object_and_a_file(tmp_path):
    package, module = package_at(tmp_path / "one", "pkg_src_one")
    folder = tmp_path / "one" / "pkg_src_one"
    assert source_files(package) == sorted([folder / "__init__.py", folder / "a.py", folder / "sub" / "__init__.py", folder / "sub" / "b.py"])
    assert source_files(module) == source_files(module.A) == [folder / "a.py"]
    assert source_files(folder / "sub" / "b.py", module) == [folder / "a.py", folder / "sub" / "b.py"]
    assert len(source_digest(package)) == 16 and source_digest(module) != source_digest(package)


def test_the_digest_follows_the_code_not_where_it_is_installed(tmp_path):
    package, _ = package_at(tmp_path / "one", "pkg_src_two")
    before = source_digest(package)
    shutil.copytree(tmp_path / "one", tmp_path / "elsewhere")
    package.__path__ = [str(tmp_path / "elsewhere" / "pkg_src_two")]
    assert source_digest(package) == before  # the same code installed elsewhere
    (tmp_path / "elsewhere" / "pkg_src_two" / "sub" / "b.py").write_text("B = 2\n")
    assert source_digest(package) != before  # a subpackage's module edited
    (tmp_path / "elsewhere" / "pkg_src_two" / "sub" / "b.py").write_text("B = 1\n")
    assert source_digest(package) == before
    (tmp_path / "elsewhere" / "pkg_src_two" / "sub" / "b.py").rename(tmp_path / "elsewhere" / "pkg_src_two" / "sub" / "c.py")
    assert source_digest(package) != before  # a module renamed


def test_the_library_digests_are_made_by_it():
    from bineval_dspy import enforce, verifiers
    from bineval_dspy.enforce import grammar, steering
    from bineval_dspy.verifiers import registry

    assert steering.code_digest() == source_digest(enforce)
    assert grammar.code_digest() == source_digest(grammar)
    assert registry.code_digest() == source_digest(verifiers) or registry.USER_FILES
