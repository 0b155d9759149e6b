"""The pre-commit hooks, for real: pre-commit clones this repository at HEAD into its own
virtualenv and runs the hooks in a temporary git repository.

What is tested is the committed state (``rev`` is HEAD's sha), as a user gets it.
The first run builds pre-commit's environment for the hooks (pip installs np2torch
and its dependencies); every test here shares that one build.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

FINDING = "import numpy as np\n\n\ndef f(x):\n    return np.exp(x)\n"
NOTEBOOK = json.dumps({
    "cells": [
        {"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {}, "outputs": [],
         "source": ["import numpy as np\n"]},
        {"cell_type": "markdown", "id": "c2", "metadata": {}, "source": ["np.exp(x) in prose\n"]},
        {"cell_type": "code", "execution_count": None, "id": "c3", "metadata": {}, "outputs": [],
         "source": ["y = np.log(np.ones(3))\n"]},
    ],
    "metadata": {"language_info": {"name": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}, indent=1) + "\n"
HOOKS = REPO / ".pre-commit-hooks.yaml"


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com", PRE_COMMIT_COLOR="never")
    return env


def _head() -> str:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          env=_git_env(), stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        pytest.skip("not a git checkout of np2torch")
    return done.stdout.strip()


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(tmp_path: Path, pre_commit_home: Path) -> Path:
    sha = _head()
    env = _git_env()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    (tmp_path / ".pre-commit-config.yaml").write_text(
        f"repos:\n"
        f"  - repo: {REPO.as_posix()}\n"
        f"    rev: {sha}\n"
        f"    hooks:\n"
        f"      - id: np2torch-check\n"
        f"      - id: np2torch-fix\n"
    )
    return tmp_path


def pre_commit(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**_git_env(), "PRE_COMMIT_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=project, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=900)


def add(project: Path, name: str, text: str) -> Path:
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    subprocess.run(["git", "add", "--", name], cwd=project, check=True, env=_git_env())
    return path


def test_hooks_see_notebooks_and_run_serially_as_ruffs_do() -> None:
    # ruff-pre-commit: `types_or: [python, pyi, jupyter]`, `require_serial: true`. np2torch starts its own
    # pool of workers on every core, so pre-commit must not run batches of files in parallel too.
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load(HOOKS.read_text())
    assert [hook["id"] for hook in hooks] == ["np2torch-check", "np2torch-fix"]
    for hook in hooks:
        assert hook["types_or"] == ["python", "pyi", "jupyter"], hook["id"]
        assert hook["require_serial"] is True, hook["id"]
        assert "--force-exclude" in hook["entry"].split(), hook["id"]


def test_check_hook_fails_on_a_finding_and_fix_hook_rewrites(project: Path, pre_commit_home: Path) -> None:
    path = add(project, "pkg/mod.py", FINDING)
    add(project, "pkg/clean.py", "import math\n\nx = math.exp(1.5)\n")
    book = add(project, "notebooks/explore.ipynb", NOTEBOOK)

    checked = pre_commit(project, pre_commit_home, "run", "np2torch-check", "--all-files")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "pkg/mod.py:5:12: NPT001" in checked.stdout
    assert "notebooks/explore.ipynb:cell 3:1:5: NPT002" in checked.stdout  # pre-commit handed it the notebook
    assert path.read_text() == FINDING

    fixed = pre_commit(project, pre_commit_home, "run", "np2torch-fix", "--all-files")
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in fixed.stdout
    text = path.read_text()
    assert "import np2torch.runtime as np2t" in text and "return np2t.exp(x)" in text
    cells = json.loads(book.read_text())["cells"]
    assert cells[0]["source"] == ["import np2torch.runtime as np2t\n", "import numpy as np\n"]
    assert cells[1]["source"] == ["np.exp(x) in prose\n"]
    assert cells[2]["source"] == ["y = np2t.log(np.ones(3))\n"]

    subprocess.run(["git", "add", "-u"], cwd=project, check=True, env=_git_env())
    again = pre_commit(project, pre_commit_home, "run", "--all-files")
    assert again.returncode == 0, again.stdout + again.stderr


def test_hooks_honour_config_excludes_for_named_files(project: Path, pre_commit_home: Path) -> None:
    add(project, "pyproject.toml", "[tool.np2torch]\nextend-exclude = ['generated/']\n")
    path = add(project, "generated/mod.py", FINDING)
    done = pre_commit(project, pre_commit_home, "run", "--files", "generated/mod.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert path.read_text() == FINDING


def test_check_hook_with_fix_args_as_ruff_users_write_it(tmp_path: Path, pre_commit_home: Path) -> None:
    # ruff-pre-commit's README: `- id: ruff-check` with `args: [--fix]`; the same line works for np2torch-check.
    sha = _head()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=_git_env())
    (tmp_path / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {REPO.as_posix()}\n    rev: {sha}\n    hooks:\n"
        f"      - id: np2torch-check\n        args: [--fix]\n"
    )
    path = add(tmp_path, "pkg/mod.py", FINDING)
    fixed = pre_commit(tmp_path, pre_commit_home, "run", "np2torch-check", "--all-files")
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # pre-commit fails a hook that modified files
    assert "No such option" not in fixed.stdout + fixed.stderr
    assert "return np2t.exp(x)" in path.read_text()
    subprocess.run(["git", "add", "-u"], cwd=tmp_path, check=True, env=_git_env())
    again = pre_commit(tmp_path, pre_commit_home, "run", "--all-files")
    assert again.returncode == 0, again.stdout + again.stderr


def _readme_snippet() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n### pre-commit\n"):]
    section = section[:section.index("\n## ")]
    assert "rev: v" not in section  # no tag: np2torch has none, and tags do not travel with a clone's commits
    found = re.search(r"```sh\n(.*?)\n```", section, re.DOTALL)
    assert found, "README's pre-commit section shows the commands that write .pre-commit-config.yaml"
    return found.group(1)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_readme_pre_commit_snippet_works_as_written(tmp_path: Path, pre_commit_home: Path) -> None:
    # A newcomer pastes it into their project with NP2TORCH pointing at their clone (here: this checkout).
    script, count = re.subn(r"^NP2TORCH=\S+", lambda _: f"NP2TORCH={shlex.quote(str(REPO))}", _readme_snippet(),
                            flags=re.M)
    assert count == 1
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=_git_env())
    path = add(tmp_path, "pkg/mod.py", FINDING)
    env = {**_git_env(), "PRE_COMMIT_HOME": str(pre_commit_home),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    done = subprocess.run(["bash", "-euc", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=900)
    config = (tmp_path / ".pre-commit-config.yaml").read_text()
    assert f"    rev: {_head()}\n" in config and f"  - repo: {REPO}\n" in config
    assert done.returncode == 1, done.stdout + done.stderr  # the hook ran and found the call
    assert "NPT001" in done.stdout and path.read_text() == FINDING
