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
    return _line_edits(split_lines(old), split_lines(new))


def _line_edits(a: list[str], b: list[str]) -> list[LineEdit]:
    # The lines both texts start and end with are no edit: only the rest is compared (difflib's time grows
    # faster than the lines it compares), so that a one-line fix of a long file costs one pass over it.
    same = 0
    for old, new in zip(a, b):
        if old != new:
            break
        same += 1
    tail = 0
    for old, new in zip(reversed(a[same:]), reversed(b[same:])):
        if old != new:
            break
        tail += 1
    matcher = difflib.SequenceMatcher(None, a[same:len(a) - tail], b[same:len(b) - tail], autojunk=False)
    return [LineEdit(same + i1, same + i2, "".join(b[same + j1:same + j2]))
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


Span = tuple[tuple[int, int], tuple[int, int], str]
"""Replace from (line, column) to (line, column) of the old text, in characters, with a text."""


def spans(old: str, new: str) -> list[Span]:
    """:func:`line_edits` with their ends as positions an editor accepts; each text is split once."""
    lines = split_lines(old)
    return [(_line_start(lines, edit.start), _line_start(lines, edit.end), edit.text)
            for edit in _line_edits(lines, split_lines(new))]


def line_start(old: str, line: int) -> tuple[int, int]:
    """Where line ``line`` (0-based) of ``old`` starts, as (line, column in characters) an editor accepts:
    the end of the last line when the text has no final newline and ``line`` is past it."""
    return _line_start(split_lines(old), line)


def _line_start(lines: list[str], line: int) -> tuple[int, int]:
    if line < len(lines) or not lines or _ENDING.search(lines[-1]):
        return line, 0
    last = lines[-1]
    return len(lines) - 1, len(last)
