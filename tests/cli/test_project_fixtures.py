"""The project fixtures: ``check``, ``fix`` and ``np2torch run`` see the project, not only the file.

Layout (``fixtures/project/<name>/``, a small project; ids are the project names):

* ``<path>.in.py``: a file of the project as written (``pkg/kernels.in.py`` is ``pkg/kernels.py``);
* ``<path>.out.py``: what ``np2torch fix`` of the whole project makes of it (none: it is left as it is);
* ``<path>.findings``: what ``np2torch check`` reports on it in the project, one finding a line as
  ``line:col-end_line:end_col CODE fix|nofix`` (none: no finding).

Each project's ``main.py`` is a program: run by plain ``python`` before the fix, under ``np2torch run``
and after the fix, stdout, stderr and exit status are the same, byte for byte (with numba installed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from np2torch.cli.app import main

PROJECTS = Path(__file__).resolve().parents[2] / "fixtures" / "project"
CASES = sorted(path for path in PROJECTS.iterdir() if path.is_dir())

Outcome = Tuple[int, str, str]


def _copy(project: Path, root: Path) -> Dict[str, Path]:
    """The project's files as written, under ``root`` (with a pyproject.toml): relative path -> fixture."""
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    files = {}
    for fixture in sorted(project.rglob("*.in.py")):
        relative = fixture.relative_to(project).as_posix()[: -len(".in.py")] + ".py"
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fixture, root / relative)
        files[relative] = fixture
    return files


def _sidecar(fixture: Path, suffix: str) -> Path:
    return Path(str(fixture)[: -len(".in.py")] + suffix)


def _expected_findings(fixture: Path) -> List[str]:
    sidecar = _sidecar(fixture, ".findings")
    return [line for line in sidecar.read_text().splitlines() if line.strip()] if sidecar.exists() else []


def _cli(root: Path, argv: List[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(root)
    capsys.readouterr()
    main(argv)
    return capsys.readouterr().out


@pytest.mark.parametrize("project", CASES, ids=lambda p: p.name)
def test_check_reports_what_other_modules_compile(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    files = _copy(project, tmp_path / "proj")
    found: Dict[str, List[str]] = {}
    for item in json.loads(_cli(tmp_path / "proj", ["check", "--no-cache", "--output-format", "json", "."], capsys,
                                monkeypatch)):
        found.setdefault(item["path"], []).append(
            f"{item['line']}:{item['column']}-{item['end_line']}:{item['end_column']} {item['code']} "
            f"{'fix' if item['fixable'] else 'nofix'}")
    assert {path: found.get(path, []) for path in files} == {path: _expected_findings(f) for path, f in files.items()}


@pytest.mark.parametrize("project", CASES, ids=lambda p: p.name)
def test_fix_leaves_what_other_modules_compile(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "proj"
    files = _copy(project, root)
    _cli(root, ["fix", "--no-cache", "-q", "."], capsys, monkeypatch)
    for relative, fixture in files.items():
        out = _sidecar(fixture, ".out.py")
        assert (root / relative).read_bytes() == (out if out.exists() else fixture).read_bytes(), relative


def test_fixture_layout_is_complete() -> None:
    for sidecar in [*PROJECTS.rglob("*.out.py"), *PROJECTS.rglob("*.findings")]:
        stem = str(sidecar)[: -len(".out.py")] if sidecar.name.endswith(".out.py") else str(sidecar)[: -len(".findings")]
        assert Path(stem + ".in.py").exists(), sidecar
    for project in CASES:
        assert (project / "main.in.py").exists(), project
    stray = [p for p in PROJECTS.rglob("*.py") if not p.name.endswith((".in.py", ".out.py"))]
    assert not stray, stray


# --------------------------------------------------------------------------- the programs


def _python(root: Path, argv: List[str]) -> Outcome:
    done = subprocess.run([sys.executable, *argv], cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NUMBA_CACHE_DIR": str(root.parent / "numba-cache")})
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("project", CASES, ids=lambda p: p.name)
def test_the_program_runs_as_python_runs_it_under_run_and_after_fix(project: Path, tmp_path: Path) -> None:
    pytest.importorskip("numba")
    root = tmp_path / "proj"
    _copy(project, root)
    plain = _python(root, ["main.py"])
    assert plain[0] == 0, plain
    assert _python(root, ["-m", "np2torch", "run", "--report", "none", "--no-cache", "main.py"]) == plain
    _python(root, ["-m", "np2torch", "fix", "--no-cache", "-q", "."])
    assert _python(root, ["main.py"]) == plain
