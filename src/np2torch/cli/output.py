"""How findings, diffs and summaries look: ``--output-format`` (concise, full, grouped, json, json-lines,
junit, gitlab, github, pylint, rdjson, azure, sarif in sarif.py), statistics, summaries and diffs.

Findings are :class:`np2torch.lint.model.Finding` (a notebook's are :class:`CellFinding`); the
model loads no analysis code, so printing never loads the engine.  Files that could not be
checked are :class:`Problem` s.  One that does not parse or cannot be read is a finding, as ruff
reports it (:func:`as_finding`, code ``invalid-syntax`` or ``E902``); every format carries the
others too (the text formats on stderr, where the command line prints them; the machine formats
in their own document, located when the message names a line).
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import os
import re
import time
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence, TextIO

from np2torch.cli.config import OUTPUT_FORMATS
from np2torch.cli.sarif import level, sarif_document
from np2torch.lint.model import INVALID_SYNTAX, NOT_ANALYSED, CellFinding, Finding
from np2torch.lint.pages import rule_url
from np2torch.lint.rules import RULES_BY_CODE

if TYPE_CHECKING:
    from np2torch.cli.fix_edits import Fix, Location

FORMATS = OUTPUT_FORMATS
TEXT_FORMATS = ("concise", "full", "grouped", "pylint")
"""Formats read by people: the summary follows them, and the errors go to stderr."""
SUMMARY_FORMATS = ("concise", "full", "grouped")
"""The formats ruff follows with its summary line (``Found 2 errors.``, ``Fixed 1 error.``, ``Would fix 1 error.``):
not pylint's, nor the machines' formats."""

JSON_KEYS = ("code", "message", "path", "line", "column", "end_line", "end_column", "fixable")
"""np2torch's own keys of each JSON finding, in this order; :data:`RUFF_KEYS` follow."""
RUFF_KEYS = ("cell", "filename", "location", "end_location", "fix", "noqa_row", "url", "name", "severity")
"""The keys of ruff's JSON a tool written for ruff reads: ``filename`` (absolute), ``location`` and
``end_location`` (``row``, ``column``), ``fix`` (``applicability``, ``message``, ``edits``; null when there is
none), ``noqa_row`` (where ``# noqa`` goes), ``url`` (the rule's page), ``cell`` (null outside a notebook),
``name`` (the rule's), ``severity`` (``warning``: findings are speed-ups, as in every other format)."""

Fixes = Callable[[Finding], "Fix | None"]
"""A finding's fix in ruff's JSON shape (:class:`np2torch.cli.fix_edits.FixEdits`)."""


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


_IRREGULAR = {"fix": "fixes", "error": "errors", "file": "files"}


def plural(count: int, word: str) -> str:
    """``1 hidden fix``, ``6 hidden fixes``: the last word takes its plural."""
    if count == 1:
        return f"{count} {word}"
    head, _, last = word.rpartition(" ")
    many = _IRREGULAR.get(last, last + ("es" if last.endswith(("s", "x", "z", "ch", "sh")) else "s"))
    return f"{count} {head + ' ' if head else ''}{many}"


@dataclass(frozen=True)
class Problem:
    """A file that could not be checked (unreadable, unparsable, a fix that failed): its one-line message and,
    when the message names them, the line and column."""

    path: str
    message: str
    """The whole line as printed to stderr, ``path:line:col: error: ...``."""
    line: int | None = None
    column: int | None = None
    text: str = ""
    """The message without its location and its ``error:`` label."""
    code: str | None = None
    """The code ruff reports it under (:data:`~np2torch.lint.model.NOT_ANALYSED`); ``None``: none."""


_WHERE = re.compile(r"(?::(\d+)(?::(\d+))?)?: (?:error: )?(.*)\Z", re.DOTALL)


def problem(path: str, message: str, code: str | None = None) -> Problem:
    """The :class:`Problem` that ``message`` (as :class:`FileError` and the runner write them) describes."""
    match = _WHERE.match(message, len(path)) if message.startswith(path) else None
    if match is None:
        return Problem(path, message, text=message, code=code)
    line, column, text = match.groups()
    return Problem(path, message, int(line) if line else None, int(column) if column else None, text, code)


def as_finding(item: Problem) -> Finding:
    """A file that does not parse or cannot be read, as ruff reports it: a finding of its code (``invalid-syntax``,
    ``E902``) where the error is (1:1 when the message names no place), with no fix."""
    line, column = item.line or 1, item.column or 1
    return Finding(item.path, line, column, line, column, item.code or "", item.text, fixable=False, fix_title=None)


# ---------------------------------------------------------------- findings


UNSAFE_HINT = "--unsafe-fixes"
"""What the engine's reasons name when a fix exists but is unsafe (a "hidden fix", as ruff calls it)."""


def text_line(finding: Finding) -> str:
    """``path:line:col: CODE message``, then ``[*]`` (fixable), or why there is no fix: the reason itself, or
    for an unsafe fix a short note (``--output-format full`` and ``np2torch explain`` say why it is unsafe)."""
    return f"{location(finding)}: {headline(finding)}{_fix_note(finding)}"


def headline(finding: Finding) -> str:
    """``CODE message``; ``invalid-syntax: message`` for a file that does not parse, as ruff prints a diagnostic of
    no rule (its name where the code would be)."""
    return f"{finding.code}{'' if _rule_code(finding.code) else ':'} {finding.message}"


def _rule_code(code: str) -> str | None:
    """The code a finding shows where ruff shows a rule's: none for ``invalid-syntax``, which is a name."""
    return None if code == INVALID_SYNTAX else code


def _fix_note(finding: Finding) -> str:
    if finding.fixable:
        return " [*]"
    if finding.reason and UNSAFE_HINT in finding.reason:
        return f" (unsafe fix: {UNSAFE_HINT})"
    if finding.reason:
        return f" (no fix: {finding.reason})"
    return ""


def text_lines(findings: Iterable[Finding]) -> Iterator[str]:
    return (text_line(f) for f in findings)


def json_object(finding: Finding, fixes: Fixes | None = None) -> dict[str, object]:
    """Exactly :data:`JSON_KEYS` and :data:`RUFF_KEYS`; in a notebook, ``cell`` is the cell's number and the
    line and column count inside it.  ``fixes``: each finding's fix (without it, ``fix`` says only whether
    there is one, with no edits).  A file np2torch could not analyse has no ``noqa_row`` and no ``url``, and
    severity ``error``, as ruff writes it."""
    entry: dict[str, object] = {key: getattr(finding, key) for key in JSON_KEYS}
    entry["cell"] = _cell(finding)
    entry["filename"] = os.path.abspath(finding.path)
    entry["location"] = {"row": finding.line, "column": finding.column}
    entry["end_location"] = {"row": finding.end_line, "column": finding.end_column}
    if fixes is not None:
        entry["fix"] = fixes(finding)
    else:
        entry["fix"] = {"applicability": "safe", "message": finding.fix_title, "edits": []} if finding.fixable else None
    entry["noqa_row"] = None if finding.code in NOT_ANALYSED else finding.line
    entry["url"] = _url(finding.code)
    rule = RULES_BY_CODE.get(finding.code)
    entry["name"] = rule.name if rule is not None else NOT_ANALYSED.get(finding.code)
    entry["severity"] = level(finding.code)
    return entry


def _url(code: str) -> str | None:
    """The rule's page; none for the codes of a file np2torch could not analyse, which no rule of its has."""
    return None if code in NOT_ANALYSED else rule_url(code)


def json_document(findings: Iterable[Finding], fixes: Fixes | None = None) -> str:
    return json.dumps([json_object(f, fixes) for f in findings], indent=2)


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
    return f"::{level(finding.code)} {joined}::{_escape_data(f'{where}{headline(finding)}')}"


def github_problem(item: Problem) -> str:
    properties: dict[str, object] = {"title": "np2torch", "file": item.path}
    if item.line is not None:
        properties["line"] = item.line
    if item.column is not None:
        properties["col"] = item.column
    joined = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
    return f"::error {joined}::{_escape_data(item.text)}"


def github_lines(findings: Iterable[Finding]) -> Iterator[str]:
    return (github_line(f) for f in findings)


def _json_problem(item: Problem) -> dict[str, object]:
    """A file that could not be checked, and is no finding (:func:`as_finding`): a JSON finding whose ``code`` is
    null."""
    where = {"row": item.line or 1, "column": item.column or 1}
    return {"code": None, "message": item.text, "path": item.path, "line": item.line, "column": item.column,
            "end_line": item.line, "end_column": item.column, "fixable": False, "cell": None,
            "filename": os.path.abspath(item.path), "location": where, "end_location": where, "fix": None,
            "noqa_row": None, "url": None, "name": None, "severity": "error"}


def rdjson_document(findings: Sequence[Finding], problems: Sequence[Problem] = (), fixes: Fixes | None = None) -> str:
    """reviewdog's Diagnostic Format, as ruff's ``rdjson``: each finding with its rule's code and page, its
    range (``line``/``column``, 1-based), and its fix's edits as ``suggestions``; a file that could not be
    checked is a diagnostic of severity ``ERROR``, with its code when it has one (``invalid-syntax``, ``E902``)."""
    def position(where: Location) -> dict[str, int]:
        return {"line": where["row"], "column": where["column"]}

    diagnostics: list[dict[str, object]] = []
    for finding in findings:
        url = _url(finding.code)
        entry: dict[str, object] = {
            "code": {"value": finding.code} if url is None else {"url": url, "value": finding.code},
            "location": {"path": os.path.abspath(finding.path), "range": {
                "start": {"line": finding.line, "column": finding.column},
                "end": {"line": finding.end_line, "column": finding.end_column}}},
            "message": finding.message,
        }
        if finding.code in NOT_ANALYSED:
            entry["severity"] = "ERROR"
        fix = fixes(finding) if fixes is not None else None
        if fix is not None and fix["edits"]:
            entry["suggestions"] = [{"range": {"start": position(e["location"]), "end": position(e["end_location"])},
                                     "text": e["content"]} for e in fix["edits"]]
        diagnostics.append(entry)
    for item in problems:
        where = {"line": item.line or 1, "column": item.column or 1}
        diagnostics.append({"location": {"path": os.path.abspath(item.path), "range": {"start": where, "end": where}},
                            "message": item.text, "severity": "ERROR"})
    document = {"diagnostics": diagnostics, "severity": "WARNING",
                "source": {"name": "np2torch", "url": rule_url("").partition("#")[0]}}
    return json.dumps(document, indent=2)


def azure_line(finding: Finding) -> str:
    """An Azure Pipelines logging command (``##vso[task.logissue ...]``), as ruff's ``azure``: a warning (an error
    for a file np2torch could not analyse)."""
    return (f"##vso[task.logissue type={level(finding.code)};sourcepath={os.path.abspath(finding.path)};"
            f"linenumber={finding.line};columnnumber={finding.column};code={finding.code};]{finding.message}")


def azure_problem(item: Problem) -> str:
    where = "".join(f"{key}={value};" for key, value in (("linenumber", item.line), ("columnnumber", item.column))
                    if value is not None)
    return f"##vso[task.logissue type=error;sourcepath={os.path.abspath(item.path)};{where}]{item.text}"


def _where(finding: Finding) -> str:
    """``line:col``, or ``cell N:line:col`` in a notebook."""
    cell = _cell(finding)
    return f"{'' if cell is None else f'cell {cell}:'}{finding.line}:{finding.column}"


def full_lines(finding: Finding, source_line: Callable[[Finding], str | None]) -> list[str]:
    """ruff's ``full`` format: the finding, its source line with a caret under the span, and the fix or
    why there is none."""
    lines = [text_line(finding) if not finding.reason else f"{location(finding)}: {headline(finding)}"]
    text = source_line(finding)
    if text is not None:
        number = str(finding.line)
        pad = " " * len(number)
        start = finding.column - 1
        stop = finding.end_column - 1 if finding.end_line == finding.line else len(text)
        shown = text.expandtabs(1)  # one column per character, so the caret stays under the span
        lines += [f"{pad} |", f"{number} | {shown}",
                  f"{pad} | {' ' * start}{'^' * max(1, stop - start)} {finding.code}", f"{pad} |"]
    if finding.fixable and finding.fix_title:
        lines.append(f"{' ' * (len(str(finding.line)) if text is not None else 0)} = help: {finding.fix_title}")
    elif finding.reason:
        lines.append(f"{' ' * (len(str(finding.line)) if text is not None else 0)} = note: no fix: {finding.reason}")
    lines.append("")
    return lines


def grouped_lines(findings: Sequence[Finding]) -> list[str]:
    """ruff's ``grouped`` format: each file's name, then its findings without it, and a blank line."""
    lines: list[str] = []
    current = None
    for finding in findings:
        if finding.path != current:
            if current is not None:
                lines.append("")
            current = finding.path
            lines.append(f"{finding.path}:")
        lines.append(f"  {_where(finding)} {headline(finding)}{_fix_note(finding)}")
    if lines:
        lines.append("")
    return lines


def pylint_line(finding: Finding) -> str:
    """pylint's ``{path}:{line}: [{code}] {message}`` (a notebook's line counts inside its cell, named first)."""
    cell = _cell(finding)
    return f"{finding.path}:{finding.line}: [{finding.code}] {'' if cell is None else f'cell {cell}: '}{finding.message}"


def junit_document(findings: Sequence[Finding], problems: Sequence[Problem] = ()) -> str:
    """JUnit XML, as ruff writes it: one test suite per file, one failing test case per finding (``error``
    for a file that could not be checked); one passing case when there is nothing."""
    from xml.sax.saxutils import escape as xml_escape  # it loads urllib.request: only when JUnit is asked for
    from xml.sax.saxutils import quoteattr

    by_path: dict[str, list[str]] = {}
    counts: dict[str, tuple[int, int]] = {}
    for finding in findings:
        where = f"line {finding.line}, col {finding.column}" + ("" if _cell(finding) is None else f", cell {_cell(finding)}")
        by_path.setdefault(finding.path, []).append(
            f'    <testcase name="org.np2torch.{finding.code}" classname={quoteattr(_valid_text(finding.path))} '
            f'line="{finding.line}" column="{finding.column}">\n'
            f"      <failure message={quoteattr(_valid_text(finding.message))}>{xml_escape(_valid_text(f'{where}, {finding.message}'))}</failure>\n"
            "    </testcase>")
        failures, errors = counts.get(finding.path, (0, 0))
        counts[finding.path] = (failures + 1, errors)
    for item in problems:
        by_path.setdefault(item.path, []).append(
            f'    <testcase name="org.np2torch.error" classname={quoteattr(_valid_text(item.path))}>\n'
            f"      <error message={quoteattr(_valid_text(item.text))}>{xml_escape(_valid_text(item.message))}</error>\n"
            "    </testcase>")
        failures, errors = counts.get(item.path, (0, 0))
        counts[item.path] = (failures, errors + 1)
    suites = []
    for path in sorted(by_path):
        failures, errors = counts[path]
        suites.append(f"  <testsuite name={quoteattr(_valid_text(path))} tests=\"{failures + errors}\" failures=\"{failures}\" "
                      f"errors=\"{errors}\">\n" + "\n".join(by_path[path]) + "\n  </testsuite>")
    if not suites:
        suites.append('  <testsuite name="np2torch" tests="1" failures="0" errors="0">\n'
                      '    <testcase name="No errors found" classname="np2torch"/>\n  </testsuite>')
    failures = sum(f for f, _ in counts.values())
    errors = sum(e for _, e in counts.values())
    tests = max(1, failures + errors)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites name="np2torch" tests="{tests}" failures="{failures}" errors="{errors}">\n'
            + "\n".join(suites) + "\n</testsuites>")


def _valid_text(text: str) -> str:
    """``text`` with what XML 1.0 cannot hold (control characters, lone surrogates) as escapes."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") if _has_surrogate(text) else text
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", lambda m: f"\\x{ord(m.group()):02x}", text)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


GITLAB_SEVERITY = {"warning": "minor", "error": "major"}
"""GitLab's scale is info, minor, major, critical, blocker: a missed speed-up (a ``warning``, :func:`level`) is
minor; a file that could not be checked is ``major``, as ruff rates every finding."""


GITLAB_PROJECT_DIR = "CI_PROJECT_DIR"
"""GitLab CI's checkout folder: report paths are relative to it (as ruff's), wherever np2torch ran."""


def _gitlab_path(path: str) -> str:
    project = os.environ.get(GITLAB_PROJECT_DIR)
    if not project:
        return path
    rel = os.path.relpath(os.path.abspath(path), project)
    return path if rel.startswith(os.pardir) else rel.replace(os.sep, "/")


def gitlab_document(findings: Sequence[Finding], problems: Sequence[Problem] = ()) -> str:
    """A GitLab Code Quality report (a subset of the Code Climate spec): one issue per finding, each with a
    fingerprint that stays the same while the finding does (its code, file, message and rank among equals,
    not its line), so GitLab tells new findings from old ones.  Paths are relative to ``CI_PROJECT_DIR``."""
    issues: list[dict[str, object]] = []
    seen: dict[str, int] = {}
    for finding in findings:
        cell = _cell(finding)
        key = f"{finding.code}\0{finding.path}\0{cell}\0{finding.message}"
        issues.append({
            "description": f"{finding.code}: {'' if cell is None else f'cell {cell}: '}{finding.message}",
            "check_name": finding.code,
            "fingerprint": _fingerprint(key, seen),
            "severity": GITLAB_SEVERITY[level(finding.code)],
            "location": {"path": _gitlab_path(finding.path),
                         "positions": {"begin": {"line": finding.line, "column": finding.column},
                                       "end": {"line": finding.end_line, "column": finding.end_column}}},
        })
    for item in problems:
        issues.append({
            "description": item.text,
            "check_name": "error",
            "fingerprint": _fingerprint(f"error\0{item.path}\0{item.text}", seen),
            "severity": GITLAB_SEVERITY["error"],
            "location": {"path": _gitlab_path(item.path), "lines": {"begin": item.line or 1}},
        })
    return json.dumps(issues, indent=2)


def _fingerprint(key: str, seen: dict[str, int]) -> str:
    rank = seen.get(key, 0)
    seen[key] = rank + 1
    return hashlib.sha256(f"{key}\0{rank}".encode("utf-8", "surrogatepass")).hexdigest()


def render(findings: Sequence[Finding], fmt: str, problems: Sequence[Problem] = (),
           source_line: Callable[[Finding], str | None] | None = None, fixes: Fixes | None = None) -> list[str]:
    """The lines (or, for the document formats, the one document) that show ``findings`` in format ``fmt``.

    ``problems`` (files that could not be checked) go into the machine formats; the text formats leave
    them to stderr.  ``source_line`` gives the ``full`` format a finding's line of code; ``fixes`` the JSON
    formats each finding's fix.
    """
    if fmt == "sarif":
        return [sarif_document(findings, [p.message for p in problems])]
    if fmt == "json":
        entries = [*(json_object(f, fixes) for f in findings), *map(_json_problem, problems)]
        return [json.dumps(entries, indent=2)]
    if fmt == "json-lines":
        return [json.dumps(entry) for entry in (*(json_object(f, fixes) for f in findings), *map(_json_problem, problems))]
    if fmt == "rdjson":
        return [rdjson_document(findings, problems, fixes)]
    if fmt == "azure":
        return [*map(azure_line, findings), *map(azure_problem, problems)]
    if fmt == "junit":
        return [junit_document(findings, problems)]
    if fmt == "gitlab":
        return [gitlab_document(findings, problems)]
    if fmt == "github":
        return [*github_lines(findings), *map(github_problem, problems)]
    if fmt == "pylint":
        return list(map(pylint_line, findings))
    if fmt == "grouped":
        return grouped_lines(findings)
    if fmt == "full":
        return [line for f in findings for line in full_lines(f, source_line or (lambda _: None))]
    return list(text_lines(findings))


# ---------------------------------------------------------------- --statistics and --show-fixes


def statistics(findings: Sequence[Finding], fmt: str, names: dict[str, str]) -> list[str]:
    """Counts per code, most frequent first, as ruff's ``--statistics``: ``count  code  [*] name``.

    ``[*]``: at least one of them is fixable.  ``fmt == "json"`` gives one JSON array
    of ``{"code", "name", "count", "fixable"}``; every other format the text table.  Files that do not parse
    show no code (null in JSON), only the name ``invalid-syntax``, as ruff's.
    """
    rows: dict[str, tuple[int, bool]] = {}
    for finding in findings:
        count, fixable = rows.get(finding.code, (0, False))
        rows[finding.code] = (count + 1, fixable or finding.fixable)
    ordered = sorted(rows.items(), key=lambda item: (-item[1][0], _rule_code(item[0]) or ""))
    if fmt == "json":
        return [json.dumps([{"code": _rule_code(code), "name": names.get(code, ""), "count": count,
                             "fixable": fixable} for code, (count, fixable) in ordered], indent=2)]
    if not ordered:
        return []
    count_width = max(len(str(count)) for _, (count, _) in ordered)
    code_width = max(len(_rule_code(code) or "") for code in rows)
    return [f"{count:>{count_width}}\t{_rule_code(code) or '':<{code_width}}\t{'[*]' if fixable else '[ ]'} "
            f"{names.get(code, '')}" for code, (count, fixable) in ordered]


def show_fixes_check(finding: Finding) -> list[str]:
    """The help line under a text finding with ``--show-fixes``: the fix's title."""
    return [f"  help: {finding.fix_title}"] if finding.fixable and finding.fix_title else []


def fixed_report(fixed: Sequence[tuple[str, dict[str, int]]], names: dict[str, str]) -> list[str]:
    """``fix --show-fixes``: the fixes per file and code, as ruff enumerates them."""
    files = [(path, codes) for path, codes in fixed if codes]
    if not files:
        return []
    total = sum(n for _, codes in files for n in codes.values())
    lines = [f"Fixed {plural(total, 'error')}:"]
    for path, codes in files:
        lines.append(f"- {path}:")
        width = max(len(str(n)) for n in codes.values())
        lines.extend(f"    {n:>{width}} \u00d7 {code} ({names.get(code, '')})" for code, n in codes.items())
    return lines


# ---------------------------------------------------------------- summaries


def _hidden(hidden: int, fixable: int) -> list[str]:
    if not hidden:
        return []
    enable = f"{plural(hidden, 'hidden fix')} can be enabled with the `--unsafe-fixes` option"
    return [f"No fixes available ({enable})." if not fixable else f"{enable[0].upper()}{enable[1:]}."]


def check_summary(found: int, fixable: int, failed: int, hidden: int = 0) -> list[str]:
    """``hidden``: findings whose fix ``--unsafe-fixes`` would apply (as ruff words them)."""
    lines = []
    if found:
        tail = f" ({fixable} fixable with `np2torch fix`)" if fixable else ""
        lines.append(f"Found {plural(found, 'error')}{tail}.")
        lines += _hidden(hidden, fixable)
    elif not failed:
        lines.append("All checks passed!")
    if failed:
        lines.append(f"{plural(failed, 'file')} could not be checked.")
    return lines


def fix_summary(fixed: int, files_changed: int, remaining: int, fixable: int, failed: int,
                hidden: int = 0, left_out: int = 0) -> list[str]:
    """``remaining``: findings left, of which ``fixable`` could not be written and ``hidden`` need ``--unsafe-fixes``;
    ``left_out``: sites ``fix --from-run`` left as they are on purpose (each had its line)."""
    lines = []
    if fixed:
        lines.append(f"Fixed {plural(fixed, 'error')} in {plural(files_changed, 'file')}.")
    unfixable = remaining - hidden
    if unfixable:
        tail = f" ({fixable} could not be written)" if fixable else ""
        lines.append(f"Found {plural(unfixable, 'error')} that np2torch cannot fix{tail}.")
    if hidden:
        lines.append(f"Found {plural(hidden, 'error')} that `--unsafe-fixes` would fix.")
    if left_out:
        lines.append(f"Left {plural(left_out, 'site')} as {'it is' if left_out == 1 else 'they are'}: left out by "
                     "the report (one line each above).")
    if not fixed and not failed and not remaining and not left_out:
        lines.append("All checks passed!")
    if failed:
        lines.append(f"{plural(failed, 'file')} could not be checked or fixed.")
    return lines


_ROWS = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _width(row: str, tab: int = 4) -> int:
    """A row's width as ruff's E501 measures it: a wide character counts two, a tab reaches the next stop."""
    width = 0
    for char in row.rstrip("\r\n"):
        if char == "\t":
            width += tab - width % tab
        else:
            width += 2 if unicodedata.east_asian_width(char) in "WF" else 1
    return width


def longer_lines_note(display: str, before: str, after: str, limit: int) -> str | None:
    """The note ``fix`` adds where it made rows of a file longer than ``limit`` (ruff's ``line-length``) and
    the file had none longer: ruff's E501 would now report them."""
    if any(_width(row) > limit for row in _ROWS.findall(before)):
        return None
    rows = [number for number, row in enumerate(_ROWS.findall(after), 1) if _width(row) > limit]
    if not rows:
        return None
    where = f"{'line' if len(rows) == 1 else 'lines'} {', '.join(map(str, rows))}"
    return (f"{display}: note: the fix made {where} longer than the line-length ({limit}), which no line of the "
            "file exceeded before (ruff's E501 reports them)")


def _with_hidden(head: str, fixed: int, hidden: int) -> str:
    if not hidden:
        return head + "."
    more = "additional fix" if fixed else "fix"
    return f"{head} ({plural(hidden, more)} available with `--unsafe-fixes`)."


def fix_only_summary(fixed: int, hidden: int) -> str:
    """``check --fix-only``'s one line, as ruff words it: ``Fixed 2 errors.`` / ``No errors fixed.``, and the
    fixes ``--unsafe-fixes`` would add."""
    return _with_hidden(f"Fixed {plural(fixed, 'error')}" if fixed else "No errors fixed", fixed, hidden)


def diff_summary(fixed: int, hidden: int) -> list[str]:
    """``--diff``'s line, as ruff words it: ``Would fix 2 errors.``, and the fixes ``--unsafe-fixes`` would add
    (``No errors would be fixed (1 fix available with `--unsafe-fixes`).``); none when neither is (ruff's
    says nothing then)."""
    if not fixed and not hidden:
        return []
    return [_with_hidden(f"Would fix {plural(fixed, 'error')}" if fixed else "No errors would be fixed", fixed, hidden)]


# ---------------------------------------------------------------- diffs


def _lines(data: bytes) -> list[bytes]:
    # Split on "\n" only, as git does: str.splitlines would also split on \x0c, \x1d, \u2028...
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _hunks(before: bytes, after: bytes, *, hint: bool = True) -> list[bytes]:
    """The hunks of the unified diff of two texts' lines (three lines of context); a last line without its newline
    gets one, then ``\\ No newline at end of file`` where ``hint`` asks for it."""
    ending = b"\n\\ No newline at end of file\n" if hint else b"\n"
    lines = difflib.diff_bytes(difflib.unified_diff, _lines(before), _lines(after), b"", b"")
    return [line if line.endswith(b"\n") else line + ending for line in itertools.islice(lines, 2, None)]


def diff_bytes(path: str | None, before: bytes, after: bytes) -> bytes:
    """A file's patch as ruff's ``--diff`` prints it: ``--- path`` and ``+++ path`` (no ``a/``, ``b/``: ``patch -p0``
    and ``git apply -p0`` take it; no such lines without a ``path``, as ruff's for stdin without a name), the
    hunks, then an empty line; nothing when the bytes are the same.

    Its lines are the file's own bytes (a latin-1 file's patch is latin-1, a BOM stays in the first
    line) and the name is the file system's bytes, so the patch applies whatever the encodings.
    """
    hunks = _hunks(before, after)
    if not hunks:
        return b""
    name = os.fsencode((path or "").replace(os.sep, "/"))
    header = [] if path is None else [b"--- " + name + b"\n", b"+++ " + name + b"\n"]
    return b"".join(header + hunks) + b"\n"


def notebook_diff(path: str | None, cells: Iterable[tuple[int, str, str]]) -> bytes:
    """A notebook's patch as ruff's ``--diff`` prints it: for each code cell ``(number, before, after)``, changed or
    not, ``--- path:cell N`` and ``+++ path:cell N`` (``N`` counts every cell from 1, markdown too; ``cell N``
    without a ``path``) and the cell's hunks, a cell's last line without its newline given one and no ``\\ No
    newline`` line (a cell's last line usually has none); one empty line after the last cell.  The text is UTF-8,
    as a notebook's; the headers name cells, so no ``patch`` applies it (nor ruff's)."""
    name = os.fsencode((path or "").replace(os.sep, "/"))
    out = []
    for number, before, after in cells:
        label = (name + b":" if path is not None else b"") + b"cell %d" % number
        out += [b"--- " + label + b"\n", b"+++ " + label + b"\n"]
        out += _hunks(before.encode("utf-8", "surrogatepass"), after.encode("utf-8", "surrogatepass"), hint=False)
    return b"".join(out) + b"\n"


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
