"""The analysis worker (np2torch.server.worker): a running job stopped when its input is stale, the worker
going on after it, jobs in order. Events, not clocks: each step waits for the one before it."""

from __future__ import annotations

import threading

import pytest

from np2torch.server.worker import CAN_INTERRUPT, Superseded, Worker

pytestmark = pytest.mark.timeout(60)


def spin(started: threading.Event, release: threading.Event) -> str:
    """A job that runs Python bytecode until released (as an analysis does)."""
    started.set()
    total = 0
    while not release.is_set():
        total += 1
    return "released"


@pytest.mark.skipif(not CAN_INTERRUPT, reason="interrupting a thread needs CPython")
def test_a_running_job_is_stopped_and_the_next_one_runs() -> None:
    worker: Worker[str] = Worker("test-worker")
    started, release = threading.Event(), threading.Event()
    stale = worker.submit("doc", lambda: spin(started, release))
    fresh = worker.submit("doc", lambda: "fresh")
    assert started.wait(30)
    assert not worker.interrupt(lambda tag: tag == "other")  # another document's analysis is not stopped
    assert worker.interrupt(lambda tag: tag == "doc")
    assert not worker.interrupt(lambda tag: tag == "doc")  # at most once per job
    with pytest.raises(Superseded):
        stale.result(timeout=30)
    assert fresh.result(timeout=30) == "fresh"
    assert worker.interruptions == 1
    worker.stop()


def test_jobs_run_in_order_and_a_jobs_error_is_its_futures() -> None:
    worker: Worker[int] = Worker("test-worker")

    def fail() -> int:
        raise ValueError("broken")

    futures = [worker.submit("a", lambda: 1), worker.submit("b", fail), worker.submit("c", lambda: 3)]
    assert futures[0].result(timeout=30) == 1
    with pytest.raises(ValueError, match="broken"):
        futures[1].result(timeout=30)
    assert futures[2].result(timeout=30) == 3
    assert not worker.interrupt(lambda tag: True)  # nothing runs
    worker.stop()
