"""What each entry point imports, checked in fresh interpreters.

The linter must never pay for torch (seconds of import, and fork-unsafe threads
in worker pools), and the runtime must load it only when a call takes the torch path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HEAVY = ("torch", "libcst")
LAZY_SUBCOMMANDS = ("np2torch.tools.bench", "np2torch.tools.vendor", "np2torch.cli.explain", "np2torch.server.command")


def loaded_after(code: str, *, cwd: Path | None = None, env: dict[str, str] | None = None) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; it must print a JSON object last."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_import_np2torch_is_light() -> None:
    result = loaded_after("""
        import json, sys
        import np2torch
        print(json.dumps({m: m in sys.modules for m in ("torch", "libcst", "click", "np2torch.lint.engine")}))
    """)
    assert result == {"torch": False, "libcst": False, "click": False, "np2torch.lint.engine": False}


def test_import_cli_loads_no_engine_torch_or_subcommands() -> None:
    # The rule table reads np2torch.runtime.table (standard library only); the helpers and NumPy stay unloaded.
    names = (*HEAVY, *LAZY_SUBCOMMANDS, "numpy", "np2torch.runtime._api")
    result = loaded_after(f"""
        import json, sys
        import np2torch.cli
        print(json.dumps({{m: m in sys.modules for m in {names!r}}}))
    """)
    assert not any(result.values()), result


@pytest.fixture
def poisoned_torch(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An importable fake ``torch`` that leaves a mark: catches imports in worker processes too."""
    fake = tmp_path / "poison"
    (fake / "torch").mkdir(parents=True)
    marker = tmp_path / "torch-was-imported"
    (fake / "torch" / "__init__.py").write_text(
        f"open({str(marker)!r}, 'a').write(__import__('os').getpid().__str__() + '\\n')\n"
        "raise ImportError('np2torch imported torch')\n"
    )
    path = os.pathsep.join(p for p in (str(fake), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "NP2TORCH_CACHE_DIR": str(tmp_path / "cache")}, marker


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["check"], id="check"),
        pytest.param(["check", "--jobs", "2", "--no-cache"], id="check in a worker pool"),
        pytest.param(["fix"], id="fix"),
        pytest.param(["fix", "--jobs", "2", "--no-cache"], id="fix in a worker pool"),
        pytest.param(["fix", "--diff"], id="diff"),
    ],
)
def test_check_and_fix_never_import_torch(tmp_path: Path, poisoned_torch: tuple[dict[str, str], Path],
                                          args: list[str]) -> None:
    env, marker = poisoned_torch
    src = tmp_path / "src"
    src.mkdir()
    for i in range(12):  # enough files with findings for a worker pool
        (src / f"m{i}.py").write_text(f"import numpy as np\nfrom scipy.special import erf, logsumexp\n\n"
                                      f"def f{i}(x):\n    return np.exp(x) + np.log(x) + erf(x) + logsumexp(x)\n")
    result = loaded_after(f"""
        import json, sys
        from np2torch.cli import main
        code = main({[*args, str(src)]!r})
        print(json.dumps({{"code": code, "torch": "torch" in sys.modules}}))
    """, cwd=tmp_path, env=env)
    assert result["torch"] is False
    assert not marker.exists(), "a worker process imported torch"
    assert result["code"] in (0, 1)


def test_runtime_import_does_not_import_torch() -> None:
    result = loaded_after("""
        import json, sys
        import np2torch.runtime
        print(json.dumps({"torch": "torch" in sys.modules, "libcst": "libcst" in sys.modules}))
    """)
    assert result == {"torch": False, "libcst": False}


def test_runtime_imports_torch_only_when_a_call_takes_the_torch_path() -> None:
    pytest.importorskip("torch")  # the optional extra: without it no call takes the torch path
    # A missing np2torch.runtime.exp fails the script (AttributeError), and so this test.
    result = loaded_after("""
        import json, sys
        import numpy as np
        import np2torch.runtime as np2t
        np2t.exp(np.linspace(0.0, 1.0, 8))   # tiny: below every threshold, NumPy's own path
        before = "torch" in sys.modules
        np2t.configure(min_size=0)           # now every call takes the torch path
        np2t.exp(np.linspace(0.0, 1.0, 8))
        print(json.dumps({"before": before, "after": "torch" in sys.modules}))
    """, env={"NP2TORCH_MIN_SIZE": "", "NP2TORCH_DEVICE": ""})
    assert result == {"before": False, "after": True}


def test_the_linter_and_the_runtime_run_without_pygls(tmp_path: Path) -> None:
    # pygls (np2torch[server]) poisoned: check, fix and the runtime work, the server says what to install.
    poison = tmp_path / "poison"
    for name in ("pygls", "lsprotocol"):
        (poison / name).mkdir(parents=True)
        (poison / name / "__init__.py").write_text(f"raise ModuleNotFoundError('poisoned', name={name!r})\n")
    (tmp_path / "m.py").write_text("import numpy as np\ny = np.exp(np.ones(3))\n")
    result = loaded_after("""
        import io, json, sys, contextlib
        from np2torch.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            check, fix = main(["check", "--no-cache", "m.py"]), main(["fix", "--no-cache", "m.py"])
        import np2torch.runtime as np2t
        import numpy as np
        float(np2t.exp(np.ones(3))[0])
        with contextlib.redirect_stderr(io.StringIO()) as err:
            server = main(["server"])
        print(json.dumps({"check": check, "fix": fix, "server": server, "said": err.getvalue().strip(),
                          "loaded": [m for m in ("pygls", "lsprotocol", "np2torch.server.lsp") if m in sys.modules]}))
    """, cwd=tmp_path, env={"PYTHONPATH": os.pathsep.join(p for p in (str(poison), os.environ.get("PYTHONPATH", "")) if p)})
    assert result == {"check": 1, "fix": 0, "server": 2, "loaded": [],
                      "said": "Error: `np2torch server` needs pygls, which is not installed: pip install 'np2torch[server]'"}


def test_the_language_server_imports_neither_numpy_nor_torch() -> None:
    result = loaded_after("""
        import json, sys
        from np2torch.server import lsp
        from np2torch.lint import engine
        engine.fix_source("import numpy as np\\ny = np.exp(x)\\n")
        print(json.dumps({m: m in sys.modules for m in ("numpy", "torch")}))
    """)
    assert result == {"numpy": False, "torch": False}
