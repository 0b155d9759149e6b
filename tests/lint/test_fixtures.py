"""The fixtures are the specification of check and fix.

Layout (ids are the file names, relative to ``fixtures/``):

* ``fixtures/fix/<name>.in.py`` -> ``<name>.out.py``: what ``fix`` makes of it;
  ``<name>.findings``: what ``check`` reports on the ``.in.py``, one finding a
  line as ``line:col-end_line:end_col CODE fix|nofix`` (1-based, characters).
* ``fixtures/noop/<name>.py``: ``fix`` leaves it byte-identical; findings (all
  unfixable) in ``<name>.findings``, no such file meaning no finding at all.
* a fixture anywhere below a folder named ``unsafe/`` runs with ``--unsafe-fixes``
  (``Settings(unsafe_fixes=True)``), for check and fix alike;
* a fixture below a folder named ``opt_in/`` runs with every rule selected
  (``--select ALL``), opt-in rules included; everywhere else the default selection applies.

Files are read as bytes and decoded without newline translation, so CRLF, a
lone CR, a BOM and a missing final newline are exercised as they are on disk.
The path handed to the engine is the fixture's own, minus ``.in`` (a fixture
named ``__init__.in.py`` is a package ``__init__.py``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import Counter
from pathlib import Path

import pytest

from np2torch import check_source, fix_source
from np2torch.lint.engine import Finding, Settings
from np2torch.lint.rules import RULES, RULES_BY_CODE, select_rules
from np2torch.lint.suppress import without_noqa_codes
from np2torch.lint.syntax import newer_syntax

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FIX_CASES = sorted((FIXTURES / "fix").rglob("*.in.py"))
NOOP_CASES = sorted((FIXTURES / "noop").rglob("*.py"))


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def _case(path: Path) -> str:
    """The fixture's text; the test is skipped where the running Python's grammar cannot read it (``match`` under
    3.9), as np2torch skips such a file."""
    text = _read(path)
    needed = newer_syntax(text)
    if needed is not None:
        pytest.skip(f"needs Python >= {needed[0]}.{needed[1]}")
    return text


def _id(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


def _engine_path(path: Path) -> str:
    return str(path).replace(".in.py", ".py")


def _settings(path: Path) -> Settings:
    folders = path.relative_to(FIXTURES).parts[:-1]
    rules = select_rules(["ALL"]) if "opt_in" in folders else select_rules()
    return Settings(rules=rules, unsafe_fixes="unsafe" in folders)


def _format(findings: list[Finding]) -> list[str]:
    return [
        f"{f.line}:{f.column}-{f.end_line}:{f.end_column} {f.code} {'fix' if f.fixable else 'nofix'}"
        for f in findings
    ]


def _expected(sidecar: Path) -> list[str]:
    if not sidecar.exists():
        return []
    lines = (line.split("#", 1)[0].strip() for line in sidecar.read_text().splitlines())
    return [line for line in lines if line]


def _assert_settled(text: str, path: str, settings: Settings) -> None:
    """What every fixed (or untouched) text must satisfy."""
    compile(text.lstrip("\ufeff"), path, "exec", dont_inherit=True)
    assert fix_source(text, path, settings=settings) == text, "fix is not idempotent"
    leftover = [f for f in check_source(text, path, settings=settings) if f.fixable]
    assert not leftover, f"fixable findings remain after fix: {_format(leftover)}"


@pytest.mark.parametrize("before_path", FIX_CASES, ids=_id)
def test_fix(before_path: Path) -> None:
    before = _case(before_path)
    after = _read(Path(str(before_path).replace(".in.py", ".out.py")))
    path = _engine_path(before_path)
    settings = _settings(before_path)
    assert before != after, "a fix fixture must change something (put no-change cases in noop/)"
    assert fix_source(before, path, settings=settings) == after
    _assert_settled(after, path, settings)
    # check and fix agree: exactly the fixable findings became `<alias>.<helper>` (a fixable
    # pattern's fix replaces the fixes inside its span: `np.exp(x) / np.exp(x).sum()` -> one call)
    fixable = [f for f in check_source(before, path, settings=settings)
               if f.fixable and not RULES_BY_CODE[f.code].is_meta]  # NPT801's fix edits comments only
    patterns = [f for f in fixable if RULES_BY_CODE[f.code].is_pattern]
    fixable = [f for f in fixable if not any(g is not f and _within(f, g) for g in patterns)]
    for title in {f.fix_title for f in fixable}:
        assert title is not None
        spelled = title.split("`")[1]
        wanted = sum(f.fix_title == title for f in fixable)
        word = re.compile(rf"(?<![\w.]){re.escape(spelled)}\b")
        assert len(word.findall(_code(after))) - len(word.findall(_code(before))) == wanted, title


def _code(text: str) -> str:
    """The tokens of ``text`` without comments and line breaks, ``.`` joined to its neighbours: a callee split
    over lines around a comment (``(np2t  # note`` / ``.exp)``) is spelled ``np2t.exp`` again."""
    tokens = tokenize.generate_tokens(io.StringIO(text.lstrip("\ufeff")).readline)
    skipped = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    return re.sub(r" ?\. ?", ".", " ".join(tok.string for tok in tokens if tok.type not in skipped))


def _comments(text: str, unused: dict[int, set[str]] | None = None) -> Counter[str]:
    """The comments of ``text``; ``unused``: the noqa codes to take out of each line's comment first."""
    tokens = tokenize.generate_tokens(io.StringIO(text.lstrip("\ufeff")).readline)
    found = ((tok.start[0], tok.string) for tok in tokens if tok.type == tokenize.COMMENT)
    if unused:
        found = ((line, without_noqa_codes(comment, unused.get(line, set()))) for line, comment in found)
    return Counter(comment for _line, comment in found if comment)


@pytest.mark.parametrize("before_path", FIX_CASES, ids=_id)
def test_fix_keeps_every_comment(before_path: Path) -> None:
    """Comments always stay: in a rewritten expression, on a removed import, anywhere; the only change a fix makes
    to one is NPT801's, which takes its finding's unused noqa code out."""
    before = _case(before_path)
    after = _read(Path(str(before_path).replace(".in.py", ".out.py")))
    unused: dict[int, set[str]] = {}
    for finding in check_source(before, _engine_path(before_path), settings=_settings(before_path)):
        if finding.fixable and RULES_BY_CODE[finding.code].is_meta:
            line = before.lstrip("\ufeff").splitlines()[finding.line - 1]
            unused.setdefault(finding.line, set()).add(line[finding.column - 1:finding.end_column - 1].upper())
    assert not _comments(before, unused) - _comments(after)


def _within(inner: Finding, outer: Finding) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) and (inner.end_line, inner.end_column) <= (
        outer.end_line, outer.end_column)


@pytest.mark.parametrize("before_path", FIX_CASES, ids=_id)
def test_fix_findings(before_path: Path) -> None:
    sidecar = Path(str(before_path).replace(".in.py", ".findings"))
    assert sidecar.exists(), "every fix fixture states its findings"
    findings = check_source(_case(before_path), _engine_path(before_path), settings=_settings(before_path))
    assert _format(findings) == _expected(sidecar)


@pytest.mark.parametrize("source_path", NOOP_CASES, ids=_id)
def test_noop(source_path: Path) -> None:
    source = _case(source_path)
    settings = _settings(source_path)
    assert fix_source(source, str(source_path), settings=settings) == source
    _assert_settled(source, str(source_path), settings)
    findings = check_source(source, str(source_path), settings=settings)
    assert _format(findings) == _expected(source_path.with_suffix(".findings"))


def test_every_fixture_parses() -> None:
    for path in [*FIX_CASES, *NOOP_CASES]:
        text = _read(path)
        if newer_syntax(text) is None:  # else the grammar of a later Python (and LibCST's parser) reads it
            ast.parse(text.lstrip("\ufeff"))


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_every_rule_has_fix_fixtures(rule) -> None:  # type: ignore[no-untyped-def]
    """Adding a row to the table without fixtures fails here."""
    if rule.fix_safety == "unsafe" or not rule.fixable:  # reported, not fixed (unsafe: fixed only with --unsafe-fixes)
        sidecars = [Path(str(p).replace(".in.py", ".findings")) for p in FIX_CASES]
        assert any(f" {rule.code} nofix" in line for s in sidecars for line in _expected(s)), rule.code
        return
    fixed = [p for p in FIX_CASES if any(f" {rule.code} fix" in line for line in _expected(Path(str(p).replace(".in.py", ".findings"))))]
    assert fixed, f"{rule.code} ({rule.qualname}) has no fix fixture"
    helper = f".{rule.helper}"
    assert any(helper in _read(Path(str(p).replace(".in.py", ".out.py"))) for p in fixed)


def test_fixture_layout_is_complete() -> None:
    """No orphaned .out.py or .findings files (a renamed fixture would silently stop being tested)."""
    for out in (FIXTURES / "fix").rglob("*.out.py"):
        assert Path(str(out).replace(".out.py", ".in.py")).exists(), out
    for sidecar in (FIXTURES / "noop").rglob("*.findings"):
        assert sidecar.with_suffix(".py").exists(), sidecar
    for sidecar in (FIXTURES / "fix").rglob("*.findings"):
        assert Path(str(sidecar).replace(".findings", ".in.py")).exists(), sidecar
    stray = [p for p in (FIXTURES / "fix").rglob("*.py") if not p.name.endswith((".in.py", ".out.py"))]
    assert not stray, stray
