"""Output formats: text lines, JSON keys, GitHub annotations and their escaping, diffs, summaries."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from np2torch.cli import output
from np2torch.lint import pages
from np2torch.lint.model import Finding
from np2torch.lint.rules import RULES

EXP_FINDING = Finding(path="src/a.py", line=3, column=5, end_line=3, end_column=14, code="NPT001",
                      message="`numpy.exp` can run on torch via `np2torch.runtime.exp`", fixable=True,
                      fix_title="Replace with `np2t.exp`")


def F(**changes: Any) -> Finding:
    """A finding like EXP_FINDING, with ``changes``."""
    return dataclasses.replace(EXP_FINDING, **changes)


def test_text_line() -> None:
    assert output.text_line(F()) == "src/a.py:3:5: NPT001 `numpy.exp` can run on torch via `np2torch.runtime.exp` [*]"


def test_text_line_unfixable_shows_the_reason() -> None:
    line = output.text_line(F(fixable=False, reason="star import"))
    assert line == "src/a.py:3:5: NPT001 `numpy.exp` can run on torch via `np2torch.runtime.exp` (no fix: star import)"
    assert output.text_line(F(fixable=False)).endswith("`np2torch.runtime.exp`")


def test_json_has_exactly_the_documented_keys() -> None:
    document = json.loads(output.json_document([F(), F(line=9, fixable=False, reason="x")]))
    assert [list(item) for item in document] == [[*output.JSON_KEYS, *output.RUFF_KEYS]] * 2
    assert set(output.JSON_KEYS) == {"code", "message", "path", "line", "column", "end_line", "end_column", "fixable"}
    assert document[0] == {
        "code": "NPT001", "message": EXP_FINDING.message, "path": "src/a.py", "line": 3, "column": 5,
        "end_line": 3, "end_column": 14, "fixable": True,
        "cell": None, "filename": str(Path("src/a.py").resolve()), "location": {"row": 3, "column": 5},
        "end_location": {"row": 3, "column": 14},
        "fix": {"applicability": "safe", "message": "Replace with `np2t.exp`", "edits": []}, "noqa_row": 3,
        "url": pages.rule_url("NPT001"), "name": RULES[0].name, "severity": "warning",
    }
    assert document[1]["fixable"] is False and document[1]["fix"] is None


def test_json_of_nothing_is_an_empty_array() -> None:
    assert json.loads(output.json_document([])) == []


def test_github_annotation() -> None:
    assert output.github_line(F()) == (
        "::warning title=np2torch (NPT001),file=src/a.py,line=3,col=5,endLine=3,endColumn=14::"
        "NPT001 `numpy.exp` can run on torch via `np2torch.runtime.exp`"
    )


def test_github_escaping_follows_the_toolkit() -> None:
    line = output.github_line(F(path="we,ird:dir/100%.py", message="a%b\r\nc: d, e"))
    assert line.startswith("::warning title=np2torch (NPT001),file=we%2Cird%3Adir/100%25.py,line=3,")
    assert line.endswith("::NPT001 a%25b%0D%0Ac: d, e")  # data keeps : and , (only properties escape them)
    assert "\n" not in line and "\r" not in line


def test_render_picks_the_format() -> None:
    findings = [F()]
    assert output.render(findings, "text") == [output.text_line(F())]
    assert output.render(findings, "github") == [output.github_line(F())]
    assert json.loads(output.render(findings, "json")[0])[0]["code"] == "NPT001"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param((3, 2, 0), ["Found 3 errors (2 fixable with `np2torch fix`)."], id="some fixable"),
        pytest.param((1, 0, 0), ["Found 1 error."], id="one unfixable"),
        pytest.param((0, 0, 0), ["All checks passed!"], id="clean"),
        pytest.param((0, 0, 1), ["1 file could not be checked."], id="clean but a file failed"),
        pytest.param((2, 2, 3), ["Found 2 errors (2 fixable with `np2torch fix`).", "3 files could not be checked."],
                     id="findings and failures"),
    ],
)
def test_check_summary(args: tuple[int, int, int], expected: list[str]) -> None:
    assert output.check_summary(*args) == expected


def test_fix_summary() -> None:
    assert output.fix_summary(3, 2, 0, 0, 0) == ["Fixed 3 errors in 2 files."]
    assert output.fix_summary(1, 1, 1, 0, 0) == ["Fixed 1 error in 1 file.", "Found 1 error that np2torch cannot fix."]
    assert output.fix_summary(0, 0, 0, 0, 0) == ["All checks passed!"]
    assert output.fix_summary(0, 0, 0, 0, 1) == ["1 file could not be checked or fixed."]


def test_diff_summary_in_ruffs_words() -> None:
    assert output.diff_summary(0, 0) == []  # ruff's says nothing
    assert output.diff_summary(1, 0) == ["Would fix 1 error."]
    assert output.diff_summary(3, 2) == ["Would fix 3 errors (2 additional fixes available with `--unsafe-fixes`)."]
    assert output.diff_summary(0, 1) == ["No errors would be fixed (1 fix available with `--unsafe-fixes`)."]


# ---------------------------------------------------------------- diffs


def test_diff_has_ruffs_header_and_trailing_empty_line() -> None:
    diff = output.unified_diff("src/a.py", "x = np.exp(y)\n", "x = np2t.exp(y)\n")
    assert diff.split("\n") == [
        "--- src/a.py",
        "+++ src/a.py",
        "@@ -1 +1 @@",
        "-x = np.exp(y)",
        "+x = np2t.exp(y)",
        "",
        "",
    ]


def test_no_diff_for_equal_text() -> None:
    assert output.unified_diff("a.py", "x\n", "x\n") == ""


def test_diff_marks_missing_final_newline() -> None:
    diff = output.unified_diff("a.py", "a\nb", "a\nc")
    assert diff.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n\n")


def test_diff_splits_on_newline_only() -> None:
    # \x0c and \u2028 are line breaks to str.splitlines but not to git or patch
    before = "x = 1\x0c y\u2028z\nq = np.log(a)\n"
    diff = output.unified_diff("a.py", before, before.replace("np.log", "np2t.log"))
    assert "-x = 1\x0c y\u2028z\n" not in diff
    assert " x = 1\x0c y\u2028z\n" in diff


def test_a_notebooks_diff_heads_every_code_cell_as_ruffs() -> None:
    # ruff's: each code cell changed or not, numbered among all cells; a last line without its newline is
    # given one and no "\ No newline" line; one empty line after the last cell
    patch = output.notebook_diff("nb/n.ipynb", [(1, "import numpy as np\ny = np.exp(x)", "import numpy as np\n"
                                                 "y = np2t.exp(x)"), (3, "x = 1\n", "x = 1\n")])
    assert patch.decode().split("\n") == [
        "--- nb/n.ipynb:cell 1",
        "+++ nb/n.ipynb:cell 1",
        "@@ -1,2 +1,2 @@",
        " import numpy as np",
        "-y = np.exp(x)",
        "+y = np2t.exp(x)",
        "--- nb/n.ipynb:cell 3",
        "+++ nb/n.ipynb:cell 3",
        "",
        "",
    ]


def test_a_nameless_notebooks_diff_names_the_cell_only() -> None:
    assert output.notebook_diff(None, [(2, "a\n", "b\n")]) == b"--- cell 2\n+++ cell 2\n@@ -1 +1 @@\n-a\n+b\n\n"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param("import numpy as np\r\ny = np.exp(x)\r\n", "import numpy as np\r\nimport np2torch.runtime as np2t\r\n"
                     "y = np2t.exp(x)\r\n", id="CRLF"),
        pytest.param("import numpy as np\ny = np.exp(x)", "import numpy as np\ny = np2t.exp(x)", id="no final newline"),
        pytest.param("a\n" * 20 + "np.exp(1)\n" + "b\n" * 20 + "np.log(q)\n",
                     "a\n" * 20 + "np2t.exp(1)\n" + "b\n" * 20 + "np2t.log(q)\n", id="two hunks"),
    ],
)
def test_git_apply_accepts_the_diff(tmp_path: Path, before: str, after: str) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    path = tmp_path / "pkg" / "a.py"
    path.parent.mkdir()
    path.write_bytes(before.encode())
    patch = output.unified_diff("pkg/a.py", before, after)
    subprocess.run(["git", "apply", "-p0", "--whitespace=nowarn", "-"], cwd=tmp_path, input=patch.encode(), check=True)
    assert path.read_bytes() == after.encode()


# ---------------------------------------------------------------- rules


def test_rules_table_lists_every_rule_from_the_table() -> None:
    lines = pages.rules_table(RULES, "text")
    assert lines[0].split() == ["code", "name", "function", "helper", "fixable", "safety", "default"]
    assert [line.split() for line in lines[1:]] == [
        [r.code, r.name, r.qualname or "-", f"np2torch.runtime.{r.helper}" if r.helper else "-",
         "yes" if r.fixable else "no", r.fix_safety if r.fixable else "-", "on" if r.default else "opt-in"]
        for r in RULES
    ]  # NPT801 (about noqa comments) names no function and has no fix: dashes
    rows = json.loads(pages.rules_table(RULES, "json")[0])
    assert [(row["code"], row["helper"], row["fix_safety"], row["default"]) for row in rows] == [
        (r.code, r.helper, r.fix_safety, r.default) for r in RULES
    ]
