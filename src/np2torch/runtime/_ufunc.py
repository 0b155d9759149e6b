"""One dispatcher for every elementwise helper, parameterized by a small spec.

A helper (``exp``, ``log``, ``erf``, ...) is ``make_ufunc_helper(UfuncSpec(...))``.
Its hot path is the size test, done first and cheaply; everything else runs
only for arrays that may take the torch path:

1. the call: exactly ``np.ndarray``; keywords this module reproduces exactly
   (``out``, ``where=True``, ``casting``, ``order``, ``dtype``, ``subok``);
2. the types: the original's own type resolution (``ufunc.resolve_dtypes``)
   picks the loop; torch serves only loops listed in the spec, computing in the
   listed dtype (e.g. float32 ``erf`` in float64, rounded once, as SciPy does);
   integer/bool inputs are cast into the result buffer first, exactly as NumPy
   casts them to the loop's dtype;
3. the route (the original, torch on one thread or the pool, CUDA), from the
   settings and the machine profile (:mod:`._decide`);
4. the layout: the result is allocated as NumPy allocates it and torch writes
   into it through ``out=``; inputs torch cannot view (negative strides,
   unaligned) are copied into the result buffer and computed in place;
5. ``np.errstate``: nothing when every mode is ``ignore``; else one reduction
   over the result, and only when it sees a non-finite value (or when
   ``under`` is on) the original re-runs on the suspicious elements, their
   values are written back and the flags are reported as NumPy would.

Anything else goes to the original with the caller's exact arguments.

The helpers are made from the elementwise rows of the one table
(:mod:`.table`): :data:`UFUNC_SPECS` and :data:`HELPERS` derive from it.
"""

from __future__ import annotations

import importlib
import math
import sys
import threading
from typing import Any, Callable, Literal, Mapping

import numpy as np

from . import _calibrate, _decide
from ._backend import can_view, cuda_available, load_torch, tensor_view, threads
from ._config import PROCESS_SETTINGS, SETTINGS_VAR
from ._cuda import cuda_unary
from ._dask import DASK_ARRAY, is_dask_array
from ._dask import elementwise as dask_elementwise
from ._decide import Route
from ._errstate import (
    NP_EXTOBJ_VAR,
    REDIRECT_MISS,
    ErrorChecks,
    call_redirected,
    error_checks,
    extobj_getter,
    numpy_call,
    register_runtime_file,
    warn_redirect,
)
from ._record import Record
from .table import ELEMENTWISE_FUNCTIONS, Function

register_runtime_file(__file__)

# "np2torch.runtime" here; the vendored package's name in a copy made by `np2torch vendor`.
_PUBLIC_MODULE = __name__.rsplit("._ufunc", 1)[0]


class UfuncSpec(Record):
    """What the dispatcher needs to know about one elementwise function.

    ``name``: the helper's name; ``module``/``attr``: where the original lives
    (imported on first use); ``torch_op``: the torch function computing the same
    values; ``compute``: loop dtype -> torch dtype computed in, for the loops
    verified exact on the CPU; ``cuda_compute``: the same for CUDA (a subset).
    """

    __slots__ = ("name", "module", "attr", "torch_op", "compute", "cuda_compute", "doc")

    def __init__(
        self,
        name: str,
        module: str,
        attr: str,
        torch_op: str,
        compute: Mapping[str, str],
        cuda_compute: Mapping[str, str] | None = None,
        doc: str = "",
    ) -> None:
        self.name = name
        self.module = module
        self.attr = attr
        self.torch_op = torch_op
        self.compute = compute
        self.cuda_compute: Mapping[str, str] = {} if cuda_compute is None else cuda_compute
        self.doc = doc


_SERVED_KEYWORDS = frozenset(("out", "where", "casting", "order", "dtype", "subok"))
_CASTINGS = frozenset(("no", "equiv", "safe", "same_kind", "unsafe"))
_ORDERS = frozenset(("K", "A", "C", "F"))
# Elements per piece when a float32 result is computed in float64, or when an
# in-place call must keep its inputs for the error check.
_PIECE = 1 << 18


class _UfuncPlan(Record):
    """How one (input dtype, out dtype, dtype=, casting) call is served.

    ``wide``: the torch dtype to compute in when wider than the loop's (float32
    erf: float64), else None; ``cuda_ok``: the loop is verified on CUDA;
    ``stage``: the input is cast into the result buffer first (NumPy's own
    input cast); ``name``: the loop's dtype name (``dtype.name`` costs ~2 us:
    looked up once).
    """

    __slots__ = ("loop", "wide", "cuda_ok", "cuda_wide", "stage", "name")

    def __init__(self, loop: np.dtype[Any], wide: str | None, cuda_ok: bool, cuda_wide: str | None, stage: bool, name: str) -> None:
        self.loop = loop
        self.wide = wide
        self.cuda_ok = cuda_ok
        self.cuda_wide = cuda_wide
        self.stage = stage
        self.name = name


class _UfuncState:
    """Per-helper state: the original (loaded lazily) and a cache of type plans."""

    def __init__(self, spec: UfuncSpec) -> None:
        self.spec = spec
        self.floors: dict[np.dtype, int] = {}
        """Input dtype -> the size below which a call with the default loop takes the original
        (from the profile; a dtype not yet seen has none, so its first call reads the profile)."""
        self.plans: dict[tuple[Any, ...], _UfuncPlan | None] = {}
        self.lock = threading.Lock()
        self.loaded: Any = getattr(np, spec.attr) if spec.module == "numpy" else None
        self.original: Callable[..., Any] = self.loaded if self.loaded is not None else self._load_and_call

    def load(self) -> Any:
        if self.loaded is None:
            with self.lock:
                if self.loaded is None:
                    self.loaded = getattr(importlib.import_module(self.spec.module), self.spec.attr)
                    self.original = self.loaded
        return self.loaded

    def _load_and_call(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)

    def learn_floor(self, x_dtype: np.dtype) -> None:
        """Record from which size ``x_dtype`` inputs may leave the original (``dtype=``/``out=`` calls
        whose loop differs take the original below it: at worst a missed speed-up, never a change)."""
        plan = self.plan(x_dtype, None, None, "same_kind")
        self.floors[x_dtype] = sys.maxsize if plan is None else _decide.torch_floor(self.spec.name, (plan.name,))

    def forget_floors(self) -> None:
        """The profile changed: every dtype's next call re-reads it."""
        self.floors = {}

    def plan(self, x_dtype: np.dtype, out_dtype: np.dtype | None, dtype: Any, casting: str) -> _UfuncPlan | None:
        key = (x_dtype, out_dtype, dtype, casting)
        try:
            return self.plans[key]
        except KeyError:
            pass
        found = _make_plan(self.spec, self.load(), x_dtype, out_dtype, dtype, casting)
        self.plans[key] = found
        return found


def _make_plan(
    spec: UfuncSpec, original: Any, x_dtype: np.dtype, out_dtype: np.dtype | None, dtype: Any, casting: str
) -> _UfuncPlan | None:
    # The original's own type resolution, never a guess: scipy.special.erf
    # returns float64 for float16 input, np.exp float16 for int8.
    if not x_dtype.isnative:
        return None
    try:
        if dtype is None:
            loop_in, loop_out = original.resolve_dtypes((x_dtype, out_dtype), casting=casting)
        else:
            loop_in, loop_out = original.resolve_dtypes((x_dtype, out_dtype), signature=(None, dtype), casting=casting)
    except Exception:
        return None
    if loop_in != loop_out or loop_out.name not in spec.compute:
        return None
    if out_dtype is not None and out_dtype != loop_out:
        return None
    stage = x_dtype != loop_in
    # Only casts that are exact (ints/bools/narrower floats -> the loop's float):
    # a lossy cast could raise its own floating-point warnings.
    if stage and not np.can_cast(x_dtype, loop_in, "safe"):
        return None
    name = loop_out.name
    compute = spec.compute[name]
    cuda = spec.cuda_compute.get(name)
    return _UfuncPlan(
        loop=loop_out,
        wide=None if compute == name else compute,
        cuda_ok=cuda is not None,
        cuda_wide=None if cuda in (None, name) else cuda,
        stage=stage,
        name=name,
    )


def make_ufunc_helper(spec: UfuncSpec) -> Callable[..., Any]:
    """The public helper for ``spec``: the original's signature, torch where exact and faster."""
    state = _UfuncState(spec)
    ndarray = np.ndarray
    get_scoped = SETTINGS_VAR.get
    process = PROCESS_SETTINGS
    get_extobj = extobj_getter()
    # Any: None on NumPy 1.x, where no redirect is ever built and these are never called
    set_extobj: Any = NP_EXTOBJ_VAR.set if NP_EXTOBJ_VAR is not None else None
    reset_extobj: Any = NP_EXTOBJ_VAR.reset if NP_EXTOBJ_VAR is not None else None
    redirects: dict[Any, Any] = {None: None}  # NumPy error state -> how to call the original
    miss = REDIRECT_MISS
    modules = sys.modules

    def helper(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        # The hot path: everything below the size test is for large arrays only,
        # and the rest is an inlined _fallback (a small call costs ~0.3 us here).
        if type(x) is ndarray:
            settings = get_scoped()
            if settings is None:
                settings = process.value
            gate = settings.gate
            if gate is None:
                gate = state.floors.get(x.dtype, 0)
            if x.size >= gate:
                return _dispatch(state, redirects, settings, x, args, kwargs)
        elif DASK_ARRAY in modules and is_dask_array(x):  # Dask is never imported here (as array-api-compat)
            return dask_elementwise(helper, state.load(), x, args, kwargs)
        redirect = redirects.get(get_extobj(), miss)
        if redirect is None:
            return state.original(x, *args, **kwargs)
        if redirect is miss:
            return _fallback(state, redirects, redirect, x, args, kwargs)
        token = set_extobj(redirect)
        try:
            return state.original(x, *args, **kwargs)
        finally:
            reset_extobj(token)

    helper.__name__ = helper.__qualname__ = spec.name
    helper.__module__ = _PUBLIC_MODULE
    helper.__doc__ = spec.doc
    helper._np2torch_spec = spec  # type: ignore[attr-defined]
    helper._np2torch_state = state  # type: ignore[attr-defined]
    helper._np2torch_which = lambda x, *args, **kwargs: _which(state, x, args, kwargs)  # type: ignore[attr-defined]
    _decide.on_change(state.forget_floors)
    _calibrate.register(spec.name, lambda path, x: _run_path(state, path, x))
    return helper


def _fallback(state: _UfuncState, redirects: dict[Any, Any], redirect: Any, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The original with the caller's arguments, its warnings pointing at the caller's line."""
    if redirect is REDIRECT_MISS:
        _, _, redirect = warn_redirect(state.spec.attr, redirects)
        if redirect is None:
            return state.original(x, *args, **kwargs)
    return call_redirected(redirect, state.original, (x, *args), kwargs)


def _parse_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, str, str, Any] | None:
    """``(out, casting, order, dtype)`` when every argument is one we reproduce, else None."""
    out = None
    if args:
        if len(args) != 1 or "out" in kwargs:
            return None
        out = args[0]
    casting, order, dtype = "same_kind", "K", None
    if kwargs:
        if not _SERVED_KEYWORDS.issuperset(kwargs):
            return None
        out = kwargs.get("out", out)
        if kwargs.get("where", True) is not True:
            return None
        casting = kwargs.get("casting", casting)
        order = kwargs.get("order", order)
        if type(casting) is not str or casting not in _CASTINGS:
            return None
        if type(order) is not str or order not in _ORDERS:
            return None
        subok = kwargs.get("subok", True)
        if subok is not True and subok is not False:
            return None
        dtype = kwargs.get("dtype")
        if dtype is not None:
            try:
                dtype = np.dtype(dtype)
            except TypeError:
                return None
    if type(out) is tuple:
        if len(out) != 1:
            return None
        out = out[0]
    if out is not None and type(out) is not np.ndarray:
        return None
    return out, casting, order, dtype


def _route(state: _UfuncState, settings: Any, plan: _UfuncPlan, size: int, dry_run: bool = False) -> Route | None:
    """Where this call runs (None: the original); a clear error for an explicit CUDA device without CUDA."""
    device = settings.device
    found = _decide.route(state.spec.name, plan.name, size, device, settings.min_size, plan.cuda_ok, dry_run=dry_run)
    if found is not None and found.path == "cuda" and not dry_run and not cuda_available():
        raise RuntimeError(
            f"np2torch.runtime is configured for device {device!r} (NP2TORCH_DEVICE or "
            "configure()), but torch reports no usable CUDA device; use 'auto' to fall back"
        )
    return found


def _dispatch(
    state: _UfuncState, redirects: dict[Any, Any], settings: Any, x: np.ndarray, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    result = _try_torch(state, settings, x, args, kwargs)
    if result is _DECLINED:
        return _fallback(state, redirects, REDIRECT_MISS, x, args, kwargs)
    return result


_DECLINED = object()


def _try_torch(state: _UfuncState, settings: Any, x: np.ndarray, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if settings.gate is None and x.dtype not in state.floors:
        if _decide.deferring(x.size):
            state.floors[x.dtype] = _decide.DEFER_FLOOR  # smaller calls skip even this test
            return _DECLINED
        state.learn_floor(x.dtype)
        if x.size < state.floors[x.dtype]:
            return _DECLINED
    prepared = _prepare(state, settings, x, args, kwargs, dry_run=False)
    if type(prepared) is str:
        return _DECLINED
    route, plan, out, order, inplace, checks = prepared
    result = out if out is not None else _allocate(x, plan, order)
    if route.device == "cpu":
        with threads(route.threads, adapt=route.adapt):
            _run(state, route.device, plan, x, result, inplace, checks)
    else:
        _run(state, route.device, plan, x, result, inplace, checks)
    if out is not None:
        return out
    return result[()] if result.ndim == 0 else result


def _prepare(state: _UfuncState, settings: Any, x: np.ndarray, args: tuple[Any, ...], kwargs: dict[str, Any], dry_run: bool) -> Any:
    """``(route, plan, out, order, inplace, checks)`` for a call torch serves, else why not (a string)."""
    call = _parse_call(args, kwargs)
    if call is None:
        return "an argument or keyword the runtime does not reproduce exactly (where=, a tuple of outputs, a subclass, ...)"
    out, casting, order, dtype = call
    plan = state.plan(x.dtype, None if out is None else out.dtype, dtype, casting)
    if plan is None:
        return f"no loop verified on torch for {x.dtype} input (the original's type resolution picks another)"
    if state.spec.module == "scipy.special" and _scipy_reports():
        return "scipy.special.errstate asks for reports, which only SciPy gives"
    if settings.device == "numpy":
        return _decide.original_reason(state.spec.name, plan.name, x.size, "numpy", None)
    route = _route(state, settings, plan, x.size, dry_run)
    if route is None:
        if not dry_run:
            return "the original"  # the reason is spelled out only for which()
        return _decide.original_reason(state.spec.name, plan.name, x.size, settings.device, settings.min_size)
    if not dry_run and load_torch() is None:
        return "torch is not installed"
    checks = error_checks()
    inplace: bool | None = False
    if out is not None:
        inplace = _out_relation(x, out, plan)
        if inplace is None:
            return "an out= array torch cannot write exactly (overlapping, broadcast, read-only or another layout)"
    if inplace and checks is not None and not _flat_pair(out, out):
        return "in place under a reporting np.errstate on a non-contiguous array"
    return route, plan, out, order, inplace, checks


def _which(state: _UfuncState, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    """``(path, why)`` for a call, without running it (no ski-rental count, no measurement)."""
    name = state.spec.name
    if type(x) is not np.ndarray:
        return "numpy", f"{name}: not exactly a numpy.ndarray ({type(x).__name__}): the original"
    settings = SETTINGS_VAR.get() or PROCESS_SETTINGS.value
    prepared = _prepare(state, settings, x, args, kwargs, dry_run=True)
    if type(prepared) is str:
        return "numpy", f"{name} over {x.size:,} elements of {x.dtype}: {prepared}"
    route = prepared[0]
    kind = "cuda" if route.path == "cuda" else ("numpy" if route.path == "numpy" else "cpu")
    threads_text = " (one thread)" if route.path == "cpu1" else ""
    return kind, f"{name} over {x.size:,} elements of {prepared[1].name}{threads_text}: {route.why}"


def _run_path(state: _UfuncState, path: str, x: np.ndarray) -> Any:
    """One call of the helper through ``path`` on the scratch input ``x`` (calibration and tune)."""
    if path == "numpy":
        return state.load()(x)
    plan = state.plan(x.dtype, None, None, "same_kind")
    if plan is None:
        raise ValueError(f"{state.spec.name} has no torch loop for {x.dtype}")
    device = "cuda" if path == "cuda" else "cpu"
    result = _allocate(x, plan, "K")
    checks = error_checks()
    if device == "cpu":
        with threads(1 if path == "cpu1" else 0, adapt=False):  # the pool as it is, never shrunk: what tune measures
            _run(state, device, plan, x, result, False, checks)
    else:
        _run(state, device, plan, x, result, False, checks)
    return result


def _scipy_reports() -> bool:
    """Whether ``scipy.special.errstate``/``seterr`` asks for any report (default: only ``memory``).

    SciPy's special functions report domain, singularity and overflow errors
    through their own error state, not NumPy's; torch cannot reproduce it, so
    such calls go to SciPy.
    """
    geterr = sys.modules["scipy.special"].geterr  # imported by the spec's original already
    return any(mode != "ignore" for kind, mode in geterr().items() if kind != "memory")


def _out_relation(x: np.ndarray, out: np.ndarray, plan: _UfuncPlan) -> bool | None:
    """For a served ``out``: False (disjoint), True (exactly in place), None (decline)."""
    if out.shape != x.shape or out.dtype != plan.loop or not out.flags.writeable or not can_view(out):
        # NumPy raises for a read-only out (torch would write into it) and
        # broadcasts into a larger one: let it.
        return None
    if not _no_self_overlap(out):
        # An output whose elements share memory (a zero stride, as_strided
        # windows): NumPy writes it element by element in its own order; torch
        # refuses it or writes in another order.  The original decides.
        return None
    if not np.may_share_memory(x, out):
        return False
    # Two from_numpy views do not share a storage, so torch cannot see a
    # partial overlap and returns wrong values: only the identical layout is safe.
    same = (
        x.dtype == out.dtype
        and x.strides == out.strides
        and x.__array_interface__["data"][0] == out.__array_interface__["data"][0]
    )
    return True if same else None


def _no_self_overlap(a: np.ndarray) -> bool:
    """Whether no two elements of ``a`` share memory (proved from the strides; False when unsure).

    Sorted by stride, each axis must step past everything the smaller axes span.
    """
    extent = a.itemsize
    for stride, length in sorted((abs(st), n) for st, n in zip(a.strides, a.shape) if n > 1):
        if stride < extent:
            return False
        extent = stride * (length - 1) + extent
    return True


def _allocate(x: np.ndarray, plan: _UfuncPlan, order: Literal["K", "A", "C", "F"]) -> np.ndarray:
    """An uninitialized result with exactly the strides the ufunc would give it.

    Mirrors NumPy's ``check_for_trivial_loop``/``try_trivial_single_output_loop``
    (numpy/_core/src/umath/ufunc_object.c): 0-d and 1-d inputs, and C- or
    F-contiguous inputs needing no copy, get a new C (or F) array; everything
    else gets what the ufunc's buffered iterator allocates.  ``np.empty_like``
    differs from both for broadcast inputs and for length-1 axes.
    """
    dtype = plan.loop
    needs_copy = x.dtype != dtype or not x.flags.aligned
    if not needs_copy or x.ndim == 0 or (x.ndim == 1 and x.shape[0] <= np.getbufsize()):
        if x.ndim <= 1:
            return np.empty(x.shape, dtype)
        flags = (1 if x.flags.c_contiguous else 0) | (2 if x.flags.f_contiguous else 0)
        if flags:
            wanted = {"C": 1, "F": 2}.get(order, 0)
            if wanted == 0 or wanted == flags:
                return np.empty(x.shape, dtype, order="F" if (wanted or flags) == 2 else "C")
    it = np.nditer(
        [x, None],
        flags=["external_loop", "refs_ok", "zerosize_ok", "buffered", "growinner", "delay_bufalloc", "copy_if_overlap"],
        op_flags=[
            ["readonly", "aligned", "overlap_assume_elementwise"],
            ["writeonly", "aligned", "allocate", "no_broadcast", "no_subtype", "overlap_assume_elementwise"],
        ],
        op_dtypes=[dtype, dtype],
        order=order,
        casting="unsafe",
    )
    allocated: np.ndarray = it.operands[1]
    return allocated


def _flat_pair(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` are dense with the same layout, so 1-D views pair elements."""
    return a.strides == b.strides and a.itemsize == b.itemsize and (a.flags.c_contiguous or a.flags.f_contiguous)


def _flat(a: np.ndarray) -> np.ndarray:
    return a.ravel(order="K")


def _run(
    state: _UfuncState,
    device: str,
    plan: _UfuncPlan,
    x: np.ndarray,
    result: np.ndarray,
    inplace: bool,
    checks: ErrorChecks | None,
) -> None:
    spec = state.spec
    src = x
    if inplace:
        if checks is not None:
            # The inputs are overwritten as we go: keep each piece's inputs for the check.
            _inplace_checked(state, plan, result, checks)
            return
    elif plan.stage or not can_view(x):
        np.copyto(result, x, casting="unsafe")  # NumPy's own (exact) input cast / layout copy
        src = result
    under = checks is not None and checks.under
    others = checks is not None and checks.others
    if device != "cpu" and (result.flags.c_contiguous or result.flags.f_contiguous):
        if not _flat_pair(src, result):
            np.copyto(result, src, casting="unsafe")
            src = result
        suspicious = cuda_unary(spec.torch_op, _flat(src), _flat(result), device, plan.cuda_wide, others)
    else:
        _compute_cpu(spec.torch_op, plan, src, result)
        suspicious = others and not _all_finite(tensor_view(result))
    if under or suspicious:
        _report(state, _settle(state, x, result, under))


def _compute_cpu(op_name: str, plan: _UfuncPlan, src: np.ndarray, dst: np.ndarray) -> None:
    """``dst[...] = op(src)`` with torch on the host, writing into ``dst``'s memory."""
    torch = load_torch()
    op = _torch_op(torch, op_name)
    if plan.wide is None:
        op(tensor_view(src), out=tensor_view(dst))
        return
    wide = getattr(torch, plan.wide)
    if _flat_pair(src, dst):
        _widened_pieces(torch, op, wide, tensor_view(_flat(src)), tensor_view(_flat(dst)))
    else:
        tensor_view(dst).copy_(op(tensor_view(src).to(wide)))


def _torch_op(torch: Any, name: str) -> Callable[..., Any]:
    """``torch.<name>`` (a dotted name such as ``special.ndtr`` too), or a composition in :data:`_COMPOSED`."""
    composed = _COMPOSED.get(name)
    if composed is not None:
        return composed
    op: Callable[..., Any] = torch
    for part in name.split("."):
        op = getattr(op, part)
    return op


def _erfinv_unsigned_zero(t: Any, out: Any = None) -> Any:
    # scipy.special.erfinv(-0.0) is +0.0 where torch.erfinv gives -0.0; adding
    # +0.0 changes only that sign (-0.0 + 0.0 == +0.0; every other value, NaN
    # included, is unchanged).
    return load_torch().erfinv(t, out=out).add_(0.0)


# torch_op names the runtime composes itself (CPU only: a spec using one lists no CUDA loops).
_COMPOSED: Mapping[str, Callable[..., Any]] = {"erfinv_unsigned_zero": _erfinv_unsigned_zero}


def _widened_pieces(torch: Any, op: Any, wide: Any, src: Any, dst: Any) -> None:
    """1-D ``dst = op(src computed in wide)``, piecewise, so the wide temporary stays small."""
    n = dst.numel()
    if n == 0:
        return
    piece = max(_PIECE, 32768 * torch.get_num_threads())
    scratch = torch.empty(min(piece, n), dtype=wide)
    for start in range(0, n, piece):
        stop = min(start + piece, n)
        tmp = scratch[: stop - start]
        tmp.copy_(src[start:stop])
        op(tmp, out=tmp)
        dst[start:stop].copy_(tmp)


def _all_finite(t: Any) -> bool:
    """One multithreaded pass over the result: does it hold only finite values?

    float64: a sum is finite only if every term is (a sum that overflows is a
    false alarm, settled by the precise pass).  Narrower types: min and max,
    which propagate NaN (a float32 sum overflows too easily, and summing it in
    float64 costs ten times more on the CPU).
    """
    torch = load_torch()
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.numel() == 0:
        return True
    if t.dtype == torch.float64:
        return math.isfinite(float(t.sum()))
    low, high = torch.aminmax(t)
    return math.isfinite(float(low)) and math.isfinite(float(high))


def _suspects(x: np.ndarray, result: np.ndarray, under: bool) -> np.ndarray:
    """Elements whose flags NumPy might raise: non-finite results; with ``under``, tiny ones."""
    with np.errstate(all="ignore"):
        mask: np.ndarray = ~np.isfinite(result)
        if under:
            tiny = np.finfo(result.dtype).smallest_normal
            for part in _parts(result):
                mask |= np.abs(part) < tiny
            if x.dtype.kind in "fc":
                # float32 exp flags underflow for a subnormal *input* (result 1.0)
                tiny_in = np.finfo(x.dtype).smallest_normal
                for part in _parts(x):
                    mask |= np.abs(part) < tiny_in
    return mask


def _parts(a: np.ndarray) -> list[np.ndarray]:
    return [a.real, a.imag] if a.dtype.kind == "c" else [a]


def _settle(state: _UfuncState, x: np.ndarray, result: np.ndarray, under: bool) -> np.ndarray | None:
    """Give suspicious elements the original's own values; returns their inputs (None if none)."""
    mask = _suspects(x, result, under)
    if not mask.any():
        return None
    inputs: np.ndarray = x[mask]
    with np.errstate(all="ignore"):
        result[mask] = state.load()(inputs)
    return inputs


def _report(state: _UfuncState, inputs: np.ndarray | None) -> None:
    """Let NumPy report the flags the original raises on ``inputs``: warn (at the user's line), raise, call, log."""
    if inputs is not None:
        numpy_call(state.load(), state.spec.attr, inputs)


def _inplace_checked(state: _UfuncState, plan: _UfuncPlan, result: np.ndarray, checks: ErrorChecks) -> None:
    """In place under a non-quiet errstate: piecewise, keeping each piece's inputs for the check."""
    torch = load_torch()
    under = checks.under
    flat = _flat(result)
    piece = max(_PIECE, 32768 * torch.get_num_threads())
    saved = np.empty(min(piece, flat.size), dtype=flat.dtype)
    suspects: list[np.ndarray] = []
    for start in range(0, flat.size, piece):
        part = flat[start : start + piece]
        kept = saved[: part.size]
        np.copyto(kept, part)
        _compute_cpu(state.spec.torch_op, plan, part, part)
        if under or not _all_finite(tensor_view(part)):
            found = _settle(state, kept, part, under)
            if found is not None:
                suspects.append(found)
    if suspects:
        _report(state, np.concatenate(suspects))


def _spec(row: Function) -> UfuncSpec:
    return UfuncSpec(
        name=row.name,
        module=row.module,
        attr=row.name,
        torch_op=row.torch_op,
        compute=row.loops,
        cuda_compute=row.cuda_loops,
        doc=f"Drop-in for ``{row.qualname}``: same signature and results; torch computes large arrays where that is faster here.",
    )


UFUNC_SPECS: tuple[UfuncSpec, ...] = tuple(_spec(row) for row in ELEMENTWISE_FUNCTIONS)
HELPERS: Mapping[str, Callable[..., Any]] = {spec.name: make_ufunc_helper(spec) for spec in UFUNC_SPECS}
