"""Check speed machinery: the result cache, --jobs worker pools and the progress bar."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from np2torch.cli import main, runner
from np2torch.cli.cache import CACHEDIR_TAG, Cache
from np2torch.cli.config import RunSettings
from np2torch.cli.output import Progress
from np2torch.lint.engine import Settings
from np2torch.lint.rules import RULES_BY_CODE

EXP = "import numpy as np\n\ny = np.exp(x)\n"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NP2TORCH_LINT_CACHE_DIR", raising=False)
    return tmp_path


@pytest.fixture
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths the engine was asked to analyse (check, or fix and check), in this process."""
    from np2torch.lint import engine

    calls: list[str] = []
    for name in ("check_source", "fix_and_check"):
        real = getattr(engine, name)

        def counting(source: str, path: str = "<string>", *, real: Any = real, **kwargs: Any) -> Any:
            calls.append(path)
            return real(source, path, **kwargs)

        monkeypatch.setattr(engine, name, counting)
    return calls


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([args[0], "-j", "1", *args[1:]])
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------- cache


def test_second_check_is_served_from_the_cache(capsys: pytest.CaptureFixture[str], engine_calls: list[str]) -> None:
    Path("a.py").write_text(EXP)
    first = run(capsys, "check", "a.py")
    assert engine_calls == ["a.py"]
    second = run(capsys, "check", "a.py")
    assert engine_calls == ["a.py"]  # not asked again
    assert first == second and first[0] == 1
    folder = Path(".np2torch_cache")
    assert (folder / "CACHEDIR.TAG").read_text() == CACHEDIR_TAG
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"


def test_cached_findings_equal_fresh_ones(capsys: pytest.CaptureFixture[str]) -> None:
    Path("a.py").write_text("import numpy as np\nf = [np.exp, np.log]\nt = f is np.exp\n")
    fresh = run(capsys, "check", "--format", "json", "a.py")
    cached = run(capsys, "check", "--format", "json", "a.py")
    assert json.loads(cached[1]) == json.loads(fresh[1]) and len(json.loads(fresh[1])) == 3
    assert run(capsys, "check", "a.py")[1] == run(capsys, "check", "--no-cache", "a.py")[1]


def test_changed_content_misses(capsys: pytest.CaptureFixture[str], engine_calls: list[str]) -> None:
    path = Path("a.py")
    path.write_text(EXP)
    run(capsys, "check", "a.py")
    path.write_text(EXP + "z = np.log(y)\n")
    code, out, _ = run(capsys, "check", "a.py")
    assert len(engine_calls) == 2 and "NPT002" in out


def test_other_settings_miss(capsys: pytest.CaptureFixture[str], engine_calls: list[str]) -> None:
    Path("a.py").write_text(EXP + "z = np.log(y)\n")
    run(capsys, "check", "a.py")
    code, out, _ = run(capsys, "check", "--select", "NPT002", "a.py")
    assert len(engine_calls) == 2 and "NPT001" not in out and "NPT002" in out


def test_moved_cwd_and_spelling_reuse_the_entry(capsys: pytest.CaptureFixture[str], engine_calls: list[str],
                                               monkeypatch: pytest.MonkeyPatch, in_tmp: Path) -> None:
    monkeypatch.setenv("NP2TORCH_LINT_CACHE_DIR", str(in_tmp / "shared-cache"))
    Path("pkg").mkdir()
    Path("pkg/a.py").write_text(EXP)
    run(capsys, "check", "pkg/a.py")
    monkeypatch.chdir(in_tmp / "pkg")
    code, out, _ = run(capsys, "check", "a.py")
    assert engine_calls == [os.path.join("pkg", "a.py")]
    assert out.startswith("a.py:3:5: NPT001")  # the cached finding shows today's path


def test_no_cache_neither_reads_nor_writes(capsys: pytest.CaptureFixture[str], engine_calls: list[str]) -> None:
    Path("a.py").write_text(EXP)
    run(capsys, "check", "--no-cache", "a.py")
    run(capsys, "check", "--no-cache", "a.py")
    assert len(engine_calls) == 2
    assert not Path(".np2torch_cache").exists()


def test_fix_after_check_still_fixes(capsys: pytest.CaptureFixture[str], engine_calls: list[str]) -> None:
    path = Path("a.py")
    path.write_text(EXP)
    run(capsys, "check", "a.py")
    assert run(capsys, "fix", "a.py")[0] == 0
    assert "np2t.exp(x)" in path.read_text()
    calls = len(engine_calls)
    # fix cached the fixed file's (empty) result: the next check does not run the engine
    assert run(capsys, "check", "a.py")[:2] == (0, "All checks passed!\n")
    assert len(engine_calls) == calls


def test_fix_skips_files_cached_as_clean(capsys: pytest.CaptureFixture[str], engine_calls: list[str]) -> None:
    Path("a.py").write_text("import numpy as np\n\ny = np.exp(2.0)\n")  # constant argument: no finding
    run(capsys, "check", "a.py")
    assert run(capsys, "fix", "a.py")[0] == 0
    assert engine_calls == ["a.py"]


def test_tool_change_misses(in_tmp: Path) -> None:
    settings = RunSettings(Settings(rules=(RULES_BY_CODE["NPT001"],)))
    Cache(in_tmp / "c", fingerprint="old").put("a.py", settings, "d1", [])
    assert Cache(in_tmp / "c", fingerprint="old").get("a.py", settings, "d1") == []
    assert Cache(in_tmp / "c", fingerprint="new").get("a.py", settings, "d1") is None
    assert Cache(in_tmp / "c", fingerprint="old").get("a.py", settings, "d2") is None


def test_fingerprint_follows_the_package_sources() -> None:
    from np2torch.cli.cache import tool_fingerprint

    assert tool_fingerprint() == tool_fingerprint()
    assert len(tool_fingerprint()) == 64


@pytest.mark.parametrize("garbage", [b"", b"{not json", b"[]", b'{"fingerprint": 3}', b"\xff\xfe"])
def test_corrupt_entries_are_misses(in_tmp: Path, garbage: bytes) -> None:
    settings = RunSettings(Settings(rules=(RULES_BY_CODE["NPT001"],)))
    cache = Cache(in_tmp / "c", fingerprint="f")
    cache.put("a.py", settings, "d", [])
    [entry] = (in_tmp / "c").glob("*/*.json")
    entry.write_bytes(garbage)
    assert cache.get("a.py", settings, "d") is None


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda f: {**f, "line": "3"}, id="line as a string"),
        pytest.param(lambda f: {**f, "line": True}, id="line as a boolean"),
        pytest.param(lambda f: {**f, "column": -1}, id="negative column"),
        pytest.param(lambda f: {**f, "line": 3.0}, id="line as a float"),
        pytest.param(lambda f: {**f, "fixable": "no"}, id="fixable as a string"),
        pytest.param(lambda f: {**f, "code": 1}, id="code as a number"),
        pytest.param(lambda f: {**f, "reason": ["x"]}, id="reason as an array"),
        pytest.param(lambda f: {**f, "extra": 1}, id="unknown field"),
        pytest.param(lambda f: {k: v for k, v in f.items() if k != "message"}, id="missing field"),
        pytest.param(lambda f: [f], id="finding as an array"),
        pytest.param(lambda f: None, id="finding as null"),
    ],
)
@pytest.mark.parametrize("command", ["check", "fix"])
def test_malformed_cached_findings_are_misses(capsys: pytest.CaptureFixture[str], engine_calls: list[str],
                                              spoil: Any, command: str) -> None:
    Path("a.py").write_text("import numpy as np\nt = f is np.exp\n")  # an unfixable finding: fix uses the cache too
    fresh = run(capsys, command, "a.py")
    [entry_path] = Path(".np2torch_cache").glob("*/*.json")
    entry = json.loads(entry_path.read_bytes())
    entry["findings"] = [spoil(f) for f in entry["findings"]]
    entry_path.write_text(json.dumps(entry))
    assert run(capsys, command, "a.py") == fresh and fresh[0] == 1
    assert engine_calls == ["a.py", "a.py"]  # the spoiled entry was a miss, and was rewritten
    assert run(capsys, command, "a.py") == fresh and engine_calls == ["a.py", "a.py"]


def test_deeply_nested_entry_is_a_miss(in_tmp: Path) -> None:
    settings = RunSettings(Settings(rules=(RULES_BY_CODE["NPT001"],)))
    cache = Cache(in_tmp / "c", fingerprint="f")
    cache.put("a.py", settings, "d", [])
    [entry] = (in_tmp / "c").glob("*/*.json")
    entry.write_text("[" * 100_000 + "]" * 100_000)
    assert cache.get("a.py", settings, "d") is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_an_entry_that_is_not_a_regular_file_is_a_miss(in_tmp: Path) -> None:
    settings = RunSettings(Settings(rules=(RULES_BY_CODE["NPT001"],)))
    cache = Cache(in_tmp / "c", fingerprint="f")
    cache.put("a.py", settings, "d", [])
    [entry] = (in_tmp / "c").glob("*/*.json")
    entry.unlink()
    os.mkfifo(entry)  # reading it would wait for a writer for ever
    assert cache.get("a.py", settings, "d") is None


def test_unwritable_cache_warns_once_and_results_hold(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch, in_tmp: Path) -> None:
    blocker = in_tmp / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("NP2TORCH_LINT_CACHE_DIR", str(blocker))
    Path("a.py").write_text(EXP)
    Path("b.py").write_text(EXP)
    code, out, err = run(capsys, "check", "a.py", "b.py")
    assert code == 1 and out.count("NPT001") == 2
    assert err.count("warning: cannot write the cache") == 1
    assert run(capsys, "check", "-q", "a.py")[2] == ""  # --quiet: findings and errors only


def test_concurrent_runs_share_a_cache(in_tmp: Path) -> None:
    src = in_tmp / "src"
    src.mkdir()
    for i in range(30):
        (src / f"m{i}.py").write_text(EXP if i % 2 else "import numpy as np\nz = np.log(q)\n")
    command = [sys.executable, "-m", "np2torch", "check", "-j", "1", "src"]
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              cwd=in_tmp, text=True) for _ in range(3)]
    outputs = [proc.communicate(timeout=180) for proc in procs]
    assert [proc.returncode for proc in procs] == [1, 1, 1]
    assert len({out for out, _ in outputs}) == 1 and all(err == "" for _, err in outputs)
    entries = list((in_tmp / ".np2torch_cache").glob("*/*.json"))
    assert len(entries) == 30
    assert all(isinstance(json.loads(e.read_bytes()), dict) for e in entries)
    assert not list((in_tmp / ".np2torch_cache").glob("*/.*.tmp"))


# ---------------------------------------------------------------- --jobs


@pytest.mark.parametrize(("jobs", "files", "expected"), [(8, 3, 0), (8, 8, 2), (2, 100, 2), (1, 100, 1), (16, 40, 10)])
def test_workers_for(jobs: int, files: int, expected: int) -> None:
    assert runner.workers_for(jobs, files) == expected


def make_tree(root: Path, count: int) -> None:
    root.mkdir(exist_ok=True)
    for i in range(count):
        (root / f"m{i:02}.py").write_text(
            f"import numpy as np\nfrom scipy.special import erf\n\ndef f(x):\n    return np.exp(x) * erf(x) + {i}\n")


def test_pool_output_equals_serial_output(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    make_tree(in_tmp / "src", 16)
    serial = main(["check", "--no-cache", "-j", "1", "src"]), capsys.readouterr()
    pooled = main(["check", "--no-cache", "-j", "3", "src"]), capsys.readouterr()
    assert serial == pooled and serial[0] == 1
    assert serial[1].out.count("NPT001") == 16 and serial[1].out.count("NPT003") == 16


def test_pool_really_uses_other_processes(in_tmp: Path) -> None:
    # In a fresh interpreter (no torch loaded, so the pool forks and inherits the patched engine).
    make_tree(in_tmp / "src", 16)
    code = f"""
import os
from np2torch.lint import engine
from np2torch.cli import main

real = engine.fix_and_check

def recording(source, path="<string>", **kwargs):
    with open({str(in_tmp / "pids")!r}, "a") as handle:
        handle.write(f"{{os.getpid()}}\\n")
    return real(source, path, **kwargs)

engine.fix_and_check = recording
print(os.getpid(), main(["fix", "--no-cache", "-j", "2", "src"]))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=in_tmp, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=180)
    parent, returned = done.stdout.split()[-2:]
    assert returned == "0", done.stderr
    seen = set((in_tmp / "pids").read_text().split())
    assert parent not in seen and len(seen) == 2
    assert all("np2t.exp(x)" in p.read_text() for p in (in_tmp / "src").glob("*.py"))


def test_spawned_workers_give_the_same_results(capsys: pytest.CaptureFixture[str], in_tmp: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    make_tree(in_tmp / "src", 8)
    serial = main(["check", "--no-cache", "-j", "1", "src"]), capsys.readouterr().out
    monkeypatch.setattr(runner, "_pool_context", lambda: multiprocessing.get_context("spawn"))
    assert runner.workers_for(2, 8) == 2
    assert (main(["check", "--no-cache", "-j", "2", "src"]), capsys.readouterr().out) == serial


def test_few_files_stay_in_process(capsys: pytest.CaptureFixture[str], engine_calls: list[str], in_tmp: Path) -> None:
    make_tree(in_tmp / "src", 3)
    main(["check", "--no-cache", "-j", "8", "src"])
    assert len(engine_calls) == 3  # counted here: no pool for three files


# ---------------------------------------------------------------- progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_appears_only_after_a_while_and_erases_itself() -> None:
    stream, clock = io.StringIO(), FakeClock()
    bar = Progress(4, stream, clock=clock)
    bar.advance()
    assert stream.getvalue() == ""  # quick runs never show a bar
    clock.now = 1.0
    bar.advance()
    assert stream.getvalue().endswith("] 2/4 files")
    clock.now = 1.01
    bar.advance()
    assert "3/4" not in stream.getvalue()  # at most ten redraws a second
    bar.advance()
    assert stream.getvalue().endswith("] 4/4 files")  # the last one always shows
    bar.close()
    assert stream.getvalue().endswith("\r")
    assert "\n" not in stream.getvalue()


def test_no_progress_when_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str], in_tmp: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Progress, "DELAY_S", 0.0)
    make_tree(in_tmp / "src", 5)
    main(["check", "--no-cache", "-j", "1", "src"])
    assert "\r" not in capsys.readouterr().err


def test_progress_on_a_terminal(in_tmp: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(Progress, "DELAY_S", 0.0)
    fake = Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    make_tree(in_tmp / "src", 5)
    main(["check", "--no-cache", "-j", "1", "src"])
    assert "] 5/5 files" in fake.getvalue()
    main(["check", "--no-cache", "-q", "-j", "1", "src"])
    assert fake.getvalue().count("5/5 files") == 1  # --quiet: no bar
