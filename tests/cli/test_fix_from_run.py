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
          paths: Dict[str, int] | None = None, verdict: str | None = None, warmup: float = 0.0,
          one_time: float = 0.0) -> Dict[str, Any]:
    """A report's site: by default its saving's interval is 10 % either side, its verdict what that says."""
    low, high = saved - abs(saved) / 10, saved + abs(saved) / 10
    return {"path": str(path), "line": line, "col": col, "code": code, "function": "f", "calls": calls,
            "saved_s": saved, "original_s": original, "helper_s": original - saved, "saved_low_s": low,
            "saved_high_s": high, "verdict": verdict or ("saves" if low > 0 else "costs" if high < 0 else "unsure"),
            "warmup_s": warmup + one_time, "one_time_s": one_time,
            "paths": paths if paths is not None else {"sampled": 4, "cpu": calls - 4}}


def _report(tmp_path: Path, files: List[Path], sites: List[Dict[str, Any]], **fields: Any) -> Path:
    report = tmp_path / "run.json"
    report.write_text(json.dumps({
        "version": 2, "command": ["np2torch", "run", "x.py"], "wall_s": 1.0, "sites": sites, "not_rewritten": [],
        "files": {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}, **fields}))
    return report


def _fix(cwd: Path, *args: str, cache: bool = False) -> Tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "np2torch", "fix", *([] if cache else ["--no-cache"]), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)
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
    assert err.splitlines() == [
        "model.py:6:9: NPT002 left out by the report: saves 5.0 ms of 100.0 ms over 10 calls, 5.0 ms net of "
        "0 us of warm-up (needs >= 10% of the original's time and >= 1.0 ms)",
        "model.py:7:9: NPT003 left out by the report: saves 500 us of 2.0 ms over 10 calls, 500 us net of 0 us of "
        "warm-up (needs >= 10% of the original's time and >= 1.0 ms)",
        "model.py:8:9: NPT005 left out by the report: costs: saved -10.0 ms of 50.0 ms over 10 calls, 95% interval "
        "-11.0 ms to -9.0 ms",
        "model.py:9:28: NPT006 left out by the report: not called in the run",
    ]
    assert out.splitlines()[:2] == ["Fixed 1 error in 1 file.",
                                "Left 4 sites as they are: left out by the report (one line each above)."]
    assert code == 0  # the sites left out were left out on purpose: nothing remains that np2torch cannot fix


def test_a_site_whose_helper_never_left_the_original_is_left_out(tmp_path: Path) -> None:
    module = tmp_path / "model.py"
    module.write_text(SOURCE)
    sites = [_site(module, 5, 9, "NPT001", 0.050, 0.100, paths={"sampled": 4, "numpy": 6})]
    code, _out, err = _fix(tmp_path, "--from-run", str(_report(tmp_path, [module], sites)))
    assert module.read_text() == SOURCE
    assert "model.py:5:9: NPT001 left out by the report: every helper call ran the original (torch computed none)" in err


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
    (json.dumps({"version": True, "sites": [], "files": {}}), "not a report of `np2torch run --report-file`"),
    (json.dumps({"version": 1, "sites": [], "files": {}}), "a report of an older np2torch (version 1"),
    (json.dumps({"version": 2, "sites": [{"path": "x.py"}], "files": {}}), "a site or file entry is malformed"),
])
def test_a_bad_report_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bad.json").write_text(text)
    code, _out, err = _fix(tmp_path, "--from-run", "bad.json")
    assert code == 2 and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("field, value", [
    pytest.param("line", "1e400", id="a line that overflows"),
    pytest.param("line", "Infinity", id="a line of Infinity"),
    pytest.param("calls", str(10**30), id="a count past any count"),
    pytest.param("saved_s", "1e400", id="a saving that overflows"),
    pytest.param("saved_s", "NaN", id="a saving that is not a number"),
    pytest.param("original_s", "-1", id="a negative time"),
    pytest.param("line", "true", id="a line that is a boolean"),
    pytest.param("verdict", '"maybe"', id="a verdict that is none of the three"),
    pytest.param("paths", '{"cpu": 1e400}', id="a path count that overflows"),
])
def test_a_report_is_input_from_elsewhere_every_number_is_checked(tmp_path: Path, field: str, value: str) -> None:
    module = tmp_path / "model.py"
    module.write_text(SOURCE)
    text = _report(tmp_path, [module], _sites(module)).read_text()
    entry = json.dumps(field) + ": " + json.dumps(_sites(module)[0][field])
    assert entry in text
    (tmp_path / "run.json").write_text(text.replace(entry, json.dumps(field) + ": " + value, 1))
    code, _out, err = _fix(tmp_path, "--from-run", "run.json")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: run.json: ") and "internal error" not in err
    assert module.read_text() == SOURCE


def test_a_site_whose_file_has_no_digest_is_refused(tmp_path: Path) -> None:
    module = tmp_path / "model.py"
    module.write_text(SOURCE)
    report = _report(tmp_path, [], _sites(module))
    code, _out, err = _fix(tmp_path, "--from-run", str(report))
    assert code == 2 and "has no digest in files" in err and err.count("\n") == 1
    assert module.read_text() == SOURCE


def test_without_paths_a_report_fixes_files_of_the_working_directorys_project_only(tmp_path: Path) -> None:
    # A report someone sent names a file elsewhere on disk: it is fixed only when named on the command line.
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    for folder in (project, elsewhere):
        (folder / ".git").mkdir(parents=True)
        (folder / "model.py").write_text(SOURCE)
    report = _report(project, [project / "model.py", elsewhere / "model.py"],
                     _sites(project / "model.py") + _sites(elsewhere / "model.py"))
    code, _out, err = _fix(project, "--from-run", str(report))
    assert "np2t.exp" in (project / "model.py").read_text()
    assert (elsewhere / "model.py").read_text() == SOURCE
    assert f"elsewhere/model.py: error: outside the project of the working directory ({project})" in err
    assert code == 2
    code, _out, _err = _fix(project, "--from-run", str(report), str(elsewhere / "model.py"))
    assert "np2t.exp" in (elsewhere / "model.py").read_text() and code == 0


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


def test_the_process_warm_up_is_shared_by_the_sites_kept(tmp_path: Path) -> None:
    # Two sites save 50 ms and 30 ms; importing torch took 1 s (in the first one's call).  Whichever is kept
    # pays it in the fixed program: together they do not pay for it, so neither is rewritten.
    module = tmp_path / "model.py"
    module.write_text(SOURCE)
    sites = [_site(module, 5, 9, "NPT001", 0.050, 0.100, one_time=1.0), _site(module, 6, 9, "NPT002", 0.030, 0.100)]
    code, out, err = _fix(tmp_path, "--from-run", str(_report(tmp_path, [module], sites)))
    assert module.read_text() == SOURCE
    assert "model.py:5:9: NPT001 left out by the report: saves 50.0 ms of 100.0 ms over 10 calls, -575.0 ms net of " \
           "625.0 ms of warm-up" in err
    assert "model.py:6:9: NPT002 left out by the report: saves 30.0 ms of 100.0 ms over 10 calls, -345.0 ms net" in err
    assert code == 0 and "Left 5 sites as they are: left out by the report" in out
    # With 1.5 s saved by the first, the import is paid for: its 1 s share leaves 0.5 s; the second's share,
    # 30/1530 of the import (20 ms), leaves it 10 ms: both are rewritten.
    sites[0] = _site(module, 5, 9, "NPT001", 1.5, 3.0, one_time=1.0)
    code, _out, err = _fix(tmp_path, "--from-run", str(_report(tmp_path, [module], sites)))
    assert "a = np2t.exp(x)" in module.read_text() and "b = np2t.log(x)" in module.read_text(), err


def test_an_unsure_site_is_left_out(tmp_path: Path) -> None:
    module = tmp_path / "model.py"
    module.write_text(SOURCE)
    sites = [_site(module, 5, 9, "NPT001", 0.050, 0.100, verdict="unsure")]
    code, _out, err = _fix(tmp_path, "--from-run", str(_report(tmp_path, [module], sites)))
    assert module.read_text() == SOURCE and code == 0
    assert "model.py:5:9: NPT001 left out by the report: unsure: saved 50.0 ms of 100.0 ms" in err


def test_from_run_leaves_the_lint_cache_true_for_the_commands_after_it(tmp_path: Path) -> None:
    # The cache on: what fix --from-run left out is still fixable to check, fix --diff and fix.
    module = tmp_path / "model.py"
    module.write_text(SOURCE)
    code, _out, _err = _fix(tmp_path, "--from-run", str(_report(tmp_path, [module], _sites(module))), cache=True)
    assert code == 0 and "a = np2t.exp(x)" in module.read_text()
    check = subprocess.run([sys.executable, "-m", "np2torch", "check", "model.py"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 1 and "left out" not in check.stdout and "4 fixable" in check.stdout, check.stdout
    code, out, _err = _fix(tmp_path, "--diff", "model.py", cache=True)
    assert code == 1 and "+    b = np2t.log(x)" in out
    code, out, _err = _fix(tmp_path, "model.py", cache=True)
    assert code == 0 and "Fixed 4 errors" in out
    assert "b = np2t.log(x)" in module.read_text() and "np2t.cos(x)" in module.read_text()


def test_run_then_fix_from_run_end_to_end(tmp_path: Path) -> None:
    # A real run of a program, its report read by fix.  The timings are the machine's, so the verdicts are the
    # test's: the real report's sites (their positions, calls and paths, the files' digests) with a verdict set.
    (tmp_path / ".git").mkdir()
    prog = tmp_path / "prog.py"
    source = "import numpy as np\nx = np.ones(16)\nfor _ in range(200):\n    np.sin(x)\n    np.exp(x)\n"
    prog.write_text(source)
    report = tmp_path / "r.json"
    env = {**os.environ, "NP2TORCH_MIN_SIZE": "0"}
    subprocess.run([sys.executable, "-m", "np2torch", "run", "--report", "none", "--report-file", str(report),
                    "prog.py"], cwd=tmp_path, check=True, env=env, timeout=300)
    data = json.loads(report.read_text())
    assert sorted((site["line"], site["calls"]) for site in data["sites"]) == [(4, 200), (5, 200)]
    assert all(site["paths"].get("cpu", 0) > 0 for site in data["sites"])
    for site in data["sites"]:
        saves = site["line"] == 4
        site.update(saved_s=0.5 if saves else -0.5, saved_low_s=0.4 if saves else -0.6,
                    saved_high_s=0.6 if saves else -0.4, original_s=1.0, warmup_s=0.0, one_time_s=0.0,
                    verdict="saves" if saves else "costs")
    report.write_text(json.dumps(data))
    code, out, err = _fix(tmp_path, "--from-run", str(report))
    assert prog.read_text() == source.replace("np.sin", "np2t.sin").replace(
        "import numpy as np\n", "import np2torch.runtime as np2t\nimport numpy as np\n")  # isort's order
    assert err.splitlines() == ["prog.py:5:5: NPT001 left out by the report: costs: saved -500.0 ms of 1.00 s over "
                                "200 calls, 95% interval -600.0 ms to -400.0 ms"]
    assert "Left 1 site as it is: left out by the report" in out and code == 0
