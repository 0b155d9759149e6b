"""What SciPy's reductions over ``axis`` share: the reduced axes, a view torch can read, the overflow threshold.

What it keeps of the original's semantics: which axes SciPy reduces (an
``axis`` it might treat otherwise -- a bool, a repeated or out-of-range axis --
is left to SciPy: :func:`reduced_dims`), that a slice's order does not matter
to a reduction while the kept axes keep theirs (:func:`positive_strides`), and
where SciPy's ``a - a_max`` may overflow and warn (:data:`OVERFLOW_FROM`: those
calls are SciPy's).  Used by the reductions that compute with torch
(:mod:`.._logsumexp`, :mod:`.._softmax`) and by logsumexp's lean path
(:mod:`.._paths.lean`).
"""

from __future__ import annotations

import operator

import numpy as np

from .._decision.model import REDUCED_LENGTHS

# |max| from which SciPy's ``x - x_max`` can overflow (x >= -max must round
# past -max): half an ULP of the largest finite value.
OVERFLOW_FROM = {np.dtype(np.float64): 2.0**970, np.dtype(np.float32): 2.0**103}


def reduced_dims(axis: object, ndim: int) -> tuple[int, ...] | None:
    """The reduced axes, sorted, or None for anything SciPy might treat differently."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if type(axis) is tuple else (axis,)
    dims = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            return None
        index = operator.index(item)
        if not -ndim <= index < ndim:
            return None
        dims.append(index % ndim)
    if len(set(dims)) != len(dims) or not dims:
        return None
    return tuple(sorted(dims))


def shape_class(shape: tuple[int, ...], strides: tuple[int, ...], dims: tuple[int, ...]) -> str:
    """The reduction's shape class (:data:`.._decision.model.REDUCTION_CLASSES`): how long its slices are, and whether the
    reduced axes are the contiguous ones (every reduced axis steps less than every kept one of length > 1)."""
    reduced = 1
    for d in dims:
        reduced *= shape[d]
    length = next(name for name, bound in REDUCED_LENGTHS if bound is None or reduced <= bound)
    kept = [abs(strides[i]) for i in range(len(shape)) if i not in dims and shape[i] > 1]
    steps = [abs(strides[d]) for d in dims if shape[d] > 1]
    inner = not kept or not steps or max(steps) < min(kept)
    return f"{length}-{'inner' if inner else 'outer'}"


def positive_strides(a: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """A view of ``a`` with every negative stride reversed, and the axes reversed.

    torch rejects negative strides; a reduction does not care about the order
    of its slice, and kept axes are reversed back afterwards.
    """
    flipped = tuple(i for i, stride in enumerate(a.strides) if stride < 0)
    if not flipped:
        return a, flipped
    index = tuple(slice(None, None, -1) if i in flipped else slice(None) for i in range(a.ndim))
    return a[index], flipped
