"""The settings ruff users reach for, through the real CLI on temporary projects: per-file-ignores,
extend-select, np2torch.toml, --config KEY=VALUE, --isolated, --exclude/--extend-exclude, the
force-exclude and respect-gitignore keys, --show-settings/--show-files, the cache folder and `clean`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from np2torch.cli import main
from np2torch.cli.config import ConfigError, glob_regex, load_config

EXP = "import numpy as np\n\ny = np.exp(x)\n"
EXP_LOG = "import numpy as np\n\ny = np.exp(x)\nz = np.log(x)\n"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NP2TORCH_LINT_CACHE_DIR", raising=False)
    monkeypatch.delenv("NP2TORCH_OUTPUT_FORMAT", raising=False)
    return tmp_path


def write(name: str, text: str) -> Path:
    path = Path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", "--no-cache", *args] if args and args[0] != "--cached" else ["check", *args[1:]])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def found(out: str) -> list[str]:
    """``path:code`` of each concise finding line."""
    return [f"{line.split(':')[0]}:{line.split(': ')[1].split()[0]}" for line in out.splitlines() if ": NPT" in line]


# ---------------------------------------------------------------- per-file-ignores


@pytest.mark.parametrize(
    "pattern, path, expected",
    [
        pytest.param("tests/*", "tests/a/b.py", True, id="star crosses slashes, as globset's"),
        pytest.param("tests/**", "tests/a.py", True, id="double star below a folder"),
        pytest.param("**/conftest.py", "a/b/conftest.py", True, id="double star prefix"),
        pytest.param("**/conftest.py", "conftest.py", True, id="double star prefix may match no folder"),
        pytest.param("a/**/b.py", "a/b.py", True, id="double star between may match no folder"),
        pytest.param("*.{py,pyi}", "x.pyi", True, id="alternation"),
        pytest.param("test_?.py", "test_a.py", True, id="question mark"),
        pytest.param("v[0-9].py", "v1.py", True, id="class"),
        pytest.param("v[!0-9].py", "v1.py", False, id="negated class"),
        pytest.param("src/*.py", "tests/src/a.py", False, id="a path is anchored at the root"),
    ],
)
def test_per_file_ignores_globs(pattern: str, path: str, expected: bool) -> None:
    import re

    assert (re.match(glob_regex(pattern) + r"\Z", path) is not None) is expected


def test_per_file_ignores_by_path_name_and_negation(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", """
[tool.np2torch]
per-file-ignores = {"tests/**" = ["NPT001"], "__init__.py" = ["NPT"], "!src/**" = ["NPT002"]}
extend-per-file-ignores = {"src/legacy_*.py" = ["NPT002"]}
""")
    for name in ("tests/deep/test_a.py", "src/pkg/__init__.py", "src/a.py", "src/legacy_x.py", "other/b.py"):
        write(name, EXP_LOG)
    code, out, _ = run(capsys, ".")
    assert code == 1
    assert sorted(found(out)) == sorted([
        "src/a.py:NPT001", "src/a.py:NPT002",  # under src: nothing ignored
        "src/legacy_x.py:NPT001",  # extend-per-file-ignores adds
        "other/b.py:NPT001",  # outside src: NPT002 ignored by the negated pattern
    ])


def test_per_file_ignores_hold_for_fix_and_stdin(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    write("pyproject.toml", "[tool.np2torch]\nper-file-ignores = {'tests/*' = ['NPT001']}\n")
    path = write("tests/t.py", EXP)
    assert main(["fix", "--no-cache", "tests/t.py"]) == 0
    assert path.read_text() == EXP
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(EXP.encode())))
    assert main(["check", "--stdin-filename", "tests/t.py", "-"]) == 0
    capsys.readouterr()


def test_per_file_ignores_must_be_a_table_of_code_lists(tmp_path: Path) -> None:
    write("pyproject.toml", "[tool.np2torch]\nper-file-ignores = {'tests/*' = ['NPT999']}\n")
    with pytest.raises(ConfigError, match=r"^pyproject.toml: 'per-file-ignores' in \[tool.np2torch\]: unknown rule"):
        load_config(tmp_path / "pyproject.toml")
    write("pyproject.toml", "[tool.np2torch]\nper-file-ignores = ['tests/*']\n")
    with pytest.raises(ConfigError, match="must be a table of glob"):
        load_config(tmp_path / "pyproject.toml")


# ---------------------------------------------------------------- selection


def test_extend_select_adds_to_the_defaults_in_config_and_on_the_command_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", "import numpy as np\nw = np.expm1(x) + np.exp(x) + np.log(x)\n")  # NPT008 is opt-in
    assert "a.py:NPT008" not in found(run(capsys, "a.py")[1])
    assert "a.py:NPT008" in found(run(capsys, "--extend-select", "NPT008", "a.py")[1])
    write("pyproject.toml", "[tool.np2torch]\nextend-select = ['NPT008']\nignore = ['NPT001']\n")
    assert sorted(found(run(capsys, "a.py")[1])) == ["a.py:NPT002", "a.py:NPT008"]
    # ruff's layers: the command line's --select starts over, its --extend-select adds after the file's ignore
    assert found(run(capsys, "--select", "NPT002", "a.py")[1]) == ["a.py:NPT002"]
    assert sorted(found(run(capsys, "--extend-select", "NPT001", "a.py")[1])) == [
        "a.py:NPT001", "a.py:NPT002", "a.py:NPT008"]


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_an_empty_selector_is_an_error(capsys: pytest.CaptureFixture[str], option: str) -> None:
    write("a.py", EXP)
    code, out, err = run(capsys, option, "", "a.py")
    assert code == 2 and out == "" and "needs at least one rule code" in err


def test_unknown_key_suggests_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP)
    write("pyproject.toml", "[tool.np2torch]\nper-file-ignore = {}\n")
    code, _, err = run(capsys, "a.py")
    assert (code, err) == (2, "error: pyproject.toml: unknown key 'per-file-ignore' in [tool.np2torch] "
                              "(did you mean 'per-file-ignores'?)\n")


# ---------------------------------------------------------------- which file


def test_np2torch_toml_wins_over_pyproject_in_its_folder(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP_LOG)
    write("pyproject.toml", "[tool.np2torch]\nignore = ['NPT001']\n")
    assert found(run(capsys, "a.py")[1]) == ["a.py:NPT002"]
    write("np2torch.toml", "ignore = ['NPT002']\n")  # top-level keys, as ruff.toml
    assert found(run(capsys, "a.py")[1]) == ["a.py:NPT001"]
    write(".np2torch.toml", "")  # the hidden one first; empty: the defaults
    assert sorted(found(run(capsys, "a.py")[1])) == ["a.py:NPT001", "a.py:NPT002"]
    write("sub/pyproject.toml", "[tool.np2torch]\nselect = ['NPT002']\n")  # the nearest folder still wins
    write("sub/b.py", EXP_LOG)
    assert found(run(capsys, "sub/b.py")[1]) == ["sub/b.py:NPT002"]


def test_np2torch_toml_errors_name_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP)
    write("np2torch.toml", "[tool.np2torch]\nignore = ['NPT001']\n")
    code, _, err = run(capsys, "a.py")
    assert code == 2 and err.startswith("error: np2torch.toml: unknown key 'tool'")


def test_config_key_value_overrides_every_file(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nignore = ['NPT001']\n")
    write("sub/np2torch.toml", "alias = 'fast'\n")
    write("a.py", EXP_LOG)
    write("sub/b.py", EXP_LOG)
    code, out, _ = run(capsys, "--config", "ignore = ['NPT002']", "--config", "extend-select = ['NPT001']", ".")
    assert sorted(found(out)) == ["a.py:NPT001", "sub/b.py:NPT001"]
    code, _, err = run(capsys, "--config", "selekt = ['NPT']", ".")
    assert (code, err) == (2, "error: --config: unknown key 'selekt' (did you mean 'select'?)\n")
    code, _, err = run(capsys, "--config", "select = [", ".")
    assert code == 2 and err.startswith("error: --config 'select = [': neither a file nor a valid TOML")


def test_config_file_and_isolated(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nignore = ['NPT001']\n")
    write("strict.toml", "select = ['NPT001']\n")  # not a pyproject.toml: top-level keys
    write("a.py", EXP_LOG)
    assert found(run(capsys, "--config", "strict.toml", "a.py")[1]) == ["a.py:NPT001"]
    assert sorted(found(run(capsys, "--isolated", "a.py")[1])) == ["a.py:NPT001", "a.py:NPT002"]
    code, _, err = run(capsys, "--isolated", "--config", "strict.toml", "a.py")
    assert code == 2 and "contradict" in err
    write("empty.toml", "")  # an empty settings file is the defaults
    assert sorted(found(run(capsys, "--config", "empty.toml", "a.py")[1])) == ["a.py:NPT001", "a.py:NPT002"]
    write("other.toml", "[tool.ruff]\nline-length = 99\n")
    code, _, err = run(capsys, "--config", "other.toml", "a.py")
    assert (code, err) == (2, "error: other.toml: no [tool.np2torch] table\n")


# ---------------------------------------------------------------- which files


def test_exclude_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nexclude = ['gen']\n")
    for name in ("gen/a.py", "legacy/b.py", "src/c.py"):
        write(name, EXP)
    assert sorted(found(run(capsys, ".")[1])) == ["legacy/b.py:NPT001", "src/c.py:NPT001"]
    assert found(run(capsys, "--extend-exclude", "legacy", ".")[1]) == ["src/c.py:NPT001"]
    assert sorted(found(run(capsys, "--exclude", "src,legacy", ".")[1])) == ["gen/a.py:NPT001"]  # replaces exclude
    write("pyproject.toml", "[tool.np2torch]\nexclude = ['gen']\nextend-exclude = ['legacy']\n")
    assert found(run(capsys, "--exclude", "src", ".")[1]) == ["gen/a.py:NPT001"]  # not the file's extend-exclude
    # a named file is checked unless excludes are forced, from the command line or the config
    assert found(run(capsys, "--exclude", "src", "src/c.py")[1]) == ["src/c.py:NPT001"]
    assert run(capsys, "--exclude", "src", "--force-exclude", "src/c.py")[0] == 0
    write("pyproject.toml", "[tool.np2torch]\nextend-exclude = ['gen']\nforce-exclude = true\n")
    assert run(capsys, "gen/a.py")[0] == 0


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_respect_gitignore_key(capsys: pytest.CaptureFixture[str]) -> None:
    subprocess.run(["git", "init", "-q", "."], check=True)
    write(".gitignore", "ignored/\n")
    write("ignored/a.py", EXP)
    write("b.py", EXP)
    assert found(run(capsys, ".")[1]) == ["b.py:NPT001"]
    write("pyproject.toml", "[tool.np2torch]\nrespect-gitignore = false\n")
    assert sorted(found(run(capsys, ".")[1])) == ["b.py:NPT001", "ignored/a.py:NPT001"]


def test_show_files_and_show_settings(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nextend-select = ['NPT008']\nper-file-ignores = {'tests/*' = ['NPT001']}\n")
    write("tests/t.py", EXP)
    write("src/a.py", EXP)
    write("build/gen.py", EXP)
    code, out, _ = run(capsys, "--show-files")
    assert (code, out.splitlines()) == (0, ["src/a.py", os.path.join("tests", "t.py")])
    code, out, _ = run(capsys, "--show-settings", "--config", "alias = 'fast'", "tests/t.py")
    lines = out.splitlines()
    assert code == 0 and lines[:2] == ["Resolved settings for: tests/t.py", "Settings path: pyproject.toml"]
    assert any(line.startswith("extend-select") and line.endswith("# pyproject.toml") for line in lines)
    assert any(line.startswith("alias") and line.endswith('"fast"  # command line') for line in lines)
    assert any(line.startswith("force-exclude") and line.endswith("# default") for line in lines)
    [rules] = [line for line in lines if line.startswith("rules ")]
    assert '"NPT008"' in rules and '"NPT001"' not in rules  # the per-file ignore applied to this file
    assert any(line.startswith("cache-dir") and ".np2torch_cache" in line for line in lines)


# ---------------------------------------------------------------- the cache and clean


def test_cache_lands_at_the_project_root_and_clean_removes_it(capsys: pytest.CaptureFixture[str],
                                                              in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write("pyproject.toml", "[tool.np2torch]\n")
    write("src/a.py", EXP)
    monkeypatch.chdir(in_tmp / "src")
    assert run(capsys, "--cached", "a.py")[0] == 1
    assert (in_tmp / ".np2torch_cache" / "CACHEDIR.TAG").is_file() and not (in_tmp / "src" / ".np2torch_cache").exists()
    assert run(capsys, "--cached", "--cache-dir", str(in_tmp / "elsewhere"), "a.py")[0] == 1
    assert (in_tmp / "elsewhere" / "CACHEDIR.TAG").is_file()
    monkeypatch.setenv("NP2TORCH_CACHE_DIR", str(in_tmp / "runtime-only"))  # the runtime's, not the linter's
    assert run(capsys, "--cached", "a.py")[0] == 1 and not (in_tmp / "runtime-only").exists()
    write(str(in_tmp / "keep" / "CACHEDIR.TAG"), "not ours\n")
    monkeypatch.chdir(in_tmp)
    assert main(["clean", "--cache-dir", "keep"]) == 0
    out = capsys.readouterr().out
    assert out == f"Removing cache at: {in_tmp / '.np2torch_cache'}\n"
    assert not (in_tmp / ".np2torch_cache").exists() and (in_tmp / "keep").exists()  # never a folder np2torch did not make
    assert main(["clean", "--cache-dir", "elsewhere"]) == 0
    assert not (in_tmp / "elsewhere").exists()
    capsys.readouterr()


def test_cache_dir_key_is_relative_to_its_file(capsys: pytest.CaptureFixture[str], in_tmp: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    write("pyproject.toml", "[tool.np2torch]\ncache-dir = '.cache/np2torch'\n")
    write("sub/a.py", EXP)
    monkeypatch.chdir(in_tmp / "sub")
    assert run(capsys, "--cached", "a.py")[0] == 1
    assert (in_tmp / ".cache" / "np2torch" / "CACHEDIR.TAG").is_file()
    assert run(capsys, "--cached", "--config", "cache-dir = 'here'", "a.py")[0] == 1  # the command line's: from here
    assert (in_tmp / "sub" / "here" / "CACHEDIR.TAG").is_file()


# ---------------------------------------------------------------- check --fix and --diff


def test_check_fix_and_diff_are_fixs(capsys: pytest.CaptureFixture[str]) -> None:
    path = write("a.py", EXP)
    code, out, _ = run(capsys, "--diff", "a.py")
    assert code == 1 and out.startswith("--- a.py\n+++ a.py\n") and path.read_text() == EXP
    code, out, _ = run(capsys, "--fix", "a.py")
    assert code == 0 and "Fixed 1 error in 1 file." in out and "np2t.exp(x)" in path.read_text()
    code, _, err = run(capsys, "--diff", "--add-noqa", "a.py")
    assert code == 2 and "the argument '--diff' cannot be used with '--add-noqa'" in err


def test_unsafe_fixes_key_and_its_negation_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", "import numpy as np\nact = np.exp\n")
    assert "(unsafe fix: --unsafe-fixes)" in run(capsys, "a.py")[1]
    write("pyproject.toml", "[tool.np2torch]\nunsafe-fixes = true\n")
    assert run(capsys, "a.py")[1].startswith("a.py:2:7: NPT001 `numpy.exp` can run on torch via `np2torch.runtime.exp` [*]")
    assert "(unsafe fix: --unsafe-fixes)" in run(capsys, "--no-unsafe-fixes", "a.py")[1]
