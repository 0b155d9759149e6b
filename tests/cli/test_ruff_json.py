"""``--output-format json`` reads as ruff's does: the keys a tool written for ruff's JSON looks up, and fixes
whose edits, applied as such a tool applies them, make the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from np2torch import check_source
from np2torch.cli import main

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
    """``edits`` applied as a client of ruff's JSON applies them: rows and columns 1-based, end exclusive,
    the last first."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(where: dict[str, int]) -> int:
        return starts[where["row"] - 1] + where["column"] - 1 if where["row"] <= len(lines) else len(text)

    for edit in sorted(edits, key=lambda e: (e["location"]["row"], e["location"]["column"]), reverse=True):
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


def test_the_runs_of_changed_lines_make_the_fixed_text() -> None:
    import random

    from np2torch.cli.fix_edits import hunks

    rng = random.Random(20261127)
    for _trial in range(500):
        before = [rng.choice(["x\n", "y\n", "\n", "z\n", f"{rng.random()}\n"]) for _ in range(rng.randint(0, 40))]
        after = list(before)
        for _ in range(rng.randint(0, 6)):
            at = rng.randint(0, len(after))
            kind = rng.choice(["insert", "delete", "replace"])
            if kind == "insert":
                after.insert(at, rng.choice(["import q\n", "\n", "x\n"]))
            elif at < len(after):
                after[at:at + 1] = [] if kind == "delete" else ["w\n"]
        lines = list(before)
        for start, stop, edit, _adds in sorted(hunks("".join(before), "".join(after), "import q"), reverse=True,
                                               key=lambda hunk: hunk[0]):
            lines[start:stop] = [edit["content"]]
        assert "".join(lines) == "".join(after), (before, after)
