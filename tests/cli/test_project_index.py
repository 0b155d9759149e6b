"""The project index of check/fix/run (np2torch.cli.index): the project's files, built once, cached per file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from np2torch.cli.app import main
from np2torch.cli.index import ProjectIndex, project_files, project_root

MAIN = "import numba\nfrom pkg.kernels import kernel\nfast = numba.njit(kernel)\n"
KERNELS = "import numpy as np\n\n\ndef kernel(x):\n    return np.exp(x)\n"


def _project(root: Path, main_text: str = MAIN) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    (root / "main.py").write_text(main_text)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "kernels.py").write_text(KERNELS)
    (root / "pkg" / "unrelated.py").write_text("import os\n")
    return root


def test_the_project_is_the_folder_with_pyproject_or_git_and_its_files(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    for skipped in (".hidden", "build", "venv", "node_modules"):
        (root / skipped).mkdir()
        (root / skipped / "x.py").write_text("")
    (root / "env").mkdir()
    (root / "env" / "pyvenv.cfg").write_text("")
    (root / "env" / "y.py").write_text("")
    assert project_root(str(root / "pkg")) == str(root.resolve())
    assert [Path(p).relative_to(root.resolve()).as_posix() for p in project_files(str(root))] == [
        "main.py", "pkg/__init__.py", "pkg/kernels.py", "pkg/unrelated.py"]


def test_a_warm_index_parses_nothing_and_only_files_that_spell_a_compiler_are_parsed(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    cold = ProjectIndex(tmp_path / "cache", fingerprint="f")
    assert cold.answer(str(root / "pkg" / "kernels.py")) == (("kernel", "numba", "main.py"),)
    assert cold.parsed == 2  # main.py (it spells numba), pkg/kernels.py (its name leads there): not the others
    warm = ProjectIndex(tmp_path / "cache", fingerprint="f")
    assert warm.answer(str(root / "pkg" / "kernels.py")) == (("kernel", "numba", "main.py"),)
    assert warm.parsed == 0
    (root / "main.py").write_text(MAIN.replace("kernel)", "kernel, cache=True)"))  # edited: parsed again
    edited = ProjectIndex(tmp_path / "cache", fingerprint="f")
    assert edited.answer(str(root / "pkg" / "kernels.py")) == (("kernel", "numba", "main.py"),)
    assert edited.parsed == 1
    assert ProjectIndex(tmp_path / "cache", fingerprint="another tool").answer(str(root / "main.py")) == ()


def test_a_file_that_names_a_compiler_only_in_words_or_arguments_is_not_parsed(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    (root / "pkg" / "test_backends.py").write_text(
        "import pytest\n\n\n@pytest.mark.skipif(not HAVE_TORCH, reason='needs torch')\n"
        "def test_it(xp):  # like torch.compile, numba and jax would\n    assert not is_torch(xp)\n")
    index = ProjectIndex(tmp_path / "cache", fingerprint="f")
    assert index.answer(str(root / "pkg" / "kernels.py")) == (("kernel", "numba", "main.py"),)
    assert index.parsed == 2  # main.py and pkg/kernels.py, as without the test module


def test_a_torn_index_entry_costs_a_parse_not_a_result(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    ProjectIndex(tmp_path / "cache", fingerprint="f").answer(str(root / "main.py"))
    for entry in (tmp_path / "cache" / "index").rglob("*.json"):
        entry.write_text('{"fingerprint": "f", "digest": "')
    again = ProjectIndex(tmp_path / "cache", fingerprint="f")
    assert again.answer(str(root / "pkg" / "kernels.py")) == (("kernel", "numba", "main.py"),)
    assert again.parsed == 2


def _check(root: Path, argv: list, capsys: pytest.CaptureFixture[str],  # type: ignore[type-arg]
           monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(root)
    capsys.readouterr()
    main(["check", "--output-format", "concise", *argv])
    return capsys.readouterr().out


def test_checking_one_file_sees_the_project_and_the_lint_cache_follows_the_index(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path / "p")
    monkeypatch.delenv("NP2TORCH_LINT_CACHE_DIR")  # the project's own .np2torch_cache
    compiled = ("pkg/kernels.py:5:12: NPT001 `numpy.exp` can run on torch via `np2torch.runtime.exp` (no fix: inside "
                "a numba-compiled function (compiled by main.py): np2torch.runtime helpers cannot be compiled by numba)")
    for _ in range(2):  # cold, then from the lint cache
        assert _check(root, ["pkg/kernels.py"], capsys, monkeypatch).splitlines()[0] == compiled
    assert (root / ".np2torch_cache" / "CACHEDIR.TAG").exists() and (root / ".np2torch_cache" / "index").is_dir()
    (root / "main.py").write_text("import numba\n")  # kernel is compiled nowhere now: fixable, cache or not
    assert "[*]" in _check(root, ["pkg/kernels.py"], capsys, monkeypatch).splitlines()[0]


def test_stdin_with_a_filename_sees_the_project(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    root = _project(tmp_path / "p")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(KERNELS.encode())))
    out = _check(root, ["--stdin-filename", "pkg/kernels.py", "-"], capsys, monkeypatch)
    assert "(compiled by main.py)" in out


def test_the_paths_given_to_one_run_are_one_project_at_least(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path / "scripts")
    (root / "pyproject.toml").unlink()  # a folder of scripts: each file's own folder is its project
    assert project_root(str(root / "pkg")) == str((root / "pkg").resolve())
    compiled = "(no fix: inside a numba-compiled function (compiled by main.py)"
    assert compiled in _check(root, ["--no-cache", "."], capsys, monkeypatch)
    assert compiled in _check(root, ["--no-cache", "main.py", "pkg/kernels.py"], capsys, monkeypatch)
    assert compiled not in _check(root, ["--no-cache", "pkg/kernels.py"], capsys, monkeypatch)  # main.py not given
    monkeypatch.chdir(root)
    main(["fix", "--no-cache", "."])
    assert (root / "pkg" / "kernels.py").read_text() == KERNELS


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": cell} for cell in cells],
                       "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                       "nbformat": 4, "nbformat_minor": 5})


def test_a_notebook_of_the_project_is_read_by_the_index(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path / "p", main_text="import os\n")
    (root / "pkg" / "util.py").write_text("from numba import njit as jit\n")
    (root / "notebooks").mkdir()
    (root / "notebooks" / "explore.ipynb").write_text(_notebook(
        "%matplotlib inline\nimport numba\nfrom pkg.kernels import kernel", "fast = numba.njit(kernel)"))
    (root / "notebooks" / "own.ipynb").write_text(_notebook(
        "import numpy as np\nfrom pkg.util import jit", "@jit\ndef f(x):\n    return np.exp(x)"))
    index = ProjectIndex()
    assert index.answer(str(root / "pkg" / "kernels.py")) == (("kernel", "numba", "notebooks/explore.ipynb"),)
    assert index.answer(str(root / "notebooks" / "own.ipynb")) == (("f", "numba", "`jit` from pkg/util.py"),)
    out = _check(root, ["--no-cache", "."], capsys, monkeypatch)
    assert "(compiled by notebooks/explore.ipynb)" in out and "(compiled by `jit` from pkg/util.py)" in out
    assert "[*]" not in out
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((root / "notebooks" / "own.ipynb").read_bytes())))
    out = _check(root, ["--stdin-filename", "notebooks/own.ipynb", "-"], capsys, monkeypatch)
    assert "(compiled by `jit` from pkg/util.py)" in out and "[*]" not in out


def test_a_compiler_a_star_import_binds_in_another_module_compiles(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", main_text="import os\n")
    (root / "pkg" / "util.py").write_text("from numba import *\n")
    (root / "pkg" / "kernels.py").write_text("import numpy as np\nfrom .util import *\n\n\n@njit\ndef kernel(x):\n"
                                             "    return np.exp(x)\n")
    assert ProjectIndex().answer(str(root / "pkg" / "kernels.py")) == (("kernel", "numba", "`njit` from pkg/util.py"),)
