"""How findings, diffs and summaries look: text, JSON, GitHub Actions annotations and SARIF (sarif.py).

Findings are :class:`np2torch.lint.model.Finding` (a notebook's are :class:`CellFinding`); the
model loads no analysis code, so printing never loads the engine.
"""

from __future__ import annotations

import difflib
import json
import os
import time
from typing import Callable, Iterable, Iterator, Sequence, TextIO

from np2torch.cli.sarif import sarif_document
from np2torch.lint.model import CellFinding, Finding

FORMATS = ("text", "json", "github", "sarif")

JSON_KEYS = ("code", "message", "path", "line", "column", "end_line", "end_column", "fixable")
"""Exactly the keys of each JSON finding, in this order."""


def sort_key(finding: Finding) -> tuple[str, int, int, int, str, int, int]:
    return (finding.path, _cell(finding) or 0, finding.line, finding.column, finding.code, finding.end_line,
            finding.end_column)


def _cell(finding: Finding) -> int | None:
    """A notebook finding's cell (1-based); its line and column then count inside that cell."""
    return finding.cell if isinstance(finding, CellFinding) else None


def location(finding: Finding) -> str:
    """``path:line:col``, or ``path:cell N:line:col`` in a notebook."""
    cell = _cell(finding)
    where = finding.path if cell is None else f"{finding.path}:cell {cell}"
    return f"{where}:{finding.line}:{finding.column}"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# ---------------------------------------------------------------- findings


def text_line(finding: Finding) -> str:
    line = f"{location(finding)}: {finding.code} {finding.message}"
    if finding.fixable:
        return line + " [*]"
    if finding.reason:
        return line + f" (no fix: {finding.reason})"
    return line


def text_lines(findings: Iterable[Finding]) -> Iterator[str]:
    return (text_line(f) for f in findings)


def json_object(finding: Finding) -> dict[str, str | int | bool]:
    """Exactly :data:`JSON_KEYS`; a notebook finding adds ``cell`` (its line and column count inside it)."""
    entry: dict[str, str | int | bool] = {key: getattr(finding, key) for key in JSON_KEYS}
    cell = _cell(finding)
    if cell is not None:
        entry["cell"] = cell
    return entry


def json_document(findings: Iterable[Finding]) -> str:
    return json.dumps([json_object(f) for f in findings], indent=2)


def _escape_data(value: str) -> str:
    # The escaping of GitHub's own toolkit (actions/toolkit, packages/core/src/command.ts).
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github_line(finding: Finding) -> str:
    cell = _cell(finding)
    properties = {
        "title": f"np2torch ({finding.code})" + ("" if cell is None else f" cell {cell}"),
        "file": finding.path,
        "line": finding.line,
        "col": finding.column,
        "endLine": finding.end_line,
        "endColumn": finding.end_column,
    }
    joined = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
    where = "" if cell is None else f"cell {cell}:{finding.line}:{finding.column}: "
    return f"::error {joined}::{_escape_data(f'{where}{finding.code} {finding.message}')}"


def github_lines(findings: Iterable[Finding]) -> Iterator[str]:
    return (github_line(f) for f in findings)


def render(findings: Sequence[Finding], fmt: str, errors: Sequence[str] = ()) -> list[str]:
    """The lines (or, for JSON and SARIF, the one document) that show ``findings`` in format ``fmt``.

    ``errors`` (files that could not be checked) appear only in SARIF, which has a place for them.
    """
    if fmt == "sarif":
        return [sarif_document(findings, errors)]
    if fmt == "json":
        return [json_document(findings)]
    if fmt == "github":
        return list(github_lines(findings))
    return list(text_lines(findings))


# ---------------------------------------------------------------- --statistics and --show-fixes


def statistics(findings: Sequence[Finding], fmt: str, names: dict[str, str]) -> list[str]:
    """Counts per code, most frequent first, as ruff's ``--statistics``: ``count  code  [*] name``.

    ``[*]``: at least one of them is fixable.  ``fmt == "json"`` gives one JSON array
    of ``{"code", "name", "count", "fixable"}``; every other format the text table.
    """
    rows: dict[str, tuple[int, bool]] = {}
    for finding in findings:
        count, fixable = rows.get(finding.code, (0, False))
        rows[finding.code] = (count + 1, fixable or finding.fixable)
    ordered = sorted(rows.items(), key=lambda item: (-item[1][0], item[0]))
    if fmt == "json":
        return [json.dumps([{"code": code, "name": names.get(code, ""), "count": count, "fixable": fixable}
                            for code, (count, fixable) in ordered], indent=2)]
    if not ordered:
        return []
    count_width = max(len(str(count)) for _, (count, _) in ordered)
    code_width = max(len(code) for code in rows)
    return [f"{count:>{count_width}}\t{code:<{code_width}}\t{'[*]' if fixable else '[ ]'} {names.get(code, '')}"
            for code, (count, fixable) in ordered]


def show_fixes_check(finding: Finding) -> list[str]:
    """The help line under a text finding with ``--show-fixes``: the fix's title."""
    return [f"  help: {finding.fix_title}"] if finding.fixable and finding.fix_title else []


def fixed_report(fixed: Sequence[tuple[str, dict[str, int]]], names: dict[str, str], *, would: bool) -> list[str]:
    """``fix --show-fixes``: the fixes per file and code, as ruff enumerates them."""
    files = [(path, codes) for path, codes in fixed if codes]
    if not files:
        return []
    total = sum(n for _, codes in files for n in codes.values())
    lines = [f"{'Would fix' if would else 'Fixed'} {plural(total, 'error')}:"]
    for path, codes in files:
        lines.append(f"- {path}:")
        width = max(len(str(n)) for n in codes.values())
        lines.extend(f"    {n:>{width}} \u00d7 {code} ({names.get(code, '')})" for code, n in codes.items())
    return lines


# ---------------------------------------------------------------- summaries


def check_summary(found: int, fixable: int, failed: int) -> list[str]:
    lines = []
    if found:
        tail = f" ({fixable} fixable with `np2torch fix`)" if fixable else ""
        lines.append(f"Found {plural(found, 'error')}{tail}.")
    elif not failed:
        lines.append("All checks passed!")
    if failed:
        lines.append(f"{plural(failed, 'file')} could not be checked.")
    return lines


def fix_summary(fixed: int, files_changed: int, remaining: int, fixable: int, failed: int) -> list[str]:
    lines = []
    if fixed:
        lines.append(f"Fixed {plural(fixed, 'error')} in {plural(files_changed, 'file')}.")
    if remaining:
        tail = f" ({fixable} could not be written)" if fixable else ""
        lines.append(f"Found {plural(remaining, 'error')} that np2torch cannot fix{tail}.")
    elif not fixed and not failed:
        lines.append("All checks passed!")
    if failed:
        lines.append(f"{plural(failed, 'file')} could not be checked or fixed.")
    return lines


def diff_summary(fixable: int, files: int) -> str:
    if not fixable:
        return "Nothing to fix."
    return f"Would fix {plural(fixable, 'error')} in {plural(files, 'file')}."


# ---------------------------------------------------------------- diffs


def _lines(data: bytes) -> list[bytes]:
    # Split on "\n" only, as git does: str.splitlines would also split on \x0c, \x1d, \u2028...
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def diff_bytes(path: str, before: bytes, after: bytes) -> bytes:
    """A ``git diff``-style patch (``a/``, ``b/`` prefixes) of a file's bytes that ``patch -p1``/``git apply`` accept.

    Its lines are the file's own bytes (a latin-1 file's patch is latin-1, a BOM stays in the first
    line) and the name is the file system's bytes, so the patch applies whatever the encodings.
    """
    name = os.fsencode(path.replace(os.sep, "/"))
    out = []
    for line in difflib.diff_bytes(difflib.unified_diff, _lines(before), _lines(after), b"a/" + name, b"b/" + name):
        out.append(line if line.endswith(b"\n") else line + b"\n\\ No newline at end of file\n")
    return b"".join(out)


def unified_diff(path: str, before: str, after: str) -> str:
    """:func:`diff_bytes` of two texts, as text."""
    return diff_bytes(path, before.encode("utf-8", "surrogatepass"), after.encode("utf-8", "surrogatepass")).decode(
        "utf-8", "surrogatepass")


# ---------------------------------------------------------------- progress


class Progress:
    """A one-line progress bar on a terminal's stderr; it appears only once a run has taken a while,
    redraws at most ten times a second and erases itself when done."""

    DELAY_S = 0.5
    WIDTH = 30

    def __init__(self, total: int, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.done = total, 0
        self._stream, self._clock = stream, clock
        self._start = self._last = clock()
        self._drawn = False

    def advance(self, count: int = 1) -> None:
        self.done += count
        now = self._clock()
        if now - self._start >= self.DELAY_S and (now - self._last >= 0.1 or self.done == self.total):
            self._last = now
            self._draw()

    def _draw(self) -> None:
        filled = self.WIDTH * self.done // max(1, self.total)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self._stream.write(f"\r[{bar}] {self.done}/{self.total} files")
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self._stream.write("\r" + " " * (self.WIDTH + 30) + "\r")
            self._stream.flush()
