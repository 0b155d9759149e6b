"""``fix`` keeps a ruff-clean file ruff-clean: the runtime import goes where isort puts it.

Each case copies the corpus (``tests/data/ruff_clean/``: import sections, ``from`` imports, ``__future__``,
docstrings and header comments, comments above imports, ``try``/``except`` imports, an ``if __name__``
block, relative imports, a first-party package) into a project with the settings under test, lets ruff
itself sort it (so the start is clean under those settings), runs ``np2torch fix`` and asks ruff again
(``ruff check --select I,E,W``, ruff from the test extra).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from np2torch import fix_source
from np2torch.cli import main
from np2torch.lint.isort import ImportOrder
from np2torch.lint.model import Settings

CORPUS = Path(__file__).resolve().parents[1] / "data" / "ruff_clean"
IMPORT = "import np2torch.runtime as np2t"


def _ruff(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "I,E,W",
                           "--output-format", "concise", *args, "."],
                          cwd=project, capture_output=True, text=True, check=False)


def _project(tmp_path: Path, config: str, ruff_args: tuple[str, ...]) -> Path:
    project = tmp_path / "project"
    (project / "mypkg").mkdir(parents=True)
    (project / "mypkg" / "__init__.py").write_text("ONE = 1\n")
    (project / "mypkg" / "_np2torch").mkdir()  # where `np2torch vendor` copies the runtime
    (project / "mypkg" / "_np2torch" / "__init__.py").write_text("")
    for source in CORPUS.glob("*.py"):
        shutil.copy(source, project / source.name)
    if config:
        (project / "pyproject.toml").write_text(textwrap.dedent(config))
    # the start is clean under these settings: ruff's own sort (the corpus is written for the defaults)
    subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "I", "--fix", "--quiet",
                    *ruff_args, "."], cwd=project, check=False, capture_output=True)
    before = _ruff(project, *ruff_args)
    assert before.returncode == 0, before.stdout
    return project


@pytest.mark.parametrize(
    ("config", "np2torch_args", "ruff_args", "section"),
    [
        pytest.param("", ("--isolated",), ("--isolated",), "third", id="defaults"),
        pytest.param("""
            [tool.ruff.lint.isort]
            known-first-party = ["np2torch"]
            """, (), (), "first", id="np2torch first party by known-first-party"),
        pytest.param("""
            [tool.ruff.lint.isort]
            force-sort-within-sections = true
            """, (), (), "third", id="force-sort-within-sections"),
        pytest.param("""
            [tool.ruff.lint.isort]
            from-first = true
            case-sensitive = true
            """, (), (), "third", id="from-first and case-sensitive"),
        pytest.param("""
            [tool.isort]
            known_first_party = ["np2torch"]
            """, (), ("--config", "lint.isort.known-first-party = ['np2torch']"), "first",
            id="isort's own table when ruff has none"),
        pytest.param("", ("--isolated", "--runtime-module", "mypkg._np2torch"), ("--isolated",), "first",
                     id="a runtime vendored into a first-party package"),
    ],
)
def test_fix_keeps_ruff_clean_files_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], config: str,
    np2torch_args: tuple[str, ...], ruff_args: tuple[str, ...], section: str,
) -> None:
    project = _project(tmp_path, config, ruff_args)
    before = {path.name: path.read_text() for path in project.glob("*.py")}
    monkeypatch.chdir(project)
    assert main(["fix", "--no-cache", *np2torch_args, "."]) == 0
    capsys.readouterr()
    after = {path.name: path.read_text() for path in project.glob("*.py")}
    assert all(after[name] != text for name, text in before.items()), "every corpus file has a fix"
    result = _ruff(project, *ruff_args)
    assert result.returncode == 0, result.stdout + "\n" + "\n".join(f"== {n}\n{t}" for n, t in after.items())
    # and the import is in the section the settings give it: first party after numpy, third party before
    runtime = "import mypkg._np2torch as np2t" if "mypkg._np2torch" in np2torch_args else IMPORT
    lines = after["only_numpy.py"].splitlines()
    assert (lines.index(runtime) > lines.index("import numpy as np")) == (section == "first")


def test_a_star_import_keeps_the_import_after_it_where_isort_would_not() -> None:
    # the star import may bind the alias (its names are known only at run time): binding in time wins
    source = "import os\n\nfrom numpy import *\n\n\ndef f(x):\n    return exp(x) + len(os.sep)\n"
    assert fix_source(source).startswith(f"import os\n\nfrom numpy import *\n{IMPORT}\n")


def test_the_import_never_goes_below_the_first_statement_that_may_run_a_fix() -> None:
    # `from . import helpers` may import this module back and call f: the import stays above it
    source = "import numpy as np\n\ndef f(x):\n    return np.exp(x)\n\nfrom . import helpers\n"
    order = ImportOrder(known_local_folder=("np2torch",))  # isort would put it after the relative import
    fixed = fix_source(source, "pkg/mod.py", settings=Settings(import_order=order))
    assert fixed.index("import np2torch.runtime") < fixed.index("from . import helpers")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("import os\n\nimport numpy as np\n\nx = np.exp(a)\n",
                     f"import os\n\n{IMPORT}\nimport numpy as np\n\nx = np2t.exp(a)\n", id="into its section"),
        pytest.param("import os\n\nfrom mypkg import a\n\nx = a.exp(a)\ny = __import__('numpy').exp\n",
                     None, id="no numpy import: nothing to fix"),
        pytest.param("import os\n\n# arrays\nimport numpy as np\n\nx = np.exp(a)\n",
                     f"import os\n\n{IMPORT}\n\n# arrays\nimport numpy as np\n\nx = np2t.exp(a)\n",
                     id="above the comment of the import it precedes, a blank line between"),
        pytest.param("import os\nimport sys\n\nfrom numpy import exp\n\nx = exp(a)\n",
                     f"import os\nimport sys\n\n{IMPORT}\nfrom numpy import exp\n\nx = np2t.exp(a)\n",
                     id="plain imports before from imports"),
    ],
)
def test_where_the_import_goes_in_a_block(source: str, expected: str | None) -> None:
    assert fix_source(source) == (source if expected is None else expected)


FUNCTION = "def f(x):\n    import numpy as np\n\n    return np.exp(x)\n"


@pytest.mark.parametrize(
    ("above", "expected"),
    [
        pytest.param("", f"{IMPORT}\n\n\n", id="nothing: two blank lines before the def"),
        pytest.param("@deco\n", f"{IMPORT}\n\n\n@deco\n", id="a decorator: two blank lines before it"),
        pytest.param("X = 1\n\n\n", f"{IMPORT}\n\nX = 1\n\n\n", id="a constant: above it, one blank line"),
        pytest.param("X: dict[str, int] = {'a': -1 + 2}\n\n\n", f"{IMPORT}\n\nX: dict[str, int] = {{'a': -1 + 2}}\n\n\n",
                     id="an annotated constant of an expression of literals"),
        pytest.param("X = compute()\n\n\n", f"X = compute()\n{IMPORT}\n\n\n", id="a call: after it"),
        pytest.param("X = Y\n\n\n", f"X = Y\n{IMPORT}\n\n\n", id="a name's value: after it"),
        pytest.param("X: compute() = 1\n\n\n", f"X: compute() = 1\n{IMPORT}\n\n\n", id="a call annotating: after it"),
        pytest.param('"""Doc."""\n\n', f'"""Doc."""\n{IMPORT}\n\n\n', id="a docstring: after it"),
    ],
)
def test_where_the_import_goes_when_numpy_is_imported_in_functions_only(above: str, expected: str) -> None:
    fixed = fix_source(above + FUNCTION)
    assert fixed.startswith(expected), fixed


LONG = "    return np.exp(values) + np.log(values) + np.exp(values) + np.log(values) + 123\n"  # 88 wide, 90 fixed


@pytest.mark.parametrize(
    ("config", "before", "noted"),
    [
        pytest.param("", "", "lines 6, 7", id="ruff's default line-length"),
        pytest.param("[tool.ruff]\nline-length = 120\n", "", None, id="the project's line-length"),
        pytest.param("[tool.ruff.lint.pycodestyle]\nmax-line-length = 90\n", "", None, id="E501's own maximum"),
        pytest.param("line-length = 90\n", "", None, id="ruff.toml"),
        pytest.param("", "# " + "x" * 90 + "\n", None, id="a file with a longer line already"),
        pytest.param("", "# 東京" * 15 + "\n", None, id="wide characters count two"),
    ],
)
def test_fix_notes_the_lines_it_makes_longer_than_the_line_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], config: str, before: str,
    noted: str | None,
) -> None:
    (tmp_path / "a.py").write_text(before + "import numpy as np\n\n\ndef f(values):\n" + LONG + LONG, encoding="utf-8")
    if config:
        (tmp_path / ("ruff.toml" if config.startswith("line") else "pyproject.toml")).write_text(config)
    ruff = _ruff(tmp_path, "--select", "E501")
    assert ruff.returncode == (0 if not before else 1), ruff.stdout  # as ruff sees the file before the fix
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "--no-cache", "a.py"]) == 0
    err = capsys.readouterr().err
    assert (_ruff(tmp_path, "--select", "E501").returncode == 1) is (noted is not None or bool(before))
    if noted is None:
        assert "longer than the line-length" not in err
    else:
        assert f"a.py: note: the fix made {noted} longer than the line-length (88)" in err


def test_a_new_section_gets_blank_lines_around_it() -> None:
    order = ImportOrder(project_modules=("np2torch",))
    source = "import os\n\nimport numpy as np\n\nfrom . import sib\n\nx = np.exp(a)\n"
    fixed = fix_source(source, "pkg/mod.py", settings=Settings(import_order=order))
    assert fixed == f"import os\n\nimport numpy as np\n\n{IMPORT}\n\nfrom . import sib\n\nx = np2t.exp(a)\n"


def test_unsafe_fixes_leave_no_unused_import_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    project = _project(tmp_path, "", ("--isolated",))
    # Kept on purpose: an import in a `try` that catches ImportError (feature detection); and a comment above
    # a removed import stays where it was, a blank line from the next comment (isort would join them).
    for name in ("try_except.py", "comments.py"):
        (project / name).unlink()
    monkeypatch.chdir(project)
    assert main(["fix", "--no-cache", "--isolated", "--unsafe-fixes", "."]) == 0
    capsys.readouterr()
    result = _ruff(project, "--isolated", "--extend-select", "F401")
    assert result.returncode == 0, result.stdout
    assert "import numpy" not in (project / "only_numpy.py").read_text()


def test_the_ruff_settings_nearest_the_file_decide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    # a monorepo: np2torch's settings at the root, a package with its own ruff.toml making np2torch first party
    (tmp_path / "pyproject.toml").write_text("[tool.np2torch]\n")
    for name, ruff in (("plain", ""), ("own", '[lint.isort]\nknown-first-party = ["np2torch"]\n')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "ruff.toml").write_text(ruff)
        shutil.copy(CORPUS / "only_numpy.py", tmp_path / name / "m.py")
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "--no-cache", "."]) == 0
    capsys.readouterr()
    assert (tmp_path / "plain" / "m.py").read_text().startswith(f"{IMPORT}\nimport numpy as np\n")
    assert (tmp_path / "own" / "m.py").read_text().startswith(f"import numpy as np\n\n{IMPORT}\n")
    for name in ("plain", "own"):
        result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "I", "m.py"],
                                cwd=tmp_path / name, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout


def test_show_settings_names_the_section_of_the_runtime_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "a.py").write_text("")
    monkeypatch.chdir(tmp_path)
    for ruff, section in (("", "third-party"), ('[tool.ruff.lint.isort]\nknown-first-party = ["np2torch"]\n',
                                                "first-party")):
        (tmp_path / "pyproject.toml").write_text(ruff)
        assert main(["check", "--show-settings", "a.py"]) == 0
        [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("runtime import")]
        assert f'"{section}"' in line
