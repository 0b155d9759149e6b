"""README.md as a newcomer meets it: the quick start's environment covers what the next section runs.

`.ci/quickstart` runs those commands for real in a fresh environment; this checks, without installing anything,
that the extras the quick start installs bring every module the bundled example imports.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"\n## {title}")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def quick_start_command() -> str:
    found = re.search(r"```sh\n(python3 -m venv \.venv && [^\n]*)\n```", _section("Quick start"))
    assert found, "the quick start's first command"
    return found.group(1)


def _distribution(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_quick_start_installs_what_the_next_section_runs() -> None:
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    stdlib = getattr(sys, "stdlib_module_names", None)
    if stdlib is None:
        pytest.skip("needs sys.stdlib_module_names (Python 3.10)")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = re.search(r"-e '\.\[([a-z,]+)\]'", quick_start_command())
    assert extras, quick_start_command()
    installed = {_distribution(r) for r in project["dependencies"]}
    for extra in extras.group(1).split(","):
        installed |= {_distribution(r) for r in project["optional-dependencies"][extra]}
    programs = set(re.findall(r"\$ np2torch run [^\n]*?(examples/\S+\.py)", _section("On your program")))
    assert programs == {"examples/gaussian_mixture.py"}
    for program in programs:
        tree = ast.parse((ROOT / program).read_text(encoding="utf-8"))
        imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module and not node.level}
        third_party = {name for name in imported if name not in stdlib} - {"np2torch"}
        assert third_party and third_party <= installed, (program, third_party - installed)


def test_the_linter_alone_is_the_small_install() -> None:
    assert "-c constraints.txt -e .`" in _section("Quick start")  # the small install, named
    assert "never imports torch" in _section("Quick start")


def test_the_cpu_only_install_names_the_pinned_torch() -> None:
    # README shows PyTorch's CPU index for the CPU build (the package index's torch is CUDA's on Linux): the
    # versions it installs are constraints.txt's pins, or the next command would replace them.
    requirements = pytest.importorskip("packaging.requirements")
    section = _section("Quick start")
    assert "--index-url https://download.pytorch.org/whl/cpu" in section and "CUDA" in section
    shown = re.search(r"pip install torch==(\S+) --index-url https://download\.pytorch\.org/whl/cpu", section)
    oldest = re.search(r"Python 3\.9's pin is `torch==([^`]+)`", section)
    assert shown and oldest
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("torch=="):
            requirement = requirements.Requirement(line)
            for version in ("3.9", "3.13"):
                if requirement.marker is None or requirement.marker.evaluate({"python_version": version}):
                    pins[version] = next(iter(requirement.specifier)).version
    assert pins == {"3.9": oldest.group(1), "3.13": shown.group(1)}
