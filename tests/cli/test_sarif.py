"""`--format sarif`: a SARIF 2.1.0 log, validated against the OASIS schema (vendored in tests/data)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from np2torch.cli import main
from np2torch.cli.sarif import sarif_log
from np2torch.lint.rules import RULES

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json.loads((Path(__file__).parent.parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def validate(log: dict) -> None:
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(log)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NP2TORCH_LINT_CACHE_DIR", str(tmp_path / ".cache-under-test"))
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_schema_catches_a_broken_log() -> None:
    """The validation can fail: a result without a message is rejected."""
    log = sarif_log([])
    log["runs"][0]["results"] = [{"ruleId": "NPT001"}]
    with pytest.raises(jsonschema.ValidationError):
        validate(log)
    with pytest.raises(jsonschema.ValidationError):
        validate({"version": "2.1.0"})


def test_check_sarif_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    Path("pkg").mkdir()
    Path("pkg/a b.py").write_text("import numpy as np\n\ny = np.exp(x)\nsame = np.log is f\n")
    Path("clean.py").write_text("import math\nmath.exp(1)\n")
    code, out, err = run(capsys, "check", "--format", "sarif", "pkg", "clean.py")
    assert code == 1 and err == ""
    log = json.loads(out)
    validate(log)
    run_ = log["runs"][0]
    assert log["version"] == "2.1.0"
    assert [rule["id"] for rule in run_["tool"]["driver"]["rules"]] == [rule.code for rule in RULES]
    assert run_["invocations"][0]["executionSuccessful"] is True
    first, second = run_["results"]
    assert first["ruleId"] == "NPT001" and first["level"] == "warning"
    assert run_["tool"]["driver"]["rules"][first["ruleIndex"]]["id"] == "NPT001"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "pkg/a%20b.py"
    assert location["region"] == {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 11}
    assert first["properties"]["fixable"] is True
    assert second["ruleId"] == "NPT002" and second["properties"]["fixable"] is False
    assert "no fix" in second["message"]["text"]


def test_files_that_could_not_be_checked_are_notifications(capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from np2torch.lint import engine

    real = engine.check_source

    def flaky(source: str, path: str = "<string>", **kwargs: object) -> object:
        if path == "bad.py":  # a bug in np2torch: what still fails a file, now that a bad file is a finding
            raise RuntimeError("kaboom")
        return real(source, path, **kwargs)

    monkeypatch.setattr(engine, "check_source", flaky)
    Path("bad.py").write_text("import numpy as np\nnp.exp(x)\n")
    Path("a.py").write_text("import numpy as np\nnp.exp(x)\n")
    code, out, err = run(capsys, "check", "--no-cache", "--format", "sarif", "a.py", "bad.py")
    assert code == 2
    assert "bad.py" in err  # stderr still names it, as in every format
    log = json.loads(out)
    validate(log)
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert [n["level"] for n in invocation["toolExecutionNotifications"]] == ["error"]
    assert "bad.py" in invocation["toolExecutionNotifications"][0]["message"]["text"]
    assert len(log["runs"][0]["results"]) == 1


def test_a_syntax_error_and_a_missing_path_are_results_of_level_error(capsys: pytest.CaptureFixture[str]) -> None:
    Path("bad.py").write_text("import numpy as np\nnp.exp((x)\n")
    Path("a.py").write_text("import numpy as np\nnp.exp(x)\n")
    code, out, err = run(capsys, "check", "--format", "sarif", "a.py", "bad.py", "gone.py")
    assert (code, err) == (1, "")  # as ruff's: findings, on stdout only
    log = json.loads(out)
    validate(log)
    run_ = log["runs"][0]
    assert run_["invocations"][0] == {"executionSuccessful": True, "toolExecutionNotifications": []}
    results = [(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"], "ruleIndex" in r) for r in run_["results"]]
    assert results == [("NPT001", "warning", "a.py", 2, True), ("invalid-syntax", "error", "bad.py", 2, False),
                       ("E902", "error", "gone.py", 1, False)]
    assert run_["results"][2]["message"]["text"] == "No such file or directory (os error 2)"


def test_no_findings_is_a_valid_empty_log(capsys: pytest.CaptureFixture[str]) -> None:
    Path("clean.py").write_text("import math\nmath.exp(1)\n")
    code, out, _ = run(capsys, "check", "--format", "sarif", "clean.py")
    assert code == 0
    log = json.loads(out)
    validate(log)
    assert log["runs"][0]["results"] == []


def test_absolute_paths_become_file_uris(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "abs.py"
    path.write_text("import numpy as np\nnp.exp(x)\n")
    code, out, _ = run(capsys, "check", "--format", "sarif", str(path))
    assert code == 1
    log = json.loads(out)
    validate(log)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == path.as_uri()


def test_multiline_region_and_non_ascii_columns(capsys: pytest.CaptureFixture[str]) -> None:
    Path("m.py").write_text("import numpy as np\n\u00e9 = 1; y = (np\n   .exp)(x)\n", encoding="utf-8")
    code, out, _ = run(capsys, "check", "--format", "sarif", "m.py")
    assert code == 1
    log = json.loads(out)
    validate(log)
    assert log["runs"][0]["columnKind"] == "unicodeCodePoints"
    region = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 2, "startColumn": 13, "endLine": 3, "endColumn": 8}


@pytest.mark.skipif(sys.platform != "linux", reason="Linux file names are bytes")
def test_names_that_are_not_utf8_stay_exact_in_uris_and_readable_in_messages() -> None:
    from np2torch.cli import sarif

    name = os.fsdecode(b"d\xe9j\xe0 vu/caf\xe9.py")  # latin-1 bytes: invalid UTF-8
    assert sarif._uri(name) == "d%E9j%E0%20vu/caf%E9.py"
    assert sarif._uri("/" + name) == "file:///d%E9j%E0%20vu/caf%E9.py"
    assert sarif._text(f"{name}: error: x") == "d\\xe9j\\xe0 vu/caf\\xe9.py: error: x"
    assert sarif._text("caf\u00e9 \u2603") == "caf\u00e9 \u2603"  # valid text is left alone
