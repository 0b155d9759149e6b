"""``scipy.special.logsumexp``, computed with torch where that returns SciPy's result.

SciPy (1.16 on; see the check below) computes, per reduced slice with maximum ``a_max`` reached
by ``m`` elements, ``log1p(s / m) + log(m) + a_max`` where ``s`` sums
``exp(a - a_max)`` over the *other* elements.  Keeping the maxima out of ``s``
is what makes the result accurate when one term dominates (``[0, -40]`` gives
``4.2e-18``, where ``log(sum(exp(a - a_max)))`` gives ``0.0``), so the torch path
computes the same three reduced quantities (``a_max``, ``m``, ``s``) and then
applies SciPy's own NumPy expressions to them; only the order of the additions
inside ``s`` and torch's ``exp`` differ.  torch's fused ``torch.logsumexp`` is
*not* used: it sums the maxima into ``s`` (see above) and allocates three
full-size temporaries.

The big input is read in blocks of ~4 MiB that stay in cache: the maximum,
then per block ``sub, eq, exp, sub, sum, sum`` in two reused buffers (laid out
in the block's memory order), of which a block holding no slice maximum
needs only ``sub, exp, sum``.  Touching fresh full-size temporaries (page
faults) cost more than the arithmetic on the 2-core reference VM.

Whether the installed SciPy computes exactly this is checked once per process,
on the first call that could take the torch path (:mod:`._exact.logsumexp_check`: a few
ms of small probes, no torch); a SciPy that fails it is called instead, for
all inputs or only for slices with an infinite maximum.  On a Dask array the
helper computes a tree reduction of the same three quantities
(:mod:`._logsumexp_dask`) and returns what SciPy returns: the computed
``ndarray`` (SciPy gathers the array and computes), or the lazy array where
SciPy itself is lazy (``SCIPY_ARRAY_API=1``); :mod:`np2torch.runtime.dask`
gives the lazy reduction explicitly.

Everything else goes to SciPy: ``b=``, complex, float16
and longdouble, subclasses and array-likes, empty inputs and broadcast views,
unusual ``axis`` or flag values, ``np.errstate(under=...)`` not ``ignore``,
inputs with a NaN (the torch pass is then wasted: the sign of SciPy's NaN
depends on NumPy's SIMD kernels), and the rare inputs for which SciPy's
``a - a_max`` may overflow (it warns there, under the default ``over='warn'``).
SciPy is imported only when first needed.  Along one short contiguous axis,
where the profile keeps a call on SciPy, SciPy's own arithmetic serves it
without SciPy's overhead (:mod:`._paths.lean`, whose expressions the torch
path finishes with too).
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Literal, Sequence, Tuple, TypeVar, Union, cast, overload

import numpy as np

from ._backend import (
    begin_torch_work,
    can_view,
    cuda_available,
    end_torch_work,
    importing_here,
    load_torch,
    settled,
    torch_out_of_sight,
)
from ._config import RuntimeSettings
from ._dask import DASK_ARRAY, is_dask_array
from ._decision.route import Route, original_reason
from ._exact.slices import OVERFLOW_FROM as _OVERFLOW_FROM
from ._exact.slices import positive_strides as _positive_strides
from ._exact.slices import reduced_dims as _reduced_dims
from ._exact.slices import shape_class
from ._helper import PUBLIC_MODULE, Helper, dtype_name
from ._paths import blocks, lean
from ._state import PROCESS, SCOPED, TAKEN
from .table import FUNCTIONS_BY_NAME

if TYPE_CHECKING:
    import torch
    from numpy.typing import ArrayLike

    from ._exact.logsumexp_check import LseVerdict
    from ._paths.lean import Parts
    from .table import Function

NAME = "logsumexp"
T = TypeVar("T")


# Elements per block on the CPU (4 MiB of float64, in L3 while the ops walk it).
# A block is computed by one thread on one torch thread (:mod:`._paths.blocks`), so
# the block boundaries -- a function of the shape alone -- fix the order of the
# additions whatever the thread count (1e8 float64 on the 2-core reference VM:
# 2**17 0.63-1.05 s, 2**19 0.33-0.82 s, 2**21 no better; docs/logsumexp.md).
_CPU_BLOCK = 1 << 19
# On CUDA the block only bounds the device temporaries (128 MiB of float64).
_CUDA_BLOCK = 1 << 24
# When slices span blocks, each block's maximum is kept if all of them together
# are at most 1/8 of the input (else looked for again in the second pass); a
# block then masks only the slices whose maximum it holds, slice by slice if
# they are at most 1/8 of its slices.
_PARTS_PER_ELEMENT = 8
_SPARSE = 8
_LOOK: Literal["look"] = "look"

# Dtypes SciPy promotes to float64 (xp_promote(force_floating=True)) and that
# torch can view; the conversion happens block by block, as NumPy's astype would.
_TO_FLOAT64 = frozenset(np.dtype(c) for c in "?bBhil") | {np.dtype(np.int64)}
_FLOATS = frozenset(np.dtype(name) for name in FUNCTIONS_BY_NAME[NAME].loops)




class Logsumexp(Helper):
    """The logsumexp helper: SciPy's original, the check of it, and the torch path below."""

    def __init__(self, row: Function) -> None:
        super().__init__(row)
        self.function = logsumexp

    def verdict(self) -> LseVerdict:
        """Which slices the torch path serves for the installed SciPy (checked once per process)."""
        found = PROCESS.verdicts.get(NAME)
        if found is None:
            # No lock over the check's imports and SciPy's calls: threads that check at once find the same answer,
            # the first one kept.  While torch is half imported SciPy raises: this call is SciPy's, a later one checks.
            from ._exact import logsumexp_check  # only when a call may take the torch path

            original = self.load()
            checked = settled(lambda: logsumexp_check.check(original, _expected))
            if checked is None:
                return logsumexp_check.LseVerdict(False, False)
            found = PROCESS.verdicts.setdefault(NAME, checked)
        return cast("LseVerdict", found)

    def loop_of(self, dtype: np.dtype) -> str | None:
        work = _work(dtype)
        return None if work is None else work.name

    def route_call(self, a: np.ndarray, work: np.dtype, settings: RuntimeSettings, dims: Tuple[int, ...],
                   dry_run: bool = False) -> Route | None:
        """Where the settings and the machine profile send this call, by its size and shape class (None: SciPy)."""
        if settings.device == "numpy":
            return None
        found = self.route(dtype_name(work), a.size, settings, True, dry_run, shape_class(a.shape, a.strides, dims))
        if found is not None and found.path == "cuda" and not dry_run and not cuda_available():
            return None
        return found

    def run_path(self, path: str, x: np.ndarray) -> object:
        """One call through ``path`` on the scratch input ``x``: ``axis=0``, as bench times it."""
        if path == "numpy":  # what a call the profile keeps off torch costs: SciPy's own bits, leaner where it can
            result = lean.compute(x, 0, False, False, self.load)
            return self.load()(x, axis=0) if result is None else result
        device = "cuda" if path == "cuda" else "cpu"
        result = _try_torch(x, 0, False, False, RuntimeSettings(device, 0), Route(path, device, "forced"))
        if result is None:
            raise ValueError("the torch path declined the calibration input")
        return result

    def which(self, *args: Any, **kwargs: Any) -> tuple[str, str]:
        return _which(*args, **kwargs)


def make_helper(row: Function) -> Logsumexp:
    """The logsumexp helper (the one this module implements)."""
    if row is not HELPER.row:
        raise ValueError(f"{__name__} implements {NAME}, not {row.qualname}")
    return HELPER


def _work(dtype: np.dtype) -> np.dtype | None:
    """The dtype the torch path computes ``dtype`` input in (as SciPy promotes it), or None."""
    if dtype in _FLOATS:
        return dtype
    return _FLOAT64 if dtype in _TO_FLOAT64 else None


_FLOAT64 = np.dtype(np.float64)


@overload
def logsumexp(a: ArrayLike, axis: int | tuple[int, ...] | None = None, b: ArrayLike | None = None,
              keepdims: bool = False, return_sign: Literal[False] = False) -> Any: ...
@overload
def logsumexp(a: ArrayLike, axis: int | tuple[int, ...] | None, b: ArrayLike | None, keepdims: bool,
              return_sign: Literal[True]) -> tuple[Any, Any]: ...
@overload
def logsumexp(a: ArrayLike, axis: int | tuple[int, ...] | None = None, b: ArrayLike | None = None,
              keepdims: bool = False, *, return_sign: Literal[True]) -> tuple[Any, Any]: ...
@overload
def logsumexp(a: ArrayLike, axis: int | tuple[int, ...] | None = None, b: ArrayLike | None = None,
              keepdims: bool = False, return_sign: bool = False) -> Any: ...
def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: Any = False, return_sign: Any = False) -> Any:
    """``scipy.special.logsumexp(a, axis, b, keepdims, return_sign)``: same result, faster on large arrays.

    SciPy ships no types: a result is a NumPy scalar or array (``Any``), a pair
    with ``return_sign=True``.
    """
    if importing_here():  # a call inside the runtime's `import torch` (a signal handler's): SciPy's, torch unseen
        with torch_out_of_sight():
            return HELPER.original(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
    if type(a) is np.ndarray:
        scoped = SCOPED.get()
        settings = PROCESS.settings if scoped is None else scoped
        if b is None and settings.device != "numpy":
            if HELPER.admits(a.dtype, a.size, settings):
                result = _try_torch(a, axis, keepdims, return_sign, settings)
                if result is not None:
                    return result
            result = lean.compute(a, axis, keepdims, return_sign, HELPER.load)
            if result is not None:
                return result
    elif DASK_ARRAY in sys.modules and is_dask_array(a):
        from ._logsumexp_dask import as_the_original

        return as_the_original(dask_logsumexp(a, axis, b, keepdims, return_sign), HELPER.load())
    return HELPER.original(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)


def dask_logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: Any = False, return_sign: Any = False) -> Any:
    """The lazy tree reduction of the Dask array ``a`` (:mod:`._logsumexp_dask`), whatever SciPy returns for it."""
    from ._logsumexp_dask import reduction

    return reduction(a, axis, b, keepdims, return_sign, logsumexp, HELPER.load(), torch_block_parts, HELPER.verdict)


logsumexp.__module__ = PUBLIC_MODULE
HELPER = Logsumexp(FUNCTIONS_BY_NAME[NAME])


def _pool_blocks(n: int, klass: str) -> int:
    """How many blocks the pool cuts a call over ``n`` elements of shape class ``klass`` into
    (:func:`._paths.blocks.pool_blocks`): rows of short contiguous slices in blocks of :data:`_CPU_BLOCK` elements
    (:func:`_short_rows`), else blocks of up to :data:`_CPU_BLOCK` (:func:`_reduce`)."""
    if klass == "short-inner":
        return max(1, -(-n // _CPU_BLOCK))
    return blocks.call_blocks(n, min(blocks.MIN_BLOCK, _CPU_BLOCK), _CPU_BLOCK)


blocks.register_cut(NAME, _pool_blocks)


def torch_block_parts(a: np.ndarray, dims: Tuple[int, ...]) -> Parts | None:
    """One block's ``(a_max, m, s)`` per slice (keepdims shape, ``m`` int64) on torch, for a Dask chunk.

    None where the settings and this machine's profile keep the block on NumPy,
    or the torch path would decline it (the caller then computes them with NumPy).
    """
    scoped = SCOPED.get()
    settings = PROCESS.settings if scoped is None else scoped
    work = _work(a.dtype)
    if work is None or a.size == 0 or a.ndim == 0 or np.geterr()["under"] != "ignore":
        return None
    if not HELPER.admits(a.dtype, a.size, settings):
        return None
    if min(a.strides) < 0 or (0 in a.strides and a.size > 1) or not can_view(a):
        return None
    route = HELPER.route_call(a, work, settings, dims)
    if route is None or not load_torch():
        return None
    reduced = _on_torch(a, dims, work, route.device, route.threads, short=False)
    if reduced is None or (np.geterr()["over"] != "ignore" and _subtraction_may_overflow(reduced[0])):
        return None
    return reduced


def _try_torch(a: np.ndarray, axis: object, keepdims: object, return_sign: object, settings: RuntimeSettings,
               forced: Route | None = None) -> object | None:
    """The result computed with torch, or None where only SciPy can give it (``forced``: the route, for calibration)."""
    work = _work(a.dtype)
    if work is None or a.size == 0 or a.ndim == 0:
        return None
    dims = _reduced_dims(axis, a.ndim)
    keep, sign = lean.flag(keepdims), lean.flag(return_sign)
    if dims is None or keep is None or sign is None:
        return None
    route = HELPER.route_call(a, work, settings, dims) if forced is None else forced
    if route is None:
        return None
    device = route.device
    verdict = HELPER.verdict()
    if not verdict.finite:
        return None
    modes = np.geterr()
    if modes["under"] != "ignore":
        return None  # SciPy's exp(a - a_max) underflows outside its errstate
    if 0 in a.strides and a.size > 1:
        return None  # broadcast views: NumPy's result layout is not the one reproduced below
    view, flipped = _positive_strides(a)
    if not can_view(view) or not load_torch():
        return None
    reduced = _on_torch(view, dims, work, device, route.threads)
    if reduced is None:
        return None
    a_max = reduced[0]
    high, low = a_max.max(), a_max.min()  # a NaN in any slice makes both NaN
    if high != high:
        # The sign of SciPy's NaN comes from the input's NaNs through
        # NumPy's SIMD kernels (float64 exp keeps it, float32 exp and max
        # clear it here); torch's max makes a new NaN.  Left to SciPy.
        return None
    finite = bool(-np.inf < low and high < np.inf)
    if not finite and not verdict.infinite:
        return None
    if modes["over"] != "ignore" and high >= _OVERFLOW_FROM[a_max.dtype] and _subtraction_may_overflow(a_max):
        return None
    with np.errstate(all="ignore"):  # garbage in non-finite slices
        result = lean.finish(a, dims, flipped, reduced, work, keep, sign, finite)
    TAKEN.device = device
    return result


def _which(a: Any, axis: Any = None, b: Any = None, keepdims: Any = False, return_sign: Any = False) -> tuple[str, str]:
    scoped = SCOPED.get()
    settings = PROCESS.settings if scoped is None else scoped
    if type(a) is not np.ndarray or b is not None:
        return "numpy", f"{NAME}: not a plain ndarray call without b=: SciPy"
    work = _work(a.dtype) or _FLOAT64
    dims = _reduced_dims(axis, a.ndim) if a.ndim else None
    if dims is None:
        return "numpy", f"{NAME}: an axis SciPy may treat differently, or a 0-d input: SciPy"
    route = HELPER.route_call(a, work, settings, dims, dry_run=True)
    if route is None:
        leaner = ""
        if settings.device != "numpy" and lean.serves(a, axis, keepdims, return_sign) is not None:
            leaner = ("; along this short contiguous axis, SciPy's own arithmetic without its overhead (SciPy's bits, "
                      "checked at the call)")
        return "numpy", f"{NAME} over {a.size:,} elements of {work}: " + original_reason(
            NAME, work.name, a.size, settings.device, settings.min_size, shape_class(a.shape, a.strides, dims)) + leaner
    if route.path == "cuda" and route.basis is None and not cuda_available():
        # The call hands it to SciPy (route_call); asking loads torch, as the call would.
        return "numpy", (f"{NAME} over {a.size:,} elements of {work}: SciPy: configured for device "
                         f"{settings.device!r}, but torch reports no usable CUDA device")
    kind = route.path if route.path in ("cuda", "numpy") else "cpu"  # numpy: the rental keeps SciPy for now
    return kind, f"{NAME} over {a.size:,} elements of {work}: {route.why} (SciPy's behaviour is checked at the call)"


def _on_torch(view: np.ndarray, dims: Tuple[int, ...], work: np.dtype, device: str, threads: int,
              short: bool = True) -> Parts | None:
    """``(a_max, m, s)`` computed on torch (:func:`_short_rows` along a short contiguous axis where ``short``, else
    :func:`_reduce`), or None where the original must serve the call (the interpreter is closing: :mod:`._backend`).

    The arrays are NumPy's own memory, and every tensor is freed before the call's torch work ends: freeing a
    tensor takes the GIL back inside torch's C++, which a daemon thread must not do once the interpreter
    finalizes (:func:`._backend.begin_torch_work`)."""
    if not begin_torch_work():
        return None
    try:
        rows = lean.rows_of(view, dims, _SHORT) if short and device == "cpu" else None
        if rows is not None:
            return lean.from_rows(_short_rows(rows, work, threads), dims[0])
        return _reduce(view, dims, work, device, threads)
    finally:
        end_torch_work()


def _reduce(view: np.ndarray, dims: Tuple[int, ...], work: np.dtype, device: str, threads: int = 0) -> Parts | None:
    """``(a_max, m, s)`` per slice as NumPy arrays of the keepdims shape (``m`` as int64).

    On the CPU the blocks are fixed by the shape and each is computed on one torch thread, up to
    ``threads`` at once (0: as many as torch may use): the same bits on any thread count.
    """
    import torch

    t = torch.from_numpy(view)
    if t.dtype == torch.bool:
        t = t.view(torch.uint8)
    if device == "cpu":
        block = blocks.block_elements(t.numel(), min(blocks.MIN_BLOCK, _CPU_BLOCK), _CPU_BLOCK)
    else:
        # One host -> device copy (the reduction reads the input twice when
        # slices span blocks); blocks then only bound the device temporaries.
        block = _CUDA_BLOCK
        threads = 1
        try:
            t = t.to(device)
        except RuntimeError:  # out of device memory (torch.cuda.OutOfMemoryError): SciPy serves it
            return None
    a_max, count, total = _blockwise(t, dims, getattr(torch, work.name), t.device, block, threads)
    # Copies in NumPy's memory (one value per slice): no tensor outlives the call (:func:`_on_torch`).
    return a_max.cpu().numpy().copy(), count.cpu().numpy().copy(), total.cpu().numpy().copy()


_SHORT = 16
"""Slices at most this long along the contiguous last axis (``logsumexp(x, axis=1)`` over a few mixture
components) are computed column by column (:func:`_short_rows`): torch's reduction kernels pay more per
slice than the arithmetic of a short one."""


def _short_rows(view: np.ndarray, work: np.dtype, threads: int) -> Parts:
    """``(a_max, m, s)`` of a C-contiguous ``view`` reduced along its short last axis, one column at a time
    (``m`` in the work dtype, as :func:`._paths.lean.finish` uses it).

    Each quantity is a few elementwise ops over the rows per column, in column order (the order NumPy's
    own sum adds so few terms in), in blocks of rows fixed by the shape (:mod:`._paths.blocks`).
    """
    import torch

    length = view.shape[-1]
    rows = view.size // length if length else 0
    t = torch.from_numpy(view.reshape(rows, length))
    if t.dtype == torch.bool:
        t = t.view(torch.uint8)
    dtype = getattr(torch, work.name)
    # In NumPy's memory, viewed by torch: no tensor outlives the call (:func:`_on_torch`).
    parts = [np.empty(rows, dtype=work) for _ in range(3)]
    a_max, total, count = map(torch.from_numpy, parts)  # count: at most 16 per slice, exact in the work dtype

    def block(start: int, stop: int) -> None:
        # Columns as contiguous rows: every op below runs torch's vectorized loop over the points.
        columns = torch.empty((length, stop - start), dtype=dtype)  # always a copy: the input is never written
        columns.copy_(t[start:stop].t())  # (SciPy's astype(float64) for integers and bools)
        top, found, hits = a_max[start:stop], total[start:stop], count[start:stop]
        if length == 1:
            top.copy_(columns[0])
        else:
            torch.maximum(columns[0], columns[1], out=top)
        for j in range(2, length):
            torch.maximum(top, columns[j], out=top)
        columns.sub_(top)
        hit = torch.empty_like(columns)
        torch.eq(columns, 0, out=hit)  # the maxima: exp(0) - 1.0 is exactly 0, as in SciPy's masked sum
        columns.exp_().sub_(hit)
        if length == 1:
            found.copy_(columns[0])
            hits.copy_(hit[0])
        else:
            torch.add(columns[0], columns[1], out=found)
            torch.add(hit[0], hit[1], out=hits)
        for j in range(2, length):
            found.add_(columns[j])
            hits.add_(hit[j])

    per_block = max(1, _CPU_BLOCK // max(length, 1))
    spans = blocks.bounds(rows, per_block)
    blocks.run([functools.partial(block, a, b) for a, b in spans], threads, (NAME, "short rows", dtype))
    shape = view.shape[:-1] + (1,)
    return parts[0].reshape(shape), parts[2].reshape(shape), parts[1].reshape(shape)


def _chunk_dim(shape: Sequence[int], strides: Sequence[int], block: int) -> tuple[int, int]:
    """The axis to cut into blocks and how many of its indices go in a block.

    The outermost axis in memory whose unit slab (one index along it) fits in a
    block, so that blocks are contiguous runs; else the axis with the smallest
    slab.
    """
    n = int(np.prod(shape))
    order = sorted((i for i in range(len(shape)) if shape[i] > 1), key=lambda i: -strides[i])
    if not order:
        return 0, 1
    for i in order:
        unit = n // shape[i]
        if unit <= block:
            return i, max(1, block // unit)
    return max(order, key=lambda i: shape[i]), 1


if TYPE_CHECKING:
    Holds = Union[torch.Tensor, None, Literal["look"]]
    """Which slices have their maximum in a block: a bool tensor shaped like ``a_max``; None: every
    slice; :data:`_LOOK`: find them in the block."""


def _blockwise(t: torch.Tensor, dims: Tuple[int, ...], work: torch.dtype, device: torch.device,
               block: int, threads: int = 0) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    import torch

    axis, step = _chunk_dim(t.shape, t.stride(), block)
    starts = range(0, t.shape[axis], step)
    slab = t.numel() // t.shape[axis] * min(step, t.shape[axis])
    # Counts per block are sums of 0.0/1.0: exact below 2**24 terms even in
    # float32; they are added up in float64 (exact below 2**53) and converted once.
    count_dtype = work if slab < 1 << 24 else torch.float64

    def piece(start: int) -> torch.Tensor:
        return t.narrow(axis, start, min(step, t.shape[axis] - start))

    def sums(chunk: torch.Tensor, a_max: torch.Tensor, holds: Holds, count: torch.Tensor) -> torch.Tensor:
        buffers = _take_scratch(slab, work, device)
        try:
            return _block_sums(chunk, a_max, dims, *buffers, holds, count, count_dtype)
        finally:
            _give_back(buffers, work, device)

    def run(tasks: List[Callable[[], T]], stage: str) -> List[T]:
        # (Each stage runs other ops: its own kind, whose first block runs alone: blocks._first_alone.)
        return blocks.run(tasks, threads, (NAME, stage, work)) if device.type == "cpu" else [task() for task in tasks]

    if axis in dims:
        # Slices span blocks: the maximum first, then partial sums over blocks, added up in block order.
        # Each block's own maximum is kept (when small next to the input) to tell which slices have
        # their maxima in it: only those need the mask.
        parts = run([functools.partial(torch.amax, piece(start), dims, keepdim=True) for start in starts], "maxima")
        raw_max = parts[0].clone()
        for part in parts[1:]:
            torch.maximum(raw_max, part, out=raw_max)
        keep = len(starts) * raw_max.numel() * _PARTS_PER_ELEMENT <= t.numel()
        a_max = raw_max.to(work)

        def partial_sums(i: int, start: int) -> Tuple[torch.Tensor, torch.Tensor]:
            holds: Holds = parts[i] == raw_max if keep else _LOOK
            count = torch.zeros(a_max.shape, dtype=torch.float64, device=device)
            return sums(piece(start), a_max, holds, count), count

        found = run([functools.partial(partial_sums, i, start) for i, start in enumerate(starts)], "sums")
        totals = _Pairwise()
        count = found[0][1]
        for i, (total, part_count) in enumerate(found):
            totals.add(total)
            if i:
                count.add_(part_count)
        return a_max, count.to(torch.int64), totals.result()
    # Each block holds whole slices: one read of the input from memory, blocks independent of each other.
    shape = [1 if i in dims else size for i, size in enumerate(t.shape)]
    a_max = torch.empty(shape, dtype=work, device=device)
    total = torch.empty(shape, dtype=work, device=device)
    count = torch.zeros(shape, dtype=torch.float64, device=device)

    def whole_slices(start: int) -> None:
        chunk = piece(start)
        width = chunk.shape[axis]
        block_max = a_max.narrow(axis, start, width)
        block_max.copy_(torch.amax(chunk, dims, keepdim=True))
        total.narrow(axis, start, width).copy_(sums(chunk, block_max, None, count.narrow(axis, start, width)))

    run([functools.partial(whole_slices, start) for start in starts], "whole slices")
    return a_max, count.to(torch.int64), total


_SCRATCH = threading.local()


def _kept() -> Dict[Tuple[torch.dtype, torch.device], Tuple[torch.Tensor, torch.Tensor]]:
    """This thread's block buffers not in use, per (dtype, device)."""
    kept: Dict[Tuple[torch.dtype, torch.device], Tuple[torch.Tensor, torch.Tensor]] = _SCRATCH.__dict__.setdefault("buffers", {})
    return kept


def _take_scratch(size: int, work: torch.dtype, device: torch.device) -> Tuple[torch.Tensor, torch.Tensor]:
    """Two block buffers of at least ``size`` elements, this thread's own until :func:`_give_back` (kept between
    calls: fresh temporaries cost page faults that outweighed the arithmetic on the reference VM).

    Taken out of the thread's store, not lent from it: a call that runs in this thread while a block uses them
    (a signal handler's, a ``__del__``'s, a trace function's, between two bytecodes of the block) finds none and
    makes its own, so it cannot overwrite the interrupted block's.  (``dict.pop`` is one bytecode.)
    """
    import torch

    found = _kept().pop((work, device), None)
    if found is None or found[0].numel() < size:
        found = (torch.empty(size, dtype=work, device=device), torch.empty(size, dtype=work, device=device))
    return found


def _give_back(buffers: Tuple[torch.Tensor, torch.Tensor], work: torch.dtype, device: torch.device) -> None:
    """Return block buffers to this thread's store (the larger, where a call that interrupted their block gave its own back)."""
    key = (work, device)
    kept = _kept()
    there = kept.get(key)
    if there is None or there[0].numel() < buffers[0].numel():
        kept[key] = buffers


def _block_sums(chunk: torch.Tensor, a_max: torch.Tensor, dims: Tuple[int, ...], shifted: torch.Tensor,
                is_max: torch.Tensor, holds: Holds, count: torch.Tensor, count_dtype: torch.dtype) -> torch.Tensor:
    """``s`` of one block (sum of exp(x - a_max) over the non-maximal x); adds its maxima to ``count``.

    ``holds`` (bool, shaped like ``a_max``) marks the slices whose maximum
    lies in this block: the others have no element to leave out.  None: every
    slice has its maximum here; ``_LOOK``: find them in the block.
    """
    import torch

    shifted = _laid_like(shifted, chunk)
    if chunk.dtype == shifted.dtype:
        torch.sub(chunk, a_max, out=shifted)
    else:
        shifted.copy_(chunk)  # SciPy's astype(float64), one block at a time
        shifted.sub_(a_max)
    if isinstance(holds, str):
        holds = torch.amax(shifted, dims, keepdim=True) == 0
    if holds is not None:
        found = int(holds.sum())
        if found == 0:  # axis=None: all blocks but one
            return shifted.exp_().sum(dims, keepdim=True)
        if found * _SPARSE <= holds.numel() and dims == tuple(range(len(dims))) and shifted.is_contiguous():  # axis=0 of C order
            _drop_maxima_of(shifted, holds, count)
            return shifted.exp_().sum(dims, keepdim=True)
    # x - a_max == 0 exactly when x == a_max (gradual underflow).  SciPy takes
    # those elements out of the sum and counts them: exp(0) - 1.0 is exactly 0.
    # (A float mask and a subtraction cost less than a bool mask, masked_fill
    # and a bool count.)
    is_max = _laid_like(is_max, chunk)
    torch.eq(shifted, 0, out=is_max)
    shifted.exp_()
    shifted.sub_(is_max)
    count.add_(is_max.sum(dims, keepdim=True, dtype=count_dtype))
    return shifted.sum(dims, keepdim=True)


def _laid_like(buffer: torch.Tensor, chunk: torch.Tensor) -> torch.Tensor:
    """The start of ``buffer`` as a dense tensor shaped like ``chunk`` and in its memory order.

    A block of an F-ordered or transposed input is then read and written in
    the same order, and reduced along its contiguous axis.
    """
    strides = [0] * chunk.dim()
    step = 1
    for i in sorted(range(chunk.dim()), key=lambda i: (chunk.stride(i), chunk.shape[i])):
        strides[i] = step
        step *= chunk.shape[i]
    return buffer.as_strided(chunk.shape, strides)


def _drop_maxima_of(shifted: torch.Tensor, holds: torch.Tensor, count: torch.Tensor) -> None:
    """Sets ``x - a_max == 0`` to -inf (exp gives exactly 0) in the few slices ``holds`` marks, and counts them.

    The reduced axes lead, so the block is a (reduced, slices) matrix and a
    slice one of its columns; only the marked columns are compared with 0.
    """
    matrix = shifted.view(-1, holds.numel())
    columns = holds.view(-1).nonzero().view(-1)
    part = matrix.index_select(1, columns)
    hit = part == 0
    part.masked_fill_(hit, float("-inf"))
    matrix.index_copy_(1, columns, part)
    count.view(-1).index_add_(0, columns, hit.sum(0, dtype=count.dtype))


class _Pairwise:
    """Adds block partial sums pairwise (error ~log2(blocks) ULP, not ~blocks)."""

    def __init__(self) -> None:
        self._stack: List[Tuple[int, torch.Tensor]] = []

    def add(self, value: torch.Tensor) -> None:
        level = 0
        while self._stack and self._stack[-1][0] == level:
            value = self._stack.pop()[1] + value
            level += 1
        self._stack.append((level, value))

    def result(self) -> torch.Tensor:
        total = self._stack[-1][1]
        for _, value in reversed(self._stack[:-1]):
            total = value + total
        return total


def _subtraction_may_overflow(a_max: np.ndarray) -> bool:
    # SciPy's a - a_max overflows (and warns "overflow encountered in subtract")
    # only for some finite a_max beyond half an ULP of the largest float.
    return bool(np.any((a_max >= _OVERFLOW_FROM[a_max.dtype]) & (a_max != np.inf)))


def _expected(a: np.ndarray, axis: object, keepdims: bool, return_sign: bool) -> object:
    """The torch path's result for a small ``a`` served by it, with its arithmetic done in NumPy (for the check)."""
    work = a.dtype if a.dtype in _FLOATS else np.dtype(np.float64)
    dims = _reduced_dims(axis, a.ndim)
    assert dims is not None, axis
    view, flipped = _positive_strides(a)
    with np.errstate(all="ignore"):  # inf - inf in non-finite slices, as on torch
        reduced = _reduce_like_blocks(view, dims, work)
        return lean.finish(a, dims, flipped, reduced, work, keepdims, return_sign)


def _reduce_like_blocks(view: np.ndarray, dims: tuple[int, ...], work: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a_max, m, s)`` as ``_block_sums`` computes them with the full mask, on one block."""
    x = view.astype(work)
    a_max = np.max(x, axis=dims, keepdims=True)
    shifted = x - a_max
    is_max = (shifted == 0).astype(work)
    s = np.sum(np.exp(shifted) - is_max, axis=dims, keepdims=True)
    return a_max, np.sum(is_max, axis=dims, keepdims=True).astype(np.int64), s
