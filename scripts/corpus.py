#!/usr/bin/env python
"""Corpus invariants: ``np2torch check`` and ``np2torch fix`` over copies of real source trees.

Usage::

    python scripts/corpus.py                          # scipy, sklearn, statsmodels, wherever installed
    python scripts/corpus.py --python /tmp/corpus-venv/bin/python   # look for them in that environment
    python scripts/corpus.py path/to/tree [...]       # any source trees
    python scripts/corpus.py --package scipy --audit 40 --oracle 20

Each tree is copied to a temporary folder (only its ``.py`` files) with one
unparsable canary file added, then:

1. the Python API (:func:`np2torch.check_source`) checks every file;
2. the real CLI runs ``check --format json``, ``fix --format json``, and again
   ``check`` and ``fix`` over the fixed copy;

and these invariants are asserted for every file (a violation is printed and the
script exits 1):

* no crash: no traceback, no "internal error" and no error line on stderr, exit
  codes as documented; every ``invalid-syntax`` finding names a file that Python
  itself cannot parse, and every unparsable file the prefilter lets through is
  reported so (unless its error lies only in functions check reads as ``pass``:
  engine.skimmed_text), nothing else;
* the CLI reports exactly the API's findings;
* every fixed file still parses and compiles; the rewrite equals the original with
  exactly the fixable findings' spans replaced by ``<alias>.<helper>`` (imports
  aside), so the fixer touched nothing else;
* ``fix`` is idempotent (API and CLI), and ``check`` after ``fix`` reports no
  fixable finding;
* files without fixable findings (no findings, unfixable ones only, unparsable,
  or skipped by discovery) are byte-identical afterwards.

``--audit N`` prints N random findings with their source lines for a review by
hand; ``--oracle N`` cross-checks the findings of N files per tree against
LibCST's ``QualifiedNameProvider`` (an independent name resolver).
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Counter, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import np2torch
from np2torch.cli.config import ConfigFinder
from np2torch.cli.discovery import discover
from np2torch.cli.files import FileError, decode_source
from np2torch.lint import engine
from np2torch.lint.model import INVALID_SYNTAX
from np2torch.lint.rules import RULES, RULES_BY_CODE

DEFAULT_PACKAGES = ("scipy", "sklearn", "statsmodels")
CANARY_NAME = "_np2torch_corpus_canary.py"
# Spells a table name so that the prefilter lets it through to the parser, which must reject it.
CANARY_TEXT = "import numpy as np\n\ny = np.exp(1.0 +\n"

_NEWLINE = re.compile(r"\r\n|\r|\n")
_FIX_TITLE = re.compile(r"`([A-Za-z_][\w.]*)`")

# (code, line, column, end_line, end_column, fixable)
Key = Tuple[str, int, int, int, int, bool]


# ---------------------------------------------------------------- results


@dataclass
class Violation:
    tree: str
    path: str
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"VIOLATION [{self.kind}] {self.tree}:{self.path}: {self.detail}"


@dataclass
class TreeReport:
    name: str
    source: str
    files: int = 0
    lines: int = 0
    discovered: int = 0
    unparsable: List[str] = field(default_factory=list)
    findings: Counter[str] = field(default_factory=collections.Counter)
    unfixable: Counter[str] = field(default_factory=collections.Counter)
    files_with_findings: int = 0
    files_changed: int = 0
    seconds: Dict[str, float] = field(default_factory=dict)
    cpu_seconds: Dict[str, float] = field(default_factory=dict)
    violations: List[Violation] = field(default_factory=list)
    oracle: Dict[str, Any] = field(default_factory=dict)
    finding_sites: List[Tuple[str, "engine.Finding"]] = field(default_factory=list)
    """(relative path, finding) for every finding, for ``--audit``."""

    def violate(self, path: str, kind: str, detail: str) -> None:
        self.violations.append(Violation(self.name, path, kind, detail))

    def summary(self) -> Dict[str, Any]:
        return {
            "tree": self.name,
            "source": self.source,
            "files": self.files,
            "lines": self.lines,
            "discovered": self.discovered,
            "unparsable": self.unparsable,
            "findings": dict(sorted(self.findings.items())),
            "unfixable": dict(sorted(self.unfixable.items())),
            "files_with_findings": self.files_with_findings,
            "files_changed": self.files_changed,
            "seconds": {k: round(v, 2) for k, v in self.seconds.items()},
            "cpu_seconds": {k: round(v, 2) for k, v in self.cpu_seconds.items()},
            "violations": [str(v) for v in self.violations],
            "oracle": self.oracle,
        }


# ---------------------------------------------------------------- locating and copying trees


def locate_package(name: str, pythons: Sequence[str]) -> Optional[Path]:
    """The folder of installed package ``name`` in the first interpreter that has it (not imported)."""
    probe = (
        "import importlib.util, sys\n"
        "spec = importlib.util.find_spec(sys.argv[1])\n"
        "print(list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else '')\n"
    )
    for python in pythons:
        done = subprocess.run([python, "-c", probe, name], capture_output=True, text=True)
        folder = done.stdout.strip()
        if done.returncode == 0 and folder:
            return Path(folder)
    return None


def copy_tree(source: Path, target: Path) -> List[str]:
    """Copy the ``.py`` files under ``source`` to ``target``; their paths relative to ``target``."""
    copied = []
    for folder, subfolders, files in os.walk(source):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        rel_folder = os.path.relpath(folder, source)
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            rel = os.path.normpath(os.path.join(rel_folder, name))
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(os.path.join(folder, name), target / rel)
            copied.append(rel)
    return copied


def snapshot(root: Path, rels: Iterable[str]) -> Dict[str, bytes]:
    return {rel: (root / rel).read_bytes() for rel in rels}


# ---------------------------------------------------------------- the CLI


def np2torch_command() -> List[str]:
    """The installed console script next to this interpreter, else ``python -m np2torch``."""
    script = Path(sys.executable).with_name("np2torch")
    return [str(script)] if script.exists() else [sys.executable, "-m", "np2torch"]


@dataclass
class CliRun:
    returncode: int
    findings: List[Dict[str, Any]]
    stderr: str
    seconds: float
    cpu_seconds: float


def run_cli(args: Sequence[str], cwd: Path) -> CliRun:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # A fresh cache folder would only be written; --no-cache keeps the copy pristine.
    done = subprocess.run([*np2torch_command(), *args, "--no-cache", "--format", "json"],
                          cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        findings = json.loads(done.stdout) if done.stdout.strip() else []
    except json.JSONDecodeError:
        findings = [{"unparsable_stdout": done.stdout[:2000]}]
    return CliRun(done.returncode, findings, done.stderr, seconds, cpu)


def _json_key(item: Dict[str, Any]) -> Key:
    return (item["code"], item["line"], item["column"], item["end_line"], item["end_column"], item["fixable"])


def _finding_key(f: "engine.Finding") -> Key:
    return (f.code, f.line, f.column, f.end_line, f.end_column, f.fixable)


# ---------------------------------------------------------------- per-file checks


def python_parses(raw: bytes, path: str, *, full: bool = False) -> bool:
    """Python's own verdict: does this file parse (``full``: and compile to bytecode)?"""
    flags = 0 if full else ast.PyCF_ONLY_AST
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences and the like are not our business
        try:
            compile(raw, path, "exec", flags=flags, dont_inherit=True)
            return True
        except (SyntaxError, ValueError):
            return False


def _offsets(text: str) -> List[int]:
    """Start offset of each line (1-based index) as the tokenizer splits lines."""
    starts = [0, 0]
    for match in _NEWLINE.finditer(text):
        starts.append(match.end())
    return starts


def expected_rewrite(text: str, findings: Sequence["engine.Finding"]) -> str:
    """``text`` with every fixable finding's span replaced by the fix title's ``alias.helper``."""
    starts = _offsets(text)
    edits = []
    for f in findings:
        if not f.fixable:
            continue
        match = _FIX_TITLE.search(f.fix_title or "")
        replacement = match.group(1) if match else f"<no fix title: {f.fix_title!r}>"
        edits.append((starts[f.line] + f.column - 1, starts[f.end_line] + f.end_column - 1, replacement))
    for begin, end, replacement in sorted(edits, reverse=True):
        text = text[:begin] + replacement + text[end:]
    return text


class _DropImports(ast.NodeTransformer):
    """Imports may be added or removed by a fix; ``pass`` may stand in for a removed one."""

    def visit_Import(self, node: ast.AST) -> None:
        return None

    visit_ImportFrom = visit_Import

    def visit_Pass(self, node: ast.AST) -> None:
        return None


def _shape(text: str) -> str:
    return ast.dump(_DropImports().visit(ast.parse(text)), include_attributes=False)


def _runtime_imports(text: str) -> List[str]:
    return sorted(
        f"{a.name} as {a.asname}"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Import)
        for a in node.names
        if a.name.split(".")[0] == "np2torch" or "_np2torch" in a.name
    )


def check_changed_file(report: TreeReport, rel: str, raw_before: bytes, raw_after: bytes,
                       before: Sequence["engine.Finding"], settings: Optional["engine.Settings"] = None) -> None:
    """The invariants of a file the fix rewrote."""
    path = str(rel)
    if not python_parses(raw_after, path):
        report.violate(path, "fixed file does not parse", "the parser rejects the rewritten file")
        return
    if python_parses(raw_before, path, full=True) and not python_parses(raw_after, path, full=True):
        report.violate(path, "fixed file does not compile", "compile() rejects the rewritten file")
        return
    try:
        text_before = decode_source(raw_before, path).text
        text_after = decode_source(raw_after, path).text
    except FileError as exc:
        report.violate(path, "fixed file undecodable", str(exc))
        return
    try:
        again = np2torch.fix_source(text_after, path, settings=settings)
        left = np2torch.check_source(text_after, path, settings=settings)
    except Exception as exc:
        report.violate(path, "crash after fix", f"{type(exc).__name__}: {exc}")
        return
    if again != text_after:
        report.violate(path, "fix not idempotent", "fix_source(fixed) changes the text again")
    if any(f.fixable for f in left):
        report.violate(path, "fixable finding after fix", ", ".join(
            f"{f.line}:{f.column} {f.code}" for f in left if f.fixable))
    # A pattern finding (NPT9xx) left unfixed disappears when its calls are fixed one by one: documented.
    unfixable_before = collections.Counter(f.code for f in before if not f.fixable and not _is_pattern(f.code))
    unfixable_after = collections.Counter(f.code for f in left if not f.fixable and not _is_pattern(f.code))
    if unfixable_before != unfixable_after:
        report.violate(path, "unfixable findings changed", f"{dict(unfixable_before)} -> {dict(unfixable_after)}")
    body = text_before[1:] if text_before.startswith("\ufeff") else text_before
    added = _runtime_imports(text_after)
    if len(added) != 1 or _runtime_imports(body):
        report.violate(path, "runtime import", f"expected one added runtime import, found {added}")
    if any(f.fixable and _is_pattern(f.code) for f in before):
        return  # a pattern fix rewrites a whole call, not a name: the span check below does not apply
    expected = expected_rewrite(body, before)
    try:
        same = _shape(expected) == _shape(text_after.lstrip("\ufeff"))
    except SyntaxError as exc:
        report.violate(path, "rewrite check", f"replacing the spans gives unparsable text: {exc}")
        return
    if not same:
        report.violate(path, "fix touched more than the findings",
                       "the rewritten AST (imports aside) differs from the original with the spans replaced")


def _is_pattern(code: str) -> bool:
    return bool(getattr(RULES_BY_CODE[code], "pattern", ()))


# ---------------------------------------------------------------- one tree


def _prefilter(text: str, rules: Any = RULES) -> Optional[bool]:
    """The engine's prefilter verdict for ``rules`` (the run's selection), where the engine exposes it."""
    may_contain = getattr(engine, "may_contain", None) or getattr(engine, "_may_contain", None)
    return None if may_contain is None else bool(may_contain(text.lstrip("\ufeff"), rules))


def _skim_parses(text: str, settings: "engine.Settings") -> bool:
    """Whether what check parses of ``text`` parses, where the engine parses only part of it
    (``engine.skimmed_text``: the functions that cannot hold a finding read as ``pass``): a syntax error in
    such a function goes unreported, as one in a file the prefilter skips."""
    skimmed_text = getattr(engine, "skimmed_text", None)
    skimmed = None if skimmed_text is None else skimmed_text(text.lstrip("\ufeff"), settings)
    return skimmed is not None and python_parses(skimmed.encode("utf-8"), "<skimmed>")


def _api_pass(report: TreeReport, root: Path, rels: Sequence[str], raw: Dict[str, bytes],
              settings: "engine.Settings") -> Dict[str, List[Any]]:
    """check_source over every file; the expected-unparsable set; the API's findings per file."""
    api: Dict[str, List[Any]] = {}
    for rel in rels:
        data = raw[rel]
        report.lines += data.count(b"\n")
        parses = python_parses(data, rel)
        if not parses:
            report.unparsable.append(rel)
        try:
            text = decode_source(data, rel).text
        except FileError:
            continue  # undecodable: compile() rejects it too, so it is in report.unparsable
        try:
            findings = np2torch.check_source(text, rel, settings=settings)
        except engine.SourceError as exc:
            if parses:
                report.violate(rel, "false parse error", f"check_source raised SourceError: {exc}")
            continue
        except Exception as exc:
            report.violate(rel, "API crash", f"check_source raised {type(exc).__name__}: {exc}")
            continue
        if not parses and _prefilter(text, settings.rules) is not False and not _skim_parses(text, settings):
            report.violate(rel, "unparsable file not rejected", "check_source returned findings for it")
        api[rel] = findings
    return api


def _error_lines(report: TreeReport, stderr: str, step: str, root: Path) -> None:
    """No stderr line but a file's note (what ``fix`` tells and does not fail on: a line it made longer than the
    line-length): a file that does not parse is a finding of the report (:func:`_unparsable_reported`)."""
    if "Traceback" in stderr:
        report.violate("-", f"traceback ({step})", stderr[-2000:])
    for line in stderr.splitlines():
        if not line.strip():
            continue
        path = line.split(":", 1)[0]
        rel = os.path.relpath(path, root) if os.path.isabs(path) else path
        if "internal error" in line:
            report.violate(rel, f"internal error ({step})", line)
        elif not (": note: " in line and step.startswith("fix")):
            report.violate(rel, f"unexpected stderr ({step})", line)


def _unparsable_reported(report: TreeReport, run: CliRun, step: str, root: Path, expect_errors: Set[str]) -> None:
    """Each expected-unparsable file is one ``invalid-syntax`` finding of the report, and no other file is one."""
    reported = collections.Counter(os.path.relpath(item["path"], root) for item in run.findings
                                   if item.get("code") == INVALID_SYNTAX)
    for rel, count in sorted(reported.items()):
        if rel not in expect_errors or count != 1:
            report.violate(rel, f"unexpected invalid-syntax ({step})", f"{count} finding(s)")
    for rel in sorted(expect_errors - set(reported)):
        report.violate(rel, f"unparsable file not reported ({step})", "no invalid-syntax finding names it")


def _compare_cli(report: TreeReport, run: CliRun, root: Path, api: Dict[str, List[Any]], step: str) -> None:
    cli: Dict[str, List[Key]] = collections.defaultdict(list)
    for item in run.findings:
        if "code" not in item:
            report.violate("-", f"bad JSON ({step})", str(item)[:500])
            return
        if item["code"] == INVALID_SYNTAX:  # a file that does not parse: _unparsable_reported holds it to account
            continue
        cli[os.path.relpath(item["path"], root)].append(_json_key(item))
    for rel in sorted(set(cli) | {r for r, fs in api.items() if fs}):
        want = sorted(_finding_key(f) for f in api.get(rel, []))
        if sorted(cli.get(rel, [])) != want:
            report.violate(rel, f"CLI and API disagree ({step})", f"cli={sorted(cli.get(rel, []))[:5]} api={want[:5]}")


def _expected_rc(errors: bool, findings: bool) -> int:
    """``errors``: files Python cannot parse (the only errors allowed), which count as findings, as ruff's."""
    return 1 if errors or findings else 0


def run_tree(source: Path, name: str, workdir: Path, *, canary: bool = True, unsafe_fixes: bool = False) -> TreeReport:
    """Copy ``source`` under ``workdir`` and assert every invariant; the report lists any violation.

    ``unsafe_fixes``: check and fix with ``--unsafe-fixes`` (API: ``Settings(unsafe_fixes=True)``).
    """
    report = TreeReport(name=name, source=str(source))
    settings = engine.Settings(unsafe_fixes=True) if unsafe_fixes else engine.Settings()
    flags = ["--unsafe-fixes"] if unsafe_fixes else []
    root = workdir / name
    root.mkdir(parents=True)
    rels = copy_tree(source, root)
    if canary:
        (root / CANARY_NAME).write_text(CANARY_TEXT)
        rels.append(CANARY_NAME)
    report.files = len(rels)
    before = snapshot(root, rels)
    discovered = {os.path.relpath(t.path, root) for t in discover([str(root)], ConfigFinder(None))[0]}
    report.discovered = len(discovered)

    start = time.perf_counter()
    api = _api_pass(report, root, [r for r in rels if r in discovered], before, settings)
    report.seconds["api check"] = time.perf_counter() - start
    errors = {r for r in report.unparsable if r in discovered and r not in api}
    if canary and CANARY_NAME not in errors:
        report.violate(CANARY_NAME, "canary", "the unparsable canary file was not rejected by the API")
    all_findings = [(rel, f) for rel in sorted(api) for f in api[rel]]
    report.finding_sites = all_findings
    for _rel, f in all_findings:
        report.findings[f.code] += 1
        if not f.fixable:
            report.unfixable[f.code] += 1
    report.files_with_findings = sum(1 for fs in api.values() if fs)
    has_fixable = any(f.fixable for _, f in all_findings)

    # 1. check through the CLI: same findings as the API, errors exactly for the unparsable files.
    run = run_cli(["check", *flags, str(root)], root)
    _record(report, "cli check", run)
    _error_lines(report, run.stderr, "check", root)
    _unparsable_reported(report, run, "check", root, errors)
    _compare_cli(report, run, root, api, "check")
    if run.returncode != _expected_rc(bool(errors), bool(all_findings)):
        report.violate("-", "check exit code", f"{run.returncode}")

    # 2. fix through the CLI; what is left must be unfixable.
    run = run_cli(["fix", *flags, str(root)], root)
    _record(report, "cli fix", run)
    _error_lines(report, run.stderr, "fix", root)
    _unparsable_reported(report, run, "fix", root, errors)
    if any(item.get("fixable") for item in run.findings):
        report.violate("-", "fix left fixable findings", str([i for i in run.findings if i.get("fixable")][:5]))
    unfixable_left = any(not f.fixable for _, f in all_findings)
    if run.returncode != _expected_rc(bool(errors), unfixable_left):
        report.violate("-", "fix exit code", f"{run.returncode}")

    after = snapshot(root, rels)
    for rel in rels:
        fixable = [f for f in api.get(rel, []) if f.fixable]
        if after[rel] == before[rel]:
            if fixable:
                report.violate(rel, "fixable findings not fixed", f"{len(fixable)} fixable, file unchanged")
            continue
        if not fixable:
            report.violate(rel, "file without fixable findings changed", "bytes differ after fix")
            continue
        report.files_changed += 1
        check_changed_file(report, rel, before[rel], after[rel], api[rel], settings)

    # 3. check and fix again through the CLI: nothing fixable, nothing changes.
    run = run_cli(["check", *flags, str(root)], root)
    _record(report, "cli check after fix", run)
    _error_lines(report, run.stderr, "check after fix", root)
    _unparsable_reported(report, run, "check after fix", root, errors)
    if any(item.get("fixable") for item in run.findings):
        report.violate("-", "check after fix", "fixable findings reported after fix")
    run = run_cli(["fix", *flags, str(root)], root)
    _record(report, "cli fix again", run)
    _error_lines(report, run.stderr, "fix again", root)
    _unparsable_reported(report, run, "fix again", root, errors)
    again = snapshot(root, rels)
    for rel in rels:
        if again[rel] != after[rel]:
            report.violate(rel, "CLI fix not idempotent", "a second `np2torch fix` changed the file")
    if has_fixable and report.files_changed == 0:
        report.violate("-", "fix changed nothing", "fixable findings but no file changed")
    return report


def _record(report: TreeReport, step: str, run: CliRun) -> None:
    report.seconds[step] = run.seconds
    report.cpu_seconds[step] = run.cpu_seconds


# ---------------------------------------------------------------- the LibCST oracle


def oracle_file(text: str) -> Dict[Tuple[int, int, int, int], Set[str]]:
    """Spans (line, col, end_line, end_col; 1-based columns) of Name/Attribute loads LibCST resolves to table names."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

    table = {rule.qualname for rule in RULES if rule.qualname}

    class Collector(cst.CSTVisitor):
        METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

        def __init__(self) -> None:
            super().__init__()
            self.hits: Dict[Tuple[int, int, int, int], Set[str]] = {}
            self.in_import = 0

        def visit_Import(self, node: cst.Import) -> None:
            self.in_import += 1

        def leave_Import(self, node: cst.Import) -> None:
            self.in_import -= 1

        visit_ImportFrom = visit_Import  # type: ignore[assignment]
        leave_ImportFrom = leave_Import  # type: ignore[assignment]

        def _record(self, node: cst.CSTNode) -> None:
            if self.in_import:
                return
            names = {q.name for q in self.get_metadata(QualifiedNameProvider, node, set())}
            if names & table:
                pos = self.get_metadata(PositionProvider, node)
                self.hits[(pos.start.line, pos.start.column + 1, pos.end.line, pos.end.column + 1)] = names

        def visit_Name(self, node: cst.Name) -> None:
            self._record(node)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            self._record(node)

    collector = Collector()
    MetadataWrapper(cst.parse_module(text)).visit(collector)
    return collector.hits


# Independent of the engine on purpose: a crude reading of the documented non-findings.
_CONSTANT_NAMES = {"pi", "e", "euler_gamma", "inf", "nan", "tau"}


def _constant_like(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, complex)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _constant_like(node.operand)
    if isinstance(node, ast.BinOp):
        return _constant_like(node.left) and _constant_like(node.right)
    if isinstance(node, ast.Name):
        return node.id in _CONSTANT_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in _CONSTANT_NAMES
    if isinstance(node, ast.Call):
        return all(_constant_like(a) for a in [*node.args, *(k.value for k in node.keywords)])
    return False


def _classify_missing(tree: ast.Module, span: Tuple[int, int, int, int], lines: Sequence[str]) -> str:
    """Why LibCST sees a table name where the engine reports nothing (for the review by hand)."""
    if re.search(r"#\s*noqa", lines[span[0] - 1], re.IGNORECASE):
        return "noqa"
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            if (isinstance(child, (ast.Name, ast.Attribute)) and child.lineno == span[0]
                    and child.col_offset == span[1] - 1 and child.end_lineno == span[2]):
                if isinstance(parent, ast.Call) and parent.func is child:
                    return "constant arguments" if _constant_like(parent) else "OTHER call"
                if isinstance(parent, ast.Attribute):
                    return "attribute of the function"
                return "OTHER reference"
    return "OTHER (node not found)"


def _pattern_confirmed(f: "engine.Finding", hits: Dict[Tuple[int, int, int, int], Set[str]]) -> bool:
    """A pattern finding spans a whole call: its callee (starting where the call starts) must resolve to the
    outermost name, and some reference inside the span to the innermost one."""
    pattern = getattr(RULES_BY_CODE[f.code], "pattern", ())
    if not pattern:
        return False
    start, end = (f.line, f.column), (f.end_line, f.end_column)
    outer = any(span[:2] == start and pattern[0] in names for span, names in hits.items())
    inner = any(start < span[:2] and span[2:] <= end and pattern[-1] in names for span, names in hits.items())
    return outer and inner


def run_oracle(report: TreeReport, root_before: Dict[str, bytes], sample: int, seed: int) -> None:
    """Compare the engine's findings with LibCST's qualified names on ``sample`` files (-1: all)."""
    by_file: Dict[str, List[Any]] = collections.defaultdict(list)
    for rel, f in report.finding_sites:
        by_file[rel].append(f)
    files = sorted(by_file)
    if 0 <= sample < len(files):
        files = sorted(random.Random(seed).sample(files, sample))
    agree = disagree = 0
    engine_only: List[str] = []
    libcst_only: Dict[str, List[str]] = collections.defaultdict(list)
    start = time.perf_counter()
    for rel in files:
        text = decode_source(root_before[rel], rel).text.lstrip("\ufeff")
        lines = _NEWLINE.split(text)
        hits = oracle_file(text)
        for f in by_file[rel]:
            span = (f.line, f.column, f.end_line, f.end_column)
            qualname = RULES_BY_CODE[f.code].qualname
            if qualname in hits.get(span, set()) or _pattern_confirmed(f, hits):
                agree += 1
            else:
                disagree += 1
                engine_only.append(f"{rel}:{f.line}:{f.column} {f.code} libcst={sorted(hits.get(span, []))} | "
                                   f"{lines[f.line - 1].strip()[:100]}")
        spans = {(f.line, f.column, f.end_line, f.end_column) for f in by_file[rel]}
        tree = ast.parse(text)
        for span, names in sorted(hits.items()):
            if span not in spans:
                kind = _classify_missing(tree, span, lines)
                libcst_only[kind].append(f"{rel}:{span[0]}:{span[1]} {sorted(names)} | {lines[span[0] - 1].strip()[:100]}")
    report.oracle = {
        "files": len(files),
        "findings_confirmed": agree,
        "findings_not_confirmed": disagree,
        "engine_only": engine_only,
        "libcst_only_count": {kind: len(v) for kind, v in sorted(libcst_only.items())},
        "libcst_only": dict(sorted(libcst_only.items())),
        "seconds": round(time.perf_counter() - start, 1),
    }


# ---------------------------------------------------------------- printing


def print_report(report: TreeReport) -> None:
    s = report.summary()
    codes = ", ".join(f"{code} {n}" + (f" ({report.unfixable[code]} unfixable)" if report.unfixable[code] else "")
                      for code, n in sorted(report.findings.items())) or "none"
    print(f"== {s['tree']} ({s['source']})")
    print(f"   files {s['files']} (discovered {s['discovered']}), lines {s['lines']}, unparsable {len(s['unparsable'])}"
          f"{' ' + str(s['unparsable'][:5]) if s['unparsable'] else ''}")
    print(f"   findings {sum(report.findings.values())} in {s['files_with_findings']} files: {codes}")
    print(f"   files changed by fix {s['files_changed']}")
    print("   seconds (wall / CPU of the CLI; noisy on a shared machine): " + ", ".join(
        f"{k} {v:.1f}" + (f"/{report.cpu_seconds[k]:.1f}" if k in report.cpu_seconds else "")
        for k, v in report.seconds.items()))
    if report.oracle:
        o = report.oracle
        print(f"   LibCST oracle over {o['files']} files ({o['seconds']} s): {o['findings_confirmed']} findings "
              f"confirmed, {o['findings_not_confirmed']} not; LibCST-only references: {o['libcst_only_count']}")
        for line in o["engine_only"][:20]:
            print(f"     engine only: {line}")
        for kind, items in o["libcst_only"].items():
            for line in items[: 40 if kind.startswith("OTHER") else 3]:
                print(f"     LibCST only ({kind}): {line}")
    print(f"   violations {len(report.violations)}")
    for violation in report.violations[:50]:
        print(f"   {violation}")


def print_audit(reports: Sequence[TreeReport], sources: Dict[str, Dict[str, bytes]], n: int, seed: int) -> None:
    sites = [(r.name, rel, f) for r in reports for rel, f in r.finding_sites]
    if not sites:
        return
    chosen = random.Random(seed).sample(sites, min(n, len(sites)))
    print(f"== audit: {len(chosen)} random findings (seed {seed})")
    for i, (tree, rel, f) in enumerate(chosen, 1):
        text = decode_source(sources[tree][rel], rel).text.lstrip("\ufeff")
        line = _NEWLINE.split(text)[f.line - 1]
        span = line[f.column - 1 : f.end_column - 1] if f.line == f.end_line else line[f.column - 1 :] + "..."
        print(f"{i:3d}. {tree}/{rel}:{f.line}:{f.column} {f.code} {RULES_BY_CODE[f.code].qualname} "
              f"span={span!r} {'fixable' if f.fixable else 'unfixable: ' + str(f.reason)}")
        print(f"       {line.strip()[:160]}")


# ---------------------------------------------------------------- main


def describe_np2torch() -> str:
    """Where the np2torch under test comes from, with its git commit when it is a checkout."""
    package = Path(np2torch.__file__).resolve().parent
    where = str(package)
    head = subprocess.run(["git", "-C", str(package), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:
        dirty = subprocess.run(["git", "-C", str(package), "status", "--porcelain", "--untracked-files=no", "--", "."],
                               capture_output=True, text=True).stdout.strip()
        where += f" (commit {head.stdout.strip()}{', src/np2torch modified' if dirty else ''})"
    return where


def _trees(args: argparse.Namespace) -> List[Tuple[str, Path]]:
    trees: List[Tuple[str, Path]] = []
    pythons = args.python or [sys.executable]
    packages = args.package or ([] if args.paths else list(DEFAULT_PACKAGES))
    for package in packages:
        folder = locate_package(package, pythons)
        if folder is None:
            print(f"note: package {package!r} is not installed in {pythons}; skipped", file=sys.stderr)
            continue
        trees.append((package, folder))
    for path in args.paths:
        folder = Path(path).resolve()
        trees.append((folder.name, folder))
    names = collections.Counter(name for name, _ in trees)
    return [(f"{name}-{i}" if names[name] > 1 else name, folder) for i, (name, folder) in enumerate(trees)]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="source trees (folders of .py files)")
    parser.add_argument("--package", action="append", help="an installed package by import name (repeatable)")
    parser.add_argument("--python", action="append",
                        help="interpreter(s) to locate --package in (default: this one)")
    parser.add_argument("--audit", type=int, default=0, metavar="N", help="print N random findings to review")
    parser.add_argument("--oracle", type=int, default=0, metavar="N",
                        help="cross-check N files with findings per tree against LibCST (-1: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-canary", action="store_true", help="do not add the unparsable canary file")
    parser.add_argument("--unsafe-fixes", action="store_true", help="check and fix with --unsafe-fixes")
    parser.add_argument("--keep", action="store_true", help="keep the fixed copies (their folder is printed)")
    parser.add_argument("--json", metavar="FILE", help="also write the reports as JSON")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]  # progress shows in a log file

    print(f"np2torch {np2torch.__version__} from {describe_np2torch()}")
    trees = _trees(args)
    if not trees:
        print("error: no source trees found", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="np2torch-corpus-"))
    reports = []
    originals: Dict[str, Dict[str, bytes]] = {}
    try:
        for name, folder in trees:
            report = run_tree(folder, name, workdir, canary=not args.no_canary, unsafe_fixes=args.unsafe_fixes)
            originals[name] = {rel: (folder / rel).read_bytes() for rel in {r for r, _ in report.finding_sites}}
            if args.oracle:
                run_oracle(report, originals[name], args.oracle, args.seed)
            print_report(report)
            reports.append(report)
        if args.audit:
            print_audit(reports, originals, args.audit, args.seed)
    finally:
        if args.keep:
            print(f"fixed copies kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    total = sum(len(r.violations) for r in reports)
    if args.json:
        Path(args.json).write_text(json.dumps([r.summary() for r in reports], indent=1) + "\n")
    print(f"{len(reports)} trees, {sum(r.files for r in reports)} files, "
          f"{sum(sum(r.findings.values()) for r in reports)} findings, {total} violations")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
