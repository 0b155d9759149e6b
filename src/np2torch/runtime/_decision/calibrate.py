"""Timing the paths of one (function, dtype, shape class): what ``np2torch tune`` measures.

The caller hands over how to run the function (:data:`Runner`, a helper's
``run_path``): ``run(path, x)`` computes it of the scratch input ``x`` through
``path`` exactly as a user's call taking that path would (fresh result,
default error checks, the previous call's result still alive as in ``y = f(x)`` in a loop), and each
result is read once after its call, as the program's next operation on it reads it (:func:`used`), so a
measurement includes every cost the user pays.  Nothing here runs while a program runs: the
runtime decides from the profile alone (:mod:`.route`).
Inputs are a ramp over the table's ``domain`` (no floating-point flags: the
common case; ascending: :func:`make_input`); they are never the user's arrays.
"""

from __future__ import annotations

import functools
import statistics
import time
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from .._paths import blocks
from ..table import FUNCTIONS_BY_NAME
from .model import CLASS_LENGTHS, MARGIN, Curve

if TYPE_CHECKING:
    Runner = Callable[[str, np.ndarray], object]
    """``run(path, x)``: the function of ``x`` through ``path`` (``numpy``, ``cpu1``, ``cpu``, ``cuda``)."""

_MIN_RUN = 1e-4
"""Seconds each timed run loops for (timer resolution and clock jitter vanish)."""
RUNS = 5
"""Timed runs per path and size, of which the median counts (:func:`time_paths`)."""
FAR_RUNS = 3
"""Timed runs at the far size (:func:`measure`), whose calls are the longest ``np2torch tune`` makes."""
CLOSE_RUNS = RUNS
"""Timed runs, again, of the paths whose far-size times came out within :data:`.model.MARGIN` of the fastest's
(:func:`measure`): the size decides every larger call, and three single calls cannot tell a tie from noise."""
FAR_LIMIT = 2.0
"""The far size is measured where the original's call there is predicted to take at most this many seconds."""


def make_input(name: str, dtype: np.dtype, n: int, klass: str = "") -> np.ndarray:
    """``n`` values of ``dtype`` in the function's flag-free domain, in ascending order (2-d for reductions, as
    bench times them).

    A ramp over the domain, as a program's model evaluated over its grid (``np.linspace``) sees it: the input on
    which a loop's branches cost least.  A loop whose cost depends on its branches costs less where neighbouring
    elements take the same branch: SciPy's float64 ``erf`` over 120,000 elements took 1.3 ms over a ramp and
    2.4-3.6 ms over the same domain drawn at random (2-core reference VM, 2026-11-29), and the original on
    every core timed 0.88x and 1.45x the original there.  Another path's time is the original's loop cut in
    blocks (as cheap on sorted data as the original) or torch's branch-free vector loop (no cheaper), so a path
    that wins over the ramp wins on any input, and the program whose calls run over a grid -- lmfit's models --
    is never sent to a path that only random values would pay for.

    A reduction's shape class (``short-inner``, ...) lays the input out so that reducing axis 0 is a
    call of that class: the class's reduced length (:data:`.model.CLASS_LENGTHS`, or ``n`` when
    smaller) along axis 0, contiguous for ``inner`` (a transposed C array), strided for ``outer``."""
    row = FUNCTIONS_BY_NAME[name]
    low, high = row.domain
    with np.errstate(all="ignore"):
        x = np.linspace(low, high, n)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * np.linspace(-3.0, 3.0, n)
        x = x.astype(dtype)
    if row.kind == "reduction":
        if klass:
            length, _, layout = klass.partition("-")
            # at least two slices: a length-1 axis is a layout the reductions hand to SciPy (its result's strides)
            reduced = max(1, min(CLASS_LENGTHS[length], n // 2))
            outer = max(1, n // reduced)
            x = x[: reduced * outer]
            return x.reshape(outer, reduced).T if layout == "inner" else x.reshape(reduced, outer)
        rows = next(r for r in range(int(n**0.5), 0, -1) if n % r == 0)
        x = x.reshape(rows, n // rows)
    return x


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.uint64}


def used(run: Runner, path: str, x: np.ndarray) -> object:
    """``run(path, x)``, its result then read once, every byte, by the calling thread: what a program's next
    operation on the result costs differs by path.

    A result the pool's workers wrote lies in their cores' caches, and the program's thread reads it from
    there: on the 2-core reference VM (an Intel host, 2026-11-29) a sum over ``exp`` of 120,000 float64
    elements took ~6 us after the original's call and ~150 us after the original on every core; the two
    paths' calls alone timed 1.07x apart, call and read 0.66x.  Inside an lmfit fit the program's other work
    took up to 14 % longer with ``erf`` on every core (and in some runs no longer: docs/benchmarks.md, sessions
    34-35), which a read alone does not show (:func:`read`).
    """
    result = run(path, x)
    read(result)
    return result


def read(result: object) -> int:
    """Read every byte of ``result``'s arrays (a tuple's too) once, in the calling thread; the bytes read.

    The bytes are summed as unsigned integers: no floating-point flag, warning or error state can touch it."""
    count = 0
    for part in result if isinstance(result, tuple) else (result,):
        if isinstance(part, np.ndarray) and part.size:
            flat = part.ravel(order="K")  # a view in memory order where the result is dense
            np.add.reduce(flat.view(_UNSIGNED[flat.itemsize]))
            count += flat.nbytes
    return count


def time_paths(calls: Mapping[str, Callable[[], object]], repeat: int = RUNS, min_run: float = _MIN_RUN) -> dict[str, float]:
    """Seconds per call of each of ``calls`` (path -> call): the median of ``repeat`` runs, the paths' runs
    interleaved (each run loops for ``min_run`` at least).

    Interleaved, in an order rotated from run to run, so that drift, another
    process's burst and the host reclaiming memory hit every path alike; the
    paths were once timed one after another, and a path timed in a slow
    moment lost a decision it should have won, or won one it should have lost.
    The median, not the minimum: the question is what a program's loop pays
    per call, and a path's minimum hides costs that are its own -- a pool's
    threads waking late, a fresh result's page faults -- as much as another
    process's interference (the fastest of three, path after path, sent
    ``exp`` over 1e6 float64 to the 2-core VM's pool for a predicted 13 %;
    timed interleaved, the pool's median is 1.5 ms, NumPy's 0.9 ms).  Each
    call's result stays alive until the path's next call has returned, as
    ``y = f(x)`` in a program's loop keeps it: the next result is a new
    allocation, not the buffer just freed.  No other path's result stays
    alive, as none would in that loop: with them alive too, a 16.7M-element
    pool call on the VM took 45 ms, in its own loop 27 ms.
    """
    paths = list(calls)
    kept: dict[str, object] = {}
    number: dict[str, int] = {}
    for path in paths:
        start = time.perf_counter()
        kept[path] = calls[path]()  # warm-up: first touch of buffers, lazy imports, plan caches
        once = time.perf_counter() - start
        number[path] = max(1, int(min_run / max(once, 1e-7)))
    runs: dict[str, list[float]] = {path: [] for path in paths}
    for r in range(repeat):
        for path in paths[r % len(paths):] + paths[: r % len(paths)]:
            call, count = calls[path], number[path]
            kept = {path: kept.get(path)}  # only this path's own last result alive, as in a loop calling it
            start = time.perf_counter()
            for _ in range(count):
                kept[path] = call()
            runs[path].append((time.perf_counter() - start) / count)
    kept.clear()
    return {path: statistics.median(times) for path, times in runs.items()}


def measure(
    run: Runner,
    name: str,
    dtype: np.dtype,
    paths: Sequence[str],
    sizes: Sequence[int],
    max_call: float | None,
    repeat: int = RUNS,
    progress: Callable[[], None] | None = None,
    klass: str = "",
) -> Curve:
    """A :class:`Curve` of ``paths`` (the original among them) over ``sizes`` (a reduction's shape class ``klass``).

    With ``max_call``, sizes stop growing after the first at which the
    original's call took longer than that (at least two sizes are kept), and
    the largest of ``sizes``, the *far size*, is measured then too, with
    :data:`FAR_RUNS` runs, the paths tied there again with :data:`CLOSE_RUNS` (:func:`_time_far`; not
    where the original's call there is predicted over :data:`FAR_LIMIT`).  Above the largest measured size the model keeps that
    size's ratios (:meth:`Curve.predict`), and the ratios move with the size
    while results outgrow the caches and first-touching a fresh result takes a
    growing share: on the reference VM the torch pool's lead over one torch
    thread for float64 ``erf`` was 1.36x at 4.2M elements, 1.73x at 16.7M and
    1.9-2.1x at 1e8, so a curve that stopped at 4.2M (where one noisy run had
    measured one thread faster) sent calls of 1e8 elements to one thread at
    half the pool's speed.
    """
    with blocks.whole_pool():  # each path as the quiet machine runs it; tune tells a busy one apart
        measured: list[int] = []
        seconds: dict[str, list[float]] = {path: [] for path in paths}
        for n in sizes:
            x = make_input(name, dtype, n, klass=klass)
            timed = time_paths({path: functools.partial(used, run, path, x) for path in paths}, repeat)
            for path in paths:
                seconds[path].append(timed[path])
            measured.append(n)
            if progress is not None:
                progress()
            if max_call is not None and len(measured) >= 2 and seconds["numpy"][-1] > max_call:
                break
        far = max(sizes)
        if measured[-1] < far and seconds["numpy"][-1] * far / measured[-1] <= FAR_LIMIT:
            last = [seconds[path][-1] for path in paths]
            timed = _time_far(run, paths, make_input(name, dtype, far, klass=klass), last, max_call, repeat)
            for path in paths:
                seconds[path].append(timed[path])
            measured.append(far)
            if progress is not None:
                progress()
    return Curve(tuple(measured), {path: tuple(times) for path, times in seconds.items()})


def _time_far(run: Runner, paths: Sequence[str], x: np.ndarray, last: Sequence[float], max_call: float | None,
              repeat: int) -> dict[str, float]:
    """Seconds per call of each of ``paths`` at the far size, of input ``x`` (``last``: their times at the largest
    size measured before).

    :data:`FAR_RUNS` runs each; the paths that came out within :data:`.model.MARGIN` of the fastest are timed
    again, with :data:`CLOSE_RUNS`, and those times count.  On the 2-core reference VM a fresh ``tune`` timed
    float64 ``erf`` over 16.7M elements at 47.2 ms on one torch thread and 47.5 ms on the pool, and sent every
    call past 3.2M elements to one thread, at half the pool's speed at 1e8; timed by hand in the same hour the
    pool led 1.8x there.  A path whose call already took longer than ``max_call`` is timed by one call: its time
    per element is steady by then (the arithmetic's, not a fresh result's first touch), and its calls are
    ``tune``'s longest.
    """
    slow = [path for path, t in zip(paths, last) if max_call is not None and t > max_call]
    rest = {path: functools.partial(used, run, path, x) for path in paths if path not in slow}
    timed = time_paths(rest, min(repeat, FAR_RUNS)) if rest else {}
    fastest = min(timed.values(), default=0.0)
    close = [path for path in rest if timed[path] <= fastest * MARGIN]
    if len(close) > 1 and repeat > FAR_RUNS:
        timed.update(time_paths({path: rest[path] for path in close}, CLOSE_RUNS))
    for path in slow:
        start = time.perf_counter()
        used(run, path, x)
        timed[path] = time.perf_counter() - start
    return timed


WAKE_IDLE = 0.01
"""Seconds the workers idle before each timed call of :func:`measure_wake`: a program's other work between calls."""
WAKE_RUNS = 31


def measure_wake(runs: int = WAKE_RUNS, idle: float = WAKE_IDLE) -> float:
    """Seconds a call on two threads pays, beyond what the original's single call pays, when it follows ``idle``
    seconds of idling rather than another call (medians of ``runs``; 0.0 where this process has one core).

    A worker that idled sleeps, and waking it (its core, on a virtual machine its virtual CPU) costs time that
    ``tune``'s back-to-back calls never pay: on the 2-core reference VM a two-block ``exp`` (131,072 elements)
    took 0.20 ms back to back, 0.52 ms after 10 ms of idling and 0.81 ms after 50 ms, the original's single call
    0.17, 0.29 and 0.35 ms.  The original slows after idling too (frequency, caches); the difference of the
    differences is the wake's."""
    from .._load import usable_cores
    from .._paths import cores

    if usable_cores() < 2:
        return 0.0
    x = make_input("exp", np.dtype(np.float64), 2 * blocks.MIN_BLOCK)
    out = np.empty_like(x)

    def two_threads() -> None:
        cores.compute(np.exp, "exp", x, out, None, threads=2)

    def original() -> None:
        np.exp(x, out=out)

    def median(call: Callable[[], None], pause: float) -> float:
        times = []
        for _ in range(runs):
            if pause:
                time.sleep(pause)
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    with blocks.whole_pool():
        for _ in range(20):  # the pool started, the pages touched
            two_threads()
        woken = median(two_threads, idle) - median(two_threads, 0.0)
        cold = median(original, idle) - median(original, 0.0)
    return max(0.0, woken - cold)
