"""Console text from data, printed as text: never read as markup, and no terminal control sequence gets through.

Questions, dimensions, explanations and rows come from users and LMs. Rich reads ``[...]`` as markup (a dimension
named ``[/INST]`` crashed a run) and passes ESC through, so an output could move the cursor, clear the screen or
set the window title (OSC). ``TextConsole`` reads no markup (styles are given as ``style=``, never inline) and
escapes control characters in every string it renders; ``printable`` does the same for ``Text`` built by hand.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from bineval_dspy.core.errors import redacted

_KEPT = {"\n", "\t"}
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}  # embeddings, overrides, isolates


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with control characters (C0 but newline and tab, DEL, C1), lone surrogates and bidirectional
    overrides written as visible escapes (``\\x1b``), so a terminal shows them instead of obeying them, and any API
    key the process holds redacted (``core.errors.redacted``)."""
    text = redacted(text)
    if text.isprintable():
        return text
    return "".join(
        _escaped(ch) if (ch not in _KEPT and unicodedata.category(ch) in ("Cc", "Cs")) or ch in _BIDI else ch for ch in text
    )


class TextConsole(Console):
    """A rich ``Console`` for text from data: markup off by default, control characters escaped. ``speak``, when
    set (by the CLI), rewrites the plain-string notes printed, so a library note that names a parameter in
    backticks names the command's flag (``core.errors.spoken``)."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("markup", False)
        options.setdefault("highlight", False)
        super().__init__(**options)
        self.speak: Callable[[str], str] | None = None

    def print(self, *objects: Any, **options: Any) -> None:
        speak = self.speak
        super().print(*(speak(o) if speak is not None and isinstance(o, str) else o for o in objects), **options)

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(printable(text), **options)


def styled(*parts: str | tuple[str, str]) -> Text:
    """One line from plain pieces and ``(text, style)`` pairs: data never becomes markup."""
    return Text.assemble(*((printable(p), "") if isinstance(p, str) else (printable(p[0]), p[1]) for p in parts))
