"""A fix never changes what a program does (issue 13): programs run in a subprocess before and after `fix`.

Each case writes a small project to a temporary folder, runs its entry point,
fixes the named files through the engine, and runs it again: stdout, stderr's
last line and the exit status must be the same.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import pytest

from np2torch.engine import Settings, fix_source


def _write(root: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def _run(root: Path, entry: str) -> Tuple[int, str, str]:
    done = subprocess.run([sys.executable, entry], cwd=root, capture_output=True, text=True, timeout=120)
    last_error = (done.stderr.strip().splitlines() or [""])[-1]
    return done.returncode, done.stdout, last_error


def _fix(root: Path, names: Sequence[str], settings: Optional[Settings]) -> Dict[str, str]:
    fixed = {}
    for name in names:
        path = root / name
        before = path.read_text()
        after = fix_source(before, str(path), settings=settings)
        path.write_text(after)
        fixed[name] = after
    return fixed


def assert_same_behaviour(
    tmp_path: Path, files: Dict[str, str], fix: Sequence[str], entry: str = "main.py", settings: Optional[Settings] = None
) -> Dict[str, str]:
    """Runs ``entry`` before and after fixing ``fix``; returns the fixed texts."""
    _write(tmp_path, files)
    before = _run(tmp_path, entry)
    assert before[0] == 0, before
    fixed = _fix(tmp_path, fix, settings)
    assert _run(tmp_path, entry) == before, fixed
    return fixed


# --------------------------------------------------------------------------- references (item 1)


def test_references_keep_their_identity(tmp_path: Path) -> None:
    program = """
        import numpy as np
        act = np.exp
        print(act is np.exp)
        INV = {np.exp: np.log}
        t = np.exp
        print(INV[t].__name__)
        fs = [np.exp, np.log]
        print(isinstance(fs[0], np.ufunc), fs[1].nin)
        print(np.exp(np.zeros(2)))
    """
    fixed = assert_same_behaviour(tmp_path, {"main.py": program}, ["main.py"])
    assert "np2t.exp(np.zeros(2))" in fixed["main.py"]  # the call is still fixed
    assert "act = np.exp\n" in fixed["main.py"]


# --------------------------------------------------------------------------- compiled functions (item 2)


def test_a_numba_function_still_compiles(tmp_path: Path) -> None:
    pytest.importorskip("numba")
    program = """
        import numba
        import numpy as np

        @numba.njit
        def sp(x):
            return np.log(1.0 + np.exp(x))

        print(sp(np.zeros(3)), np.exp(0.5 * np.ones(2)))
    """
    fixed = assert_same_behaviour(tmp_path, {"main.py": program}, ["main.py"])
    assert "np2t.exp(0.5" in fixed["main.py"]
