"""``scipy.special.logsumexp`` of a Dask array: a tree reduction of SciPy's three quantities.

As ``da.reduction`` builds ``da.mean``: each block gives SciPy's reduced
quantities per slice -- the maximum ``a_max``, the count ``m`` of elements
equal to it and the sum ``s`` of ``exp(x - a_max)`` over the others, on torch
where the worker's profile says so (:func:`._logsumexp.torch_block_parts`) --
and blocks are combined by rescaling to the larger maximum in long double, so
SciPy's formula ``log1p(s / m) + log(m) + a_max`` is applied once, at the end,
to the combined quantities.  ``b=``, dtypes other than
float32/float64/bool/integers, 0-d and empty inputs take a plainer path: the
reduced axes are rechunked into one block and each block is one call of the
helper (SciPy there).  Imported only when a Dask array is seen.

``np2t.logsumexp`` returns what SciPy returns (:func:`as_the_original`: the
graph computed, unless SciPy is lazy on Dask); ``np2torch.runtime.dask.logsumexp``
returns the lazy reduction itself.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Optional, SupportsIndex, Tuple, Union

import numpy as np

from ._dask import BlockCall, Settings, explicit_settings
from ._state import PROCESS

if TYPE_CHECKING:
    from ._exact.logsumexp_check import LseVerdict

Axis = Union[SupportsIndex, Tuple[SupportsIndex, ...], None]
"""What ``axis`` SciPy's ``logsumexp`` takes."""
TorchParts = Callable[[np.ndarray, Tuple[int, ...]], Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]]]
"""A block's ``(a_max, m, s)`` per slice on torch, or None where NumPy computes them."""

_FAST_INPUTS = frozenset(np.dtype(c) for c in "?bBhHiIlLqQfd")
_FAST_RESULTS = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
_WEAK_SCALARS = (bool, int, float, complex)


def reduction(
    a: Any,
    axis: Axis,
    b: Any,
    keepdims: object,
    return_sign: object,
    entry: Callable[..., Any],
    original: Callable[..., Any],
    torch_parts: TorchParts,
    verdict: Callable[[], LseVerdict],
) -> object:
    """``scipy.special.logsumexp`` of the Dask array ``a``, as a lazy Dask array (a pair with ``return_sign``;
    the original's own result where unknown chunk sizes leave no reduction to build).

    ``entry``: np2torch's ``logsumexp`` (for a block holding whole slices);
    ``original``: SciPy's, called once on a one-element probe for its errors
    and result dtypes; ``torch_parts(block, dims)``: a block's
    ``(a_max, m, s)`` on torch, or None where NumPy computes them;
    ``verdict()``: whether the installed SciPy computes the formula combined
    here (:mod:`._exact.logsumexp_check`); if not, every block is a call of ``entry``.
    """
    # A Python scalar ``b`` is weak in NumPy 2's promotion (float32 ``a`` stays float32): probed as itself.
    weak_b = type(b) in _WEAK_SCALARS
    probe_b = b if b is None or weak_b else np.ones((1,) * np.ndim(b), _dtype(b))
    # Empty where ``a`` is: SciPy treats empty inputs apart (and rejects some).
    probe_a = np.ones(tuple(0 if n == 0 else 1 for n in a.shape), a.dtype)
    probe = original(probe_a, axis=axis, b=probe_b, keepdims=keepdims, return_sign=return_sign)
    return_sign = bool(return_sign)
    keepdims = bool(keepdims)
    dtypes = tuple(np.asarray(part).dtype for part in (probe if return_sign else (probe,)))
    settings = explicit_settings()
    import dask.array as da

    fast = b is None and not weak_b and a.dtype in _FAST_INPUTS and dtypes[0] in _FAST_RESULTS and a.size != 0
    if fast:
        found = verdict()
        fast = found.finite and found.infinite
    if not fast and any(n != n for n in (*a.shape, *getattr(b, "shape", ()))):
        # Unknown chunk sizes cannot be rechunked into whole slices: the original's call.
        return original(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
    if weak_b:
        b, scalar_b = None, b
    else:
        scalar_b = None
    if b is not None:
        b = da.asarray(b)
        shape = np.broadcast_shapes(a.shape, b.shape)
        a, b = da.broadcast_to(a, shape), da.broadcast_to(b, shape)
    if a.ndim == 0:  # SciPy reduces a 0-d input as a 1-d one
        a, b = a.reshape(1), None if b is None else b.reshape(1)
    dims = _axes(axis, a.ndim)
    if fast:
        parts = _reduction(a, dims, dtypes[0], settings, torch_parts)
        finish: Callable[..., object] = _finish
    else:
        parts = _by_slices(a, b, scalar_b, dims, return_sign, dtypes, settings, entry)
        finish = _pick
    drop = () if keepdims else dims
    results = tuple(
        parts.map_blocks(
            finish,
            which=which,
            drop=drop,
            token="logsumexp",
            drop_axis=drop,
            dtype=dtype,
            meta=np.empty((0,) * (a.ndim - len(drop)), dtype),
        )
        for which, dtype in zip(("out", "sign"), dtypes)
    )
    return results if return_sign else results[0]


def as_the_original(result: object, original: Callable[..., object]) -> object:
    """``result`` (a Dask array, or a pair of them) as the original returns it: lazy if SciPy is lazy on
    Dask arrays, else computed in one pass over the graph (an ``ndarray`` or a NumPy scalar, as SciPy's).

    SciPy 1.17 without ``SCIPY_ARRAY_API=1`` converts a Dask array with ``np.asarray`` (the whole array
    gathered, then reduced on one core); with it, SciPy returns a lazy Dask array.  Which one is asked of
    the original itself, once per process, on a one-element Dask array.
    """
    from dask.base import compute, is_dask_collection

    parts = result if isinstance(result, tuple) else (result,)
    if not all(is_dask_collection(part) for part in parts) or _lazy_on_dask(original):
        return result  # unknown chunk sizes: the original's own call and result
    computed = compute(*parts)
    return tuple(computed) if isinstance(result, tuple) else computed[0]


def _lazy_on_dask(original: Callable[..., object]) -> bool:
    found = PROCESS.verdicts.get(_LAZY)
    if found is None:
        import dask.array as da
        from dask.base import is_dask_collection

        found = PROCESS.verdicts[_LAZY] = is_dask_collection(original(da.zeros(1, chunks=1)))
    return bool(found)


_LAZY = "logsumexp on Dask is lazy"
"""The key of :func:`_lazy_on_dask`'s answer in :attr:`._state.Process.verdicts`."""


def _dtype(b: object) -> np.dtype:
    dtype = getattr(b, "dtype", None)
    return np.asarray(b).dtype if dtype is None else np.dtype(dtype)


def _axes(axis: Axis, ndim: int) -> tuple[int, ...]:
    """The reduced axes, sorted (the probe has already rejected what SciPy rejects)."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted({int(item) % ndim for item in items}))


def _parts_dtype(work: np.dtype) -> np.dtype:
    # The sum is carried in long double so that rescaling blocks to a larger
    # maximum adds no rounding of its own (only the final one, to ``work``).
    return np.dtype([("max", work), ("count", np.int64), ("sum", np.longdouble)])


def _reduction(a: Any, dims: tuple[int, ...], work: np.dtype, settings: Settings | None, torch_parts: TorchParts) -> Any:
    """Per slice ``(a_max, m, s)`` of the whole array, keepdims-shaped, as one structured Dask array."""
    from dask.array import reduction

    dtype = _parts_dtype(work)
    chunk = partial(BlockCall(_chunk, settings), work=work.str, torch_parts=torch_parts)
    return reduction(
        a,
        chunk,
        _combine,
        axis=dims,
        keepdims=True,
        dtype=dtype,
        combine=_combine,
        name="logsumexp",
        concatenate=True,
        meta=np.empty((0,) * a.ndim, dtype),
    )


def _chunk(
    x: np.ndarray, axis: tuple[int, ...], keepdims: bool, work: str, torch_parts: TorchParts, computing_meta: bool = False
) -> np.ndarray:
    """One block's ``(a_max, m, s)`` per slice: on torch where this worker's settings and profile say so."""
    dims = tuple(sorted(axis))
    dtype = _parts_dtype(np.dtype(work))
    parts = np.empty(tuple(1 if i in dims else n for i, n in enumerate(x.shape)), dtype)
    if computing_meta or x.size == 0:
        parts["max"], parts["count"], parts["sum"] = -np.inf, 0, 0
        return parts
    found = torch_parts(x, dims)
    a_max, count, total = _numpy_parts(x, dims, np.dtype(work)) if found is None else found
    parts["max"] = a_max
    parts["count"] = count
    with np.errstate(invalid="ignore"):
        # A block whose maximum is +-inf or NaN has a NaN sum; it adds nothing
        # (the slice's result is then its maximum, or the block is outweighed).
        parts["sum"] = np.where(np.isfinite(a_max), total, 0)
    return parts


def _numpy_parts(x: np.ndarray, dims: tuple[int, ...], work: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a_max, m, s)`` with NumPy, as SciPy's ``_logsumexp`` computes them (under its ``errstate``)."""
    a = x.astype(work, copy=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        a_max = np.max(a, axis=dims, keepdims=True)
        shifted = a - a_max
        is_max = shifted == 0
        terms = np.exp(shifted)
        terms[is_max] = 0
        # keepdims=True gives arrays (NumPy's stubs say scalar or array: asarray returns the array itself)
        count = np.asarray(np.sum(is_max, axis=dims, keepdims=True, dtype=np.int64))
        return a_max, count, np.asarray(np.sum(terms, axis=dims, keepdims=True))


def _combine(parts: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    """Blocks' quantities (concatenated along the reduced axes) combined into one per slice.

    A block whose maximum ``c`` is below the slice's ``a_max`` counts all its
    elements: ``(s + m) * exp(c - a_max)``, in long double.
    """
    dims = tuple(sorted(axis))
    if parts.size == 0:
        return parts[tuple(slice(0, 1) if i in dims else slice(None) for i in range(parts.ndim))]
    maxes, counts, sums = parts["max"], parts["count"], parts["sum"]
    top = np.max(maxes, axis=dims, keepdims=True)
    combined = np.empty(top.shape, parts.dtype)
    with np.errstate(all="ignore"):
        at_top = maxes == top
        scaled = (sums + counts) * np.exp(maxes.astype(np.longdouble) - top)
        combined["max"] = top
        combined["count"] = np.sum(np.where(at_top, counts, 0), axis=dims, keepdims=True)
        combined["sum"] = np.sum(np.where(at_top, sums, scaled), axis=dims, keepdims=True)
    return combined


def _finish(parts: np.ndarray, which: str, drop: tuple[int, ...]) -> np.ndarray | np.generic:
    """SciPy 1.17's expressions on the combined quantities (as :func:`._logsumexp._finish`)."""
    a_max = parts["max"]
    work = a_max.dtype
    with np.errstate(divide="ignore", invalid="ignore"):
        if which == "sign":  # SciPy: sign(sum(exp(a))) where the result is not finite
            value = np.where(np.isnan(a_max), a_max, np.where(a_max == -np.inf, work.type(0), work.type(1)))
        else:
            m = parts["count"].astype(work)
            total = parts["sum"].astype(work)
            s = np.where(total == 0, total, total / m)
            value = np.where(np.isfinite(a_max), np.log1p(s) + np.log(m) + a_max, a_max)
    return _squeezed(value, drop)


def _by_slices(
    a: Any, b: Any, scalar_b: object, dims: tuple[int, ...], return_sign: bool, dtypes: tuple[np.dtype, ...],
    settings: Settings | None, entry: Callable[..., Any],
) -> Any:
    """The plainer path: the reduced axes in one block, each block one call of np2torch's ``logsumexp``
    (with ``b``'s block, or the Python scalar ``scalar_b`` as given)."""
    whole = a.rechunk({d: -1 for d in dims})
    blocks = [whole] if b is None else [whole, b.rechunk(whole.chunks)]
    dtype = np.dtype(list(zip(("out", "sign"), dtypes)))
    chunks = tuple((1,) if i in dims else c for i, c in enumerate(whole.chunks))
    call = BlockCall(_slices, settings)
    return whole.map_blocks(
        call, *blocks[1:], scalar_b=scalar_b, dims=dims, return_sign=return_sign, entry=entry, dtype=dtype, chunks=chunks,
        token="logsumexp",
        meta=np.empty((0,) * a.ndim, dtype),
    )


def _slices(a: np.ndarray, b: np.ndarray | None = None, *, scalar_b: object, dims: tuple[int, ...], return_sign: bool,
            entry: Callable[..., Any]) -> np.ndarray:
    result = entry(a, axis=dims, b=scalar_b if b is None else b, keepdims=True, return_sign=return_sign)
    values = result if return_sign else (result,)
    dtype = np.dtype(list(zip(("out", "sign"), (np.asarray(v).dtype for v in values))))
    parts = np.empty(np.shape(values[0]), dtype)
    for name, value in zip(("out", "sign"), values):
        parts[name] = value
    return parts


def _pick(parts: np.ndarray, which: str, drop: tuple[int, ...]) -> np.ndarray | np.generic:
    return _squeezed(parts[which], drop)


def _squeezed(values: np.ndarray, drop: tuple[int, ...]) -> np.ndarray | np.generic:
    if drop:
        values = np.squeeze(values, axis=drop)
    return values[()] if values.ndim == 0 else values
