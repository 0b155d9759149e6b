"""Timing the paths of one (function, dtype): what ``np2torch tune`` and on-the-spot calibration measure.

Each helper module registers a *runner* per function (:func:`register`):
``runner(path, x)`` computes the function of the scratch input ``x`` through
``path`` exactly as a user's call taking that path would (fresh result,
default error checks), so a measurement includes every cost the user pays.
Inputs are drawn from the table's ``domain`` (no floating-point flags: the
common case); they are never the user's arrays.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np

from ._profile import Curve
from .table import FUNCTIONS_BY_NAME

Runner = Callable[[str, np.ndarray], Any]

_RUNNERS: dict[str, Runner] = {}

ON_THE_SPOT_SIZES: tuple[int, ...] = (1 << 12, 1 << 15, 1 << 18, 1 << 21)
"""Sizes measured on the spot; the largest ones are skipped once one call takes longer than
:data:`ON_THE_SPOT_MAX_CALL` (the model extrapolates from the two largest measured)."""
ON_THE_SPOT_MAX_CALL = 2e-3
_MIN_RUN = 1e-4
"""Seconds each timed run loops for (timer resolution and clock jitter vanish)."""


def register(name: str, runner: Runner) -> None:
    _RUNNERS[name] = runner


def runner(name: str) -> Runner:
    return _RUNNERS[name]


def make_input(name: str, dtype: np.dtype, n: int, seed: int = 0) -> np.ndarray:
    """``n`` values of ``dtype`` in the function's flag-free domain (2-d for reductions, as bench times them)."""
    row = FUNCTIONS_BY_NAME[name]
    low, high = row.domain
    rng = np.random.default_rng(seed)
    real = np.dtype(dtype).kind != "c"
    with np.errstate(all="ignore"):
        x = rng.uniform(low, high, n)
        if not real:
            x = x + 1j * rng.uniform(-3.0, 3.0, n)
        x = x.astype(dtype)
    if row.kind != "elementwise":
        rows = next(r for r in range(int(n**0.5), 0, -1) if n % r == 0)
        x = x.reshape(rows, n // rows)
    return x


def time_call(call: Callable[[], Any], repeat: int = 3, min_run: float = _MIN_RUN) -> float:
    """The fastest of ``repeat`` runs, in seconds per call (each run loops for ``min_run`` at least).

    The minimum, not the median: the question is what a path costs, and
    anything above its minimum is interference from elsewhere.
    """
    start = time.perf_counter()
    call()  # warm-up: first touch of buffers, lazy imports, plan caches
    once = time.perf_counter() - start
    number = max(1, int(min_run / max(once, 1e-7)))
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            call()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def measure(
    name: str,
    dtype: np.dtype,
    paths: Sequence[str],
    sizes: Sequence[int] = ON_THE_SPOT_SIZES,
    max_call: float | None = ON_THE_SPOT_MAX_CALL,
    repeat: int = 3,
    progress: Callable[[], None] | None = None,
) -> Curve:
    """A :class:`Curve` of ``paths`` (the original among them) over ``sizes``.

    With ``max_call``, sizes stop growing after the first at which the
    original's call took longer than that (at least two sizes are kept).
    """
    run = _RUNNERS[name]
    scratch = make_input(name, dtype, max(sizes))
    flat = scratch.reshape(-1)
    measured: list[int] = []
    seconds: dict[str, list[float]] = {path: [] for path in paths}
    for n in sizes:
        x = make_input(name, dtype, n) if scratch.ndim > 1 else flat[:n]
        for path in paths:
            seconds[path].append(time_call(lambda: run(path, x), repeat))
        measured.append(n)
        if progress is not None:
            progress()
        if max_call is not None and len(measured) >= 2 and seconds["numpy"][-1] > max_call:
            break
    invariant = "cpu1" in paths and "cpu" in paths and _same_bits(run, make_input(name, dtype, _ODD_SIZE))
    return Curve(tuple(measured), {path: tuple(times) for path, times in seconds.items()}, invariant)


_ODD_SIZE = 100_003
"""A length whose split between threads is not a multiple of any vector width."""


def _same_bits(run: Runner, x: np.ndarray) -> bool:
    """Whether torch's result can depend on how the elements are split between threads.

    A split puts a few elements in a scalar tail instead of the vectorized loop;
    where the two round differently (torch's sigmoid and atanh do), the thread
    count changes bits.  A strided input runs every element through the scalar
    loop: it must match the contiguous (vectorized) result, and one thread the pool.
    """
    if x.ndim != 1:
        return False  # reductions keep their configured thread count anyway
    spread = np.empty(2 * x.size, x.dtype)[::2]
    spread[...] = x
    vectorized = np.asarray(run("cpu1", x))
    scalar = np.ascontiguousarray(run("cpu1", spread))
    pool = np.asarray(run("cpu", x))
    return vectorized.tobytes() == scalar.tobytes() == pool.tobytes()
