"""A real project's own test suite under ``np2torch run --include``: the same outcome for every test.

emcee (docs/realworld.md) ships its tests in its package: ``pytest --pyargs
emcee.tests.unit`` runs them against the installed copy, once plainly and once
as ``np2torch run --include emcee -m pytest ...`` with every array the runtime
can serve sent through torch (``NP2TORCH_MIN_SIZE=0``).  Its library and test
modules are rewritten in memory (the report shows the sites that ran), and no
test may change outcome.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Dict

import pytest

pytest.importorskip("emcee")


def _outcomes(junit: Path) -> Dict[str, str]:
    outcomes = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = kinds[0] if kinds else "passed"
    return outcomes


def test_emcee_unit_tests_have_the_same_outcomes_under_np2torch_run(tmp_path: Path) -> None:
    pytest_args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", "emcee.tests.unit"]
    env = {**os.environ, "NP2TORCH_MIN_SIZE": "0"}
    plain = subprocess.run([sys.executable, *pytest_args, f"--junitxml={tmp_path / 'plain.xml'}"], cwd=tmp_path,
                           capture_output=True, text=True, env=env, timeout=600)
    report = tmp_path / "report.json"
    under = subprocess.run([sys.executable, "-m", "np2torch", "run", "--include", "emcee", "--report", "none",
                            "--report-file", str(report), *pytest_args, f"--junitxml={tmp_path / 'run.xml'}"],
                           cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert under.returncode == plain.returncode, under.stderr[-2000:]
    before, after = _outcomes(tmp_path / "plain.xml"), _outcomes(tmp_path / "run.xml")
    assert len(before) >= 50 and after == before
    ran = [site for site in json.loads(report.read_text())["sites"] if site["calls"]]
    assert {Path(site["path"]).name for site in ran} >= {"red_blue.py", "stretch.py"}
    assert any(site["paths"].get("cpu") for site in ran)  # torch really computed some of them
