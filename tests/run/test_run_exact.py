"""``np2torch run --exact bits`` and ``exact = "bits"`` in [tool.np2torch]: the program's helpers give the original's bits."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

PROGRAM = """\
import hashlib, sys
import numpy as np
import np2torch.runtime as np2t
x = np.linspace(-3, 3, 400_000)
y = np.exp(x) + np.log(x * x + 1)
print(np2t.current_settings().exact, hashlib.sha256(y.tobytes()).hexdigest()[:16], "torch" in sys.modules)
"""


def _run(root: Path, options: List[str], env_extra: dict) -> List[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_")}
    env.update(env_extra)
    done = subprocess.run([sys.executable, "-m", "np2torch", "run", "--report", "none", *options, "prog.py"], cwd=root,
                          capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / "prog.py").write_text(textwrap.dedent(PROGRAM))
    return root


def test_exact_bits_on_the_command_line_gives_the_originals_bits(project: Path) -> None:
    plain = subprocess.run([sys.executable, "prog.py"], cwd=project, capture_output=True, text=True, timeout=120)
    # forced onto the fast paths from the first element: with exact=bits those are the original on every core
    forced = {"NP2TORCH_MIN_SIZE": "0", "NP2TORCH_PROFILE": "builtin"}
    assert _run(project, ["--exact", "bits"], forced) == ["bits", plain.stdout.split()[1], "False"]
    assert _run(project, [], {"NP2TORCH_PROFILE": "builtin"})[0] == "ulp"


def test_exact_in_the_configuration(project: Path) -> None:
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.np2torch]\nexact = \"bits\"\n")
    assert _run(project, [], {"NP2TORCH_PROFILE": "builtin"})[0] == "bits"
    assert _run(project, ["--exact", "ulp"], {"NP2TORCH_PROFILE": "builtin"})[0] == "ulp"  # the command line wins


def test_a_bad_exactness_is_a_usage_error(project: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "np2torch", "run", "--exact", "close", "prog.py"], cwd=project,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.strip()) == (2, "np2torch run: --exact must be ulp or bits, not 'close'")
    (project / "pyproject.toml").write_text("[tool.np2torch]\nexact = 1\n")
    done = subprocess.run([sys.executable, "-m", "np2torch", "run", "prog.py"], cwd=project, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "'exact'" in done.stderr and "must be 'ulp' or 'bits'" in done.stderr
