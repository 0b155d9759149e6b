"""The machine's load: how many cores other processes keep busy (standard library only).

One measurement answers every question about the load: the machine's busy
time over a window (Linux's ``/proc/stat``) less the CPU time of the thread
that asks and of the block workers, in cores of this process's affinity.  The
program's other threads are load like another process's: a call's blocks would
wait for their time slices too.  (A thread that samples for the first time is
taken to have run the whole window, or since it started.)  A window lasts at
least :data:`WINDOW` seconds: one instant of
``/proc/loadavg`` halved torch's pool for any transient task, and the 1-minute
load average answers a minute late.

* :func:`free_cores`: how many of torch's pool threads a call may use now
  (resampled at most every :data:`WINDOW` seconds, so a call pays one read of
  ``/proc/stat`` at most that often);
* :func:`machine_busy`: whether other processes keep more than half of this
  process's cores busy -- timings taken now are a busy machine's
  (``np2torch tune`` and ``bench`` warn; a measurement taken now is a busy machine's
  process but is not written to the profile).

Before the first window closes, the tasks running at that instant stand for it.  Where some task waited for a CPU
over a good share of the window (Linux's pressure stall information,
``/proc/pressure/cpu``), the CPU time other processes got is less than they wanted, and each core's worth
of it, begun, counts as busy (:data:`STALLED`).

Without ``/proc/stat`` nothing is known: the pool is used whole and the
machine counts as quiet.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from typing import Callable, Dict, Iterable, Tuple

from ._state import PROCESS

WINDOW = 0.1
"""Seconds a load measurement spans at least."""
STALE = 1.0
"""A window older than this is not "now": :func:`machine_busy` starts a new one."""
NOISE_CORES = 0.3
"""Busy time of others below this many cores (kernel threads, short jobs) leaves the pool whole."""
STALLED = 0.1
"""Where some task waited for a CPU this share of a window or more (Linux's pressure stall information), the CPU
time other processes got is less than they wanted: each core's worth of it they got, begun, is theirs.  A busy
loop at ``nice 10`` got ~0.2 of a core while this process ran on both cores of the 2-core reference VM, below
:data:`NOISE_CORES`, so the next window read the machine as free, and calls switched between one thread and two
until the loop had its core back (2026-11-30: tasks waited 33-35 % of the time then, 2 % with no other process,
0-1 % with this process on one thread beside the loop)."""
TRACKED = 32
"""The threads besides the sampling one whose CPU time each sample reads (one file each, ~9 us on the 2-core
reference VM): those that sampled last."""
STALL_NOISE = 0.1
"""... less this many cores: the meter's resolution over a window (clock ticks of 10 ms over 0.1 s)."""


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask), not the machine's total."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def process_cores() -> int:
    """:func:`usable_cores` as the load's last window read it (again with each window): what a call may use, without a
    system call per call.  ``sched_getaffinity`` took ~11 us right after an ``erf`` over 120,000 elements beside a
    busy core (0.3 us back to back), 1.5-3 % of that call, on the 2-core reference VM (2026-11-30)."""
    load = PROCESS.load
    if not load.cores:
        load.cores = usable_cores()
    return load.cores


def sample(now: float) -> None:
    """End the window at ``now`` (``time.monotonic()``): what other work (other processes, this program's other
    threads) kept busy since the last sample."""
    load = PROCESS.load
    load.cores = usable_cores()
    ticks = _cpu_ticks()
    me = threading.get_native_id()
    clocks, workers = _threads_cpu(load.clocks, me), _workers_cpu()
    stall = _cpu_stall()
    # (Each read once: another thread's sample may replace them meanwhile.)
    previous, then, stalled, before, spent = load.ticks, load.when, load.stall, load.clocks, load.workers
    # This thread's CPU time and the workers' over the window (a forked child's clocks start again at zero).
    mine = clocks[me] - before[me] if me in before else min(clocks[me], now - then)
    mine = max(0.0, mine) + max(0.0, workers - spent)
    load.ticks, load.when, load.stall = ticks, now, stall
    load.clocks, load.workers = clocks, workers
    machine = os.cpu_count() or load.cores
    if previous is None and ticks is not None:
        # No window yet: the tasks running at this instant besides this thread, in cores of this process's (a busy
        # loop beside lmfit's fit ran its calls of the first window on two threads: they paid its time slices).
        running = _running()
        load.busy = 0 if running is None else max(0, int((running - 1) * load.cores / machine + 0.5))
        return
    if ticks is None or previous is None or ticks[1] <= previous[1] or now <= then:
        return
    busy_cores = (ticks[0] - previous[0]) / (ticks[1] - previous[1]) * machine
    others = busy_cores - mine / (now - then)
    # Others spread over the whole machine; the share that lands on this process's cores.
    load.others = max(0.0, others * load.cores / machine)
    load.busy = max(0, int(load.others - NOISE_CORES + 0.5))
    if stall is not None and stalled is not None and (stall - stalled) / 1e6 >= STALLED * (now - then):
        load.busy = max(load.busy, math.ceil(load.others - STALL_NOISE))


def free_cores(threads: int) -> int:
    """How many of ``threads`` pool threads can run now without waiting for a time slice.

    A parallel op finishes when its slowest thread does; a thread placed on a
    core another process keeps busy waits for a time slice (milliseconds),
    which on a shared machine made a 66 us call take 7 ms.  A transient task
    does not halve the pool; a process that keeps a core busy takes that core
    out of it, and so does another thread of this program (two threads calling
    ``erf`` over 120,000 elements in a loop took 1.12-1.18x the original's time
    when each call also used the other's core, 2-core reference VM, 2026-11-30).
    Before the first window closes the tasks running then stand for the load.
    """
    now = time.monotonic()
    load = PROCESS.load
    if now - load.when >= WINDOW:
        sample(now)
    return max(1, min(threads, load.cores - load.busy))


def start_window() -> None:
    """Begin a window now, e.g. before timing something :func:`machine_busy` is then asked about."""
    sample(time.monotonic())


def machine_busy() -> bool:
    """Whether other processes kept more than half of this process's cores busy over the last window.

    The window is the one open since the last sample when that is at most
    :data:`STALE` seconds old (e.g. since :func:`start_window`), else a new
    one; if it is shorter than :data:`WINDOW`, this waits for the rest of it.
    """
    load = PROCESS.load
    if time.monotonic() - load.when > STALE or load.ticks is None:
        start_window()
    rest = load.when + WINDOW - time.monotonic()
    if rest > 0:
        time.sleep(rest)
    sample(time.monotonic())
    return load.others > 0.5 * load.cores


def others_meter() -> Callable[[], float]:
    """Start a window now; the returned function says how many of this process's cores other work (other processes,
    this program's other threads) kept busy on average since (0.0 where nothing is known), without ending it."""
    start, ticks, own = time.monotonic(), _cpu_ticks(), time.thread_time() + _workers_cpu()
    cores = usable_cores()

    def others() -> float:
        """(Asked in the thread that started it: its CPU time and the workers' are what come off, as in
        :func:`sample`.)"""
        now, later = time.monotonic(), _cpu_ticks()
        if ticks is None or later is None or later[1] <= ticks[1] or now <= start:
            return 0.0
        machine = os.cpu_count() or cores
        mine = time.thread_time() + _workers_cpu() - own
        busy = (later[0] - ticks[0]) / (later[1] - ticks[1]) * machine - mine / (now - start)
        return max(0.0, busy * cores / machine)

    return others


def _threads_cpu(tracked: Iterable[int], me: int) -> Dict[int, float]:
    """CPU seconds run so far by this thread (``me``, its native id) and by each thread of ``tracked`` (those that
    sampled before, the latest first, :data:`TRACKED` of them at most: their time at this window's end is the next
    window's start, whichever thread samples then); a thread that has ended is left out."""
    clocks = {me: time.thread_time()}
    for thread in itertools.islice(tracked, TRACKED):
        if thread != me:
            seconds = _thread_cpu(thread)
            if seconds is not None:
                clocks[thread] = seconds
    return clocks


def _thread_cpu(thread: int) -> float | None:
    """CPU seconds run so far by the thread of this process with native id ``thread`` (Linux's
    ``/proc/self/task/<id>/schedstat``), or None (it has ended, or nothing tells)."""
    try:
        with open(f"/proc/self/task/{thread}/schedstat", "rb") as handle:
            return int(handle.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _workers_cpu() -> float:
    """CPU seconds the block workers of this process (:mod:`._paths.blocks`) have run blocks for, together."""
    workers = PROCESS.workers
    if workers is None or workers[0] != os.getpid():
        return 0.0
    spent: float = sum(worker.cpu for worker in workers[1])
    return spent


def _running() -> int | None:
    """How many tasks of the machine run or wait to run at this instant (``/proc/stat``'s ``procs_running``,
    this thread included), or None."""
    try:
        with open("/proc/stat", "rb") as handle:
            for line in handle:
                if line.startswith(b"procs_running "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cpu_stall() -> int | None:
    """Microseconds some task of the machine waited for a CPU since boot (``/proc/pressure/cpu``'s ``some``
    total; Linux 4.20+ with pressure stall information), or None."""
    try:
        with open("/proc/pressure/cpu", "rb") as handle:
            return int(handle.readline().rsplit(b"total=", 1)[1])
    except (OSError, ValueError, IndexError):
        return None


def _cpu_ticks() -> Tuple[int, int] | None:
    """``(busy, total)`` clock ticks of all CPUs since boot (``/proc/stat``'s first line), or None."""
    try:
        with open("/proc/stat", "rb") as handle:
            fields = [int(v) for v in handle.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    if len(fields) < 5:
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields)
    return total - idle, total
