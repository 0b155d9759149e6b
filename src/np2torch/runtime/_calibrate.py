"""Timing the paths of one (function, dtype): what ``np2torch tune`` and on-the-spot calibration measure.

The caller hands over how to run the function (:data:`Runner`, a helper's
``run_path``): ``run(path, x)`` computes it of the scratch input ``x`` through
``path`` exactly as a user's call taking that path would (fresh result,
default error checks), so a measurement includes every cost the user pays.
Inputs are drawn from the table's ``domain`` (no floating-point flags: the
common case); they are never the user's arrays.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from . import _profile
from ._backend import load_torch
from ._decide import Measure
from ._fork import in_forked_child
from ._load import machine_busy, start_window
from ._model import Curve
from ._state import PROCESS
from .table import FUNCTIONS_BY_NAME

if TYPE_CHECKING:
    Runner = Callable[[str, np.ndarray], object]
    """``run(path, x)``: the function of ``x`` through ``path`` (``numpy``, ``cpu1``, ``cpu``, ``cuda``)."""

ON_THE_SPOT_SIZES: tuple[int, ...] = (1 << 12, 1 << 15, 1 << 18, 1 << 21)
"""Sizes measured on the spot; the largest ones are skipped once one call takes longer than
:data:`ON_THE_SPOT_MAX_CALL` (the model extrapolates from the two largest measured)."""
ON_THE_SPOT_MAX_CALL = 2e-3
_MIN_RUN = 1e-4
"""Seconds each timed run loops for (timer resolution and clock jitter vanish)."""


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
    if row.kind == "reduction":
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
    run: Runner,
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
    invariant = "cpu1" in paths and "cpu" in paths and same_bits(run, make_input(name, dtype, _ODD_SIZE))
    return Curve(tuple(measured), {path: tuple(times) for path, times in seconds.items()}, invariant)


_ODD_SIZE = 100_003
"""A length whose split between threads is not a multiple of any vector width."""


def same_bits(run: Runner, x: np.ndarray) -> bool:
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


def on_the_spot(request: Measure, run: Runner) -> Curve | None:
    """Measure what :func:`._decide.route` asked for and record it in the profile; None if that cannot be done now.

    Once per (function, dtype) and process: a failed measurement is not retried.
    """
    with PROCESS.lock:
        if request.key in PROCESS.measuring or request.key in PROCESS.unmeasurable:
            return None
        PROCESS.measuring.add(request.key)
    try:
        if not load_torch():
            return None
        import torch

        start_window()
        began = time.perf_counter()
        try:
            curve = measure(run, request.name, np.dtype(request.dtype), request.paths)
        except Exception:  # a measurement must never break the user's call: the prior stays
            PROCESS.unmeasurable.add(request.key)
            return None
        finally:
            PROCESS.one_time.append((began, time.perf_counter() - began))
        _profile.record({request.key: curve}, threads=torch.get_num_threads(), persist=worth_keeping())
        PROCESS.forget_decisions()
        return curve
    finally:
        PROCESS.measuring.discard(request.key)


def worth_keeping() -> bool:
    """Whether a measurement just taken may stand for this machine in later processes.

    Not in a child forked from a torch process (one thread only), and not while
    other programs kept the cores busy (:func:`._load.machine_busy`, over the
    measurement): the pool's times would be a busy machine's for good.  Such
    measurements still decide in this process; ``np2torch tune`` on a quiet
    machine records them.
    """
    return not in_forked_child() and not machine_busy()
