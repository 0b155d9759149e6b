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

from np2torch import runner

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
        proc.wait(timeout=10)
        survivors = wait_for(lambda: not any(alive(w) for w in workers), 5)
        assert survivors, f"workers outlived their parent: {sorted(w for w in workers if alive(w))}"
        assert reaches_eof(proc.stdout, 5), "stdout is still held open"
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
    code = f"import os; from np2torch import runner; runner._die_with_parent(os.getppid() + 1); print('survived')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "survived" not in done.stdout


def test_the_watchdog_ends_an_orphan(monkeypatch: pytest.MonkeyPatch) -> None:
    # Where PR_SET_PDEATHSIG does not exist (macOS, Windows) a thread polls the parent pid.
    exits: list[int] = []
    monkeypatch.setattr(runner, "WATCHDOG_INTERVAL_S", 0.01)
    monkeypatch.setattr(runner.os, "_exit", exits.append)
    runner._start_watchdog(os.getppid() + 1)
    assert wait_for(lambda: exits, 5) == [1]
