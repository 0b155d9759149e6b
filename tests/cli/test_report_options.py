"""`--statistics` and `--show-fixes` for check and fix, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from np2torch.cli import main

SOURCE = (
    "import numpy as np\n"
    "from scipy.special import erf\n"
    "y = np.exp(x) + np.exp(z) + erf(x)\n"
    "same = np.log is g\n"
)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NP2TORCH_LINT_CACHE_DIR", str(tmp_path / ".cache-under-test"))
    (tmp_path / "a.py").write_text(SOURCE)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_statistics_counts_per_code_most_frequent_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--statistics", "a.py")
    assert code == 1
    assert out.splitlines() == [
        "2\tNPT001\t[*] exp",
        "1\tNPT002\t[ ] log",
        "1\tNPT003\t[*] erf",
        "Found 4 errors (3 fixable with `np2torch fix`).",
    ]


def test_statistics_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--statistics", "--format", "json", "a.py")
    assert code == 1
    assert json.loads(out) == [
        {"code": "NPT001", "name": "exp", "count": 2, "fixable": True},
        {"code": "NPT002", "name": "log", "count": 1, "fixable": False},
        {"code": "NPT003", "name": "erf", "count": 1, "fixable": True},
    ]


def test_statistics_with_no_findings(capsys: pytest.CaptureFixture[str]) -> None:
    Path("a.py").write_text("import math\nmath.exp(1)\n")
    assert run(capsys, "check", "--statistics", "a.py") == (0, "All checks passed!\n", "")


def test_statistics_after_fix_counts_what_is_left(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "fix", "--statistics", "a.py")
    assert code == 1
    assert out.splitlines()[0] == "1\tNPT002\t[ ] log"


def test_show_fixes_on_check_prints_each_fix_title(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--show-fixes", "a.py")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("a.py:3:5: NPT001 ") and lines[1] == "  help: Replace with `np2t.exp`"
    assert lines[4].startswith("a.py:3:29: NPT003 ") and lines[5] == "  help: Replace with `np2t.erf`"
    assert lines[6].startswith("a.py:4:8: NPT002 ") and "no fix" in lines[6]
    assert not lines[7].startswith("  help")


def test_show_fixes_on_fix_enumerates_the_fixes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "fix", "--show-fixes", "a.py")
    assert code == 1  # the `is` comparison stays
    lines = out.splitlines()
    start = lines.index("Fixed 3 errors:")
    assert lines[start:start + 4] == ["Fixed 3 errors:", "- a.py:", "    2 \u00d7 NPT001 (exp)", "    1 \u00d7 NPT003 (erf)"]
    assert "np2t.exp(x)" in Path("a.py").read_text()


@pytest.mark.parametrize("flag", ["--show-fixes", "--statistics"])
def test_fix_refuses_diff_with_show_fixes_or_statistics(capsys: pytest.CaptureFixture[str], flag: str) -> None:
    # as `ruff check --fix --diff` does (tests/cli/test_ruff_parity.py compares `check` with ruff's)
    code, out, err = run(capsys, "fix", "--diff", flag, "a.py")
    assert code == 2 and out == ""
    assert f"the argument '--diff' cannot be used with '{flag}'" in err
    assert Path("a.py").read_text() == SOURCE
