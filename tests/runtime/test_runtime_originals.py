"""A helper's original is never a patch that was in force at its first use: ``mock.patch.object(np, "exp", spy)``
around the first call of ``np2t.exp`` (the helpers load then) must not outlive its ``with`` block.

Each case runs in a fresh interpreter, where that call is the first use."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = """\
    import json
    from unittest import mock
    import numpy as np
    import scipy.special
    import np2torch.runtime as np2t

    x = np.linspace(0.1, 0.9, 5)
    spy = mock.Mock(return_value="spy")
    with mock.patch.object({target}, {name!r}, spy):
        inside = np2t.{name}(x)
    after = np2t.{name}(x)
    expected = getattr({target}, {name!r})(x)
    print(json.dumps({{"inside": np.array_equal(inside, expected), "after": np.array_equal(after, expected),
                      "spy called": spy.call_count}}))
    """


@pytest.mark.parametrize(("target", "name"), [
    pytest.param("np", "exp", id="a NumPy ufunc"),
    pytest.param("np", "hypot", id="a NumPy binary ufunc"),
    pytest.param("scipy.special", "erf", id="a SciPy ufunc"),
    pytest.param("scipy.special", "digamma", id="a SciPy ufunc under another name (psi)"),
    pytest.param("scipy.special", "logsumexp", id="a SciPy function"),
])
def test_a_patch_in_force_at_the_first_use_does_not_outlive_its_block(target: str, name: str) -> None:
    script = SCRIPT.format(target=target, name=name)
    if name == "hypot":
        script = script.replace(f"np2t.{name}(x)", f"np2t.{name}(x, x)").replace(f"{name!r})(x)", f"{name!r})(x, x)")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    # the helper computes what the original computes, inside the block too (as it does for a patch made after its
    # first use: docs/runtime.md, "Spies on the original"), and never calls the spy
    assert (result["inside"], result["after"], result["spy called"]) == (True, True, 0)


def test_under_run_a_patch_at_the_first_call_is_called_inside_its_block_and_forgotten_after(tmp_path: Path) -> None:
    # The program's line calls what np.exp names: the spy inside the block (uncounted), the rewritten call after.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "prog.py").write_text(textwrap.dedent("""\
        from unittest import mock
        import numpy as np

        def f(x):
            return np.exp(x)

        with mock.patch.object(np, "exp", lambda x: "spy"):
            print(f(np.zeros(2)))
        print(f(np.zeros(2)), f(np.zeros(2)))
        """))
    report = tmp_path / "report.json"
    plain = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    under = subprocess.run([sys.executable, "-m", "np2torch", "run", "--report", "none", "--report-file", str(report),
                            "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           )
    assert plain.stdout == "spy\n[1. 1.] [1. 1.]\n"
    assert (under.returncode, under.stdout, under.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert [site["calls"] for site in json.loads(report.read_text())["sites"]] == [2]
