"""One writer per output file: an advisory lock (``flock``) held while a command writes its output.

Two runs appending to one output would each judge every row, and a resume would keep both copies. The lock is on
the output file itself; a resume rewrites the file by renaming a new one over it, so ``replace_locked`` locks the
new file before the rename and only then lets go of the old one: there is never a moment without a lock.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from bineval_dspy.core.errors import InputError

_held: dict[str, int] = {}  # absolute output path -> the descriptor that holds its lock
_guard = threading.Lock()


def _key(path: Path) -> str:
    return str(path.absolute())


def claim(path: Path) -> None:
    """Lock ``path`` (created when missing) for this process until ``release_all``; another process holding it is
    one located InputError, before any work."""
    with _guard:
        if _key(path) in _held:
            return
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InputError(f"{path}: cannot write ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise InputError(f"{path}: another bineval run is writing it; wait for it to end or give another output path") from None
        _held[_key(path)] = fd


def holds(path: Path) -> bool:
    """Whether this process holds the lock on ``path``."""
    with _guard:
        return _key(path) in _held


def replace_locked(tmp: Path, path: Path) -> None:
    """``os.replace(tmp, path)``; when this process holds ``path``'s lock, the new file is locked first."""
    with _guard:
        old = _held.get(_key(path))
        if old is None:
            os.replace(tmp, path)
            return
        new = os.open(tmp, os.O_RDWR)
        try:
            fcntl.flock(new, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else knows the temporary file's name
            os.replace(tmp, path)
        except OSError:
            os.close(new)
            raise
        _held[_key(path)] = new
        os.close(old)


def release_all() -> None:
    """Let go of every output lock this process holds (the end of a command)."""
    with _guard:
        for fd in _held.values():
            os.close(fd)
        _held.clear()
