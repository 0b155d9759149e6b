"""`--output-format`: every format through the real CLI, the machine ones read by their consumer's parser
or validated against its schema; a file that does not parse is a finding in each (ruff's invalid-syntax), and
one that could not be checked appears in each; --output-file, NP2TORCH_OUTPUT_FORMAT."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from np2torch.cli import main
from np2torch.cli.config import OUTPUT_FORMATS

DATA = Path(__file__).parent.parent / "data"
EXP = "import numpy as np\n\n\ndef f(x):\n    return np.exp(x)\n"
NOTEBOOK = json.dumps({
    "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": ["import numpy as np\n"]},
              {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["y = 1\n", "z = np.log(y)\n"]}],
    "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
})
BROKEN = "import numpy as np\nnp.exp((x)\n"


@pytest.fixture(autouse=True)
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NP2TORCH_OUTPUT_FORMAT", raising=False)
    Path("pkg").mkdir()
    Path("pkg/a.py").write_text(EXP)
    Path("pkg/b.py").write_text(EXP)
    Path("nb.ipynb").write_text(NOTEBOOK)
    return tmp_path


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", "--no-cache", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def with_broken_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that does not parse (a finding, ``invalid-syntax``) and one that could not be checked (exit 2: a bug
    in np2torch, which is all that is left of those once a bad file is a finding as ruff's)."""
    from np2torch.lint import engine

    real = engine.check_source

    def flaky(source: str, path: str = "<string>", **kwargs: object) -> object:
        if path == "boom.py":
            raise RuntimeError("kaboom")
        return real(source, path, **kwargs)

    monkeypatch.setattr(engine, "check_source", flaky)
    Path("bad.py").write_text(BROKEN)
    Path("boom.py").write_text(EXP)


def test_concise_is_the_default_and_text_its_old_name(capsys: pytest.CaptureFixture[str]) -> None:
    default = check(capsys, ".")
    assert default == check(capsys, "--output-format", "concise", ".") == check(capsys, "--format", "text", ".")
    assert default[1].splitlines()[:2] == ["nb.ipynb:cell 2:2:5: NPT002 `numpy.log` can run on torch via "
                                           "`np2torch.runtime.log` [*]",
                                           "pkg/a.py:5:12: NPT001 `numpy.exp` can run on torch via "
                                           "`np2torch.runtime.exp` [*]"]


def test_full_shows_the_line_and_a_caret_under_the_span(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys, "--output-format", "full", ".")
    assert code == 1
    block = out.split("\n\n")[1].splitlines()
    assert block == [
        "pkg/a.py:5:12: NPT001 `numpy.exp` can run on torch via `np2torch.runtime.exp` [*]",
        "  |",
        "5 |     return np.exp(x)",
        "  |            ^^^^^^ NPT001",
        "  |",
        "  = help: Replace with `np2t.exp`",
    ]
    notebook = out.split("\n\n")[0].splitlines()
    assert notebook[2:4] == ["2 | z = np.log(y)", "  |     ^^^^^^ NPT002"]  # the cell's own line


def test_full_after_a_fix_shows_the_fixed_file(capsys: pytest.CaptureFixture[str]) -> None:
    Path("c.py").write_text("import numpy as np\n\ny = np.exp(x)\nsame = np.log is f\n")
    assert main(["fix", "--no-cache", "--output-format", "full", "c.py"]) == 1
    out = capsys.readouterr().out
    assert "5 | same = np.log is f\n" in out  # line 5 of the fixed file, where the finding left now is
    assert "= note: no fix: it is compared" in out


def test_grouped(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = check(capsys, "--output-format", "grouped", ".")
    assert out.startswith("nb.ipynb:\n  cell 2:2:5 NPT002 `numpy.log` can run on torch via `np2torch.runtime.log` [*]\n\n"
                          "pkg/a.py:\n  5:12 NPT001 ")


def test_pylint_lines_match_pylints_parseable_format(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = check(capsys, "--output-format", "pylint", "-q", ".")
    lines = out.splitlines()
    assert len(lines) == 3 and all(re.fullmatch(r"[^:]+:\d+: \[NPT\d{3}\] .+", line) for line in lines), lines
    assert lines[1] == "pkg/a.py:5: [NPT001] `numpy.exp` can run on torch via `np2torch.runtime.exp`"


@pytest.mark.parametrize("fmt", ["json", "json-lines"])
def test_json_and_json_lines_hold_the_same_objects(capsys: pytest.CaptureFixture[str], fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with_broken_files(monkeypatch)
    code, out, _ = check(capsys, "--output-format", fmt, ".")
    entries = json.loads(out) if fmt == "json" else [json.loads(line) for line in out.splitlines()]
    assert code == 2
    assert [(e["path"], e["code"], e["line"], e["name"], e["severity"]) for e in entries] == [
        ("bad.py", "invalid-syntax", 2, "invalid-syntax", "error"), ("nb.ipynb", "NPT002", 2, "log", "warning"),
        ("pkg/a.py", "NPT001", 5, "exp", "warning"), ("pkg/b.py", "NPT001", 5, "exp", "warning"),
        ("boom.py", None, None, None, "error")]
    assert (entries[0]["url"], entries[0]["noqa_row"], entries[0]["fix"]) == (None, None, None)


def test_junit_is_read_by_a_junit_parser(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    junitparser = pytest.importorskip("junitparser")
    with_broken_files(monkeypatch)
    code, out, _ = check(capsys, "--output-format", "junit", ".")
    assert code == 2
    Path("report.xml").write_text(out)
    report = junitparser.JUnitXml.fromfile("report.xml")
    suites = {suite.name: suite for suite in report}
    assert sorted(suites) == ["bad.py", "boom.py", "nb.ipynb", "pkg/a.py", "pkg/b.py"]
    [case] = list(suites["pkg/a.py"])
    assert (case.name, case.classname) == ("org.np2torch.NPT001", "pkg/a.py")
    [failure] = case.result
    assert isinstance(failure, junitparser.Failure) and "np2torch.runtime.exp" in failure.message
    [syntax] = list(suites["bad.py"])
    assert syntax.name == "org.np2torch.invalid-syntax" and isinstance(syntax.result[0], junitparser.Failure)  # ruff's
    [error] = list(suites["boom.py"])[0].result
    assert isinstance(error, junitparser.Error)
    assert (suites["pkg/a.py"].failures, suites["bad.py"].failures, suites["boom.py"].errors) == (1, 1, 1)


def test_junit_without_findings_is_one_passing_case(capsys: pytest.CaptureFixture[str]) -> None:
    junitparser = pytest.importorskip("junitparser")
    Path("clean.py").write_text("x = 1\n")
    code, out, _ = check(capsys, "--output-format", "junit", "clean.py")
    Path("report.xml").write_text(out)
    [suite] = list(junitparser.JUnitXml.fromfile("report.xml"))
    [case] = list(suite)
    assert code == 0 and case.is_passed


def test_gitlab_report_matches_the_schema_with_stable_unique_fingerprints(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((DATA / "gitlab-code-quality.schema.json").read_text())
    with_broken_files(monkeypatch)
    _, out, _ = check(capsys, "--output-format", "gitlab", ".")
    report = json.loads(out)
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(report)
    assert len({issue["fingerprint"] for issue in report}) == len(report) == 5
    syntax, failed = report[0], report[-1]
    assert (syntax["check_name"], syntax["severity"], syntax["location"]["positions"]["begin"]["line"]) == (
        "invalid-syntax", "major", 2)
    assert syntax["description"].startswith("invalid-syntax: SyntaxError: ")
    assert failed["check_name"] == "error" and failed["location"] == {"path": "boom.py", "lines": {"begin": 1}}
    # a line added above a finding moves it, not its fingerprint: GitLab sees the same issue
    Path("pkg/a.py").write_text("# moved\n" + EXP)
    moved = json.loads(check(capsys, "--output-format", "gitlab", ".")[1])
    assert [issue["fingerprint"] for issue in moved] == [issue["fingerprint"] for issue in report]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema).validate([{**report[0], "severity": "warning"}])


def test_gitlab_paths_are_relative_to_the_ci_project_dir(capsys: pytest.CaptureFixture[str], project: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_PROJECT_DIR", str(project))
    monkeypatch.chdir(project / "pkg")
    report = json.loads(check(capsys, "--output-format", "gitlab", "a.py")[1])
    assert [issue["location"]["path"] for issue in report] == ["pkg/a.py"]


def test_github_annotates_findings_as_warnings_and_failures_as_errors(capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with_broken_files(monkeypatch)
    _, out, _ = check(capsys, "--output-format", "github", ".")
    lines = out.splitlines()
    assert lines[0].startswith("::error title=np2torch (invalid-syntax),file=bad.py,line=2,col=")
    assert "::invalid-syntax: SyntaxError: " in lines[0]
    assert lines[-1] == "::error title=np2torch,file=boom.py::internal error: RuntimeError: kaboom"  # no place
    assert all(line.startswith("::warning title=np2torch (NPT") for line in lines[1:-1])


def test_sarif_names_the_failed_file(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    with_broken_files(monkeypatch)
    _, out, _ = check(capsys, "--output-format", "sarif", ".")
    run = json.loads(out)["runs"][0]
    [note] = run["invocations"][0]["toolExecutionNotifications"]
    assert note["message"]["text"].startswith("boom.py: internal error: RuntimeError: kaboom")
    assert run["results"][0]["ruleId"] == "invalid-syntax"


TEXT_REPORTS = {
    "concise": ["bad.py:2:7: invalid-syntax: SyntaxError: '(' was never closed",
                "gone.py:1:1: E902 No such file or directory (os error 2)"],
    "full": ["bad.py:2:7: invalid-syntax: SyntaxError: '(' was never closed", "  |", "2 | np.exp((x)",
             "  |       ^ invalid-syntax", "  |", "", "gone.py:1:1: E902 No such file or directory (os error 2)", ""],
    "grouped": ["bad.py:", "  2:7 invalid-syntax: SyntaxError: '(' was never closed", "", "gone.py:",
                "  1:1 E902 No such file or directory (os error 2)", ""],
    "pylint": ["bad.py:2: [invalid-syntax] SyntaxError: '(' was never closed",
               "gone.py:1: [E902] No such file or directory (os error 2)"],
}


@pytest.mark.parametrize("fmt", TEXT_REPORTS)
def test_a_syntax_error_and_a_missing_path_are_findings_in_the_text_formats(capsys: pytest.CaptureFixture[str],
                                                                            fmt: str) -> None:
    Path("bad.py").write_text(BROKEN)
    code, out, err = check(capsys, "--output-format", fmt, "bad.py", "gone.py")
    assert (code, err) == (1, "")  # as ruff prints invalid-syntax and E902: on stdout, counted, exit 1
    assert out.splitlines() == [*TEXT_REPORTS[fmt], *([] if fmt == "pylint" else ["Found 2 errors."])]  # (as ruff's)


def test_output_file_takes_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = check(capsys, "--output-format", "json", "--output-file", "report.json", ".")
    assert (code, out) == (1, "")
    assert [entry["code"] for entry in json.loads(Path("report.json").read_text())] == ["NPT002", "NPT001", "NPT001"]
    code, out, _ = check(capsys, "-o", "report.txt", ".")
    assert out == "" and Path("report.txt").read_text().endswith("Found 3 errors (3 fixable with `np2torch fix`).\n")


def test_environment_and_config_choose_the_format(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    Path("pyproject.toml").write_text("[tool.np2torch]\noutput-format = 'pylint'\n")
    assert check(capsys, "-q", "pkg/a.py")[1].startswith("pkg/a.py:5: [NPT001]")
    monkeypatch.setenv("NP2TORCH_OUTPUT_FORMAT", "grouped")  # the environment over the file, as RUFF_OUTPUT_FORMAT
    assert check(capsys, "pkg/a.py")[1].startswith("pkg/a.py:\n")
    assert check(capsys, "--output-format", "json", "pkg/a.py")[1].startswith("[")  # the command line over both
    monkeypatch.setenv("NP2TORCH_OUTPUT_FORMAT", "xml")
    code, _, err = check(capsys, "pkg/a.py")
    assert code == 2 and "NP2TORCH_OUTPUT_FORMAT" in err
    monkeypatch.delenv("NP2TORCH_OUTPUT_FORMAT")
    Path("pyproject.toml").write_text("[tool.np2torch]\noutput-format = 'ful'\n")
    code, _, err = check(capsys, "pkg/a.py")
    assert code == 2 and "(did you mean 'full'?)" in err


@pytest.mark.parametrize("fmt", OUTPUT_FORMATS)
def test_every_format_with_statistics_and_quiet_runs(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    assert check(capsys, "--output-format", fmt, "--statistics", ".")[0] == 1
    assert check(capsys, "--output-format", fmt, "-q", "pkg")[0] == 1


# ---------------------------------------------------------------- messages and summaries


UNSAFE = "import numpy as np\nw = np.log(np.sum(np.exp(x), axis=1))\nact = np.exp\n"


def test_unsafe_fixes_are_short_lines_and_worded_as_ruffs(capsys: pytest.CaptureFixture[str]) -> None:
    Path("u.py").write_text(UNSAFE)
    code, out, _ = check(capsys, "--select", "NPT901,NPT001", "u.py")
    lines = out.splitlines()
    assert lines[-2:] == ["Found 3 errors (1 fixable with `np2torch fix`).",
                          "2 hidden fixes can be enabled with the `--unsafe-fixes` option."]
    assert all(len(line) < 140 for line in lines), lines  # the reason's whole text is `full`'s
    assert lines[-3].endswith("NPT001 `numpy.exp` can run on torch via `np2torch.runtime.exp` (unsafe fix: --unsafe-fixes)")
    full = check(capsys, "--select", "NPT901,NPT001", "--output-format", "full", "u.py")[1]
    assert "= note: no fix: unsafe fix (it passes the function on" in full
    assert main(["fix", "--no-cache", "--select", "NPT901,NPT001", "u.py"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-3:-1] == ["Fixed 1 error in 1 file.", "Found 1 error that `--unsafe-fixes` would fix."]
    assert not any("cannot fix" in line for line in out)
    Path("v.py").write_text("import numpy as np\nact = np.exp\n")
    assert check(capsys, "v.py")[1].splitlines()[-1] == (
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).")


def test_messages_name_the_runtime_module_the_fixes_import(capsys: pytest.CaptureFixture[str]) -> None:
    Path("pyproject.toml").write_text("[tool.np2torch]\nruntime-module = 'mypkg._np2torch'\nextend-select = ['NPT901']\n")
    Path("w.py").write_text(UNSAFE)
    out = check(capsys, "w.py")[1]
    assert "via `mypkg._np2torch.exp`" in out and "`mypkg._np2torch.logsumexp` computes it stably" in out
    assert "np2torch.runtime" not in out
