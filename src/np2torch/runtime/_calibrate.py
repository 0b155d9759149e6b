"""Timing the paths of one (function, dtype, shape class): what ``np2torch tune`` measures.

The caller hands over how to run the function (:data:`Runner`, a helper's
``run_path``): ``run(path, x)`` computes it of the scratch input ``x`` through
``path`` exactly as a user's call taking that path would (fresh result,
default error checks, the previous call's result still alive as in ``y = f(x)`` in a loop), so a
measurement includes every cost the user pays.  Nothing here runs while a program runs: the
runtime decides from the profile alone (:mod:`._decide`).
Inputs are drawn from the table's ``domain`` (no floating-point flags: the
common case); they are never the user's arrays.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ._model import CLASS_LENGTHS, Curve
from .table import FUNCTIONS_BY_NAME

if TYPE_CHECKING:
    Runner = Callable[[str, np.ndarray], object]
    """``run(path, x)``: the function of ``x`` through ``path`` (``numpy``, ``cpu1``, ``cpu``, ``cuda``)."""

_MIN_RUN = 1e-4
"""Seconds each timed run loops for (timer resolution and clock jitter vanish)."""


def make_input(name: str, dtype: np.dtype, n: int, seed: int = 0, klass: str = "") -> np.ndarray:
    """``n`` values of ``dtype`` in the function's flag-free domain (2-d for reductions, as bench times them).

    A reduction's shape class (``short-inner``, ...) lays the input out so that reducing axis 0 is a
    call of that class: the class's reduced length (:data:`._model.CLASS_LENGTHS`, or ``n`` when
    smaller) along axis 0, contiguous for ``inner`` (a transposed C array), strided for ``outer``."""
    row = FUNCTIONS_BY_NAME[name]
    low, high = row.domain
    rng = np.random.default_rng(seed)
    real = np.dtype(dtype).kind != "c"
    with np.errstate(all="ignore"):
        x = rng.uniform(low, high, n)
        if not real:
            x = x + 1j * rng.uniform(-3.0, 3.0, n)
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


def time_call(call: Callable[[], object], repeat: int = 3, min_run: float = _MIN_RUN) -> float:
    """The fastest of ``repeat`` runs, in seconds per call (each run loops for ``min_run`` at least).

    The minimum, not the median: the question is what a path costs, and
    anything above its minimum is interference from elsewhere.  Each call's
    result stays alive until the next call has returned, as ``y = f(x)`` in a
    program's loop keeps it: the next result is a new allocation, not the
    buffer just freed.
    """
    start = time.perf_counter()
    kept = call()  # warm-up: first touch of buffers, lazy imports, plan caches
    once = time.perf_counter() - start
    number = max(1, int(min_run / max(once, 1e-7)))
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            kept = call()
        best = min(best, (time.perf_counter() - start) / number)
    del kept
    return best


def measure(
    run: Runner,
    name: str,
    dtype: np.dtype,
    paths: Sequence[str],
    sizes: Sequence[int],
    max_call: float | None,
    repeat: int = 3,
    progress: Callable[[], None] | None = None,
    klass: str = "",
) -> Curve:
    """A :class:`Curve` of ``paths`` (the original among them) over ``sizes`` (a reduction's shape class ``klass``).

    With ``max_call``, sizes stop growing after the first at which the
    original's call took longer than that (at least two sizes are kept).
    """
    scratch = make_input(name, dtype, max(sizes), klass=klass)
    flat = scratch.reshape(-1)
    measured: list[int] = []
    seconds: dict[str, list[float]] = {path: [] for path in paths}
    for n in sizes:
        x = make_input(name, dtype, n, klass=klass) if scratch.ndim > 1 else flat[:n]
        for path in paths:
            seconds[path].append(time_call(lambda: run(path, x), repeat))
        measured.append(n)
        if progress is not None:
            progress()
        if max_call is not None and len(measured) >= 2 and seconds["numpy"][-1] > max_call:
            break
    return Curve(tuple(measured), {path: tuple(times) for path, times in seconds.items()})
