"""``scipy.special.softmax`` and ``log_softmax``, computed with torch where that returns SciPy's result.

SciPy (1.17) computes, over the reduced axes, with ``x_max = max(x, axis, keepdims=True)``::

    softmax:      e = exp(x - x_max);  e / sum(e)
    log_softmax:  t = x - x_max;       t - log(sum(exp(t)))     (x_max set to 0 where not finite)

The torch path computes the same expressions in the same order, in the
result's own buffer: ``x - x_max`` is one IEEE subtraction on either side
(bitwise SciPy's); the sums are NumPy's own over an array laid out as SciPy's
(SciPy's additions in SciPy's order), except softmax's float32 ones,
accumulated in float64 (:func:`_sums`); the logs of the sums are NumPy's.
torch's ``exp`` and that more accurate sum are the differences: within 4 ULP
of SciPy, or farther only where SciPy's own float32 sum is the one off
(docs/catalogue.md).  Unlike its ``logsumexp``, SciPy's softmax keeps the
maximum's ``exp(0) = 1`` *in* the sum; so does this one.

It serves plain float32/float64 ndarrays and int32/int64 ones (SciPy's
``x - x_max`` is then an integer subtraction and ``exp`` NumPy's float64 loop;
a range wide enough to wrap around goes to SciPy), and only where SciPy raises
no floating-point flag the torch path would not: every slice's maximum finite,
``np.errstate(under='ignore')`` (the default: ``exp`` and the division
underflow silently), and no ``x - x_max`` that can overflow unless
``over='ignore'``.  Everything else -- NaN or infinite maxima (all-``-inf``
slices), empty and 0-d inputs, other dtypes (SciPy's int8/int16 results are
float16/float32, bool raises), subclasses and array-likes, broadcast views
and arrays with a length-1 axis (SciPy's result layout is not np.empty_like's there),
unusual ``axis`` values -- is SciPy's own call.  CUDA: no loop verified
(``cuda_loops`` empty), so no call goes there.

On a Dask array the helper gives what SciPy gives: SciPy computes a NumPy
result (the default) -- so does the helper, from the same ``np.asarray`` --
or, with SciPy's array API enabled (``SCIPY_ARRAY_API=1``), a lazy Dask
array: where every reduced axis already lies in one chunk, each block is one
call of the helper; otherwise SciPy builds its own graph.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ._backend import begin_torch_work, can_view, end_torch_work, importing_here, load_torch, torch_out_of_sight
from ._config import RuntimeSettings
from ._dask import DASK_ARRAY, BlockCall, explicit_settings, is_dask_array
from ._decision.route import Route, original_reason
from ._exact.slices import OVERFLOW_FROM, positive_strides, reduced_dims, shape_class
from ._helper import PUBLIC_MODULE, Helper, dtype_name
from ._paths import blocks
from ._state import PROCESS, SCOPED, TAKEN
from .table import FUNCTIONS_BY_NAME

if TYPE_CHECKING:
    import torch
    from numpy.typing import ArrayLike

    from .table import Function

NAMES = ("softmax", "log_softmax")

_FLOAT64 = np.dtype(np.float64)
# SciPy subtracts integers as integers and NumPy's exp computes these in float64;
# smaller integers get float16/float32 results, unsigned ones wrap around below the maximum.
_INTEGERS = frozenset((np.dtype(np.int32), np.dtype(np.int64)))


class Softmax(Helper):
    """The softmax or log_softmax helper: SciPy's original and the torch path below."""

    def __init__(self, row: Function, function: Callable[..., Any]) -> None:
        super().__init__(row)
        self.function = function
        self.floats = frozenset(np.dtype(name) for name in row.loops)

    def work(self, dtype: np.dtype) -> np.dtype | None:
        """The dtype SciPy's result has and the torch path computes in, or None (SciPy's call)."""
        if dtype in self.floats:
            return dtype
        return _FLOAT64 if dtype in _INTEGERS and _FLOAT64 in self.floats else None

    def loop_of(self, dtype: np.dtype) -> str | None:
        work = self.work(dtype)
        return None if work is None else work.name

    def route_call(self, x: np.ndarray, axis: object, work: np.dtype, settings: RuntimeSettings,
                   dry_run: bool = False) -> Route | None:
        """Where the settings and the machine profile send this call, by its size and shape class (None: SciPy;
        never CUDA, none verified)."""
        dims = reduced_dims(axis, x.ndim) if x.ndim else None
        if settings.device == "numpy" or dims is None:
            return None
        klass = shape_class(x.shape, x.strides, dims)
        name = dtype_name(work)
        found = self.route(name, x.size, settings, name in self.row.cuda_loops, dry_run, klass)
        return None if found is not None and found.device != "cpu" else found

    def run_path(self, path: str, x: np.ndarray) -> object:
        """One call through ``path`` on the scratch input ``x``: ``axis=0``, as bench times it."""
        if path == "numpy":
            return self.load()(x, axis=0)
        if path == "cuda":
            raise ValueError(f"{self.name}: no loop is verified on CUDA")
        result = self.try_torch(x, 0, Route(path, "cpu", "forced"))
        if result is None:
            raise ValueError("the torch path declined the calibration input")
        return result

    def call(self, x: Any, axis: Any) -> Any:
        """The public helper's body: the torch path where it serves the call, else SciPy's."""
        if importing_here():  # a call inside the runtime's `import torch` (a signal handler's): SciPy's, torch unseen
            with torch_out_of_sight():
                return self.original(x, axis=axis)
        if type(x) is np.ndarray:
            scoped = SCOPED.get()
            settings = PROCESS.settings if scoped is None else scoped
            if self.admits(x.dtype, x.size, settings):
                work = self.work(x.dtype)
                route = None if work is None or x.size == 0 else self.route_call(x, axis, work, settings)
                result = None if route is None else self.try_torch(x, axis, route)
                if result is not None:
                    return result
        elif DASK_ARRAY in sys.modules and is_dask_array(x):
            return self.on_dask(x, axis)
        return self.original(x, axis=axis)

    def try_torch(self, x: np.ndarray, axis: object, route: Route) -> np.ndarray | None:
        """SciPy's result computed with torch on ``route``, or None where only SciPy can give it."""
        work = self.work(x.dtype)
        dims = reduced_dims(axis, x.ndim)
        if work is None or dims is None or x.size == 0 or x.ndim == 0:
            return None
        modes = np.geterr()
        if modes["under"] != "ignore":
            return None  # SciPy's exp (and softmax's division) underflow under the caller's errstate
        if (0 in x.strides or 1 in x.shape) and x.size > 1:
            # Broadcast views and length-1 axes: the strides NumPy gives SciPy's result
            # there are not np.empty_like's (the only mismatches over every 3-d layout).
            return None
        view, flipped = positive_strides(x)
        if not can_view(view) or not load_torch():
            return None
        # On one torch thread: the sums' and torch's exp's bits would depend on how torch splits them
        # between threads (the elementwise helpers split into aligned blocks and logsumexp into blocks fixed by the
        # shape instead: not done here yet, so softmax does not use the pool).
        if not begin_torch_work():  # the interpreter is closing (:mod:`._backend`)
            return None
        try:
            result = blocks.run([lambda: _compute(self.name, x, view, flipped, dims, work, modes["over"] == "ignore")], 1,
                                (self.name, work))[0]
        finally:
            end_torch_work()
        if result is not None:
            TAKEN.device = "cpu"  # which path this call took, for np2torch run's sites
        return result

    def on_dask(self, x: Any, axis: Any) -> Any:
        """What SciPy gives for the Dask array ``x``: a NumPy result, or a lazy array under SciPy's array API."""
        import dask.array as da

        original = self.load()
        probe = original(da.ones((1,) * x.ndim, dtype=x.dtype, chunks=1), axis=axis)  # SciPy's errors, its kind of result
        if not is_dask_array(probe):
            return self.function(np.asarray(x), axis=axis)  # as SciPy's xp.asarray, then the ndarray path
        dims = reduced_dims(axis, x.ndim)
        if dims is None or x.ndim == 0 or any(len(x.chunks[d]) != 1 for d in dims) or any(n != n for n in x.shape):
            return original(x, axis=axis)  # slices span chunks: SciPy's own graph (no rechunk into whole slices)
        dtype = probe.dtype
        return x.map_blocks(BlockCall(self.function, explicit_settings()), axis=dims, dtype=dtype,
                            meta=np.empty((0,) * x.ndim, dtype), token=self.name)

    def which(self, *args: Any, **kwargs: Any) -> tuple[str, str]:
        return self.where(*args, **kwargs)

    def where(self, x: Any, axis: Any = None) -> tuple[str, str]:
        scoped = SCOPED.get()
        settings = PROCESS.settings if scoped is None else scoped
        if type(x) is not np.ndarray:
            return "numpy", f"{self.name}: not a plain ndarray: SciPy"
        work = self.work(x.dtype)
        if work is None:
            return "numpy", f"{self.name} of {x.dtype}: SciPy (not a loop torch serves)"
        route = self.route_call(x, axis, work, settings, dry_run=True)
        if route is None:
            dims = reduced_dims(axis, x.ndim) if x.ndim else None
            klass = "" if dims is None else shape_class(x.shape, x.strides, dims)
            return "numpy", f"{self.name} over {x.size:,} elements of {work}: " + original_reason(
                self.name, work.name, x.size, settings.device, settings.min_size, klass)
        kind = "numpy" if route.path == "numpy" else "cpu"  # numpy: the rental keeps the original for now
        return kind, f"{self.name} over {x.size:,} elements of {work}: {route.why} (special values are checked at the call)"


def make_helper(row: Function) -> Softmax:
    """The softmax or log_softmax helper (the two this module implements)."""
    helper = HELPERS.get(row.name)
    if helper is None or row is not helper.row:
        raise ValueError(f"{__name__} implements {' and '.join(NAMES)}, not {row.qualname}")
    return helper


def softmax(x: ArrayLike, axis: int | tuple[int, ...] | None = None) -> Any:
    """``scipy.special.softmax(x, axis)``: same result, faster on large arrays.

    SciPy ships no types: the result is a NumPy array (a NumPy scalar for a scalar input).
    """
    return HELPERS["softmax"].call(x, axis)


def log_softmax(x: ArrayLike, axis: int | tuple[int, ...] | None = None) -> Any:
    """``scipy.special.log_softmax(x, axis)``: same result, faster on large arrays.

    SciPy ships no types: the result is a NumPy array (a NumPy scalar for a scalar input).
    """
    return HELPERS["log_softmax"].call(x, axis)


softmax.__module__ = log_softmax.__module__ = PUBLIC_MODULE
HELPERS = {name: Softmax(FUNCTIONS_BY_NAME[name], function) for name, function in zip(NAMES, (softmax, log_softmax))}
for _name in NAMES:
    blocks.register_cut(_name, lambda n, klass: 1)  # one torch thread per call (:meth:`Softmax.try_torch`)


def _compute(name: str, x: np.ndarray, view: np.ndarray, flipped: tuple[int, ...], dims: tuple[int, ...],
             work: np.dtype, overflow_ignored: bool) -> np.ndarray | None:
    """SciPy's expressions on torch, in a result laid out as SciPy's; None where a slice needs SciPy."""
    import torch

    t = torch.from_numpy(view)
    x_max = torch.amax(t, dims, keepdim=True)
    if t.dtype.is_floating_point:
        if not bool(torch.isfinite(x_max).all()):
            return None  # NaN, +inf or all -inf slices: SciPy's NaNs and invalid warnings
        if not overflow_ignored and bool((x_max >= OVERFLOW_FROM[work]).any()):
            return None  # SciPy's x - x_max may overflow and warn (as in logsumexp)
    elif _may_wrap(t, x_max, dims, x.dtype):
        return None
    result = np.empty_like(x, dtype=work)  # NumPy's layout of x - x_max: the input's memory order, positive strides
    buffer = result if not flipped else np.empty_like(view, dtype=work)
    out = torch.from_numpy(buffer)
    if t.dtype.is_floating_point:
        torch.sub(t, x_max, out=out)
    else:
        out.copy_(t - x_max)  # the integer subtraction, then NumPy's cast to float64
    if flipped:
        np.copyto(result, buffer[tuple(slice(None, None, -1) if i in flipped else slice(None) for i in range(x.ndim))])
        out = torch.from_numpy(result)
    if name == "softmax":
        out.exp_()
        out.div_(_sums(out, result, dims, widen=True).to(out.dtype))
    else:
        terms = np.empty_like(result)
        exps = torch.exp(out, out=torch.from_numpy(terms))
        sums = _sums(exps, terms, dims, widen=False).numpy()
        with np.errstate(divide="ignore"):  # as SciPy (a sum is at least 1 here)
            out.sub_(torch.from_numpy(np.log(sums)))  # NumPy's log of the sums in the result dtype, as SciPy's
    return result


def _sums(t: torch.Tensor, a: np.ndarray, dims: tuple[int, ...], widen: bool) -> torch.Tensor:
    """``sum(exp(x - x_max))`` per slice, of ``t`` (the exps) and ``a`` (their array, laid out as SciPy's).

    NumPy's own sum over the same layout: SciPy's additions in SciPy's order
    (torch's order, split between threads, was up to 5 ULP from SciPy's and
    sometimes the less accurate), so only torch's ``exp`` differs.  With
    ``widen`` (softmax) a float32 sum accumulates in float64 instead and the
    caller rounds it once: SciPy's float32 sum drifts up to ~40 ULP from exact
    over long slices, the helper's stays within 2.3 (docs/catalogue.md).  Not
    for log_softmax: a float32 sum that SciPy rounds to exactly 1.0 (result
    0.0) could then round to 1.0000001.
    """
    import torch

    if widen and t.dtype == torch.float32:
        return t.sum(dims, keepdim=True, dtype=torch.float64)
    return torch.from_numpy(np.asarray(np.sum(a, axis=dims, keepdims=True)))


def _may_wrap(t: torch.Tensor, x_max: torch.Tensor, dims: tuple[int, ...], dtype: np.dtype) -> bool:
    """Whether SciPy's integer ``x - x_max`` wraps around somewhere (its result is then garbage SciPy gives)."""
    import torch

    spread = x_max.to(torch.float64) - torch.amin(t, dims, keepdim=True).to(torch.float64)
    # Half the range: far from any wrap, whatever float64's rounding of int64 spreads.
    return bool((spread >= float(np.iinfo(dtype).max) / 2).any())
