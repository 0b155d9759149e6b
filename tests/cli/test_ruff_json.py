"""``--output-format json`` reads as ruff's does: the keys a tool written for ruff's JSON looks up, and fixes
whose edits, applied as such a tool applies them, make the fix."""

from __future__ import annotations

import ast
import itertools
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from np2torch import check_source
from np2torch.cli import main
from np2torch.cli.fix_edits import FixEdits, edits
from np2torch.cli.output import render
from np2torch.lint.engine import Finding, Settings, fix_findings, fix_source
from np2torch.lint.rules import select_rules
from np2torch.lint.syntax import newer_syntax

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

SOURCE = (
    "import numpy as np\n"
    "from scipy.special import logsumexp\n"
    "\n\n"
    "def f(x):\n"
    "    return np.exp(x) + logsumexp(x)\n"
    "\n\n"
    "y = f is np.log\n"
)


def _shape(value: Any) -> Any:
    """The keys of a JSON value, all the way down (a list: its first item's)."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return None


def _apply(text: str, edits: list[dict[str, Any]]) -> str:
    """``edits`` applied as a client of ruff's JSON applies them: rows (counted at ``\\n``, ``\\r\\n`` and ``\\r``,
    as ruff counts them) and columns 1-based, end exclusive, the last first, an edit that several fixes
    carry once."""
    edits = [edit for i, edit in enumerate(edits) if edit not in edits[:i]]
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(where: dict[str, int]) -> int:
        return starts[where["row"] - 1] + where["column"] - 1 if where["row"] <= len(lines) else len(text)

    def order(edit: dict[str, Any]) -> tuple[int, ...]:  # an insertion before a removal at its start
        return (*edit["location"].values(), *edit["end_location"].values())

    for edit in sorted(edits, key=order, reverse=True):
        text = text[: offset(edit["location"])] + edit["content"] + text[offset(edit["end_location"]):]
    return text


def _check_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> list[Any]:
    (tmp_path / "a.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--no-cache", "--output-format", "json", "a.py"]) == 1
    return json.loads(capsys.readouterr().out)


def test_the_keys_are_ruffs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    ours = _check_json(tmp_path, monkeypatch, capsys)
    (tmp_path / "r.py").write_text("import os\n")
    ruff = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F401",
                           "--output-format", "json", "r.py"], capture_output=True, text=True, check=False)
    theirs = json.loads(ruff.stdout)
    assert theirs and ours
    for key, shape in _shape(theirs[0]).items():
        assert key in ours[0], key
        if shape:  # a table: ours has the same keys (a fix's edits too)
            assert _shape(ours[0][key]) == shape, key
    assert ours[0]["fix"]["applicability"] == theirs[0]["fix"]["applicability"] == "safe"
    assert ours[-1]["fix"] is None  # `f is np.log` has no fix


def test_each_fix_applied_alone_makes_that_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    for entry in _check_json(tmp_path, monkeypatch, capsys):
        if entry["fix"] is None:
            continue
        fixed = _apply(SOURCE, entry["fix"]["edits"])
        compile(fixed, "a.py", "exec")
        left = {(f.code, f.line) for f in check_source(fixed)}
        assert entry["code"] not in {code for code, _line in left}  # this one is fixed ...
        assert len(left) == 2  # ... and only this one (the `is` comparison has none)
        assert fixed.startswith("import np2torch.runtime as np2t\nimport numpy as np\n")


def test_a_hidden_fix_is_unsafe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.py").write_text("import numpy as np\n\ny = list(map(np.exp, [1.0]))\n")
    monkeypatch.chdir(tmp_path)
    main(["check", "--no-cache", "--output-format", "json", "a.py"])
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["fixable"] is False and entry["fix"]["applicability"] == "unsafe"
    assert "np2t.exp" in _apply((tmp_path / "a.py").read_text(), entry["fix"]["edits"])


def test_the_edits_make_the_fixed_text() -> None:
    import random

    rng = random.Random(20261127)
    rows = ["x\n", "y\n", "\n", "z\r\n", "a\x0cb\n", "c\u2028d\n", "e\x1cf\x85\n", "np.exp(x)\n"]
    for _trial in range(500):
        before = [rng.choice(rows) for _ in range(rng.randint(0, 40))]
        after = list(before)
        for _ in range(rng.randint(0, 6)):
            at = rng.randint(0, len(after))
            kind = rng.choice(["insert", "delete", "replace"])
            if kind == "insert":
                after.insert(at, rng.choice(["import q\n", "\n", "x\n", "\x0c\n"]))
            elif at < len(after):
                after[at:at + 1] = [] if kind == "delete" else [rng.choice(["w\n", after[at].replace("np.", "np2t.")])]
        assert _apply("".join(before), edits("".join(before), "".join(after))) == "".join(after), (before, after)


# --------------------------------------------------------------------------- every format that carries edits

EDIT_FORMATS = ["json", "json-lines", "rdjson"]


def _fixes_in(document: list[str], fmt: str) -> list[list[dict[str, Any]]]:
    """Each finding's edits (empty: no fix), as a client reads them in ``fmt``."""
    if fmt == "rdjson":
        def edit(suggestion: dict[str, Any]) -> dict[str, Any]:
            start, end = suggestion["range"]["start"], suggestion["range"]["end"]
            return {"content": suggestion["text"], "location": {"row": start["line"], "column": start["column"]},
                    "end_location": {"row": end["line"], "column": end["column"]}}

        return [[edit(s) for s in d.get("suggestions", [])] for d in json.loads(document[0])["diagnostics"]]
    entries = json.loads(document[0]) if fmt == "json" else [json.loads(line) for line in document]
    return [entry["fix"]["edits"] if entry["fix"] else [] for entry in entries]


def _imports_apart(applied: str, fixed: str) -> bool:
    """``applied`` is ``fixed`` but for names that ``applied`` still imports and ``fixed`` no longer does."""
    def without_imports(text: str) -> tuple[str, set[str]]:
        names: set[str] = set()

        class Drop(ast.NodeTransformer):
            def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
                names.update(f"{getattr(node, 'module', '')}:{a.name}:{a.asname}" for a in node.names)

            visit_ImportFrom = visit_Import

        return ast.dump(Drop().visit(ast.parse(text))), names

    (a, a_names), (b, b_names) = without_imports(applied), without_imports(fixed)
    return a == b and b_names <= a_names


def _span(text: str, edit: dict[str, Any]) -> tuple[int, int]:
    rows = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", text)
    starts = [0, *itertools.accumulate(map(len, rows))]

    def offset(where: dict[str, int]) -> int:
        return starts[where["row"] - 1] + where["column"] - 1 if where["row"] <= len(rows) else len(text)

    return offset(edit["location"]), offset(edit["end_location"])


def _applied_as_ruff_applies(text: str, fixes: list[list[dict[str, Any]]]) -> tuple[str, int]:
    """The fixes applied together as ``ruff --fix`` applies them, in order: an edit another fix applied
    already once, and a fix with an edit that overlaps one applied (or starts where one does) not at all
    (the next pass takes it); and how many fixes were applied."""
    applied: list[dict[str, Any]] = []
    spans: list[tuple[int, int]] = []
    count = 0
    for own in sorted(fixes, key=lambda edits: _span(text, edits[0])):
        new = [edit for edit in own if edit not in applied]
        mine = [_span(text, edit) for edit in new]
        if any((a < d and c < b) or a == c for a, b in mine for c, d in spans):
            continue
        applied.extend(new)
        spans.extend(mine)
        count += 1
    return _apply(text, applied), count


def _check_edits(text: str, path: Path, settings: Settings) -> int:
    """Every format's fixes on ``text`` (written at ``path``): each alone makes exactly the fix of its finding
    alone (the editor's fix, :func:`fix_findings`), and all of them together ``np2torch fix``'s text; the
    number of fixes."""
    path.write_bytes(text.encode("utf-8"))
    display = str(path)
    findings = check_source(text, display, settings=settings)
    fixed = fix_source(text, display, settings=settings)
    for fmt in EDIT_FORMATS:
        fixes = _fixes_in(render(findings, fmt, fixes=FixEdits({display: settings})), fmt)
        assert len(fixes) == len(findings)
        for finding, own in zip(findings, fixes):
            hidden = not finding.fixable and "--unsafe-fixes" in (finding.reason or "")
            assert bool(own) is (finding.fixable or hidden), (fmt, finding)
            if own:  # a hidden fix: the one `--unsafe-fixes` makes
                alone = fix_findings(text, [finding], display, settings=replace(settings, unsafe_fixes=True)
                                     if hidden else settings)
                assert _apply(text, own) == alone, (fmt, finding)
        (path.parent / fmt).mkdir()
        together = _fixed_as_ruff_fixes(text, path.parent / fmt / path.name, settings, fmt)
        # an import several findings use is kept by each fix alone: only the fix of them all removes it
        assert together == fixed or _imports_apart(together, fixed), fmt
    return sum(f.fixable for f in findings)


def _inside(inner: Finding, outer: Finding) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) and (inner.end_line, inner.end_column) <= (
        outer.end_line, outer.end_column) and (outer.end_line, outer.end_column, outer.line, outer.column) != (
        inner.end_line, inner.end_column, inner.line, inner.column)


def _fixed_as_ruff_fixes(text: str, path: Path, settings: Settings, fmt: str) -> str:
    """``text`` fixed as ``ruff --fix`` fixes: the fixes of each pass applied together, until none is left."""
    for _pass in range(20):
        path.write_bytes(text.encode("utf-8"))
        findings = check_source(text, str(path), settings=settings)
        fixes = _fixes_in(render(findings, fmt, fixes=FixEdits({str(path): settings})), fmt)
        # a finding inside a pattern's expression (`np.exp` in a hand-written softmax) is rewritten by its fix
        outer = [f for f in findings if f.fixable and not any(_inside(f, g) for g in findings if g.fixable and g != f)]
        text, count = _applied_as_ruff_applies(text, [own for f, own in zip(findings, fixes) if f in outer and own])
        if not count:
            return text
    raise AssertionError("the fixes do not converge")


FIX_CASES = sorted((FIXTURES / "fix").rglob("*.in.py"))


@pytest.mark.parametrize("fixture", FIX_CASES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_every_fixture_s_edits_make_the_fix(fixture: Path, tmp_path: Path) -> None:
    text = fixture.read_bytes().decode("utf-8").removeprefix("\ufeff")  # ruff's rows and columns start after it
    needed = newer_syntax(text)
    if needed is not None:
        pytest.skip(f"needs Python >= {needed[0]}.{needed[1]}")
    folders = fixture.relative_to(FIXTURES).parts[:-1]
    settings = Settings(rules=select_rules(["ALL"] if "opt_in" in folders else None),
                        unsafe_fixes="unsafe" in folders)
    _check_edits(text, tmp_path / fixture.name.replace(".in.py", ".py"), settings)


# Where the rows a fix's edits count differ from str.splitlines's, and where the runtime import goes beside
# the call it serves: the import is an edit of every fix, at the row ruff counts.
EDGES = {
    "a form feed above the import": "# one\x0c\nimport numpy as np\n\n\ndef f(x):\n    return np.exp(x)\n",
    "\\x1c-\\x1e, \\x85 and U+2028/9 in a docstring": (
        '"""a\x1cb\x1dc\x1ed\x85e\u2028f\u2029g"""\nimport numpy as np\n\n\ndef f(x):\n    return np.exp(x)\n'),
    "a form feed between the import and the call": "import numpy as np\n\x0c\ndef f(x):\n    return np.exp(x)\n",
    "the call on the line after the import": "import numpy as np\ndef f(x): return np.exp(x)\n",
    "the call three lines below the import": "import numpy as np\n\ndef f(x):\n    return np.exp(x) + np.log(x)\n",
    "the call on the import's own line": "import numpy as np; f = lambda x: np.exp(x)\n",
    "two calls on one line": "import numpy as np\n\ndef f(x):\n    return np.exp(np.log(x))\n",
    "a call whose callee holds a comment": "import numpy as np\n\ndef f(x):\n    return (np  # note\n        .exp(x))\n",
}


@pytest.mark.parametrize("text", list(EDGES.values()), ids=list(EDGES))
def test_each_fix_alone_holds_the_runtime_import(text: str, tmp_path: Path) -> None:
    settings = Settings()
    assert _check_edits(text, tmp_path / "m.py", settings)
    display = str(tmp_path / "m.py")
    for finding in check_source(text, display, settings=settings):
        [own] = _fixes_in(render([finding], "json", fixes=FixEdits({display: settings})), "json")
        applied = _apply(text, own)
        compile(applied, display, "exec")
        assert "import np2torch.runtime as np2t\n" in applied
