"""The machine's load: how many cores other processes keep busy (standard library only).

One measurement answers every question about the load: the machine's busy
time over a window (Linux's ``/proc/stat``) less this process's own CPU time
(``os.times``), in cores of this process's affinity.  A window lasts at least
:data:`WINDOW` seconds: one instant of ``/proc/loadavg`` halved torch's pool
for any transient task, and the 1-minute load average answers a minute late.

* :func:`free_cores`: how many of torch's pool threads a call may use now
  (resampled at most every :data:`WINDOW` seconds, so a call pays one read of
  ``/proc/stat`` at most that often);
* :func:`machine_busy`: whether other processes keep more than half of this
  process's cores busy -- timings taken now are a busy machine's
  (``np2torch tune`` and ``bench`` warn; a measurement taken now is a busy machine's
  process but is not written to the profile).

Without ``/proc/stat`` nothing is known: the pool is used whole and the
machine counts as quiet.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Tuple

from ._state import PROCESS

WINDOW = 0.1
"""Seconds a load measurement spans at least."""
STALE = 1.0
"""A window older than this is not "now": :func:`machine_busy` starts a new one."""
NOISE_CORES = 0.3
"""Busy time of others below this many cores (kernel threads, short jobs) leaves the pool whole."""


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask), not the machine's total."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def sample(now: float) -> None:
    """End the window at ``now`` (``time.monotonic()``): what other processes kept busy since the last sample."""
    load = PROCESS.load
    if not load.cores:
        load.cores = usable_cores()
    ticks = _cpu_ticks()
    own = sum(os.times()[:2])
    previous, before, then = load.ticks, load.own, load.when
    load.ticks, load.own, load.when = ticks, own, now
    if ticks is None or previous is None or ticks[1] <= previous[1] or now <= then:
        return
    machine = os.cpu_count() or load.cores
    busy_cores = (ticks[0] - previous[0]) / (ticks[1] - previous[1]) * machine
    others = busy_cores - (own - before) / (now - then)
    # Others spread over the whole machine; the share that lands on this process's cores.
    load.others = max(0.0, others * load.cores / machine)
    load.busy = max(0, int(load.others - NOISE_CORES + 0.5))


def free_cores(threads: int) -> int:
    """How many of ``threads`` pool threads can run now without waiting for a time slice.

    A parallel op finishes when its slowest thread does; a thread placed on a
    core another process keeps busy waits for a time slice (milliseconds),
    which on a shared machine made a 66 us call take 7 ms.  A transient task
    does not halve the pool; a process that keeps a core busy takes that core
    out of it.  Before the first window closes the pool is used whole.
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
    """Start a window now; the returned function says how many of this process's cores other processes kept busy
    on average since (0.0 where nothing is known), without ending it."""
    start, ticks, own = time.monotonic(), _cpu_ticks(), sum(os.times()[:2])
    cores = usable_cores()

    def others() -> float:
        now, later = time.monotonic(), _cpu_ticks()
        if ticks is None or later is None or later[1] <= ticks[1] or now <= start:
            return 0.0
        machine = os.cpu_count() or cores
        busy = (later[0] - ticks[0]) / (later[1] - ticks[1]) * machine - (sum(os.times()[:2]) - own) / (now - start)
        return max(0.0, busy * cores / machine)

    return others


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
