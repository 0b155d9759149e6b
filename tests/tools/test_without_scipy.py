"""`np2torch bench` and `tune` where SciPy is not installed: the NumPy rows run, one line says what was left out.

SciPy is hidden from a child interpreter by a meta-path finder in a `sitecustomize` put first on its PYTHONPATH,
so `import scipy` fails there as it does where SciPy was never installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from np2torch.runtime.table import FUNCTIONS

pytest.importorskip("torch")

BLOCK_SCIPY = """\
import sys


class _NoScipy:
    def find_spec(self, name, path=None, target=None):
        if name == "scipy" or name.startswith("scipy."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoScipy())
"""

SCIPY_HELPERS = {row.name for row in FUNCTIONS if row.qualname.startswith("scipy.")}
LEFT_OUT = "need scipy, which is not installed: left out (pip install scipy to include them)"


def without_scipy(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    hide = tmp_path / "hide-scipy"
    hide.mkdir(exist_ok=True)
    (hide / "sitecustomize.py").write_text(BLOCK_SCIPY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def test_the_blocker_hides_scipy(tmp_path: Path) -> None:
    proc = without_scipy(tmp_path, "-c", "import scipy")
    assert proc.returncode == 1 and "ModuleNotFoundError: No module named 'scipy'" in proc.stderr


def test_bench_without_scipy_times_the_numpy_rows_and_says_what_it_left_out(tmp_path: Path) -> None:
    proc = without_scipy(tmp_path, "-m", "np2torch", "bench", "--size", "64", "--repeat", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if LEFT_OUT in line]
    assert len(lines) == 1 and lines[0].startswith("np2torch bench: "), proc.stderr
    assert set(lines[0].split(": ")[1].split(" need")[0].split(", ")) == SCIPY_HELPERS
    timed = {row["function"] for row in json.loads(proc.stdout)["results"]}
    assert "exp" in timed and not timed & SCIPY_HELPERS


def test_tune_without_scipy_measures_the_numpy_rows(tmp_path: Path) -> None:
    # The pairs `np2torch tune` measures (its default selection), computed in the child without SciPy.
    proc = without_scipy(tmp_path, "-c", "from np2torch.tools import tune; print(sorted({name for name, _ in tune.pairs()}))")
    assert proc.returncode == 0, proc.stderr
    measured = set(eval(proc.stdout))
    assert measured == {row.name for row in FUNCTIONS if row.default and row.name not in SCIPY_HELPERS}
    line = proc.stderr.strip()
    assert line.startswith("np2torch tune: ") and line.endswith(LEFT_OUT) and "\n" not in line, proc.stderr


@pytest.mark.parametrize("tool", ["tune", "bench"])
def test_a_scipy_function_named_without_scipy_is_a_one_line_error(tmp_path: Path, tool: str) -> None:
    proc = without_scipy(tmp_path, "-m", "np2torch", tool, "--functions", "exp,erf", "--json")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "Error: erf needs scipy, which is not installed: pip install scipy"
    assert "internal error" not in proc.stderr
