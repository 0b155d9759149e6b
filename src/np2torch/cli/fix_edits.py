"""A finding's fix as ruff's JSON writes one: ``{"applicability", "message", "edits"}``.

Edits are what ``np2torch fix`` would change, read off the file's fixed text:
each run of changed lines is one edit (``location``/``end_location`` as ``row``
and ``column``, 1-based, the end exclusive, ``content`` the new lines).  A
finding's edits are the runs on its own lines and the runtime import the file
gains; what a fix of the whole file removes besides (an import left unused) is
no finding's.  The file is fixed once, and only when the output asks for fixes
(``--output-format json``/``json-lines``); a hidden fix (``--unsafe-fixes``) is
computed with it enabled and marked ``"applicability": "unsafe"``.  A notebook
finding's fix carries no edits (ruff's edits count rows across the cells).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from typing import List, Mapping, TypedDict

from np2torch.cli.files import FileError, decode_source, is_notebook, read_bytes
from np2torch.lint.model import CellFinding, Finding, Settings, SourceError
from np2torch.lint.rules import RULES_BY_CODE


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


_TITLE = re.compile(r"`([^`]+)`\Z")
"""A function rule's fix title names what replaces the expression: ``Replace with `np2t.exp```."""
UNSAFE_HINT = "--unsafe-fixes"


class FixEdits:
    """``finding -> its fix`` (or None: it has none), for the files whose settings ``settings`` holds by
    displayed path."""

    def __init__(self, settings: Mapping[str, Settings]) -> None:
        self._settings = settings
        self._hunks: dict[tuple[str, bool], list[tuple[int, int, Edit, bool]] | None] = {}

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
        hunks = self._file(finding.path, unsafe)
        if hunks is None:
            return fix
        first, last = finding.line - 1, finding.end_line  # 0-based lines [first, last)
        replacement = _TITLE.search(finding.fix_title or "")
        if rule is not None and rule.is_function and replacement and any(not is_import for *_, is_import in hunks):
            # exactly the finding's span, as the rewrite replaces it (other findings on its lines are theirs)
            own: list[Edit] = [{"content": replacement.group(1), "location": {"row": finding.line, "column": finding.column},
                    "end_location": {"row": finding.end_line, "column": finding.end_column}}]
        else:
            own = [edit for start, stop, edit, is_import in hunks
                   if not is_import and start < last and (stop > first or start >= first)]
        fix["edits"] = [*(edit for *_, edit, is_import in hunks if is_import), *own]
        return fix

    def _file(self, display: str, unsafe: bool) -> list[tuple[int, int, Edit, bool]] | None:
        key = (display, unsafe)
        if key not in self._hunks:
            self._hunks[key] = self._compute(display, unsafe)
        return self._hunks[key]

    def _compute(self, display: str, unsafe: bool) -> list[tuple[int, int, Edit, bool]] | None:
        settings = self._settings.get(display)
        path = os.path.abspath(display)
        if settings is None or is_notebook(path):
            return None
        if unsafe:
            settings = dataclasses.replace(settings, unsafe_fixes=True)
        from np2torch.lint.engine import FixError, fix_source

        try:
            raw, _stamp = read_bytes(path, display)
            text = decode_source(raw, display).text
            fixed = fix_source(text, path, settings=settings)
        except (FileError, SourceError, FixError):
            return None
        return hunks(text, fixed, f"import {settings.runtime_module} as ")


def hunks(before: str, after: str, import_prefix: str) -> list[tuple[int, int, Edit, bool]]:
    """The runs of changed lines from ``before`` to ``after``: (first line, end line, 0-based, end exclusive;
    the edit; whether it adds the runtime import)."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    found = []
    for i1, i2, j1, j2 in _changes(old, new):
        content = "".join(new[j1:j2])
        edit: Edit = {"content": content, "location": {"row": i1 + 1, "column": 1},
                "end_location": {"row": i2 + 1, "column": 1}}
        adds_import = i1 == i2 and any(line.lstrip().startswith(import_prefix) for line in new[j1:j2])
        found.append((i1, i2, edit, adds_import))
    return found


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
