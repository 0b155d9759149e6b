"""The worker pool under stress: a killed parent, a killed worker. Workers must never outlive the CLI,
and a dead worker must cost neither a file's result nor a stray temporary file."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, TypeVar

import pytest

from np2torch.cli import runner

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

T = TypeVar("T")


def big_tree(root: Path, files: int, functions: int = 20) -> None:
    """Enough work that a fix of it with two workers lasts many seconds on any machine."""
    root.mkdir()
    body = "import numpy as np\nfrom scipy.special import erf\n\n" + "".join(
        f"def f{j}(x):\n    return np.exp(x) * erf(x) + np.log(x) + {j}\n" for j in range(functions))
    for i in range(files):
        (root / f"m{i:03}.py").write_text(body)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, ...


def children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        fields = _stat_fields(int(entry)) if entry.isdigit() else None
        if fields is not None and int(fields[1]) == pid:
            found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")  # a zombie has exited


def wait_for(condition: Callable[[], T], timeout: float) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def reaches_eof(stream: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    fd = stream.fileno()  # type: ignore[attr-defined]
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready and not os.read(fd, 65536):
            return True
    return False


@linux_only
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_workers_die_with_a_killed_parent(tmp_path: Path, sig: signal.Signals) -> None:
    big_tree(tmp_path / "tree", 120)
    proc = subprocess.Popen([sys.executable, "-m", "np2torch", "fix", "--no-cache", "-q", "-j", "2", "tree"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    workers: set[int] = set()
    try:
        workers = wait_for(lambda: children(proc.pid) if len(children(proc.pid)) >= 2 else set(), 60)
        assert len(workers) == 2, "the pool never started"
        os.kill(proc.pid, sig)  # the parent only, as a supervisor does
        proc.wait(timeout=120)
        survivors = wait_for(lambda: not any(alive(w) for w in workers), 120)
        assert survivors, f"workers outlived their parent: {sorted(w for w in workers if alive(w))}"
        assert reaches_eof(proc.stdout, 120), "stdout is still held open"
    finally:
        for pid in workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def test_an_orphaned_worker_exits_at_once(tmp_path: Path) -> None:
    # The parent died between fork and the initializer: the worker notices its new parent pid.
    code = "import os; from np2torch.cli import runner; runner._die_with_parent(os.getppid() + 1); print('survived')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "survived" not in done.stdout


def test_the_watchdog_ends_an_orphan(monkeypatch: pytest.MonkeyPatch) -> None:
    # Where PR_SET_PDEATHSIG does not exist (macOS, Windows) a thread polls the parent pid.
    exits: list[int] = []
    monkeypatch.setattr(runner, "WATCHDOG_INTERVAL_S", 0.01)
    monkeypatch.setattr(runner.os, "_exit", exits.append)
    runner._start_watchdog(os.getppid() + 1)
    assert wait_for(lambda: exits, 120) == [1]


def small_tree(root: Path, count: int) -> None:
    root.mkdir()
    for i in range(count):
        (root / f"m{i:02}.py").write_text(f"import numpy as np\n\ndef f(x):\n    return np.exp(x) + {i}\n")


def run_with_patched_worker(tmp_path: Path, patch: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``np2torch fix -j 2 src`` in a fresh interpreter whose (forked) workers inherit ``patch``."""
    code = f"""
import os, signal, sys
from np2torch.lint import engine
from np2torch.cli import runner
from np2torch.cli import main
PARENT = os.getpid()
{patch}
sys.exit(main(["fix", "--no-cache", "-j", "2", *{list(args)!r}, "src"]))
"""
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


KILL_WORKER_ON_M05 = """
real_fix = engine.fix_and_check
def dying(source, path="<string>", **kwargs):
    if path.endswith("m05.py") and {condition}:
        open("killed", "a").write("x")
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer does
    return real_fix(source, path, **kwargs)
engine.fix_and_check = dying
"""


def stray_temporary_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".np2torch.tmp")]


def test_a_killed_worker_costs_no_file(tmp_path: Path) -> None:
    small_tree(tmp_path / "src", 12)
    done = run_with_patched_worker(tmp_path, KILL_WORKER_ON_M05.format(condition='not os.path.exists("killed")'))
    assert (tmp_path / "killed").read_text() == "x"  # it did die, once
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert all("np2t.exp(x)" in p.read_text() for p in (tmp_path / "src").glob("*.py"))
    assert stray_temporary_files(tmp_path) == []


def test_a_file_that_kills_every_worker_is_one_error_and_the_run_ends(tmp_path: Path) -> None:
    small_tree(tmp_path / "src", 12)
    done = run_with_patched_worker(tmp_path, KILL_WORKER_ON_M05.format(condition="True"))
    assert (tmp_path / "killed").read_text() == "xxx"  # the first pool, the retry, then on its own
    assert done.returncode == 2
    assert "src/m05.py: internal error: a worker process died checking it, 3 times (the last on its own)" in done.stderr
    assert "Traceback" not in done.stderr
    assert "np2t.exp(x)" not in (tmp_path / "src" / "m05.py").read_text()
    assert stray_temporary_files(tmp_path) == []


# Each submission waits until the pool has seen the worker's death: the pool breaks while jobs are still
# being handed out, which is what a worker dying early among many files does.
SLOW_SUBMISSIONS = """
import time
from concurrent.futures import ProcessPoolExecutor
real_submit = ProcessPoolExecutor.submit
def slow_submit(self, *args, **kwargs):
    time.sleep(0.2)
    return real_submit(self, *args, **kwargs)
ProcessPoolExecutor.submit = slow_submit
"""


def test_a_pool_that_breaks_while_jobs_are_handed_out_loses_none(tmp_path: Path) -> None:
    small_tree(tmp_path / "src", 12)
    patch = KILL_WORKER_ON_M05.format(condition='not os.path.exists("killed")') + SLOW_SUBMISSIONS
    done = run_with_patched_worker(tmp_path, patch)
    assert (tmp_path / "killed").read_text() == "x"
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert all("np2t.exp(x)" in p.read_text() for p in (tmp_path / "src").glob("*.py"))


def test_only_the_file_that_kills_its_worker_is_blamed(tmp_path: Path) -> None:
    # A broken pool fails every job it had not finished, the innocent ones too: they still get their fix.
    small_tree(tmp_path / "src", 12)
    done = run_with_patched_worker(tmp_path, KILL_WORKER_ON_M05.format(condition="True") + SLOW_SUBMISSIONS)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "src/m05.py: internal error: a worker process died checking it, 3 times (the last on its own)"], done.stderr
    fixed = {p.name for p in (tmp_path / "src").glob("*.py") if "np2t.exp(x)" in p.read_text()}
    assert fixed == {f"m{i:02}.py" for i in range(12)} - {"m05.py"}


def test_only_the_parent_writes_files(tmp_path: Path) -> None:
    # A worker that never writes cannot leave a temporary file behind when it is killed.
    small_tree(tmp_path / "src", 12)
    patch = """
real_write = runner.write_atomic
def recording(path, data, display, expect=None):
    open("writers", "a").write(f"{os.getpid() == PARENT}\\n")
    return real_write(path, data, display, expect=expect)
runner.write_atomic = recording
real_run_job = runner.run_job
def in_worker(job):
    open("workers", "a").write(f"{os.getpid() != PARENT}\\n")
    return real_run_job(job)
runner.run_job = in_worker
"""
    done = run_with_patched_worker(tmp_path, patch)
    assert done.returncode == 0, done.stderr
    assert set((tmp_path / "workers").read_text().split()) == {"True"}  # the pool did the work
    assert (tmp_path / "writers").read_text().split() == ["True"] * 12


def test_files_are_analysed_with_fewer_collections_and_the_collector_is_restored() -> None:
    import gc

    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with runner.fewer_collections():
        assert gc.get_threshold()[0] >= runner.GC_THRESHOLD
        assert gc.get_freeze_count() > 0  # what existed before is never scanned again
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen
