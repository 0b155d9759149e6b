"""``np2torch fix --from-run REPORT``: exactly the sites whose measured saving cleared the margin are rewritten."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from np2torch.cli.from_run import Margin, parse_margin

SOURCE = textwrap.dedent("""\
    import numpy as np
    from scipy.special import erf

    def model(x):
        a = np.exp(x)      # saves 50 ms of 100 ms: rewritten
        b = np.log(x)      # saves 5 ms of 100 ms: under 10 %
        c = erf(x)         # saves 0.5 ms of 2 ms: under 1 ms
        d = np.sin(x)      # slower on the helper
        return a + b + c + d + np.cos(x)   # never called in the run
    """)


def _site(path: Path, line: int, col: int, code: str, saved: float, original: float, calls: int = 10,
          paths: Dict[str, int] | None = None) -> Dict[str, Any]:
    return {"path": str(path), "line": line, "col": col, "code": code, "function": "f", "calls": calls,
            "saved_s": saved, "original_s": original, "helper_s": original - saved,
            "paths": paths if paths is not None else {"sampled": 4, "cpu": calls - 4}}


def _report(tmp_path: Path, files: List[Path], sites: List[Dict[str, Any]]) -> Path:
    report = tmp_path / "run.json"
    report.write_text(json.dumps({
        "version": 1, "command": ["np2torch", "run", "x.py"], "wall_s": 1.0, "sites": sites, "not_rewritten": [],
        "files": {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}}))
    return report


def _fix(cwd: Path, *args: str) -> Tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "np2torch", "fix", "--no-cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def _sites(path: Path) -> List[Dict[str, Any]]:
    return [_site(path, 5, 9, "NPT001", 0.050, 0.100), _site(path, 6, 9, "NPT002", 0.005, 0.100),
            _site(path, 7, 9, "NPT003", 0.0005, 0.002), _site(path, 8, 9, "NPT005", -0.010, 0.050)]


def test_only_the_sites_that_cleared_the_margin_are_rewritten(tmp_path: Path) -> None:
    module = tmp_path / "model.py"
    module.write_text(SOURCE)
    report = _report(tmp_path, [module], _sites(module))
    code, out, err = _fix(tmp_path, "--from-run", str(report))
    fixed = module.read_text()
    assert "a = np2t.exp(x)" in fixed
    for kept in ("b = np.log(x)", "c = erf(x)", "d = np.sin(x)", "np.cos(x)"):
        assert kept in fixed
    assert "import np2torch.runtime as np2t" in fixed
    lines = err.splitlines()
    assert "model.py:6:9: NPT002 left as it is: saved 5.0 ms of 100.0 ms over 10 calls" in lines[0]
    assert "model.py:7:9: NPT003 left as it is: saved 500 us of 2.0 ms" in lines[1]
    assert "model.py:8:9: NPT005 left as it is: saved -10.0 ms of 50.0 ms" in lines[2]
    assert "model.py:9:28: NPT006 left as it is: not called in the run" in lines[3]
    assert code == 1  # findings remain, as after any fix that leaves some
    assert "Fixed 1 error" in out


def test_a_site_whose_helper_never_left_the_original_is_left_out(tmp_path: Path) -> None:
    module = tmp_path / "model.py"
    module.write_text(SOURCE)
    sites = [_site(module, 5, 9, "NPT001", 0.050, 0.100, paths={"sampled": 4, "numpy": 6})]
    code, _out, err = _fix(tmp_path, "--from-run", str(_report(tmp_path, [module], sites)))
    assert module.read_text() == SOURCE
    assert "model.py:5:9: NPT001 left as it is: every helper call ran the original (torch computed none)" in err


def test_min_saving_changes_the_margin(tmp_path: Path) -> None:
    module = tmp_path / "model.py"
    module.write_text(SOURCE)
    report = _report(tmp_path, [module], _sites(module))
    _fix(tmp_path, "--from-run", str(report), "--min-saving", "4%,0.4ms")
    fixed = module.read_text()
    assert "a = np2t.exp(x)" in fixed and "b = np2t.log(x)" in fixed and "c = np2t.erf(x)" in fixed
    assert "d = np.sin(x)" in fixed


def test_a_file_changed_since_the_run_is_refused_and_the_others_go_on(tmp_path: Path) -> None:
    changed, kept = tmp_path / "changed.py", tmp_path / "kept.py"
    changed.write_text(SOURCE)
    kept.write_text(SOURCE)
    report = _report(tmp_path, [changed, kept], _sites(changed) + _sites(kept))
    changed.write_text(SOURCE.replace("import numpy as np", "import numpy as np  # edited"))
    before = changed.read_text()
    code, _out, err = _fix(tmp_path, "--from-run", str(report))
    assert changed.read_text() == before
    assert "changed.py: error: changed since the run that wrote" in err
    assert "a = np2t.exp(x)" in kept.read_text()
    assert code == 2


def test_paths_narrow_the_report(tmp_path: Path) -> None:
    one, two = tmp_path / "one.py", tmp_path / "two.py"
    one.write_text(SOURCE)
    two.write_text(SOURCE)
    report = _report(tmp_path, [one, two], _sites(one) + _sites(two))
    _fix(tmp_path, "--from-run", str(report), "two.py")
    assert one.read_text() == SOURCE and "np2t.exp" in two.read_text()


@pytest.mark.parametrize("text, message", [
    ("not json", "not a run report (invalid JSON"),
    (json.dumps({"version": 99, "sites": []}), "not a report of `np2torch run --report-file`"),
    (json.dumps({"version": 1, "sites": [{"path": "x.py"}]}), "a site or file entry is malformed"),
])
def test_a_bad_report_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bad.json").write_text(text)
    code, _out, err = _fix(tmp_path, "--from-run", "bad.json")
    assert code == 2 and message in err and err.count("\n") == 1


def test_min_saving_without_from_run_is_a_usage_error(tmp_path: Path) -> None:
    code, _out, err = _fix(tmp_path, "--min-saving", "5%", ".")
    assert code == 2 and "--min-saving goes with --from-run" in err


@pytest.mark.parametrize("text, margin", [("10%", Margin(0.10, 1e-3)), ("2ms", Margin(0.10, 2e-3)),
                                          ("25%,0.5s", Margin(0.25, 0.5)), ("0%,0us", Margin(0.0, 0.0))])
def test_parse_margin(text: str, margin: Margin) -> None:
    assert parse_margin(text) == margin


@pytest.mark.parametrize("text", ["", "10", "ten%", "5%,", "1 h"])
def test_parse_margin_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="--min-saving"):
        parse_margin(text)


def test_run_then_fix_from_run_end_to_end(tmp_path: Path) -> None:
    # A real run: a site on 16 elements forced through torch saves nothing (negative), so it is left out.
    (tmp_path / ".git").mkdir()
    prog = tmp_path / "prog.py"
    prog.write_text("import numpy as np\nx = np.ones(16)\nfor _ in range(200):\n    np.sin(x)\n")
    report = tmp_path / "r.json"
    env = {**os.environ, "NP2TORCH_MIN_SIZE": "0"}
    subprocess.run([sys.executable, "-m", "np2torch", "run", "--report", "none", "--report-file", str(report),
                    "prog.py"], cwd=tmp_path, check=True, env=env, timeout=300)
    code, _out, err = _fix(tmp_path, "--from-run", str(report))
    assert "prog.py:4:5: NPT005 left as it is: saved -" in err
    assert "np.sin(x)" in prog.read_text() and "np2t" not in prog.read_text()
    assert code == 1
