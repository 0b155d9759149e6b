"""logsumexp's lean path: SciPy's own arithmetic on short contiguous slices, without SciPy's overhead.

Where a call reduces along one short contiguous axis (at most :data:`LONGEST`
terms, as ``logsumexp(x, axis=1)`` over a few mixture components), SciPy's
result needs only three reduced quantities per slice -- the maximum ``a_max``,
the count ``m`` of elements equal to it and the sum ``s`` of ``exp(x - a_max)``
over the others -- and SciPy's own expressions on them (:func:`finish`).  Here
they are computed with NumPy, column by column, in SciPy's order: SciPy's bits
(checked once per process, :func:`.._exact.logsumexp_check.check_lean`), at a
fraction of its twenty whole-array passes.  It serves a call the decision
keeps on the original (``numpy``): it is how logsumexp's original call is made
cheaper, never a path the profile chooses.

:func:`serves` says whether it can serve a call; :func:`compute` computes it
(None: SciPy's own call).  SciPy's expressions on the reduced quantities
(:func:`finish`, and the rows view it reads) are the torch path's too
(:mod:`.._logsumexp`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Tuple

import numpy as np

from .._backend import settled
from .._exact.slices import OVERFLOW_FROM, reduced_dims
from .._state import PROCESS, TAKEN

if TYPE_CHECKING:
    Parts = Tuple[np.ndarray, np.ndarray, np.ndarray]
    """Per slice, keepdims-shaped: the maximum ``a_max``, the count ``m`` of elements equal to it (int64 from torch),
    and the sum ``s`` of ``exp(x - a_max)`` over the others."""


LONGEST = 7
"""NumPy adds up to this many terms of a slice one after the other; from 8 on, its pairwise sum keeps
eight partial sums (numpy/_core/src/umath/loops_utils.h.src), an order the lean path does not redo."""
DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
VERDICT = "logsumexp lean"
"""The key of :data:`.._state.PROCESS`'s verdicts under which the lean path's check is kept."""


def compute(a: np.ndarray, axis: object, keepdims: object, return_sign: object,
            original: Callable[[], Callable[..., Any]] | None) -> object | None:
    """SciPy's own result, bit for bit, for a call along one short contiguous axis, or None.

    SciPy's logsumexp runs about twenty whole-array passes (a first ``log(sum(exp(a)))`` kept for
    non-finite slices among them) and reduces along the short axis slice by slice; over (5000, 3)
    along axis 1 that is ~700 us for 15,000 elements.  Its result for slices with a finite maximum
    needs only ``a_max``, ``m`` and ``s`` (see the module's docstring): computed here with NumPy,
    column by column, with SciPy's own operations on the same values in the same order (its maxima
    are ``exp(-inf)``, here set to the same +0.0; NumPy adds fewer than eight terms one after the
    other), then SciPy's expressions (:func:`finish`).  That this gives the installed SciPy's bits is
    checked once per process on order-sensitive probes against ``original()`` (the helper's loader of SciPy's
    function: :func:`.._exact.logsumexp_check.check_lean`; None: not asked, for that check).
    Anything else (a NaN, a non-finite maximum, a reporting ``under=``, ``return_sign``) is SciPy's.
    """
    call = serves(a, axis, keepdims, return_sign)
    if call is None or np.geterr()["under"] != "ignore" or (original is not None and not _verdict(original)):
        return None
    rows, dims, keep = call
    if rows.ndim == 1 and not keep:  # one slice, a scalar result (``logsumexp(logits)``)
        scalar = one_slice(rows)
        if scalar is not None:
            TAKEN.device = "lean"
            return scalar
    found = reduce_rows(rows)
    if found is None:
        return None
    with np.errstate(all="ignore"):
        result = finish(a, dims, (), from_rows(found, dims[0]), a.dtype, keep, False, finite=True)
    TAKEN.device = "lean"  # which path this call took, for np2torch run's sites
    return result


def serves(a: np.ndarray, axis: object, keepdims: object,
           return_sign: object) -> tuple[np.ndarray, Tuple[int, ...], bool] | None:
    """Whether the lean path can serve the call by its shape and arguments: its rows (:func:`rows_of`), the
    reduced axis and ``keepdims``; None where it cannot."""
    if a.dtype not in DTYPES or return_sign is not False or a.ndim == 0:
        return None
    dims = reduced_dims(axis, a.ndim)
    keep = flag(keepdims)
    if dims is None or keep is None or len(dims) != 1 or a.shape[dims[0]] < 2:
        return None
    rows = rows_of(a, dims, LONGEST)
    return None if rows is None else (rows, dims, keep)


def reduce_rows(rows: np.ndarray) -> Parts | None:
    """``(a_max, m, s)`` of C-contiguous ``rows`` along the last axis, as SciPy computes them, or None
    where a maximum is not finite or SciPy's ``a - a_max`` could overflow."""
    length = rows.shape[-1]
    flat = rows.reshape(-1, length)
    top = np.maximum(flat[:, 0], flat[:, 1])
    for j in range(2, length):
        np.maximum(top, flat[:, j], out=top)
    high, low = top.max(), top.min()  # NaN if any slice holds one
    if not (-np.inf < low and high < OVERFLOW_FROM[rows.dtype]):
        return None
    columns = np.empty((length, top.size), rows.dtype)
    np.subtract(flat.T, top, out=columns)  # one pass: the transposing copy and SciPy's a - a_max
    others = columns != 0  # x - a_max == 0 exactly where x == a_max: SciPy's maxima are the rest
    np.exp(columns, out=columns)
    # SciPy's exp(-inf), +0.0, for the maxima: exp(0) * False is +0.0, and every other term (at most 1.0) times
    # True is itself, with no flag raised (a masked copyto costs ~5x this, mispredicting on every row).
    np.multiply(columns, others, out=columns)
    total = columns[0] + columns[1]
    for j in range(2, length):
        total += columns[j]
    shape = rows.shape[:-1] + (1,)
    # Every slice holds its maximum at least once, so as many hits as slices means exactly one each (the common
    # case, and a count over the whole array instead of a casting sum along the short axis).
    if others.size - np.count_nonzero(others) == top.size:
        count = np.ones(shape, rows.dtype)
    else:
        count = (length - others.sum(axis=0, dtype=rows.dtype)).reshape(shape)
    return top.reshape(shape), count, total.reshape(shape)


def one_slice(row: np.ndarray) -> np.generic | None:
    """SciPy's scalar result over the one contiguous slice ``row`` where its maximum is finite and reached once
    (as :func:`reduce_rows` and :func:`finish` compute it, in NumPy scalars: a handful of calls, not thirty);
    None otherwise (the general path then decides)."""
    top = _MAXIMUM(row)
    if not (-np.inf < top < OVERFLOW_FROM[row.dtype]):
        return None
    terms = row - top
    others = terms != 0
    if row.size - np.count_nonzero(others) != 1:
        return None
    np.exp(terms, out=terms)
    np.multiply(terms, others, out=terms)
    total = terms[0] + terms[1]  # NumPy scalars add as its loops do, one term after the other
    for j in range(2, row.size):
        total += terms[j]
    scalar: np.generic = common_case(total, top)
    return scalar


_MAXIMUM = np.maximum.reduce


def _verdict(original: Callable[[], Callable[..., Any]]) -> bool:
    found = PROCESS.verdicts.get(VERDICT)
    if found is None:
        # No lock over the check's imports and SciPy's calls: threads that check at once find the same answer, the
        # first one kept.  While torch is half imported SciPy raises: this call is SciPy's, a later one checks.
        from .._exact import logsumexp_check

        checked = settled(lambda: logsumexp_check.check_lean(original(), functools.partial(compute, original=None)))
        if checked is None:
            return False
        found = PROCESS.verdicts.setdefault(VERDICT, checked)
    return found is True


# ---------------------------------------------------------------- SciPy's expressions (the torch path finishes with them too)


def flag(value: object) -> bool | None:
    # SciPy only tests truth; other objects (arrays, ...) are left to it.
    if type(value) is bool or isinstance(value, np.bool_):
        return bool(value)
    return None


def rows_of(view: np.ndarray, dims: Tuple[int, ...], longest: int) -> np.ndarray | None:
    """``view`` with its one reduced axis last, where that is C-contiguous (rows of short slices, as
    ``logsumexp(x, axis=1)`` over a (points, components) array reads), the slices at most ``longest`` long."""
    if len(dims) != 1 or view.shape[dims[0]] > longest or view.size == 0:
        return None
    rows = view if dims[0] == view.ndim - 1 else np.moveaxis(view, dims[0], -1)
    return rows if rows.flags.c_contiguous else None


def from_rows(parts: Parts, axis: int) -> Parts:
    """Parts computed on :func:`rows_of`'s view, in the keepdims shape of the view it was made from."""
    if axis == parts[0].ndim - 1:
        return parts
    a_max, m, s = (np.moveaxis(values, -1, axis) for values in parts)
    return a_max, m, s


def finish(
    a: np.ndarray,
    dims: tuple[int, ...],
    flipped: tuple[int, ...],
    reduced: tuple[np.ndarray, np.ndarray, np.ndarray],
    work: np.dtype,
    keepdims: bool,
    return_sign: bool,
    finite: bool = False,
) -> object:
    """SciPy 1.17's NumPy expressions on the reduced quantities, in SciPy's memory order: SciPy's result
    (a NumPy scalar or array, a pair with ``return_sign``).  ``finite``: every ``a_max`` is known finite."""
    a_max, m, total = (_laid_out(a, dims, flipped, values, work) for values in reduced)
    if finite and not return_sign and not keepdims and _no_unit_dims(a.shape, dims) and m.max() == 1:
        # The common case (:func:`common_case`).  (Where the result keeps a dimension of length 1, its stride is the one SciPy's final `where` gives: below.)
        return _squeezed(common_case(total, a_max), dims, keepdims)
    s = np.where(total == 0, total, total / m)
    out = np.log1p(s) + np.log(m) + a_max
    # Non-finite maximum (NaN slices never get here): SciPy falls back to
    # log(sum(exp(a))): +inf -> +inf, all -inf -> -inf, with sign(sum) = 1, 0.
    out = _squeezed(np.where(np.isfinite(a_max), out, a_max), dims, keepdims)
    if not return_sign:
        return out
    one, zero = work.type(1), work.type(0)
    return out, _squeezed(np.where(a_max == -np.inf, zero, one), dims, keepdims)


def common_case(total: Any, a_max: Any) -> Any:
    """SciPy's ``log1p(s) + log(m) + a_max`` where every ``m`` is 1 and every ``a_max`` finite, to the bit (arrays or
    NumPy scalars): ``s / m`` is ``s``, ``log(m)`` is +0.0, and ``log1p(s) >= +0.0`` is unchanged by adding it."""
    out = np.log1p(total)
    out += a_max
    return out


def _no_unit_dims(shape: tuple[int, ...], dims: tuple[int, ...]) -> bool:
    return all(size != 1 for i, size in enumerate(shape) if i not in dims)


def _laid_out(a: np.ndarray, dims: tuple[int, ...], flipped: tuple[int, ...], values: np.ndarray, work: np.dtype) -> np.ndarray:
    """``values`` (keepdims shape, computed on the flipped view) in the layout SciPy's arrays have.

    NumPy lays a reduction's result out in the input's stride order; SciPy's
    final ``where`` then gives the same strides as one over arrays laid out
    like this (checked over all axis permutations, flips and reductions of
    3-d and 4-d arrays).
    """
    if not flipped and a.flags.c_contiguous and values.flags.c_contiguous and values.dtype == work:
        return values  # a C-ordered input's reduction is C-ordered: nothing to lay out
    order = sorted(range(a.ndim), key=lambda i: -abs(a.strides[i]))
    shape = [1 if i in dims else a.shape[i] for i in range(a.ndim)]
    result = np.empty([shape[i] for i in order], dtype=work).transpose(np.argsort(order))
    if flipped:
        values = values[tuple(slice(None, None, -1) if i in flipped else slice(None) for i in range(a.ndim))]
    np.copyto(result, values)
    return result


def _squeezed(values: np.ndarray, dims: tuple[int, ...], keepdims: bool) -> object:
    if not keepdims:
        values = np.squeeze(values, axis=dims)
    return values[()] if values.ndim == 0 else values
