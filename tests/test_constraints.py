"""constraints.txt holds one set of pins per Python the package claims (`.ci/constraints-resolve` resolves each
with that Python's pip); this checks the file's shape without the package index."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

packaging_requirements = pytest.importorskip("packaging.requirements")

ROOT = Path(__file__).resolve().parent.parent
CLASSIFIER = "Programming Language :: Python :: "


def claimed() -> list[str]:
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    versions = [c[len(CLASSIFIER):] for c in project["classifiers"]
                if c.startswith(CLASSIFIER) and re.fullmatch(r"3\.\d+", c[len(CLASSIFIER):])]
    assert project["requires-python"] == f">={versions[0]}", "requires-python and the classifiers disagree"
    return versions


def pins_for(version: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for number, line in enumerate((ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#")[0].strip()
        if not line:
            continue
        requirement = packaging_requirements.Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"constraints.txt:{number}: pin an exact version"
        if requirement.marker is None or requirement.marker.evaluate({"python_version": version,
                                                                      "python_full_version": f"{version}.0"}):
            name = re.sub(r"[-_.]+", "-", requirement.name).lower()
            assert name not in pins, f"constraints.txt:{number}: {name} pinned twice for Python {version}"
            pins[name] = spec.version
    return pins


def test_every_claimed_python_has_one_pin_per_package() -> None:
    versions = claimed()
    assert versions[0] == "3.9" and len(versions) >= 5
    for version in versions:
        pins = pins_for(version)
        assert {"numpy", "libcst", "torch", "scipy", "pytest"} <= set(pins), version
    assert pins_for("3.9")["numpy"] != pins_for("3.11")["numpy"]  # NumPy 2.4 has no wheel before 3.11


def test_the_resolution_check_reads_the_same_claim() -> None:
    if not (ROOT / ".ci").is_dir():
        pytest.skip("no .ci/ (an unpacked sdist)")
    script = (ROOT / ".ci" / "constraints-resolve").read_text(encoding="utf-8")
    assert CLASSIFIER in script and "bash .ci/constraints-resolve" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
