"""The command-line and configuration features a ruff user reaches for, each run beside ruff on the same tree
where the two are comparable: ruff on its own rule (F401, an unused import), np2torch on NPT001."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from np2torch.cli import main

SOURCE = "import os\nimport numpy as np\n\n\ndef f(x):\n    return np.exp(x)\n"


def _ruff(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=tree, capture_output=True, text=True, check=False)


def _np2torch(tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    monkeypatch.chdir(tree)
    code = main([*args])
    return code, capsys.readouterr().out


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(SOURCE)
    return tmp_path


def _config(tree: Path, ruff: str, np2torch: str) -> None:
    (tree / "pyproject.toml").write_text(textwrap.dedent(f"""
        [tool.ruff.lint]
        select = ["F401"]
        {ruff}

        [tool.np2torch]
        select = ["NPT001"]
        {np2torch}
        """))


@pytest.mark.parametrize(
    ("ruff", "np2torch", "flags", "fixed"),
    [
        pytest.param("", "", ((), ()), True, id="fixable by default"),
        pytest.param('unfixable = ["F401"]', 'unfixable = ["NPT001"]', ((), ()), False, id="unfixable in the file"),
        pytest.param('fixable = ["E"]', 'fixable = ["NPT002"]', ((), ()), False, id="fixable names others only"),
        pytest.param('fixable = ["E"]\nextend-fixable = ["F401"]', 'fixable = ["NPT002"]\nextend-fixable = ["NPT001"]',
                     ((), ()), True, id="extend-fixable adds"),
        pytest.param("", "", (("--unfixable", "F401"), ("--unfixable", "NPT001")), False, id="--unfixable"),
        pytest.param('unfixable = ["F401"]', 'unfixable = ["NPT001"]', (("--fixable", "F401"), ("--fixable", "NPT001")),
                     True, id="--fixable overrides the file"),
        pytest.param('fixable = ["E"]', 'fixable = ["NPT002"]',
                     (("--extend-fixable", "F401"), ("--extend-fixable", "NPT001")), True, id="--extend-fixable"),
    ],
)
def test_fixable_and_unfixable_as_ruff_has_them(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], ruff: str, np2torch: str,
    flags: tuple[tuple[str, ...], tuple[str, ...]], fixed: bool,
) -> None:
    _config(tree, ruff, np2torch)
    ruff_check = _ruff(tree, "check", "--no-cache", "--output-format", "concise", *flags[0], "a.py")
    ours_code, ours = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", *flags[1], "a.py")
    assert ruff_check.returncode == ours_code == 1
    assert ("[*]" in ruff_check.stdout) is ("[*]" in ours) is fixed, (ruff_check.stdout, ours)
    _ruff(tree, "check", "--no-cache", "--fix", *flags[0], "a.py")
    assert ("import os" not in (tree / "a.py").read_text()) is fixed
    _np2torch(tree, monkeypatch, capsys, "fix", "--no-cache", *flags[1], "a.py")
    assert ("np2t.exp" in (tree / "a.py").read_text()) is fixed


def _shape(value: object) -> object:
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


def test_rdjson_has_ruffs_shape(tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _config(tree, "", "")
    theirs = json.loads(_ruff(tree, "check", "--no-cache", "--output-format", "rdjson", "a.py").stdout)
    code, out = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "--output-format", "rdjson", "a.py")
    ours = json.loads(out)
    assert code == 1 and _shape(ours) == _shape(theirs)
    assert ours["diagnostics"][0]["location"]["path"] == str(tree / "a.py")
    suggested = {s["text"] for s in ours["diagnostics"][0]["suggestions"]}
    assert suggested == {"import np2torch.runtime as np2t\n", "np2t.exp"}


def test_azure_lines_as_ruffs(tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _config(tree, "", "")
    theirs = _ruff(tree, "check", "--no-cache", "--output-format", "azure", "a.py").stdout.splitlines()
    code, out = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "--output-format", "azure", "a.py")
    pattern = re.compile(r"##vso\[task\.logissue type=(error|warning);sourcepath=(.+?);linenumber=(\d+);"
                         r"columnnumber=(\d+);code=(\w+);\](.+)\Z")
    [ruff_match] = [pattern.match(line) for line in theirs]
    [our_match] = [pattern.match(line) for line in out.splitlines()]
    assert ruff_match and our_match and code == 1
    assert ruff_match.group(2) == our_match.group(2) == str(tree / "a.py")
    assert our_match.group(1) == "warning" and our_match.group(3, 4, 5) == ("6", "12", "NPT001")


def test_rules_as_json_has_ruffs_keys(tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    theirs = json.loads(_ruff(tree, "rule", "F401", "--output-format", "json").stdout)
    code, out = _np2torch(tree, monkeypatch, capsys, "rules", "--output-format", "json")
    ours = json.loads(out)
    missing = set(theirs) - set(ours[0]) - {"status", "source_location"}  # ruff's own history and source file
    assert code == 0 and not missing
    assert all(type(ours[0][key]) is type(theirs[key]) for key in set(theirs) & set(ours[0]))
    assert ours[0]["explanation"].startswith("# NPT001")


def test_fix_only_reports_what_was_fixed_and_exits_0(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    _config(tree, 'extend-select = ["E711"]', 'extend-select = ["NPT002"]')
    (tree / "a.py").write_text(SOURCE + "z = f is np.log\nw = (z == None)\n")  # one unfixable finding each
    theirs = _ruff(tree, "check", "--no-cache", "--fix-only", "a.py")
    code, ours = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "--fix-only", "a.py")
    assert theirs.returncode == code == 0
    assert theirs.stdout.splitlines()[0].startswith("Fixed 1 error") and ours.splitlines()[0] == "Fixed 1 error."
    assert "np2t.exp" in (tree / "a.py").read_text() and "import os" not in (tree / "a.py").read_text()
    theirs = _ruff(tree, "check", "--no-cache", "--fix-only", "a.py")
    code, ours = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "--fix-only", "a.py")
    assert theirs.returncode == code == 0
    assert theirs.stdout.startswith("No errors fixed") and ours.splitlines() == ["No errors fixed."]


def test_ignore_noqa(tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _config(tree, "", "")
    (tree / "a.py").write_text("import os  # noqa: F401\nimport numpy as np\n\ny = np.exp(x)  # noqa: NPT001\n")
    assert _ruff(tree, "check", "--no-cache", "a.py").returncode == 0
    assert _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "a.py")[0] == 0
    theirs = _ruff(tree, "check", "--no-cache", "--output-format", "concise", "--ignore-noqa", "a.py")
    code, ours = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "--ignore-noqa", "a.py")
    assert theirs.returncode == code == 1
    assert "F401" in theirs.stdout and "a.py:4:5: NPT001" in ours


@pytest.mark.parametrize(
    ("option", "ruff_value", "value", "ignored"),
    [
        pytest.param("--per-file-ignores", "a.py:F401", "a.py:NPT001", True, id="--per-file-ignores"),
        pytest.param("--per-file-ignores", "b.py:F401", "b.py:NPT001", False, id="another file's"),
        pytest.param("--extend-per-file-ignores", "a.py:F401", "a.py:NPT001", True, id="--extend-per-file-ignores"),
        pytest.param("--per-file-ignores", "b.py:F401,a.py:F401", "b.py:NPT001,a.py:NPT001", True,
                     id="comma-separated items"),
    ],
)
def test_per_file_ignores_as_flags(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], option: str, ruff_value: str,
    value: str, ignored: bool,
) -> None:
    _config(tree, "", "")
    theirs = _ruff(tree, "check", "--no-cache", option, ruff_value, "a.py")
    code, _ours = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", option, value, "a.py")
    assert theirs.returncode == code == (0 if ignored else 1)


def test_extend_per_file_ignores_adds_to_the_files(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    _config(tree, 'extend-select = ["E711"]\nper-file-ignores = {"a.py" = ["E711"]}',
            'extend-select = ["NPT002"]\nper-file-ignores = {"a.py" = ["NPT002"]}')
    (tree / "a.py").write_text(SOURCE + "z = f is np.log\nw = (z == None)\n")
    for option, expected in (("--extend-per-file-ignores", 0), ("--per-file-ignores", 1)):
        theirs = _ruff(tree, "check", "--no-cache", option, "a.py:F401", "a.py")
        code, _ours = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", option, "a.py:NPT001", "a.py")
        assert theirs.returncode == code == expected, option


def test_a_per_file_ignore_without_a_code_is_refused(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    assert _ruff(tree, "check", "--no-cache", "--per-file-ignores", "a.py", "a.py").returncode == 2
    monkeypatch.chdir(tree)
    assert main(["check", "--no-cache", "--per-file-ignores", "a.py", "a.py"]) == 2
    assert "expected <FilePattern>:<RuleCode>, got 'a.py'" in capsys.readouterr().err


def test_extend_inherits_another_file(tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # a monorepo: the root's settings, a package that extends them and overrides one key
    (tree / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.ruff]
        extend-exclude = ["generated"]
        [tool.ruff.lint]
        select = ["F401", "E711"]

        [tool.np2torch]
        extend-exclude = ["generated"]
        select = ["NPT001", "NPT002"]
        """))
    package = tree / "pkg"
    (package / "generated").mkdir(parents=True)
    (package / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.ruff]
        extend = "../pyproject.toml"
        [tool.ruff.lint]
        ignore = ["E711"]

        [tool.np2torch]
        extend = "../pyproject.toml"
        ignore = ["NPT002"]
        """))
    body = SOURCE + "z = f is np.log\nw = (z == None)\n"
    (package / "a.py").write_text(body)
    (package / "generated" / "b.py").write_text(body)
    (tree / "generated").mkdir()
    (tree / "generated" / "c.py").write_text(body)
    theirs = _ruff(tree, "check", "--no-cache", "--output-format", "concise", "pkg").stdout
    code, ours = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "pkg")
    # the root's select holds in the package, its own ignore too, and the root's extend-exclude (a name: at
    # any depth) keeps pkg/generated out
    assert {line.split(":")[0] for line in theirs.splitlines() if ".py:" in line} == {"pkg/a.py"}
    assert {line.split(":")[0] for line in ours.splitlines() if ".py:" in line} == {"pkg/a.py"}
    assert "E711" not in theirs and "F401" in theirs
    assert "NPT002" not in ours and "NPT001" in ours and code == 1


def test_extend_refuses_a_cycle(tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "np2torch.toml").write_text('extend = "other.toml"\n')
    (tree / "other.toml").write_text('extend = "np2torch.toml"\n')
    monkeypatch.chdir(tree)
    assert main(["check", "--no-cache", "a.py"]) == 2
    assert "other.toml: 'extend' makes a cycle: np2torch.toml -> other.toml -> np2torch.toml" in (
        capsys.readouterr().err)


def test_include_and_extend_include(tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "b.pyw").write_text(SOURCE)
    for ruff_key, key, found in (("", "", {"a.py"}), ('extend-include = ["*.pyw"]', 'extend-include = ["*.pyw"]',
                                                      {"a.py", "b.pyw"}),
                                 ('include = ["*.pyw"]', 'include = ["*.pyw"]', {"b.pyw"})):
        (tree / "pyproject.toml").write_text(f"[tool.ruff]\n{ruff_key}\n[tool.np2torch]\n{key}\n")
        theirs = _ruff(tree, "check", "--no-cache", "--show-files", ".").stdout
        _code, ours = _np2torch(tree, monkeypatch, capsys, "check", "--show-files", ".")
        assert {Path(line).name for line in theirs.splitlines() if line.strip()} - {"pyproject.toml"} == found
        assert {Path(line).name for line in ours.splitlines()} == found


def test_sarif_rules_have_a_help_uri_as_ruffs(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    _config(tree, "", "")
    theirs = json.loads(_ruff(tree, "check", "--no-cache", "--output-format", "sarif", "a.py").stdout)
    _code, out = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "--output-format", "sarif", "a.py")
    ours = json.loads(out)
    their_rule = theirs["runs"][0]["tool"]["driver"]["rules"][0]
    our_rules = {rule["id"]: rule for rule in ours["runs"][0]["tool"]["driver"]["rules"]}
    assert their_rule["helpUri"].startswith("https://")
    result = ours["runs"][0]["results"][0]
    assert our_rules[result["ruleId"]]["helpUri"].endswith("#" + result["ruleId"].lower())


def test_fix_only_on_stdin_prints_the_source_and_exits_0(tree: Path) -> None:
    _config(tree, 'extend-select = ["E711"]', 'extend-select = ["NPT002"]')
    source = SOURCE + "z = f is np.log\nw = (z == None)\n"
    runs = [subprocess.run([*command, "check", "--no-cache", "--fix-only", "--stdin-filename", "a.py", "-"],
                           cwd=tree, input=source, capture_output=True, text=True, check=False)
            for command in ([sys.executable, "-m", "ruff"], [sys.executable, "-m", "np2torch"])]
    theirs, ours = runs
    assert theirs.returncode == ours.returncode == 0
    assert "import os" not in theirs.stdout and "np2t.exp(x)" in ours.stdout and "np.log" in ours.stdout
    assert theirs.stderr.startswith("Fixed 1 error") and ours.stderr.strip() == "Fixed 1 error."  # E711: unsafe


@pytest.mark.parametrize("flags", [
    pytest.param(("--fix", "--diff"), id="--fix --diff"),
    pytest.param(("--fix-only", "--diff"), id="--fix-only --diff"),
    pytest.param(("--fix", "--fix-only", "--diff"), id="--fix --fix-only --diff"),
    pytest.param(("--diff", "--exit-zero"), id="--diff --exit-zero"),
])
def test_diff_wins_over_fix_as_ruffs(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...],
) -> None:
    _config(tree, "", "")
    theirs = _ruff(tree, "check", "--no-cache", *flags, "a.py")
    code, ours = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", *flags, "a.py")
    assert theirs.returncode == code == (0 if "--exit-zero" in flags else 1)
    assert "-import os" in theirs.stdout and "+    return np2t.exp(x)" in ours
    assert (tree / "a.py").read_text() == SOURCE  # a diff writes nothing


UNSAFE_ONLY = "import numpy as np\n\ng = np.exp\nh = g == None\n"
"""A fix only ``--unsafe-fixes`` makes: ruff's E711 (``== None``), np2torch's NPT001 on a reference (``g = np.exp``)."""
UNFIXABLE = "import numpy as np\n\nl = f is np.log\n"
"""A finding with no fix: ruff's E741 (the name ``l``), np2torch's NPT002 compared by identity."""
SUMMARY_RULES = ('extend-select = ["E711", "E741"]', 'extend-select = ["NPT002"]')


def _notebook(*sources: str | None) -> str:
    """A Python notebook of these code cells (``None``: a markdown cell), as nbformat writes it."""
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# notes"} if source is None else
             {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": source.splitlines(keepends=True)} for source in sources]
    metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                "language_info": {"name": "python"}}
    return json.dumps({"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}, indent=1,
                      sort_keys=True) + "\n"


NOTEBOOK = _notebook("import os\nimport numpy as np\na = np.exp(q)", None, "x = 1\n", "import json\ny = np.exp(x)\n")
"""Both rules' fixes in cells 1 and 4 (ruff's F401, np2torch's NPT001), a markdown cell and a code cell neither
changes between them; cell 1's last line has no newline."""


def _summary_lines(out: str) -> list[str]:
    """What a ``--diff`` prints on a stream besides its patches (whose lines start with ``-``, ``+``, ``@@``, a
    blank or a backslash) and the empty lines between."""
    return [line for line in out.splitlines() if line and not line.startswith(("-", "+", "@@", " ", "\\"))]


@pytest.mark.parametrize(("files", "flags", "summary", "code"), [
    pytest.param({"c.py": "x = 1\n"}, (), [], 0, id="no finding"),
    pytest.param({"l.py": UNFIXABLE}, (), [], 0, id="no finding has a fix"),
    pytest.param({"a.py": SOURCE}, (), ["Would fix 1 error."], 1, id="one fix"),
    pytest.param({"a.py": SOURCE, "b.py": SOURCE}, (), ["Would fix 2 errors."], 1, id="fixes in two files"),
    pytest.param({"a.py": SOURCE, "l.py": UNFIXABLE}, (), ["Would fix 1 error."], 1, id="beside a finding with no fix"),
    pytest.param({"u.py": UNSAFE_ONLY}, (), ["No errors would be fixed (1 fix available with `--unsafe-fixes`)."], 0,
                 id="only an unsafe fix"),
    pytest.param({"u.py": UNSAFE_ONLY, "v.py": UNSAFE_ONLY}, (),
                 ["No errors would be fixed (2 fixes available with `--unsafe-fixes`)."], 0, id="two unsafe fixes"),
    pytest.param({"a.py": SOURCE, "u.py": UNSAFE_ONLY}, (),
                 ["Would fix 1 error (1 additional fix available with `--unsafe-fixes`)."], 1,
                 id="a safe fix and an unsafe one"),
    pytest.param({"a.py": SOURCE, "u.py": UNSAFE_ONLY}, ("--unsafe-fixes",), ["Would fix 2 errors."], 1,
                 id="--unsafe-fixes"),
    pytest.param({"a.py": SOURCE}, ("--fix",), ["Would fix 1 error."], 1, id="--fix --diff"),
    pytest.param({"a.py": SOURCE}, ("--exit-zero",), ["Would fix 1 error."], 0, id="--exit-zero"),
    pytest.param({"a.py": SOURCE}, ("-q",), [], 1, id="-q"),
    pytest.param({"u.py": UNSAFE_ONLY}, ("--quiet",), [], 0, id="--quiet, only an unsafe fix"),
    pytest.param({"a.py": SOURCE}, ("--output-format", "full"), ["Would fix 1 error."], 1, id="full"),
    pytest.param({"a.py": SOURCE}, ("--output-format", "grouped"), ["Would fix 1 error."], 1, id="grouped"),
    pytest.param({"a.py": SOURCE}, ("--output-format", "pylint"), [], 1, id="pylint"),
    pytest.param({"n.ipynb": NOTEBOOK}, (), ["Would fix 2 errors."], 1, id="a notebook"),
    pytest.param({"n.ipynb": NOTEBOOK, "a.py": SOURCE}, (), ["Would fix 3 errors."], 1, id="a notebook and a file"),
    pytest.param({"u.ipynb": _notebook(UNSAFE_ONLY)}, (),
                 ["No errors would be fixed (1 fix available with `--unsafe-fixes`)."], 0, id="a notebook's unsafe fix"),
    pytest.param({"n.ipynb": NOTEBOOK, "u.ipynb": _notebook(UNSAFE_ONLY)}, (),
                 ["Would fix 2 errors (1 additional fix available with `--unsafe-fixes`)."], 1,
                 id="two notebooks, a safe fix and an unsafe one"),
    pytest.param({"a.py": SOURCE, "u.py": UNSAFE_ONLY}, ("--output-format", "json"), [], 1, id="json"),
])
def test_diff_summary_as_ruffs(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], files: dict[str, str],
    flags: tuple[str, ...], summary: list[str], code: int,
) -> None:
    # ruff's line follows its patches on stdout, a blank line between; nothing at all when no fix would be made
    _config(tree, *SUMMARY_RULES)
    (tree / "a.py").unlink()
    _write_all(tree, files)
    theirs = _ruff(tree, "check", "--no-cache", "--diff", *flags, *files)
    monkeypatch.chdir(tree)
    ours_code = main(["check", "--no-cache", "--diff", *flags, *files])
    out, err = capsys.readouterr()
    assert theirs.returncode == ours_code == code
    assert _summary_lines(theirs.stdout) == _summary_lines(out) == summary, (theirs.stdout, out)
    assert theirs.stderr == err == ""
    if summary and code == 1 and "--exit-zero" not in flags:  # a patch above it
        assert theirs.stdout.splitlines()[-2:] == out.splitlines()[-2:] == ["", *summary]
    assert all((tree / name).read_text() == text for name, text in files.items())


def test_diff_summary_goes_to_the_output_file_as_ruffs(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    _config(tree, *SUMMARY_RULES)
    theirs = _ruff(tree, "check", "--no-cache", "--diff", "-o", "ruff.txt", "a.py")
    monkeypatch.chdir(tree)
    code = main(["check", "--no-cache", "--diff", "-o", "ours.txt", "a.py"])
    out, err = capsys.readouterr()
    assert theirs.returncode == code == 1
    assert "-import os" in theirs.stdout and "+    return np2t.exp(x)" in out  # the patch stays on stdout
    assert _summary_lines(theirs.stdout) == _summary_lines(out) == [] and theirs.stderr == err == ""
    assert (tree / "ruff.txt").read_text() == (tree / "ours.txt").read_text() == "Would fix 1 error.\n"


@pytest.mark.parametrize(("source", "summary"), [
    pytest.param(SOURCE, "Would fix 1 error.\n", id="one fix"),
    pytest.param(UNSAFE_ONLY, "No errors would be fixed (1 fix available with `--unsafe-fixes`).\n", id="unsafe"),
    pytest.param("x = 1\n", "", id="nothing to fix"),
])
def test_diff_summary_of_stdin_goes_to_stderr_as_ruffs(tree: Path, source: str, summary: str) -> None:
    _config(tree, *SUMMARY_RULES)
    runs = [subprocess.run([*command, "check", "--no-cache", "--diff", "--stdin-filename", "a.py", "-"],
                           cwd=tree, input=source, capture_output=True, text=True, check=False)
            for command in ([sys.executable, "-m", "ruff"], [sys.executable, "-m", "np2torch"])]
    theirs, ours = runs
    assert theirs.returncode == ours.returncode == (1 if source == SOURCE else 0)
    assert theirs.stderr == ours.stderr == summary
    assert _summary_lines(theirs.stdout) == _summary_lines(ours.stdout) == []


@pytest.mark.parametrize(("files", "flags", "said"), [
    pytest.param({"c.py": "x = 1\n"}, (), "", id="nothing to add"),
    pytest.param({"a.py": SOURCE}, (), "Added 1 noqa directive.\n", id="one"),
    pytest.param({"a.py": SOURCE, "b.py": SOURCE}, (), "Added 2 noqa directives.\n", id="two"),
    pytest.param({"a.py": SOURCE}, ("-q",), "", id="-q"),
    pytest.param({"a.py": SOURCE}, ("--output-format", "json"), "Added 1 noqa directive.\n", id="json"),
])
def test_add_noqa_summary_as_ruffs(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], files: dict[str, str],
    flags: tuple[str, ...], said: str,
) -> None:
    _config(tree, "", "")
    monkeypatch.chdir(tree)
    theirs_files = ours_files = files
    for expected in (said, ""):  # the second run has nothing to add
        _write_all(tree, theirs_files)
        theirs = _ruff(tree, "check", "--no-cache", "--add-noqa", *flags, *files)
        theirs_files = {name: (tree / name).read_text() for name in files}
        _write_all(tree, ours_files)
        code = main(["check", "--no-cache", "--add-noqa", *flags, *files])
        ours_files = {name: (tree / name).read_text() for name in files}
        out, err = capsys.readouterr()
        assert theirs.returncode == code == 0
        assert (theirs.stdout, theirs.stderr) == (out, err) == ("", expected)
    if "a.py" in files:
        assert "# noqa: F401" in theirs_files["a.py"] and "# noqa: NPT001" in ours_files["a.py"]


def _write_all(tree: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tree / name).write_text(text)


def test_add_noqa_refuses_a_diff_as_ruffs(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _config(tree, "", "")
    monkeypatch.chdir(tree)
    for flag in ("--diff", "--fix"):
        assert _ruff(tree, "check", "--no-cache", "--add-noqa", flag, "a.py").returncode == 2
        assert main(["check", "--no-cache", "--add-noqa", flag, "a.py"]) == 2
    assert (tree / "a.py").read_text() == SOURCE


BROKEN = "import numpy as np\ny = np.exp(\n"  # the prefilter lets it through to the parser
BAD_BYTES = {"bad.py": BROKEN.encode(), "binary.py": b"import numpy as np\ny = np.exp(1)\x00\n",
             "latin.py": b"import numpy as np\ny = '\xe9'\n"}
"""A file that does not parse, one with a NUL byte, and one that is not UTF-8 (Latin-1 with no coding declared)."""
UNANALYSED = {"bad.py": "invalid-syntax", "gone.py": "E902", "binary.py": "invalid-syntax", "latin.py": "E902"}
"""Those and a path that does not exist, and the code ruff reports each under."""


def _write_bad(tree: Path) -> None:
    for name, raw in BAD_BYTES.items():
        (tree / name).write_bytes(raw)


def _unique(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``pairs`` without repeats: ruff's parser goes on past a NUL and reports each token it cannot take."""
    return list(dict.fromkeys(pairs))
E902 = 'extend-select = ["E902"]'  # ruff's default selection has it; _config's `select` does not


@pytest.mark.parametrize("flags", [
    pytest.param((), id="check"),
    pytest.param(("--exit-zero",), id="--exit-zero"),
    pytest.param(("--output-format", "json"), id="json"),
    pytest.param(("--statistics",), id="--statistics"),
    pytest.param(("--fix",), id="--fix"),
    pytest.param(("--fix", "--exit-zero"), id="--fix --exit-zero"),
    pytest.param(("--fix-only",), id="--fix-only"),
    pytest.param(("--diff",), id="--diff"),
    pytest.param(("--add-noqa",), id="--add-noqa"),
])
@pytest.mark.parametrize("alone", [True, False], ids=["alone", "beside a file with a finding"])
@pytest.mark.parametrize("name", UNANALYSED, ids=["syntax error", "missing path", "NUL byte", "not UTF-8"])
def test_a_file_ruff_cannot_analyse_exits_as_ruffs(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...],
    alone: bool, name: str,
) -> None:
    _config(tree, E902, "")
    _write_bad(tree)
    files = (name,) if alone else (name, "a.py")
    theirs = _ruff(tree, "check", "--no-cache", *flags, *files)
    (tree / "a.py").write_text(SOURCE)  # as ruff found it (--fix, --add-noqa rewrote it)
    monkeypatch.chdir(tree)
    code = main(["check", "--no-cache", *flags, *files])
    out, err = capsys.readouterr()
    assert code == theirs.returncode != 2
    code_shown = UNANALYSED[name]
    assert (code_shown in out) is (code_shown in theirs.stdout), (out, theirs.stdout)  # reported where ruff does
    if code_shown in out:
        assert err == ""
    else:  # --fix-only, --diff, --add-noqa: named on stderr only where ruff names it (add-noqa, a file not UTF-8)
        assert [line for line in err.splitlines() if name in line] == [
            line for line in theirs.stderr.splitlines() if name in line]
    assert all((tree / bad).read_bytes() == raw for bad, raw in BAD_BYTES.items()) and not (tree / "gone.py").exists()


def _codes_by_file(fmt: str, out: str) -> list[tuple[str, str]]:
    """``(file name, code)`` of each diagnostic a report in format ``fmt`` holds, ruff's or np2torch's; the code
    with ruff's colon after it in the text formats (``invalid-syntax:``)."""
    if fmt in ("json", "json-lines"):
        entries = json.loads(out) if fmt == "json" else [json.loads(line) for line in out.splitlines()]
        return [(Path(e["filename"]).name, e["code"]) for e in entries]
    if fmt == "rdjson":
        return [(Path(d["location"]["path"]).name, d["code"]["value"]) for d in json.loads(out)["diagnostics"]]
    if fmt == "gitlab":
        return [(Path(i["location"]["path"]).name, i["check_name"]) for i in json.loads(out)]
    if fmt == "sarif":
        return [(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rpartition("/")[2], r["ruleId"])
                for r in json.loads(out)["runs"][0]["results"]]
    if fmt == "junit":
        import xml.etree.ElementTree as ElementTree

        return [(Path(suite.get("name", "")).name, case.get("name", "").rpartition(".")[2])
                for suite in ElementTree.fromstring(out) for case in suite.iter("testcase")]
    if fmt == "grouped":
        found, current = [], ""
        for line in out.splitlines():
            if re.fullmatch(r"\S+:", line):
                current = line[:-1]
            elif match := re.match(r"  \d+:\d+ (\S+) ", line):
                found.append((current, match.group(1)))
        return found
    pattern = {"concise": r"(\S+?):\d+:\d+: (\S+) ", "pylint": r"(\S+?):\d+: \[([^]]+)\]",
               "github": r"::\w+ title=\w+ \(([^)]+)\),file=([^,]+),", "azure": r".*sourcepath=([^;]+);.*code=([^;]+);"}[fmt]
    pairs = [match.groups() for match in map(re.compile(pattern).match, out.splitlines()) if match]
    return [(Path(b).name, a) if fmt == "github" else (Path(a).name, b) for a, b in pairs]


@pytest.mark.parametrize("fmt", ["concise", "grouped", "pylint", "json", "json-lines", "junit", "gitlab", "github",
                                 "azure", "rdjson", "sarif"])
def test_a_syntax_error_and_a_missing_path_carry_ruffs_codes_in_every_format(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fmt: str,
) -> None:
    _config(tree, E902, "")
    _write_bad(tree)
    theirs = _ruff(tree, "check", "--no-cache", "--output-format", fmt, "a.py", *UNANALYSED)
    code, out = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "--output-format", fmt, "a.py", *UNANALYSED)
    assert code == theirs.returncode == 1
    ruffs = _unique([pair for pair in _codes_by_file(fmt, theirs.stdout) if pair[0] in UNANALYSED])
    ours = [pair for pair in _codes_by_file(fmt, out) if pair[0] in UNANALYSED]
    assert ours == ruffs and len(ours) == len(UNANALYSED), (ours, theirs.stdout)


@pytest.mark.parametrize("fmt", ["concise", "json"])
def test_statistics_count_a_syntax_error_and_a_missing_path_as_ruffs(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fmt: str,
) -> None:
    _config(tree, E902, "")
    _write_bad(tree)
    args = ("check", "--no-cache", "--statistics", "--output-format", fmt, "bad.py", "gone.py")
    theirs = _ruff(tree, *args).stdout
    code, ours = _np2torch(tree, monkeypatch, capsys, *args)
    assert code == 1
    if fmt == "json":  # ruff also counts the fixable ones (fixable_count)
        assert json.loads(ours) == [{k: v for k, v in row.items() if k != "fixable_count"} for row in json.loads(theirs)]
    else:  # the code column empty for invalid-syntax, which is a name (ruff leaves out `[ ]` when none is fixable)
        def rows(text: str) -> list[tuple[str, ...]]:
            return [(count, code, rest.split()[-1]) for count, code, rest in (line.split("\t") for line in
                                                                             text.splitlines()[:-1])]

        assert rows(ours) == rows(theirs) == [("1", "    ", "invalid-syntax"), ("1", "E902", "io-error")]
        assert ours.splitlines()[-1] == theirs.splitlines()[-1] == "Found 2 errors."


@pytest.mark.parametrize("name", ["gone.py", "latin.py"], ids=["missing path", "not UTF-8"])
def test_a_file_ruff_cannot_read_is_ruffs_e902_object_in_json(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str], name: str) -> None:
    _config(tree, E902, "")
    _write_bad(tree)
    [theirs] = json.loads(_ruff(tree, "check", "--no-cache", "--output-format", "json", name).stdout)
    code, out = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "--output-format", "json", name)
    [ours] = json.loads(out)
    assert code == 1 and theirs["url"] and ours["url"] is None  # ruff's page is ruff's; np2torch has none for it
    assert {key: ours[key] for key in theirs if key != "url"} == {key: theirs[key] for key in theirs if key != "url"}


def test_a_nul_byte_is_ruffs_invalid_syntax_object_in_json(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    _config(tree, E902, "")
    _write_bad(tree)
    theirs = json.loads(_ruff(tree, "check", "--no-cache", "--output-format", "json", "binary.py").stdout)
    code, out = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "--output-format", "json", "binary.py")
    [ours] = json.loads(out)
    # ruff's first diagnostic, where the NUL is (in code); its message is its parser's ("Got unexpected token"),
    # ours is Python's, and its parser goes on to report what follows
    same = set(theirs[0]) - {"message", "end_location"}
    assert code == 1 and {key: ours[key] for key in same} == {key: theirs[0][key] for key in same}
    assert ours["message"] == "SyntaxError: source code cannot contain null bytes"


GLOB_TREE = ("a.py", "sub/b.py", "sub/deep/c.py", "other/sub/e.py", "sub.py", "pkg/gen/h.py", "deep/m.py")
GLOBS = ("sub/*.py", "./sub/*.py", "sub/deep/../*.py", "sub/./b.py", "sub", "sub/", "/sub", "*/*.py", "a*.py",
         "{sub,deep}/*.py", "s?b/b.py", "sub/**", "**/deep", "gen", "[a-c].py", "[!s]*.py", "[!]]*.py")


@pytest.fixture
def glob_tree(tmp_path: Path) -> Path:
    for name in GLOB_TREE:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(SOURCE)
    return tmp_path


def _relative(tree: Path, out: str) -> set[str]:
    """The files a report names (``--show-files``' lines, or the paths of findings), relative to ``tree``."""
    paths = {line.split(":")[0] if ".py:" in line else line.strip() for line in out.splitlines()}
    return {Path(os.path.relpath(tree / path, tree)).as_posix() for path in paths if path.endswith(".py")}


@pytest.mark.parametrize("pattern", GLOBS)
@pytest.mark.parametrize("key", ["exclude", "extend-exclude", "include"])
def test_exclude_and_include_globs_as_ruffs(
    glob_tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key: str, pattern: str,
) -> None:
    (glob_tree / "pyproject.toml").write_text(f"[tool.ruff]\n{key} = [{pattern!r}]\n[tool.np2torch]\n{key} = [{pattern!r}]\n")
    theirs = _relative(glob_tree, _ruff(glob_tree, "check", "--no-cache", "--show-files", ".").stdout)
    code, ours = _np2torch(glob_tree, monkeypatch, capsys, "check", "--show-files", ".")
    assert _relative(glob_tree, ours) == theirs and code == 0
    if key != "include":  # on the command line too, relative to the working directory
        (glob_tree / "pyproject.toml").write_text("[tool.ruff]\n[tool.np2torch]\n")
        theirs = _relative(glob_tree, _ruff(glob_tree, "check", "--no-cache", "--show-files", f"--{key}", pattern,
                                            ".").stdout)
        _code, ours = _np2torch(glob_tree, monkeypatch, capsys, "check", "--show-files", f"--{key}", pattern, ".")
        assert _relative(glob_tree, ours) == theirs


@pytest.mark.parametrize("pattern", [*GLOBS, "!./sub/*.py", "b.py"])
def test_per_file_ignores_globs_as_ruffs(
    glob_tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], pattern: str,
) -> None:
    # in the file and on the command line (`./sub/*.py` there once matched nothing), from a folder below too
    _config(glob_tree, f"per-file-ignores = {{{pattern!r} = ['F401']}}", f"per-file-ignores = {{{pattern!r} = ['NPT001']}}")
    theirs = _relative(glob_tree, _ruff(glob_tree, "check", "--no-cache", "--output-format", "concise", ".").stdout)
    code, ours = _np2torch(glob_tree, monkeypatch, capsys, "check", "--no-cache", ".")
    assert _relative(glob_tree, ours) == theirs and code != 2
    _config(glob_tree, "", "")
    for cwd in (glob_tree, glob_tree / "sub"):
        theirs = _relative(cwd, _ruff(cwd, "check", "--no-cache", "--output-format", "concise", "--per-file-ignores",
                                      f"{pattern}:F401", ".").stdout)
        _code, ours = _np2torch(cwd, monkeypatch, capsys, "check", "--no-cache", "--per-file-ignores",
                                f"{pattern}:NPT001", ".")
        assert _relative(cwd, ours) == theirs, cwd


@pytest.mark.parametrize("key", ["exclude", "extend-exclude", "include"])
def test_a_name_pattern_also_matches_the_folders_above_the_project_as_ruffs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key: str,
) -> None:
    # ruff keeps `*tree*` as written beside `<root>/*tree*` and matches the absolute path against both
    tree = tmp_path / "tree"
    for name in GLOB_TREE:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(SOURCE)
    (tree / "pyproject.toml").write_text(f"[tool.ruff]\n{key} = ['*tree*']\n[tool.np2torch]\n{key} = ['*tree*']\n")
    theirs = _relative(tree, _ruff(tree, "check", "--no-cache", "--show-files", ".").stdout)
    _code, ours = _np2torch(tree, monkeypatch, capsys, "check", "--show-files", ".")
    assert _relative(tree, ours) == theirs == (set(GLOB_TREE) if key == "include" else set())


def test_an_extended_files_globs_stay_relative_to_its_folder(
    glob_tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("pkg/sub/k.py", "pkg/sub/deep/l.py"):
        (glob_tree / name).parent.mkdir(parents=True, exist_ok=True)
        (glob_tree / name).write_text(SOURCE)
    for key in ("include", "extend-exclude"):
        (glob_tree / "pyproject.toml").write_text(f"[tool.ruff]\n{key} = ['sub/*.py']\n"
                                                  f"[tool.np2torch]\n{key} = ['sub/*.py']\n")
        (glob_tree / "pkg" / "pyproject.toml").write_text("[tool.ruff]\nextend = '../pyproject.toml'\n"
                                                          "[tool.np2torch]\nextend = '../pyproject.toml'\n")
        theirs = _relative(glob_tree, _ruff(glob_tree, "check", "--no-cache", "--show-files", ".").stdout)
        _code, ours = _np2torch(glob_tree, monkeypatch, capsys, "check", "--show-files", ".")
        assert _relative(glob_tree, ours) == theirs, key
        assert ("pkg/sub/deep/l.py" in theirs) is (key == "extend-exclude")


@pytest.mark.parametrize("fmt", ["concise", "full", "grouped", "pylint", "json", "github", "junit"])
@pytest.mark.parametrize("flag", ["", "--fix-only"])
def test_the_summary_follows_the_formats_ruff_follows_with_it(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fmt: str, flag: str,
) -> None:
    # `Found 1 error.` / `Fixed 1 error.` after the people's formats; none after pylint's or a machine's
    _config(tree, *SUMMARY_RULES)
    args = ["check", "--no-cache", "--output-format", fmt, *([flag] if flag else []), "a.py"]
    theirs = _ruff(tree, *args)
    (tree / "a.py").write_text(SOURCE)  # the same finding (and fix) for np2torch
    monkeypatch.chdir(tree)
    ours_code = main(args)
    out, err = capsys.readouterr()
    assert ours_code == theirs.returncode

    def summary(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith(("Found ", "Fixed ", "No errors", "[*] "))]

    assert bool(summary(out + err)) == bool(summary(theirs.stdout + theirs.stderr)) == (fmt in ("concise", "full", "grouped"))


def _patch_shape(out: str) -> list[str]:
    """A ``--diff`` output with each hunk's lines left out (the rules differ, so do the hunks): the headers, a
    ``@@`` per hunk, the empty lines between the patches, the summary."""
    shape = []
    for line in out.split("\n"):
        if line.startswith("@@"):
            shape.append("@@")
        elif line.startswith(("--- ", "+++ ")) or line[:1] not in (" ", "+", "-", "\\"):
            shape.append(line)
    return shape


def _patch_shapes(out: str) -> tuple[list[tuple[str, ...]], list[str]]:
    """:func:`_patch_shape` of each file's patch (to its empty line), in name order: ruff prints them as its
    threads finish (np2torch in name order), and what follows them."""
    files: list[tuple[str, ...]] = []
    rest: list[str] = []
    current: list[str] | None = None
    for item in _patch_shape(out):
        if current is None and item.startswith("--- "):  # a notebook's patch has a `--- ` per cell
            current = [item]
        elif current is not None:
            current.append(item)
            if not item:
                files.append(tuple(current))
                current = None
        else:
            rest.append(item)
    return sorted(files), rest


@pytest.mark.parametrize(("args", "cwd"), [
    pytest.param(("a.py", "sub/b.py"), ".", id="two files"),
    pytest.param(("sub",), ".", id="a folder"),
    pytest.param(("{tree}/a.py", "./sub/../sub/b.py"), ".", id="absolute and dotted paths: relative to here"),
    pytest.param(("../a.py", "b.py"), "sub", id="a file above here: absolute"),
])
def test_diff_patches_have_ruffs_headers_and_separators(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], cwd: str,
) -> None:
    _config(tree, "", "")
    (tree / "sub").mkdir()
    (tree / "sub" / "b.py").write_text(SOURCE)
    paths = [arg.format(tree=tree) for arg in args]
    theirs = _ruff(tree / cwd, "check", "--no-cache", "--diff", *paths)
    code, ours = _np2torch(tree / cwd, monkeypatch, capsys, "check", "--no-cache", "--diff", *paths)
    assert theirs.returncode == code == 1
    assert _patch_shapes(ours) == _patch_shapes(theirs.stdout), (ours, theirs.stdout)
    assert _patch_shape(ours) == [line for patch in _patch_shapes(ours)[0] for line in patch] + _patch_shapes(ours)[1]
    assert ours.endswith("\n\nWould fix 2 errors.\n" if len(args) == 2 else "\n\nWould fix 1 error.\n")


def test_diff_of_stdin_without_a_name_has_no_header_as_ruffs(tree: Path) -> None:
    _config(tree, "", "")
    runs = [subprocess.run([*command, "check", "--no-cache", "--diff", "-"], cwd=tree, input=SOURCE,
                           capture_output=True, text=True, check=False)
            for command in ([sys.executable, "-m", "ruff"], [sys.executable, "-m", "np2torch"])]
    theirs, ours = runs
    assert theirs.returncode == ours.returncode == 1
    assert _patch_shape(theirs.stdout) == _patch_shape(ours.stdout) == ["@@", "", ""]
    assert theirs.stderr == ours.stderr == "Would fix 1 error.\n"


@pytest.mark.parametrize(("args", "cwd", "summary"), [
    pytest.param(("n.ipynb",), ".", "Would fix 2 errors.", id="a notebook"),
    pytest.param(("n.ipynb", "a.py"), ".", "Would fix 3 errors.", id="beside a file"),
    pytest.param(("..",), "sub", "Would fix 3 errors.", id="above here: absolute"),
])
def test_a_notebooks_diff_heads_each_code_cell_as_ruffs(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], cwd: str,
    summary: str,
) -> None:
    # ruff's: a `--- n.ipynb:cell N` / `+++` pair for every code cell, changed or not (N counts the markdown cell
    # too), its hunks, no empty line between cells, one after the notebook
    _config(tree, "", "")
    (tree / "n.ipynb").write_text(NOTEBOOK)
    (tree / "sub").mkdir()
    theirs = _ruff(tree / cwd, "check", "--no-cache", "--diff", *args)
    code, ours = _np2torch(tree / cwd, monkeypatch, capsys, "check", "--no-cache", "--diff", *args)
    assert theirs.returncode == code == 1
    assert _patch_shapes(ours) == _patch_shapes(theirs.stdout), (ours, theirs.stdout)
    patches, rest = _patch_shapes(ours)
    cells = next(patch for patch in patches if ":cell " in patch[0])
    assert [line[:4] + line.rsplit(":", 1)[1] if ":cell " in line else line for line in cells] == [
        "--- cell 1", "+++ cell 1", "@@", "--- cell 3", "+++ cell 3", "--- cell 4", "+++ cell 4", "@@", ""]
    assert cells[0] == "--- " + ("n.ipynb" if cwd == "." else str(tree / "n.ipynb")) + ":cell 1"
    assert rest == [summary, ""]
    assert "No newline" not in ours + theirs.stdout  # cell 1's last line has none: no hint, in either
    assert (tree / "n.ipynb").read_text() == NOTEBOOK


def test_a_notebooks_diff_from_stdin_as_ruffs(tree: Path) -> None:
    _config(tree, "", "")
    runs = [subprocess.run([*command, "check", "--no-cache", "--diff", "--stdin-filename", "n.ipynb", "-"], cwd=tree,
                           input=NOTEBOOK, capture_output=True, text=True, check=False)
            for command in ([sys.executable, "-m", "ruff"], [sys.executable, "-m", "np2torch"])]
    theirs, ours = runs
    assert theirs.returncode == ours.returncode == 1
    assert _patch_shape(theirs.stdout) == _patch_shape(ours.stdout) == [
        "--- n.ipynb:cell 1", "+++ n.ipynb:cell 1", "@@", "--- n.ipynb:cell 3", "+++ n.ipynb:cell 3",
        "--- n.ipynb:cell 4", "+++ n.ipynb:cell 4", "@@", "", ""]
    assert theirs.stderr == ours.stderr == "Would fix 2 errors.\n"


@pytest.mark.parametrize("flags", [
    pytest.param(("--diff", "--show-fixes"), id="--diff --show-fixes"),
    pytest.param(("--show-fixes", "--diff"), id="--show-fixes --diff"),
    pytest.param(("--diff", "--statistics"), id="--diff --statistics"),
    pytest.param(("--statistics", "--diff"), id="--statistics --diff"),
    pytest.param(("--fix", "--diff", "--show-fixes"), id="--fix --diff --show-fixes"),
    pytest.param(("--diff", "--statistics", "--show-fixes"), id="two conflicts of the first"),
    pytest.param(("--statistics", "--show-fixes", "--diff"), id="the first flag that conflicts"),
    pytest.param(("--silent", "--quiet"), id="--silent --quiet"),
    pytest.param(("-q", "-s"), id="-q -s"),
    pytest.param(("--add-noqa", "--fix"), id="--add-noqa --fix"),
    pytest.param(("--diff", "--add-noqa"), id="--diff --add-noqa"),
    pytest.param(("--add-noqa", "--statistics"), id="--add-noqa --statistics"),
])
def test_flags_ruff_refuses_together_are_refused_in_its_words(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...],
) -> None:
    _config(tree, "", "")
    theirs = _ruff(tree, "check", "--no-cache", *flags, "a.py")
    monkeypatch.chdir(tree)
    code = main(["check", "--no-cache", *flags, "a.py"])
    out, err = capsys.readouterr()
    assert theirs.returncode == code == 2 and theirs.stdout == out == ""
    said = theirs.stderr.split("\n\nUsage:")[0].removeprefix("error: ").replace("[=<REASON>]", "")
    assert f"Error: {said}\n" in err, (theirs.stderr, err)
    assert (tree / "a.py").read_text() == SOURCE


def test_add_noqa_with_fix_only_warns_and_adds_as_ruffs(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    _config(tree, "", "")
    theirs = _ruff(tree, "check", "--no-cache", "--add-noqa", "--fix-only", "a.py")
    assert "# noqa: F401" in (tree / "a.py").read_text()
    (tree / "a.py").write_text(SOURCE)
    monkeypatch.chdir(tree)
    code = main(["check", "--no-cache", "--add-noqa", "--fix-only", "a.py"])
    out, err = capsys.readouterr()
    assert theirs.returncode == code == 0 and (theirs.stdout, theirs.stderr) == (out, err)
    assert err == "warning: --fix is incompatible with --add-noqa.\nAdded 1 noqa directive.\n"
    assert "# noqa: NPT001" in (tree / "a.py").read_text()


SILENT_FILES = {"a.py": SOURCE, "l.py": UNFIXABLE}
"""A fixable finding and one with no fix (and a path that does not exist: E902)."""


def _silent_shape(out: str) -> object:
    """What ``--silent`` leaves of an output: ``--statistics``' counts (text or JSON), ``--diff``'s patch; else
    nothing."""
    if out.startswith("["):
        return sorted(row["count"] for row in json.loads(out))
    if out.startswith("--- "):
        return _patch_shape(out)
    return [line.split("\t")[0] for line in out.splitlines()]


@pytest.mark.parametrize("flags", [
    pytest.param((), id="check"),
    pytest.param(("--exit-zero",), id="--exit-zero"),
    pytest.param(("--output-format", "json"), id="json"),
    pytest.param(("--show-fixes",), id="--show-fixes"),
    pytest.param(("--statistics",), id="--statistics"),
    pytest.param(("--statistics", "--exit-zero"), id="--statistics --exit-zero"),
    pytest.param(("--statistics", "--output-format", "json"), id="--statistics json"),
    pytest.param(("--fix",), id="--fix"),
    pytest.param(("--fix", "--show-fixes"), id="--fix --show-fixes"),
    pytest.param(("--fix", "--statistics"), id="--fix --statistics"),
    pytest.param(("--fix", "--exit-zero"), id="--fix --exit-zero"),
    pytest.param(("--fix-only",), id="--fix-only"),
    pytest.param(("--fix-only", "--exit-non-zero-on-fix"), id="--fix-only --exit-non-zero-on-fix"),
    pytest.param(("--diff",), id="--diff"),
    pytest.param(("--diff", "--exit-zero"), id="--diff --exit-zero"),
    pytest.param(("--add-noqa",), id="--add-noqa"),
    pytest.param(("--add-noqa", "--fix-only"), id="--add-noqa --fix-only"),
    pytest.param(("-o", "report.txt"), id="--output-file"),
])
def test_silent_prints_only_what_ruffs_prints(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...],
) -> None:
    # ruff's --silent: no finding, summary, fix list or warning; --statistics' table and --diff's patch still;
    # the exit code as without it
    _config(tree, 'extend-select = ["E741", "E902"]', 'extend-select = ["NPT002"]')
    _write_all(tree, SILENT_FILES)
    theirs = _ruff(tree, "check", "--no-cache", "--silent", *flags, *SILENT_FILES, "gone.py")
    their_report = (tree / "report.txt").read_text() if "-o" in flags else None
    _write_all(tree, SILENT_FILES)
    monkeypatch.chdir(tree)
    code = main(["check", "--no-cache", "-s", *flags, *SILENT_FILES, "gone.py"])
    out, err = capsys.readouterr()
    assert theirs.returncode == code
    assert theirs.stderr == err == ""
    assert _silent_shape(theirs.stdout) == _silent_shape(out), (theirs.stdout, out)
    assert bool(out) is ("--statistics" in flags or "--diff" in flags)
    if "-o" in flags:
        assert their_report == (tree / "report.txt").read_text() == ""


@pytest.mark.parametrize("flags", [(), ("--fix",), ("--diff",)], ids=["check", "--fix", "--diff"])
def test_silent_on_stdin_as_ruffs(tree: Path, flags: tuple[str, ...]) -> None:
    # --fix still echoes the source (an editor replaces its buffer with it), --diff still prints the patch
    _config(tree, "", "")
    runs = [subprocess.run([*command, "check", "--no-cache", "--silent", *flags, "--stdin-filename", "a.py", "-"],
                           cwd=tree, input=SOURCE, capture_output=True, text=True, check=False)
            for command in ([sys.executable, "-m", "ruff"], [sys.executable, "-m", "np2torch"])]
    theirs, ours = runs
    assert theirs.returncode == ours.returncode == (0 if flags == ("--fix",) else 1)
    assert theirs.stderr == ours.stderr == ""
    if flags == ("--fix",):
        assert "import os" not in theirs.stdout and "np2t.exp(x)" in ours.stdout
    else:
        assert _patch_shape(theirs.stdout) == _patch_shape(ours.stdout)


def test_fix_refuses_silent_with_quiet(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tree)
    assert _ruff(tree, "check", "--no-cache", "--fix", "-s", "-q", "a.py").returncode == 2
    assert main(["fix", "--no-cache", "-s", "-q", "a.py"]) == 2
    assert "the argument '--silent' cannot be used with '--quiet'" in capsys.readouterr().err
    assert (tree / "a.py").read_text() == SOURCE


NUL_SOURCES = {
    "string": 'import os\nimport numpy as np\ns = "a\0b"; y = np.exp(x)\n',
    "bytes": "import os\nimport numpy as np\ns = b'a\0b'; y = np.exp(x)\n",
    "f-string": 'import os\nimport numpy as np\ns = f"a\0{x}"; y = np.exp(x)\n',
    "triple-quoted": 'import os\nimport numpy as np\ns = """a\n\0b"""; y = np.exp(x)\n',
    "comment": "import os\nimport numpy as np\n# a\0b\ny = np.exp(x)  # \0\n",
    "after code": "import os\nimport numpy as np\ny = np.exp(x)\0\n",
    "starting a line": "import os\nimport numpy as np\n\0y = np.exp(x)\n",
    "in an f-string's expression": 'import os\nimport numpy as np\ns = f"{x\0}"; y = np.exp(x)\n',
    "in code after one in a string": 'import os\nimport numpy as np\ns = "\0"; y = np.exp(x) \0\n',
    "in a file that calls nothing": "import os\nx = 1\0\n",
}
"""A NUL byte where ruff takes it (a string literal of any kind, a comment) and where it does not (code)."""


@pytest.mark.parametrize("name", NUL_SOURCES)
def test_a_nul_byte_is_taken_where_ruff_takes_it(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str,
) -> None:
    _config(tree, E902, "")
    source = NUL_SOURCES[name]
    (tree / "n.py").write_bytes(source.encode())
    theirs = json.loads(_ruff(tree, "check", "--no-cache", "--output-format", "json", "n.py").stdout)
    code, out = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "--output-format", "json", "n.py")
    ours = json.loads(out)
    assert code == 1

    def syntax(report: list[dict[str, object]]) -> list[object]:
        return [d["location"] for d in report if d["code"] == "invalid-syntax"]

    assert syntax(ours) == syntax(theirs)[:1], (ours, theirs)  # ruff's parser goes on past it
    if not syntax(theirs):  # as if the NUL were any other character: the finding where it is without one
        (tree / "n.py").write_text(source.replace("\0", "_"))
        _code, plain = _np2torch(tree, monkeypatch, capsys, "check", "--no-cache", "--output-format", "json", "n.py")
        assert [d["code"] for d in theirs] == ["F401"]
        assert [(d["code"], d["location"]) for d in ours] == [(d["code"], d["location"]) for d in json.loads(plain)]


@pytest.mark.parametrize("name", ["string", "bytes", "f-string", "triple-quoted", "comment"])
def test_fix_keeps_each_nul_byte_where_it_was_as_ruffs(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str,
) -> None:
    _config(tree, "", "")
    source = NUL_SOURCES[name]
    (tree / "n.py").write_bytes(source.encode())
    assert _ruff(tree, "check", "--no-cache", "--fix", "n.py").returncode == 0
    assert (tree / "n.py").read_bytes() == source.replace("import os\n", "").encode()
    (tree / "n.py").write_text(source.replace("\0", "_"))
    assert _np2torch(tree, monkeypatch, capsys, "fix", "--no-cache", "n.py")[0] == 0
    expected = (tree / "n.py").read_text().replace("_", "\0")
    (tree / "n.py").write_bytes(source.encode())
    assert _np2torch(tree, monkeypatch, capsys, "fix", "--no-cache", "n.py")[0] == 0
    assert (tree / "n.py").read_bytes() == expected.encode() != source.encode()
