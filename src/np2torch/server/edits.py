"""What a fix becomes in an editor: the runs of changed lines between two texts, as replacements.

Line by line, so the editor keeps the cursor, marks and undo steps of every
line the fix did not touch; lines split where Python splits them (``\\r\\n``,
``\\r``, ``\\n``: a form feed is no line break), as the LSP counts them.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_ENDING = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their endings."""
    return _LINE.findall(text)


def line_texts(text: str) -> list[str]:
    """The lines of ``text`` without their endings (as many as an editor shows: a final newline opens one)."""
    return _ENDING.split(text)


@dataclass(frozen=True)
class LineEdit:
    """Replace lines ``start`` up to ``end`` (0-based, end exclusive) of the old text with ``text``."""

    start: int
    end: int
    text: str


def line_edits(old: str, new: str) -> list[LineEdit]:
    """The edits that turn ``old`` into ``new``, in order, none overlapping."""
    a, b = split_lines(old), split_lines(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [LineEdit(i1, i2, "".join(b[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def line_start(old: str, line: int) -> tuple[int, int]:
    """Where line ``line`` (0-based) of ``old`` starts, as (line, column in characters) an editor accepts:
    the end of the last line when the text has no final newline and ``line`` is past it."""
    lines = split_lines(old)
    if line < len(lines) or not lines or _ENDING.search(lines[-1]):
        return line, 0
    last = lines[-1]
    return len(lines) - 1, len(last)
