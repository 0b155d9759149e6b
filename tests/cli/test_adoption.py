"""What a project adopting np2torch meets first: the new run-time dependency is named, code written for a
newer Python than the one running np2torch is still analysed, and editors reach np2torch through stdin and
the flake8 plugin."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from np2torch.cli import main
from np2torch.cli.config import depends_on

EXP = "import numpy as np\n\ny = np.exp(x)\n"
NOTICE = "note: the fixed files now import np2torch.runtime at run time"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NP2TORCH_LINT_CACHE_DIR", str(tmp_path / ".cache-under-test"))
    return tmp_path


def write(name: str, text: str) -> Path:
    path = Path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------- the new dependency


def test_fix_names_the_new_dependency_once_per_run(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[project]\nname = 'app'\ndependencies = ['numpy']\n")
    for name in ("app/a.py", "app/b.py", "app/c.py"):
        write(name, EXP)
    code, out, err = run(capsys, "fix", "app")
    assert code == 0 and "Fixed 3 errors in 3 files." in out
    assert out.count(NOTICE) == 1, out
    assert "add `np2torch` to the project's dependencies" in out and "np2torch vendor" in out


def test_no_notice_once_the_runtime_was_imported_before(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", "import numpy as np\nimport np2torch.runtime as np2t\n\ny = np2t.exp(x) + np.log(x)\n")
    code, out, err = run(capsys, "fix", "a.py")
    assert code == 0 and "Fixed 1 error" in out
    assert NOTICE not in out


@pytest.mark.parametrize("pyproject", [
    pytest.param("[project]\nname = 'app'\ndependencies = ['numpy', 'np2torch[torch] >= 0.1']\n", id="project dependencies"),
    pytest.param("[project]\nname = 'app'\n[project.optional-dependencies]\nfast = ['NP2Torch']\n", id="an extra"),
    pytest.param("[dependency-groups]\nruntime = ['np2torch==0.1.0']\n", id="a dependency group"),
    pytest.param("[tool.poetry.dependencies]\npython = '^3.11'\nnp2torch = '^0.1'\n", id="poetry"),
])
def test_no_notice_when_the_project_depends_on_np2torch(capsys: pytest.CaptureFixture[str], pyproject: str) -> None:
    write("pyproject.toml", pyproject)
    write("src/app/a.py", EXP)
    code, out, err = run(capsys, "fix", "src")
    assert code == 0 and "Fixed 1 error" in out
    assert NOTICE not in out
    assert depends_on(Path("pyproject.toml").resolve(), "np2torch")


def test_a_similar_name_is_not_the_dependency() -> None:
    write("pyproject.toml", "[project]\nname = 'np2torch-plugin'\ndependencies = ['np2torchx', 'numpy']\n")
    assert not depends_on(Path("pyproject.toml").resolve(), "np2torch")


def test_no_notice_for_a_vendored_runtime_quiet_or_diff(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP)
    code, out, err = run(capsys, "fix", "--diff", "a.py")
    assert code == 1 and NOTICE not in out  # nothing was written
    code, out, err = run(capsys, "fix", "-q", "a.py")
    assert code == 0 and err == ""
    write("b.py", EXP)
    code, out, err = run(capsys, "fix", "--runtime-module", "app._np2torch", "b.py")
    assert code == 0 and "import app._np2torch as np2t" in Path("b.py").read_text()
    assert "note" not in out


def test_notice_without_any_pyproject(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP)
    code, out, err = run(capsys, "fix", os.path.abspath("a.py"))
    assert code == 0 and NOTICE in out


# ---------------------------------------------------------------- newer syntax than the running Python

PY312 = ('import numpy as np\n\ntype Vec = list[float]\n\n\ndef f[T](x: T) -> T:\n    return np.exp(x)\n\n\n'
         'label = f"{"nested"} {d["key"]!r}"\n')
OLD = sys.version_info < (3, 12)


@pytest.mark.parametrize("command", ["check", "fix"])
def test_python_312_code_is_skipped_with_a_warning_not_an_error(capsys: pytest.CaptureFixture[str],
                                                                command: str) -> None:
    write("new.py", PY312)
    write("old.py", EXP)
    code, out, err = run(capsys, command, "--no-cache", "new.py", "old.py")
    if OLD:
        assert err.splitlines() == [f"new.py: warning: needs Python >= 3.12 to analyse; skipped (this is Python "
                                    f"{sys.version_info[0]}.{sys.version_info[1]})"]
        assert Path("new.py").read_text() == PY312
    else:  # this interpreter reads it: analysed as any file
        assert err == ""
        assert ("new.py:7:12: NPT001" in out) if command == "check" else ("np2t.exp(x)" in Path("new.py").read_text())
    assert code == (1 if command == "check" else 0)  # old.py's finding (check), fixed (fix): never 2


@pytest.mark.skipif(not OLD, reason="Python >= 3.12 reads this syntax")
def test_target_version_decides_whether_newer_syntax_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    write("new.py", PY312)
    code, out, err = run(capsys, "check", "--no-cache", "--target-version", "py311", "new.py")
    assert (code, err) == (1, "")  # as ruff's invalid-syntax for it
    assert out.splitlines()[0] == "new.py:1:1: invalid-syntax: uses Python 3.12 syntax, but target-version is py311"
    code, out, err = run(capsys, "check", "--no-cache", "--target-version", "py312", "new.py")
    assert code == 0 and "needs Python >= 3.12 to analyse; skipped" in err
    write("pyproject.toml", "[tool.np2torch]\ntarget-version = 'py310'\n")
    code, out, err = run(capsys, "check", "--no-cache", "new.py")
    assert code == 1 and "target-version is py310" in out


def test_target_version_is_validated(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", "--target-version", "3.12", ".")
    assert code == 2 and "py37 ... py314" in err
    write("pyproject.toml", "[tool.np2torch]\ntarget-version = 'py2'\n")
    write("a.py", EXP)
    code, out, err = run(capsys, "check", "a.py")
    assert code == 2 and "'target-version' in [tool.np2torch]" in err


@pytest.mark.parametrize("text", [
    pytest.param("def broken(:\n    pass\n", id="no Python parses it"),
    pytest.param("del f()\n", id="LibCST parses it, no Python accepts it"),
    pytest.param("x = f'{a}'\ny = (1\n", id="an f-string does not make a file newer"),
])
def test_a_real_syntax_error_is_still_an_error(capsys: pytest.CaptureFixture[str], text: str) -> None:
    write("bad.py", "import numpy as np\ny = np.exp(x)\n" + text)  # the prefilter lets it through
    code, out, err = run(capsys, "check", "--no-cache", "bad.py")
    assert code == 1 and err == "" and out.startswith("bad.py:") and ": invalid-syntax: " in out


# ---------------------------------------------------------------- editors: stdin, as ruff's --stdin-filename


def np2torch_stdin(*args: str, text: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "np2torch", *args], input=text.encode("utf-8"), capture_output=True,
                          timeout=120)


def test_check_reads_stdin_and_reports_it_under_the_given_name() -> None:
    write("pyproject.toml", "[tool.np2torch]\nignore = ['NPT002']\n")
    done = np2torch_stdin("check", "--stdin-filename", "pkg/mod.py", "-", text=EXP + "z = np.log(x)\n")
    assert done.returncode == 1
    assert done.stdout.decode().splitlines()[0].startswith("pkg/mod.py:3:5: NPT001 ")  # NPT002: the project's ignore
    assert "NPT002" not in done.stdout.decode() and not Path("pkg/mod.py").exists()


def test_fix_writes_the_fixed_source_to_stdout_and_the_report_to_stderr() -> None:
    done = np2torch_stdin("fix", "--stdin-filename", "mod.py", "-", text=EXP)
    assert done.returncode == 0
    assert done.stdout.decode() == "import np2torch.runtime as np2t\nimport numpy as np\n\ny = np2t.exp(x)\n"
    assert done.stderr.decode() == "Fixed 1 error in 1 file.\n"
    assert not Path("mod.py").exists()


@pytest.mark.parametrize("args", [
    pytest.param(("--stdin-filename", "gen/mod.py", "--force-exclude", "-"), id="excluded"),
    pytest.param(("--stdin-filename", "bad.py", "-"), id="does not parse"),
])
def test_fix_echoes_the_source_it_does_not_fix(args: tuple[str, ...]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nextend-exclude = ['gen/']\n")
    text = EXP + ("" if "gen/mod.py" in args else "def broken(:\n")
    done = np2torch_stdin("fix", *args, text=text)
    assert done.stdout.decode() == text  # an editor replacing its buffer with stdout loses nothing
    assert done.returncode == (0 if "gen/mod.py" in args else 1)  # a syntax error is a finding, as ruff's


@pytest.mark.timeout(120)
@pytest.mark.parametrize("force_exclude", [(), ("--force-exclude",)], ids=["plain", "force-exclude"])
def test_fix_of_stdin_named_by_a_very_deep_path(force_exclude: tuple[str, ...]) -> None:
    # ~1000 folders: finding the governing config walked up by recursion (RecursionError, 0 bytes out).
    deep = "/".join(["d"] * 1000) + "/mod.py"
    done = np2torch_stdin("fix", "--stdin-filename", deep, *force_exclude, "-", text=EXP)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == "import np2torch.runtime as np2t\nimport numpy as np\n\ny = np2t.exp(x)\n"


def test_fix_of_stdin_echoes_the_source_after_an_internal_error(monkeypatch: pytest.MonkeyPatch,
                                                                  capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    # Whatever fails inside np2torch (here a bug injected into the job), the editor gets its text back.
    import io

    from np2torch.cli import runner

    def broken(job: object) -> object:
        raise RuntimeError("injected")

    monkeypatch.setattr(runner, "run_job", broken)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(EXP.encode())))
    code = main(["fix", "--stdin-filename", "mod.py", "-"])
    out, err = capsysbinary.readouterr()
    assert (code, out) == (2, EXP.encode())
    assert err.decode().startswith("mod.py: internal error: RuntimeError: injected")


def test_stdin_is_not_combined_with_paths() -> None:
    done = np2torch_stdin("check", "-", "other.py", text=EXP)
    assert done.returncode == 2 and b"cannot be combined" in done.stderr


# ---------------------------------------------------------------- flake8 plugin


def test_flake8_reports_the_findings_through_the_plugin() -> None:
    pytest.importorskip("flake8")
    write("pyproject.toml", "[tool.np2torch]\nignore = ['NPT005']\n")
    write("pkg/mod.py", EXP + "z = np.log(x)  # noqa: NPT002\nw = np.sin(x)\nv = np.cos(x)\n")
    done = flake8("pkg/mod.py")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [  # NPT002: its noqa; NPT005: the project's ignore
        "pkg/mod.py:3:5: NPT001 `numpy.exp` can run on torch via `np2torch.runtime.exp`",
        "pkg/mod.py:6:5: NPT006 `numpy.cos` can run on torch via `np2torch.runtime.cos`",
    ]


def flake8(*paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flake8", "--select", "NPT", *paths], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.parametrize("table", [
    pytest.param("extend-exclude = ['gen']", id="extend-exclude"),  # a name: at any depth (`gen/`: at the root)
    pytest.param("exclude = ['gen']", id="exclude"),
    pytest.param("extend-exclude = ['pkg/gen/*.py']", id="an anchored glob"),
])
def test_flake8_skips_the_files_the_project_excludes(table: str) -> None:
    pytest.importorskip("flake8")
    write("pyproject.toml", f"[tool.np2torch]\n{table}\n")
    write("pkg/gen/made.py", EXP)
    write("pkg/mod.py", EXP)
    done = flake8("pkg/gen/made.py", "pkg/mod.py")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        "pkg/mod.py:3:5: NPT001 `numpy.exp` can run on torch via `np2torch.runtime.exp`"]


def test_flake8_honours_per_file_ignores_and_np2torch_toml() -> None:
    pytest.importorskip("flake8")
    write("np2torch.toml", "per-file-ignores = {'tests/*' = ['NPT001']}\n")
    write("tests/test_mod.py", EXP)
    write("pkg/mod.py", EXP)
    done = flake8("tests/test_mod.py", "pkg/mod.py")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        "pkg/mod.py:3:5: NPT001 `numpy.exp` can run on torch via `np2torch.runtime.exp`"]


@pytest.mark.parametrize("table, message", [
    pytest.param("selekt = ['NPT001']", "unknown key 'selekt' in [tool.np2torch]", id="unknown key"),
    pytest.param("select = ['NPT999']", "'select' in [tool.np2torch]", id="a code no rule has"),
    pytest.param("alias = 'npt'", "'alias' in [tool.np2torch]: alias 'npt' is reserved", id="a reserved alias"),
    pytest.param("select = [", "invalid TOML", id="not TOML"),
])
def test_flake8_stops_on_a_broken_config_and_names_it(table: str, message: str) -> None:
    pytest.importorskip("flake8")
    write("pyproject.toml", f"[tool.np2torch]\n{table}\n")
    write("pkg/mod.py", EXP)
    done = flake8("pkg/mod.py")
    assert done.returncode == 1
    assert "NPT001" not in done.stdout  # no findings under settings other than the project's
    [failure] = [line for line in done.stdout.splitlines() if "failed during execution" in line]
    assert f"np2torch: pyproject.toml: {message}" in failure, done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_the_plugin_yields_nothing_for_a_file_that_does_not_parse() -> None:
    from np2torch.cli.flake8_plugin import Plugin

    lines = ["import numpy as np\n", "y = np.exp(x)\n", "def broken(:\n"]
    assert list(Plugin(None, "bad.py", lines).run()) == []  # type: ignore[arg-type]  # flake8's E999 reports it
    found = list(Plugin(None, "ok.py", lines[:2]).run())  # type: ignore[arg-type]
    assert [(line, col, text.split()[0]) for line, col, text, _ in found] == [(2, 4, "NPT001")]


# ---------------------------------------------------------------- the VS Code task of docs/integrations.md


def _vscode_task() -> dict:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text()
    blocks = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", docs, re.DOTALL) if "problemMatcher" in block]
    assert len(blocks) == 1
    return blocks[0]["tasks"][0]


def test_the_vscode_task_locates_each_finding_left_and_no_notebook_cell(capsys: pytest.CaptureFixture[str]) -> None:
    task = _vscode_task()
    matcher = task["problemMatcher"]
    assert matcher["fileLocation"] == ["relative", "${workspaceFolder}"] and task["options"]["cwd"] == "${workspaceFolder}"
    pattern = re.compile(matcher["pattern"]["regexp"])
    write("pkg/mod.py", "import numpy as np\n\nTABLE = {np.exp: 1}\ny = np.log(x)\n")  # the key is left: no fix
    code, out, _err = run(capsys, *[arg.replace("${relativeFile}", "pkg/mod.py") for arg in task["args"]])
    assert task["command"] == "np2torch" and code == 1
    found = [match.groups() for line in out.splitlines() if (match := pattern.match(line))]
    assert [(file, int(line), int(column), code) for file, line, column, code, _message in found] == [
        ("pkg/mod.py", 4, 10, "NPT001")]  # in the fixed file: its runtime import came first
    assert Path(found[0][0]).read_text().splitlines()[3][9:].startswith("np.exp")

    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": "import numpy as np\nTABLE = {np.exp: 1}\n"}]
    write("nb.ipynb", json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    code, out, _err = run(capsys, "check", "--no-cache", "nb.ipynb")
    assert code == 1 and "nb.ipynb:cell 1:2:10: NPT001" in out
    assert not any(pattern.match(line) for line in out.splitlines())


FORKS = ("imports torch and starts processes ({how}): a child it forks runs torch on one thread once "
         "np2torch.runtime is imported")


@pytest.mark.parametrize(("starts", "how"), [
    pytest.param("import multiprocessing as mp\n", "multiprocessing", id="multiprocessing"),
    pytest.param("from concurrent.futures import ProcessPoolExecutor\n", "ProcessPoolExecutor", id="a process pool"),
    pytest.param("import os\nif os.fork() == 0:\n    os._exit(0)\n", "os.fork", id="os.fork"),
])
def test_fix_says_once_that_a_file_using_torch_that_forks_gets_one_torch_thread_in_its_children(
        capsys: pytest.CaptureFixture[str], starts: str, how: str) -> None:
    write("uses_torch.py", f"import torch\n{starts}{EXP}")
    write("no_torch.py", f"{starts}{EXP}")
    write("no_processes.py", f"import torch\n{EXP}")
    code, _out, err = run(capsys, "fix", ".")
    notes = [line for line in err.splitlines() if "starts processes" in line]
    assert code == 0 and notes == [f"uses_torch.py: note: {FORKS.format(how=how)} (docs/runtime.md, "
                                   "\"Fork and the program's own torch use\")"]
    write("uses_torch.py", Path("uses_torch.py").read_text() + "z = np.log(x)\n")
    code, _out, err = run(capsys, "fix", ".")  # it imports the runtime already: said once
    assert code == 0 and "starts processes" not in err and "np2t.log" in Path("uses_torch.py").read_text()
