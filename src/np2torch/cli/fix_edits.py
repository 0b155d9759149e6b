"""A finding's fix as ruff's JSON writes one: ``{"applicability", "message", "edits"}``.

A finding's edits make its fix when applied alone, as ruff documents them: exactly what ``np2torch fix``
makes of the file when only that finding is fixed (the editor's fix of one finding,
:func:`np2torch.lint.engine.fix_findings`), as edits (``location``/``end_location`` as ``row`` and
``column``, 1-based, the end exclusive, ``content`` the new text).  Rows are counted where ruff and the
tokenizer count them (``\n``, ``\r\n``, ``\r``: a form feed or U+2028 is no line break).  The runtime
import is an edit of its own, the same in every fix of the file, so that a tool applying several fixes
applies it once; a finding's own edit replaces its span with what the fix of the whole file makes of it
(comments inside kept), read off that one fix.  Where that fix also removes an import (one the fixes leave
unused), each finding's fix is made alone (:class:`np2torch.lint.engine.EachFix`), and an import goes to
the fix that alone leaves it unused; an edit of several rows or of an import is widened to its statement,
so that two fixes that each take a name from one import overlap and a tool applies one per pass, as ruff
does.  The file is fixed only when the output asks for fixes (``--output-format json``/``json-lines``/
``rdjson``); a hidden fix (``--unsafe-fixes``) is computed with it enabled and marked ``"applicability":
"unsafe"``.  A notebook finding's fix carries no edits (ruff's edits count rows across the cells).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import os
import re
from itertools import accumulate
from typing import TYPE_CHECKING, List, Mapping, Optional, Tuple, TypedDict

from np2torch.cli.files import FileError, decode_source, is_notebook, read_bytes
from np2torch.lint.model import CellFinding, Finding, Settings, SourceError
from np2torch.lint.rules import RULES_BY_CODE

if TYPE_CHECKING:
    from np2torch.lint.engine import EachFix


class Location(TypedDict):
    """A position as ruff's JSON gives it (1-based)."""

    row: int
    column: int


class Edit(TypedDict):
    """One edit of a fix, as ruff's JSON gives it: ``content`` replaces ``location`` .. ``end_location``."""

    content: str
    location: Location
    end_location: Location


class Fix(TypedDict):
    """A finding's fix in ruff's JSON shape."""

    applicability: str
    message: str
    edits: List[Edit]


UNSAFE_HINT = "--unsafe-fixes"


class FixEdits:
    """``finding -> its fix`` (or None: it has none), for the files whose settings ``settings`` holds by
    displayed path."""

    def __init__(self, settings: Mapping[str, Settings]) -> None:
        self._settings = settings
        self._files: dict[tuple[str, bool], _FileFixes | None] = {}

    def __call__(self, finding: Finding) -> Fix | None:
        unsafe = not finding.fixable and bool(finding.reason) and UNSAFE_HINT in (finding.reason or "")
        if not finding.fixable and not unsafe:
            return None
        rule = RULES_BY_CODE.get(finding.code)
        settings = self._settings.get(finding.path)
        title = finding.fix_title or (rule.fix_title(settings.alias) if rule and settings else f"Fix {finding.code}")
        fix: Fix = {"applicability": "unsafe" if unsafe else "safe", "message": title, "edits": []}
        if isinstance(finding, CellFinding):
            return fix
        fixes = self._file(finding.path, unsafe)
        if fixes is not None:
            fix["edits"] = fixes.edits(finding)
        return fix

    def _file(self, display: str, unsafe: bool) -> _FileFixes | None:
        key = (display, unsafe)
        if key not in self._files:
            self._files[key] = self._compute(display, unsafe)
        return self._files[key]

    def _compute(self, display: str, unsafe: bool) -> _FileFixes | None:
        settings = self._settings.get(display)
        path = os.path.abspath(display)
        if settings is None or is_notebook(path):
            return None
        if unsafe:
            settings = dataclasses.replace(settings, unsafe_fixes=True)
        from np2torch.lint.engine import EachFix, FixError

        try:
            raw, _stamp = read_bytes(path, display)
            text = decode_source(raw, display).text
            return _FileFixes(text, EachFix(text, path, settings))
        except (FileError, SourceError, FixError):
            return None


_Key = Tuple[str, int, int, int, int]


def _key(finding: Finding) -> _Key:
    return finding.code, finding.line, finding.column, finding.end_line, finding.end_column


class _FileFixes:
    """A file's fixes as edits: the runtime import's (every fix's), and each finding's own, read off the text
    every fix makes where its changes lie inside the findings' spans, else off the fix made alone."""

    def __init__(self, text: str, fixes: EachFix) -> None:
        self.text, self.fixes, self.imported = text, fixes, fixes.imported
        self.rows, rows = split_rows(self.imported), split_rows(text)
        self.import_edits = _edits(rows, self.rows)
        self.back = _row_map(rows, self.rows)
        """The row of the text each row of the imported text is (None: a row the import added)."""
        self.forward = _row_map(self.rows, rows)
        self.starts = [0, *accumulate(map(len, self.rows))]
        self.positions = set(fixes.positions)
        self.statements: list[tuple[int, int, bool]] | None = None
        """Every statement of the imported text (:func:`_statements`), parsed when an edit is first widened."""
        self.regions = _regions(self.rows, split_rows(fixes.whole))
        spans = [self._span(position[1:]) for position in fixes.positions]
        # a change no fix's span holds (an import the fixes leave unused, removed): each fix is made alone, which
        # removes it where that fix alone leaves it unused
        self.each_alone = any(not any(span and span[0] <= a and b <= span[1] for span in spans)
                              for a, b, _c, _d in self.regions)

    def edits(self, finding: Finding) -> List[Edit]:
        key = _key(finding)
        if key not in self.positions:
            return []
        own = None if self.each_alone else self._own(finding)
        if own is not None:
            return sorted([*self.import_edits, own], key=_order)
        from np2torch.lint.engine import FixError

        try:
            fixed = self.fixes.alone(key)
        except FixError:
            return []
        if fixed is None:
            return []
        found = [self._in_text(self._widened(edit)) for edit in _edits(self.rows, split_rows(fixed))]
        if any(edit is None for edit in found):  # an edit of the import's own rows: the fix as it is, in one piece
            return _edits(split_rows(self.text), split_rows(fixed))
        return sorted([*self.import_edits, *(edit for edit in found if edit is not None)], key=_order)

    def _span(self, where: tuple[int, int, int, int]) -> tuple[int, int] | None:
        """A span of the text (line, column, end line, end column) as offsets in the imported text."""
        first, last = self.forward[where[0] - 1], self.forward[where[2] - 1]
        if first is None or last is None:
            return None
        return self.starts[first] + where[1] - 1, self.starts[last] + where[3] - 1

    def _own(self, finding: Finding) -> Edit | None:
        """The finding's span replaced by what every fix makes of it, where the changes there lie inside it."""
        span = self._span((finding.line, finding.column, finding.end_line, finding.end_column))
        if span is None:
            return None
        start, end = span
        inside = [r for r in self.regions if start <= r[0] and r[1] <= end]
        if not inside or any(r[0] < end and start < r[1] and r not in inside for r in self.regions):
            return None  # nothing changed there, or a change that reaches out of it (a pattern's around it)
        shift = sum((d - c) - (b - a) for a, b, c, d in self.regions if b <= start and (a, b) != (start, start))
        content = self.fixes.whole[start + shift:end + shift + sum((d - c) - (b - a) for a, b, c, d in inside)]
        return {"content": content, "location": {"row": finding.line, "column": finding.column},
                "end_location": {"row": finding.end_line, "column": finding.end_column}}

    def _widened(self, edit: Edit) -> Edit:
        """``edit`` of the imported text as the whole rows of the smallest statement that holds it, where it
        spans rows or lies in an import: two fixes that each take a name from one import (or change rows of
        one statement) then overlap, and a tool applies one of them at a time, as ruff does, never both
        halves of a statement that only the two together would make whole."""
        first, end = edit["location"], edit["end_location"]
        last = end["row"] - 1 if end["column"] == 1 and end["row"] > first["row"] else end["row"]
        rows = last > first["row"] or "\n" in edit["content"] or "\r" in edit["content"]
        if self.statements is None:
            self.statements = _statements(self.imported)
        holder = min((s for s in self.statements if s[0] <= first["row"] and last <= s[1] and (rows or s[2])),
                     key=lambda s: s[1] - s[0], default=None)
        if holder is None or holder[1] > len(self.rows):
            return edit
        start, stop = self.starts[holder[0] - 1], self.starts[holder[1]]
        content = (self.imported[start:self._offset(first)] + edit["content"] + self.imported[self._offset(end):stop])
        return {"content": content, "location": {"row": holder[0], "column": 1},
                "end_location": {"row": holder[1] + 1, "column": 1}}

    def _offset(self, where: Location) -> int:
        row = where["row"] - 1
        return self.starts[row] + where["column"] - 1 if row < len(self.rows) else len(self.imported)

    def _in_text(self, edit: Edit) -> Edit | None:
        """``edit`` of the imported text as an edit of the text (its rows before the import's)."""
        start, end = self.back[edit["location"]["row"] - 1], self.back[edit["end_location"]["row"] - 1]
        if start is None or end is None:
            return None
        return {"content": edit["content"], "location": {"row": start + 1, "column": edit["location"]["column"]},
                "end_location": {"row": end + 1, "column": edit["end_location"]["column"]}}


_CHARACTERS = 20_000
"""A run of changed rows longer than this is one change (difflib's time grows with the square of it)."""


def _regions(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    """The changes from rows ``old`` to rows ``new``, as offsets: ``old[a:b]`` became ``new[c:d]``, in order."""
    old_starts, new_starts = [0, *accumulate(map(len, old))], [0, *accumulate(map(len, new))]
    found = []
    for i1, i2, j1, j2 in _runs(old, new):
        a, b, base, other = "".join(old[i1:i2]), "".join(new[j1:j2]), old_starts[i1], new_starts[j1]
        if len(a) + len(b) > _CHARACTERS:
            found.append((base, base + len(a), other, other + len(b)))
            continue
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        found.extend((base + x1, base + x2, other + y1, other + y2)
                     for tag, x1, x2, y1, y2 in matcher.get_opcodes() if tag != "equal")
    return found


def _statements(text: str) -> list[tuple[int, int, bool]]:
    """Every statement of ``text`` (nested ones too): its first and last row, and whether it imports; none
    where it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [(node.lineno, node.end_lineno or node.lineno, isinstance(node, (ast.Import, ast.ImportFrom)))
            for node in ast.walk(tree) if isinstance(node, ast.stmt)]


def _order(edit: Edit) -> tuple[int, int, int, int]:
    """As ruff orders a fix's edits: by where they start, then end (an insertion before a removal there)."""
    start, end = edit["location"], edit["end_location"]
    return start["row"], start["column"], end["row"], end["column"]


_ROW = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_rows(text: str) -> list[str]:
    """The rows of ``text`` with their endings, split where ruff and the tokenizer split them (``\\n``,
    ``\\r\\n``, ``\\r``; not at a form feed, ``\\x1c``-``\\x1e``, ``\\x85`` or U+2028/2029, as ``str.splitlines``)."""
    return _ROW.findall(text)


def edits(before: str, after: str) -> list[Edit]:
    """The edits that turn ``before`` into ``after``: each the smallest span of a run of changed rows."""
    return _edits(split_rows(before), split_rows(after))


def _edits(old: list[str], new: list[str]) -> list[Edit]:
    return [_trimmed(old, new, *run) for run in _runs(old, new)]


def _runs(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    """The runs of changed rows, ``old[i1:i2] -> new[j1:j2]``, the rows a run shares between its changes
    separating them."""
    found = []
    for i1, i2, j1, j2 in _changes(old, new):
        if i2 - i1 + j2 - j1 <= 2:
            found.append((i1, i2, j1, j2))
            continue
        matcher = difflib.SequenceMatcher(None, old[i1:i2], new[j1:j2], autojunk=False)
        found.extend((i1 + a1, i1 + a2, j1 + b1, j1 + b2) for tag, a1, a2, b1, b2 in matcher.get_opcodes()
                     if tag != "equal")
    return found


def _trimmed(old: list[str], new: list[str], i1: int, i2: int, j1: int, j2: int) -> Edit:
    """Rows ``old[i1:i2] -> new[j1:j2]`` as one edit of the span between what they start and end with alike."""
    a, b = "".join(old[i1:i2]), "".join(new[j1:j2])
    same = len(os.path.commonprefix([a, b]))
    tail = 0
    while tail < min(len(a), len(b)) - same and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return {"content": b[same:len(b) - tail], "location": _location(old, i1, same),
            "end_location": _location(old, i1, len(a) - tail)}


def _location(rows: list[str], row: int, offset: int) -> Location:
    """The row and column (1-based, in characters) ``offset`` characters after the start of row ``row``."""
    while row < len(rows) and offset >= len(rows[row]):
        offset -= len(rows[row])
        row += 1
    return {"row": row + 1, "column": offset + 1}


def _row_map(old: list[str], new: list[str]) -> list[Optional[int]]:
    """For each row of ``new`` (and the end, one past its last), the row of ``old`` it is, or None where the
    texts differ."""
    back: list[Optional[int]] = [None] * (len(new) + 1)
    i = j = 0
    for _i1, i2, j1, j2 in [*_changes(old, new), (len(old), len(old), len(new), len(new))]:
        for k in range(j1 - j):
            back[j + k] = i + k
        i, j = i2, j2
    back[len(new)] = len(old)
    return back


_WINDOW = 64
"""How far apart (in lines) the two texts may get before they agree again, for the quick walk; beyond it,
difflib takes the rest."""
_AGREE = 3
"""Lines that must agree for the texts to be in step again (or the end of both)."""


def _changes(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    """Runs ``old[i1:i2] -> new[j1:j2]``, walking both texts at once: a fix changes lines here and there
    (a call rewritten in place, an import added or removed), so after each difference the two come back in
    step within a few lines (linear, where difflib's matching costs seconds on a large file)."""
    runs: list[tuple[int, int, int, int]] = []
    i = j = 0
    while i < len(old) and j < len(new):
        if old[i] == new[j]:
            i, j = i + 1, j + 1
            continue
        step = _in_step(old, new, i, j)
        if step is None:
            opcodes = difflib.SequenceMatcher(None, old[i:], new[j:]).get_opcodes()
            runs.extend((i + a1, i + a2, j + b1, j + b2) for tag, a1, a2, b1, b2 in opcodes if tag != "equal")
            return runs
        runs.append((i, i + step[0], j, j + step[1]))
        i, j = i + step[0], j + step[1]
    if i < len(old) or j < len(new):
        runs.append((i, len(old), j, len(new)))
    return runs


def _in_step(old: list[str], new: list[str], i: int, j: int) -> tuple[int, int] | None:
    """The fewest lines (skipped in ``old``, in ``new``) after which the texts agree again."""
    for total in range(1, 2 * _WINDOW + 1):
        for a in range(max(0, total - _WINDOW), min(total, _WINDOW) + 1):
            b = total - a
            if old[i + a:i + a + _AGREE] == new[j + b:j + b + _AGREE] and (
                    i + a < len(old) or j + b >= len(new)):
                return a, b
    return None
