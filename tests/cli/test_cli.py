"""The command line end to end: commands, output, exit codes, configuration, bad input."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

import pytest

from np2torch.cli import app as cli
from np2torch.cli import main

EXP = "import numpy as np\n\ny = np.exp(x)\n"
EXP_FIXED_LINE = "y = np2t.exp(x)"
CLEAN = "import math\n\ny = math.exp(x)\n"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NP2TORCH_LINT_CACHE_DIR", str(tmp_path / ".cache-under-test"))
    return tmp_path


def write(name: str, text: str | bytes) -> Path:
    path = Path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8"))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


# ---------------------------------------------------------------- check


def test_check_reports_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP)
    code, out, err = run(capsys, "check", "a.py")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("a.py:3:5: NPT001 ")
    assert lines[0].endswith(" [*]")
    assert lines[-1] == "Found 1 error (1 fixable with `np2torch fix`)."
    assert err == ""


def test_check_clean_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", CLEAN)
    assert run(capsys, "check", "a.py") == (0, "All checks passed!\n", "")


def test_check_defaults_to_the_current_folder(capsys: pytest.CaptureFixture[str]) -> None:
    write("pkg/a.py", EXP)
    code, out, _ = run(capsys, "check")
    assert code == 1 and out.startswith(os.path.join("pkg", "a.py") + ":3:5: NPT001")


def test_findings_are_sorted_by_path_and_position(capsys: pytest.CaptureFixture[str]) -> None:
    write("b.py", EXP)
    write("a.py", "import numpy as np\nz = np.log(q) + np.exp(q)\n")
    _, out, _ = run(capsys, "check", "--quiet", "b.py", "a.py")
    assert [line.split(" ")[:2] for line in out.splitlines()] == [
        ["a.py:2:5:", "NPT002"], ["a.py:2:17:", "NPT001"], ["b.py:3:5:", "NPT001"]
    ]


def test_quiet_prints_findings_only(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP)
    code, out, _ = run(capsys, "check", "-q", "a.py")
    assert code == 1 and len(out.splitlines()) == 1 and "Found" not in out
    write("a.py", CLEAN)
    assert run(capsys, "check", "--quiet", "a.py") == (0, "", "")


def test_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP)
    code, out, _ = run(capsys, "check", "--exit-zero", "a.py")
    assert code == 0 and "NPT001" in out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(["--select", "NPT002"], 0, id="select other rule"),
        pytest.param(["--select", "NPT001"], 1, id="select this rule"),
        pytest.param(["--select", "NPT00"], 1, id="select prefix"),
        pytest.param(["--select", "ALL"], 1, id="select all"),
        pytest.param(["--select", "NPT002,NPT001"], 1, id="comma separated"),
        pytest.param(["--ignore", "NPT001"], 0, id="ignore this rule"),
        pytest.param(["--ignore", "NPT"], 0, id="ignore prefix"),
        pytest.param(["--select", "NPT001", "--ignore", "NPT001"], 0, id="ignore beats select"),
    ],
)
def test_select_and_ignore(capsys: pytest.CaptureFixture[str], args: list[str], expected: int) -> None:
    write("a.py", EXP)
    assert run(capsys, "check", *args, "a.py")[0] == expected


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_code_is_a_usage_error(capsys: pytest.CaptureFixture[str], option: str) -> None:
    write("a.py", EXP)
    code, out, err = run(capsys, "check", option, "NPT001,NPX9", "a.py")
    assert code == 2 and out == ""
    assert "'NPX9'" in err


# ---------------------------------------------------------------- formats


def test_json_format(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP)
    code, out, _ = run(capsys, "check", "--format", "json", "a.py")
    assert code == 1
    [finding] = json.loads(out)
    assert set(finding) >= {"code", "message", "path", "line", "column", "end_line", "end_column", "fixable"}
    assert (finding["code"], finding["path"], finding["line"], finding["column"], finding["fixable"]) == (
        "NPT001", "a.py", 3, 5, True)
    assert finding["end_line"] == 3 and finding["end_column"] > 5


def test_json_format_clean_is_empty_array_and_nothing_else(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", CLEAN)
    code, out, _ = run(capsys, "check", "--format=json", "a.py")
    assert code == 0 and json.loads(out) == []


def test_github_format(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP)
    code, out, _ = run(capsys, "check", "--format", "github", "a.py")
    assert code == 1
    [line] = out.splitlines()
    assert line.startswith("::warning title=np2torch (NPT001),file=a.py,line=3,col=5,endLine=3,endColumn=")
    assert "::NPT001 " in line


def test_unknown_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP)
    assert run(capsys, "check", "--format", "xml", "a.py")[0] == 2


# ---------------------------------------------------------------- fix


def test_fix_rewrites_and_reports(capsys: pytest.CaptureFixture[str]) -> None:
    path = write("a.py", EXP)
    code, out, _ = run(capsys, "fix", "a.py")
    assert code == 0
    summary, note = out.splitlines()
    assert summary == "Fixed 1 error in 1 file."
    assert note.startswith("note: the fixed files now import np2torch.runtime at run time")  # no pyproject here
    text = path.read_text()
    assert EXP_FIXED_LINE in text and "import np2torch.runtime as np2t" in text
    assert run(capsys, "check", "a.py")[0] == 0


def test_second_fix_changes_nothing_and_does_not_touch_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    path = write("a.py", EXP)
    run(capsys, "fix", "a.py")
    before = path.stat()
    code, out, _ = run(capsys, "fix", "a.py")
    assert (code, out) == (0, "All checks passed!\n")
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_fix_never_writes_a_clean_file(capsys: pytest.CaptureFixture[str]) -> None:
    path = write("a.py", CLEAN)
    os.utime(path, ns=(1, 1))
    assert run(capsys, "fix", "a.py")[0] == 0
    assert path.stat().st_mtime_ns == 1


@pytest.mark.parametrize(
    ("raw", "must_contain"),
    [
        pytest.param(b"import numpy as np\r\n\r\ny = np.exp(x)\r\n", b"y = np2t.exp(x)\r\n", id="CRLF"),
        pytest.param(b"\xef\xbb\xbfimport numpy as np\n\ny = np.exp(x)\n", b"y = np2t.exp(x)\n", id="BOM"),
        pytest.param(b"import numpy as np\n\ny = np.exp(x)", b"y = np2t.exp(x)", id="no final newline"),
        pytest.param(b"# -*- coding: latin-1 -*-\nimport numpy as np\n\ns = '\xe9'\ny = np.exp(x)\n", b"s = '\xe9'\n",
                     id="latin-1 cookie"),
    ],
)
def test_fix_keeps_every_other_byte(capsys: pytest.CaptureFixture[str], raw: bytes, must_contain: bytes) -> None:
    path = write("a.py", raw)
    assert run(capsys, "fix", "a.py")[0] == 0
    new = path.read_bytes()
    assert must_contain in new and b"np2t.exp(x)" in new
    assert new.startswith(b"\xef\xbb\xbf") == raw.startswith(b"\xef\xbb\xbf")
    assert new.endswith(b"\n") == raw.endswith(b"\n")
    if b"\r\n" in raw:
        assert new.count(b"\n") == new.count(b"\r\n")
    # undoing the two edits gives back the original bytes exactly
    newline = b"\r\n" if b"\r\n" in raw else b"\n"
    undone = new.replace(b"import np2torch.runtime as np2t" + newline, b"", 1).replace(b"np2t.exp", b"np.exp")
    assert undone == raw


def test_fix_keeps_mode_bits(capsys: pytest.CaptureFixture[str]) -> None:
    path = write("script.py", "#!/usr/bin/env python\n" + EXP)
    path.chmod(0o751)
    run(capsys, "fix", "script.py")
    assert "np2t.exp" in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o751


def test_fix_refuses_read_only_and_hard_linked_files_and_fixes_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    write("ro.py", EXP).chmod(0o444)
    write("linked.py", EXP)
    os.link("linked.py", "other-name.py")
    write("good.py", EXP)
    code, out, err = run(capsys, "fix", "ro.py", "linked.py", "good.py")
    assert code == 2
    assert err.splitlines() == [
        "linked.py: error: fix not applied: the file has 2 hard links, and replacing it would leave the other "
        "links with the old code",
        "ro.py: error: fix not applied: the file is read-only",
    ]
    assert Path("ro.py").read_text() == Path("linked.py").read_text() == Path("other-name.py").read_text() == EXP
    assert stat.S_IMODE(Path("ro.py").stat().st_mode) == 0o444
    assert EXP_FIXED_LINE in Path("good.py").read_text()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_fix_as_root_keeps_owner_and_group(capsys: pytest.CaptureFixture[str]) -> None:
    path = write("theirs.py", EXP)
    os.chown(path, 65534, 65534)  # nobody:nogroup
    path.chmod(0o640)
    assert run(capsys, "fix", "theirs.py")[0] == 0
    st = path.stat()
    assert EXP_FIXED_LINE in path.read_text()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o640)


def test_fix_diff_writes_nothing_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    path = write("pkg/a.py", EXP)
    code, out, err = run(capsys, "fix", "--diff", "pkg/a.py")
    assert code == 1
    name = "pkg/a.py" if os.sep == "/" else "pkg\\a.py"
    assert out.startswith(f"--- {name}\n+++ {name}\n@@ ")  # ruff's header: no a/, b/
    assert "-y = np.exp(x)\n" in out and f"+{EXP_FIXED_LINE}\n" in out
    assert out.endswith("\n\nWould fix 1 error.\n") and err == ""  # ruff's line, after the patch
    assert path.read_text() == EXP


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("# -*- coding: latin-1 -*-\nimport numpy as np\n# caf\u00e9\ny = np.exp(x)  # \u00b5s\n"
                     .encode("latin-1"), id="PEP 263 latin-1"),
        pytest.param(b"\xef\xbb\xbfimport numpy as np\ny = np.exp(x)\n", id="UTF-8 BOM in a context line"),
        pytest.param("# coding: cp1252\nimport numpy as np\ns = '\u20ac'\ny = np.exp(x)".encode("cp1252"),
                     id="cp1252, no final newline"),
    ],
)
@pytest.mark.parametrize("tool", ["patch", "git"])
def test_fix_diff_applies_to_the_files_own_bytes(in_tmp: Path, raw: bytes, tool: str) -> None:
    import shutil

    if shutil.which(tool) is None:
        pytest.skip(f"needs {tool}")
    write("pkg/a.py", raw)
    done = subprocess.run([sys.executable, "-m", "np2torch", "fix", "--no-cache", "--diff", "pkg/a.py"],
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 1, done.stderr
    assert Path("pkg/a.py").read_bytes() == raw  # --diff writes nothing
    command = ["patch", "-p0", "--quiet"] if tool == "patch" else ["git", "apply", "-p0", "--whitespace=nowarn", "-"]
    if tool == "git":
        subprocess.run(["git", "init", "-q", "."], check=True)
    subprocess.run(command, input=done.stdout, check=True, timeout=300)  # ruff's summary line after it too
    applied = Path("pkg/a.py").read_bytes()
    write("pkg/a.py", raw)
    assert main(["fix", "--no-cache", "pkg/a.py"]) == 0
    assert applied == Path("pkg/a.py").read_bytes() != raw


def test_fix_diff_clean_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", CLEAN)
    assert run(capsys, "fix", "--diff", "-q", "a.py") == (0, "", "")
    assert run(capsys, "fix", "--diff", "a.py") == (0, "", "")  # ruff's says nothing either


def test_exit_non_zero_on_fix(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", EXP)
    assert run(capsys, "fix", "--exit-non-zero-on-fix", "a.py")[0] == 1
    assert run(capsys, "fix", "--exit-non-zero-on-fix", "a.py")[0] == 0


def test_fix_uses_runtime_module_and_alias_options(capsys: pytest.CaptureFixture[str]) -> None:
    path = write("a.py", EXP)
    assert run(capsys, "fix", "--runtime-module", "mypkg._np2torch", "--alias", "fast", "a.py")[0] == 0
    text = path.read_text()
    assert "import mypkg._np2torch as fast" in text and "y = fast.exp(x)" in text


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        pytest.param(["--alias", "npt"], "reserved", id="alias npt"),
        pytest.param(["--alias", "not-an-identifier"], "identifier", id="alias not identifier"),
        pytest.param(["--runtime-module", "a..b"], "dotted module name", id="bad module"),
        pytest.param(["--jobs", "0"], "--jobs", id="zero jobs"),
        pytest.param(["--no-such-option"], "No such option", id="unknown option"),
    ],
)
def test_bad_options_are_usage_errors(capsys: pytest.CaptureFixture[str], args: list[str], needle: str) -> None:
    path = write("a.py", EXP)
    code, out, err = run(capsys, "fix", *args, "a.py")
    assert code == 2 and needle in err
    assert path.read_text() == EXP


# ---------------------------------------------------------------- bad input


def test_a_syntax_error_is_one_finding_and_others_go_on(capsys: pytest.CaptureFixture[str]) -> None:
    write("bad.py", "import numpy as np\ndef f(:\n    np.exp(x)\n")
    write("good.py", EXP)
    code, out, err = run(capsys, "check", "bad.py", "good.py")
    assert code == 1 and err == ""  # a finding, as ruff's invalid-syntax
    bad, good, summary = out.splitlines()
    assert re.fullmatch(r"bad\.py:2:\d+: invalid-syntax: SyntaxError: .+", bad), bad
    assert good.startswith("good.py:3:5: NPT001")
    assert summary == "Found 2 errors (1 fixable with `np2torch fix`)."


def test_fix_with_a_syntax_error_elsewhere_still_fixes_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    bad = write("bad.py", "import numpy as np\nx = np.exp(\n")
    good = write("good.py", EXP)
    code, out, err = run(capsys, "fix", "bad.py", "good.py")
    assert code == 1 and err == "" and out.startswith("bad.py:2:11: invalid-syntax: ")
    assert "Found 1 error that np2torch cannot fix." in out
    assert bad.read_text() == "import numpy as np\nx = np.exp(\n" and "np2t.exp" in good.read_text()


@pytest.mark.parametrize(
    ("raw", "line"),
    [
        pytest.param(b"\x7fELF\x02\x01\x01\x00\x00\x00",  # at 1:1, as ruff's first
                     "bin.py:1:1: invalid-syntax: SyntaxError: invalid non-printable character U+007F", id="binary"),
        pytest.param(b"x = 1\ny = '\xff\xfe'\n", "bin.py:1:1: E902 stream did not contain valid UTF-8", id="bad utf-8"),
    ],
)
def test_a_file_that_is_not_source_is_a_finding_as_ruffs(capsys: pytest.CaptureFixture[str], raw: bytes,
                                                         line: str) -> None:
    write("bin.py", raw)
    write("good.py", EXP)
    code, out, err = run(capsys, "check", "bin.py", "good.py")
    assert (code, err) == (1, "")
    assert out.splitlines()[0] == line and "good.py:3:5" in out


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # a regression fails, not the machine


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="POSIX only")
@pytest.mark.parametrize("command", ["check", "fix"])
def test_non_regular_files_are_refused_and_others_go_on(in_tmp: Path, command: str) -> None:
    os.mkfifo("f.py")
    write("good.py", EXP)
    done = subprocess.run([sys.executable, "-m", "np2torch", command, "--no-cache", "f.py", "/dev/zero", "good.py"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
                          preexec_fn=_limit_memory)
    assert (done.returncode, done.stderr) == (1, "")  # files np2torch will not read: E902, as ruff's cannot
    assert "/dev/zero:1:1: E902 not a regular file (a character device)" in done.stdout
    assert "f.py:1:1: E902 not a regular file (a FIFO)" in done.stdout
    if command == "check":
        assert "good.py:3:5: NPT001" in done.stdout
    else:
        assert EXP_FIXED_LINE in Path("good.py").read_text()


def test_a_file_above_the_size_limit_is_ruffs_e902(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from np2torch.cli import files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", len(EXP))
    write("big.py", EXP + "\n")
    write("good.py", EXP)
    code, out, err = run(capsys, "check", "big.py", "good.py")
    assert (code, err) == (1, "")  # ruff has no limit; np2torch reports the file as one ruff cannot read
    assert out.splitlines()[0] == f"big.py:1:1: E902 file larger than {len(EXP)} bytes, not read"
    assert "good.py:3:5: NPT001" in out


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_missing_path_is_a_finding_as_ruffs_e902(capsys: pytest.CaptureFixture[str], command: str) -> None:
    write("good.py", CLEAN)
    code, out, err = run(capsys, command, "missing.py", "good.py")
    assert (code, err) == (1, "")
    assert out.splitlines()[0] == "missing.py:1:1: E902 No such file or directory (os error 2)"
    assert out.splitlines()[1] == ("Found 1 error." if command == "check" else "Found 1 error that np2torch cannot fix.")


def test_a_missing_folder_is_named_as_given_without_its_slash(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "check", "gone/") == (1, "gone:1:1: E902 No such file or directory (os error 2)\nFound 1 error.\n", "")


def test_internal_error_is_named_not_hidden(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from np2torch.lint import engine

    real = engine.check_source

    def flaky(source: str, path: str = "<string>", **kwargs: object) -> list[object]:
        if path == "boom.py":
            raise RuntimeError("kaboom\nsecond line")
        return real(source, path, **kwargs)

    monkeypatch.setattr(engine, "check_source", flaky)
    write("boom.py", EXP)
    write("good.py", EXP)
    code, out, err = run(capsys, "check", "--no-cache", "-j", "1", "boom.py", "good.py")
    assert code == 2
    assert err == "boom.py: internal error: RuntimeError: kaboom second line\n"
    assert "good.py:3:5: NPT001" in out


def test_fix_error_leaves_the_file_untouched(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from np2torch.lint import engine

    def broken(source: str, path: str = "<string>", **kwargs: object) -> engine.FixResult:
        raise engine.FixError("the fixed text does not parse")

    monkeypatch.setattr(engine, "fix_and_check", broken)
    path = write("a.py", EXP)
    code, out, err = run(capsys, "fix", "--no-cache", "-j", "1", "a.py")
    assert code == 2
    assert err.startswith("a.py: error: fix not applied, file left untouched: ")
    assert path.read_text() == EXP
    assert "a.py:3:5: NPT001" in out


@pytest.mark.parametrize("mode", [["fix"], ["fix", "--diff"]])
def test_fix_analyses_each_file_once(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                     mode: list[str]) -> None:
    from np2torch.lint import engine

    analysed: list[str] = []
    real = engine._analyze

    def counting(source: str, path: str, *args: object, **kwargs: object) -> object:
        analysed.append(path)
        return real(source, path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "_analyze", counting)
    write("a.py", EXP)
    write("b.py", EXP + "z = np.log(y)\n")
    code, out, err = run(capsys, *mode, "--no-cache", "-j", "1", "a.py", "b.py")
    assert code == (1 if "--diff" in mode else 0) and err.count("3 errors") + out.count("3 errors") == 1
    assert sorted(analysed) == ["a.py", "b.py"]


def test_no_files_is_not_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    write("notes.txt", "hi")
    code, out, err = run(capsys, "check", ".")
    assert code == 0 and "no Python files" in err
    assert run(capsys, "check", "-q", ".") == (0, "", "")


# ---------------------------------------------------------------- configuration


def test_config_is_applied(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nignore = ['NPT001']\n")
    write("a.py", EXP)
    assert run(capsys, "check", "a.py")[0] == 0
    assert run(capsys, "check", "--select", "NPT001", "a.py")[0] == 1


def test_config_alias_is_used_by_fix(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nalias = 'fast'\n")
    path = write("a.py", EXP)
    run(capsys, "fix", "a.py")
    assert "fast.exp(x)" in path.read_text()


def test_unknown_config_key(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nfoo = 1\n")
    write("a.py", EXP)
    assert run(capsys, "check", "a.py") == (2, "", "error: pyproject.toml: unknown key 'foo' in [tool.np2torch]\n")


def test_bad_config_value(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nselect = ['NPT999']\n")
    write("a.py", EXP)
    code, _, err = run(capsys, "check", "a.py")
    assert code == 2 and "'select'" in err and "'NPT999'" in err


def test_config_nested_thousands_deep_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    write("a.py", EXP)
    assert run(capsys, "check", "a.py") == (2, "", "error: pyproject.toml: invalid TOML: nested too deeply\n")


def test_explicit_config_file(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nignore = ['NPT001']\n")
    write("strict.toml", "[tool.np2torch]\nselect = ['ALL']\n")
    write("a.py", EXP)
    assert run(capsys, "check", "--config", "strict.toml", "a.py")[0] == 1
    assert run(capsys, "check", "--config", "nope.toml", "a.py")[0] == 2


def test_force_exclude(capsys: pytest.CaptureFixture[str]) -> None:
    write("pyproject.toml", "[tool.np2torch]\nextend-exclude = ['generated']\n")
    write("generated/a.py", EXP)
    assert run(capsys, "check", "generated/a.py")[0] == 1
    assert run(capsys, "check", "--force-exclude", "-q", "generated/a.py") == (0, "", "")
    assert run(capsys, "check", ".")[0] == 0


# ---------------------------------------------------------------- the command group


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from np2torch import __version__

    assert run(capsys, "--version") == (0, f"np2torch {__version__}\n", "")


def test_rules_lists_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    from np2torch.lint.rules import RULES

    code, out, _ = run(capsys, "rules")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()[1:]] == [r.code for r in RULES]


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys)[0] == 2
    assert run(capsys, "frobnicate")[0] == 2


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "np2t_fake_ok.py").write_text(textwrap.dedent("""
        import click

        @click.command()
        def command():
            '''Fake subcommand.'''
            click.echo("fake ran")
    """))
    (folder / "np2t_fake_broken.py").write_text("raise ImportError('needs torch')\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(cli, "LAZY_COMMANDS", {
        "fake": ("np2t_fake_ok", "command", "A fake one."),
        "broken": ("np2t_fake_broken", "command", "Broken."),
        "absent": ("np2t_fake_absent", "command", "Not installed."),
    })
    for name in ("np2t_fake_ok", "np2t_fake_broken"):
        sys.modules.pop(name, None)
    return folder


def test_lazy_commands_are_listed_without_importing(capsys: pytest.CaptureFixture[str], plugin_dir: Path) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "fake" in out and "A fake one." in out and "broken" in out
    assert "absent" not in out
    assert "np2t_fake_ok" not in sys.modules and "np2t_fake_broken" not in sys.modules


def test_lazy_command_runs_when_asked(capsys: pytest.CaptureFixture[str], plugin_dir: Path) -> None:
    assert run(capsys, "fake") == (0, "fake ran\n", "")


def test_lazy_command_that_fails_to_import(capsys: pytest.CaptureFixture[str], plugin_dir: Path) -> None:
    code, _, err = run(capsys, "broken")
    assert code == 2 and "unavailable: ImportError: needs torch" in err
    assert run(capsys, "absent")[0] == 2


# ---------------------------------------------------------------- as a program


def test_python_m_np2torch_with_no_stdin(in_tmp: Path) -> None:
    write("a.py", EXP)
    done = subprocess.run([sys.executable, "-m", "np2torch", "check", "a.py"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("a.py:3:5: NPT001")


def test_console_script(in_tmp: Path) -> None:
    script = Path(sys.executable).with_name("np2torch")
    if not script.exists():
        pytest.skip("np2torch console script not installed next to this interpreter")
    write("a.py", EXP)
    done = subprocess.run([str(script), "fix", "a.py"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert EXP_FIXED_LINE in Path("a.py").read_text()
    done = subprocess.run([str(script), "check", "--select", "BOGUS"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr


# ---------------------------------------------------------------- exit codes, all together

UNFIXABLE = "import numpy as np\n\nsame = f is np.exp\n"


def test_fix_exits_1_when_unfixable_findings_remain(capsys: pytest.CaptureFixture[str]) -> None:
    path = write("a.py", EXP + UNFIXABLE.replace("import numpy as np\n\n", ""))
    code, out, _ = run(capsys, "fix", "a.py")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("a.py:5:13: NPT001 ") and "(no fix: it is compared" in lines[0]
    assert lines[1:3] == ["Fixed 1 error in 1 file.", "Found 1 error that np2torch cannot fix."]
    assert "np2t.exp(x)" in path.read_text()
    assert run(capsys, "fix", "--exit-zero", "a.py")[0] == 0


def test_check_unfixable_only(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", UNFIXABLE)
    code, out, _ = run(capsys, "check", "a.py")
    assert code == 1 and out.splitlines()[-1] == "Found 1 error."


def test_fix_diff_with_only_unfixable_findings_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    write("a.py", UNFIXABLE)
    assert run(capsys, "fix", "--diff", "a.py") == (0, "", "")  # ruff's says nothing either


def _boom(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in np2torch (not a bad file) for ``boom.py``, in check and in fix."""
    from np2torch.lint import engine

    def fail(real: Callable[..., object]) -> Callable[..., object]:
        def wrapper(source: str, path: str = "<string>", **kwargs: object) -> object:
            if path == "boom.py":
                raise RuntimeError("kaboom")
            return real(source, path, **kwargs)
        return wrapper

    monkeypatch.setattr(engine, "check_source", fail(engine.check_source))
    monkeypatch.setattr(engine, "fix_and_check", fail(engine.fix_and_check))


def test_errors_win_over_findings_and_exit_zero(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _boom(monkeypatch)
    write("good.py", EXP)
    write("boom.py", EXP)
    code, out, _ = run(capsys, "check", "--no-cache", "--exit-zero", "good.py", "boom.py")
    assert code == 2 and "good.py:3:5" in out
    code, _, _ = run(capsys, "fix", "--no-cache", "--diff", "good.py", "boom.py")
    assert code == 2


not_utf8_names = pytest.mark.skipif(sys.platform != "linux", reason="Linux file names are bytes; others' are text")


@not_utf8_names
@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_file_names_that_are_not_utf8(capsysbinary: pytest.CaptureFixture[bytes], fmt: str) -> None:
    # Python decodes b"\xff" in a name as "\udcff", which a strict UTF-8 stdout refuses.
    write(os.fsdecode(b"bad\xff.py"), EXP)
    write(os.fsdecode(b"broken\xfe.py"), "import numpy as np\ny = np.exp(x\n")
    code = main(["check", "--no-cache", "--format", fmt, "."])
    out, err = capsysbinary.readouterr()
    assert code == 1 and err == b""  # the syntax error is a finding, in the report
    if fmt == "text":
        assert out.splitlines()[:2] == [b"bad\xff.py:3:5: NPT001 `numpy.exp` can run on torch via "
                                        b"`np2torch.runtime.exp` [*]",
                                        b"broken\xfe.py:2:11: invalid-syntax: SyntaxError: '(' was never closed"]
    elif fmt == "github":
        assert b",file=bad\xff.py,line=3," in out and b",file=broken\xfe.py,line=2," in out
    elif fmt == "json":  # ASCII JSON; "\udcff" turns back into the name's bytes with os.fsencode
        finding, failed = json.loads(out)
        assert os.fsencode(finding["path"]) == b"bad\xff.py"
        assert (failed["code"], os.fsencode(failed["path"]), failed["line"]) == ("invalid-syntax", b"broken\xfe.py", 2)
    else:  # SARIF must be valid UTF-8: the URIs percent-encode the bytes
        run_ = json.loads(out.decode("utf-8"))["runs"][0]
        uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run_["results"]]
        assert uris == ["bad%FF.py", "broken%FE.py"]


@not_utf8_names
def test_fix_diff_of_a_file_name_that_is_not_utf8_applies(in_tmp: Path,
                                                            capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    import shutil

    if shutil.which("patch") is None:
        pytest.skip("needs patch")
    name = os.fsdecode(b"bad\xff.py")
    write(name, EXP)
    assert main(["fix", "--no-cache", "--diff", name]) == 1
    patch = capsysbinary.readouterr().out
    assert patch.startswith(b"--- bad\xff.py\n+++ bad\xff.py\n")
    subprocess.run(["patch", "-p0", "--quiet"], input=patch, check=True, timeout=300)
    assert EXP_FIXED_LINE in Path(name).read_text()


def test_json_stays_valid_when_a_file_fails(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _boom(monkeypatch)
    write("good.py", EXP)
    write("boom.py", EXP)
    code, out, err = run(capsys, "check", "--no-cache", "--format", "json", "good.py", "boom.py")
    document = json.loads(out)
    assert code == 2 and [(f["path"], f["code"]) for f in document] == [("good.py", "NPT001"), ("boom.py", None)]
    assert (document[1]["line"], document[1]["fixable"], document[1]["severity"]) == (None, False, "error")
    assert err.startswith("boom.py: internal error: RuntimeError: kaboom")


def test_a_bug_outside_file_work_is_named_without_traceback(capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("surprise")

    monkeypatch.setattr(cli, "discover", broken)
    assert run(capsys, "check", ".") == (2, "", "np2torch: internal error: KeyError: 'surprise'\n")
