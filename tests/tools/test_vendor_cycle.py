"""vendor -> check -> fix -> run, as a user does it: the vendored runtime is never broken.

Every step runs `python -m np2torch` in the project folder; the project's code
runs in a clean interpreter that cannot import np2torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from np2torch.lint.suppress import MARKER

MODEL = textwrap.dedent(
    """
    import numpy as np
    import scipy.special
    from scipy.special import logsumexp


    def score(x):
        return logsumexp(np.exp(x) - 1.0, axis=0), scipy.special.logsumexp(np.log(x + 2.0))
    """
)

RUN = textwrap.dedent(
    """
    import sys
    class NoNp2torch:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "np2torch":
                raise ImportError("np2torch is not installed here")
    sys.meta_path.insert(0, NoNp2torch())
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    from proj.model import score
    x = np.random.default_rng(1).uniform(-2.0, 2.0, (400, 300))
    by_axis, total = score(x)
    np.save(sys.argv[2], np.append(by_axis, total))
    from scipy.special import logsumexp
    import proj._np2torch as np2t
    assert np2t.logsumexp(np.ones(5)) == logsumexp(np.ones(5))  # once a RecursionError
    print("modules:", " ".join(sorted(m for m in sys.modules if m.startswith("proj."))))
    """
)


def np2torch(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "np2torch", *args], cwd=project, capture_output=True, text=True, timeout=300)


def run_project(project: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NP2TORCH_MIN_SIZE": "0"}  # the torch path wherever the runtime can take it
    return subprocess.run([sys.executable, "-I", "-c", RUN, str(project), str(out)], capture_output=True, text=True, timeout=300, env=env)


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.py")}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "proj").mkdir(parents=True)
    (root / "proj" / "__init__.py").write_text("", encoding="utf-8")
    (root / "proj" / "model.py").write_text(MODEL, encoding="utf-8")
    return root


def test_vendor_check_fix_run(project: Path, tmp_path: Path) -> None:
    vendored = project / "proj" / "_np2torch"
    result = np2torch(project, "vendor", "proj/_np2torch")
    assert result.returncode == 0, result.stderr
    package = snapshot(vendored)

    result = np2torch(project, "check", "--no-cache", "--format", "json", ".")
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    assert {f["path"] for f in findings} == {os.path.join("proj", "model.py")}, "a finding inside the vendored package"
    assert sorted(f["code"] for f in findings) == ["NPT001", "NPT002", "NPT004", "NPT004"]

    before = run_project(project, tmp_path / "before.npy")  # the original code (it imports the vendored package too)
    assert before.returncode == 0, before.stderr

    result = np2torch(project, "fix", "--no-cache", "--runtime-module", "proj._np2torch", ".")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Fixed 4 errors in 1 file" in result.stdout
    assert snapshot(vendored) == package, "fix touched the vendored package"
    fixed = (project / "proj" / "model.py").read_text(encoding="utf-8")
    assert "import proj._np2torch as np2t" in fixed and "np.exp" not in fixed

    result = np2torch(project, "check", "--no-cache", "--runtime-module", "proj._np2torch", ".")
    assert result.returncode == 0, result.stdout

    after = run_project(project, tmp_path / "after.npy")
    assert after.returncode == 0, after.stderr
    assert "proj._np2torch._ufunc" in after.stdout
    np.testing.assert_allclose(np.load(tmp_path / "after.npy"), np.load(tmp_path / "before.npy"), rtol=1e-13)


def test_a_vendored_file_without_its_marker_still_gets_no_fix(project: Path) -> None:
    np2torch(project, "vendor", "proj/_np2torch")
    edited = project / "proj" / "_np2torch" / "_logsumexp.py"
    lines = edited.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[0].startswith(MARKER)
    body = lines[[line.startswith("#") for line in lines].index(False):]  # the header off, pragmas and all
    edited.write_text("# edited by hand\n" + "".join(body), encoding="utf-8")
    package = snapshot(project / "proj" / "_np2torch")

    # --unsafe-fixes too: a reference `... = logsumexp` inside the runtime was the rewrite that recursed
    result = np2torch(project, "fix", "--no-cache", "--unsafe-fixes", "--format", "json", "--runtime-module", "proj._np2torch", ".")
    assert result.returncode == 1, result.stderr
    assert snapshot(project / "proj" / "_np2torch") == package
    left = json.loads(result.stdout)
    assert {f["path"] for f in left} == {os.path.join("proj", "_np2torch", "_logsumexp.py")}
    assert not any(f["fixable"] for f in left)
    assert "import proj._np2torch as np2t" in (project / "proj" / "model.py").read_text(encoding="utf-8")


def test_a_hand_written_runtime_module_is_reported_not_rewritten(project: Path) -> None:
    helpers = project / "proj" / "fast.py"
    helpers.write_text("import numpy as np\n\n\ndef exp(x):\n    return np.exp(x)\n", encoding="utf-8")
    result = np2torch(project, "fix", "--no-cache", "--runtime-module", "proj.fast", ".")
    assert result.returncode == 1
    assert helpers.read_text(encoding="utf-8") == "import numpy as np\n\n\ndef exp(x):\n    return np.exp(x)\n"
    assert "would make it import itself" in result.stdout
    assert "import proj.fast as np2t" in (project / "proj" / "model.py").read_text(encoding="utf-8")
    helpers.write_text("# np2torch: noqa\n" + helpers.read_text(encoding="utf-8"), encoding="utf-8")
    assert np2torch(project, "check", "--no-cache", "--runtime-module", "proj.fast", ".").returncode == 0


def test_an_older_single_file_copy_is_never_a_finding(project: Path) -> None:
    old = project / "proj" / "_np2torch.py"
    old.write_text(f"{MARKER} from np2torch 0.0.9 -- generated, do not edit.\n" + MODEL, encoding="utf-8")
    (project / "proj" / "model.py").unlink()
    result = np2torch(project, "fix", "--no-cache", "--runtime-module", "proj._np2torch", ".")
    assert result.returncode == 0 and old.read_text(encoding="utf-8").endswith(MODEL)
