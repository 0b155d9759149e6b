"""The elementwise helpers: one dispatcher for every elementwise row of the table.

A helper (``exp``, ``log``, ``erf``, ...) is :class:`Ufunc` made from its row
(:mod:`.table`: the original's qualified name, the torch op, the loops torch
reproduces exactly).  Its hot path is the size test, done first and cheaply;
everything else runs only for arrays that may take the torch path:

1. the call: exactly ``np.ndarray``; keywords this module reproduces exactly
   (``out``, ``where=True``, ``casting``, ``order``, ``dtype``, ``subok``);
2. the types: the original's own type resolution (``ufunc.resolve_dtypes``)
   picks the loop; torch serves only loops the row lists, computing in the
   listed dtype (e.g. float32 ``erf`` in float64, rounded once, as SciPy does);
   integer/bool inputs are cast into the result buffer first, exactly as NumPy
   casts them to the loop's dtype;
3. the route (the original, torch on one thread or the pool, CUDA), from the
   settings and the machine profile (:meth:`._helper.Helper.route`);
4. the layout: the result is allocated as NumPy allocates it and torch writes
   into it through ``out=``; inputs torch cannot view (negative strides,
   unaligned) are copied into the result buffer and computed in place;
5. ``np.errstate``: nothing when every mode is ``ignore``; else one reduction
   over the result, and only when it sees a non-finite value (or when
   ``under`` is on) the original re-runs on the suspicious elements, their
   values are written back and the flags are reported as NumPy would.

Anything else goes to the original with the caller's exact arguments (under
the caller's own error state when NumPy would run the caller's code:
:func:`._exact.errstate.runs_only_numpy`).
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, Literal, Mapping, Tuple, Union

import numpy as np

from ._backend import begin_torch_work, can_view, cuda_available, end_torch_work, load_torch
from ._dask import DASK_ARRAY, is_dask_array
from ._dask import elementwise as dask_elementwise
from ._decision import ledger
from ._decision.ledger import Ledger
from ._decision.route import Route, original_reason
from ._exact.errstate import (
    EXTOBJ_VAR,
    NUMPY_SCALARS,
    REDIRECT_MISS,
    ErrorChecks,
    error_checks,
    extobj_getter,
    numpy_call,
    records_flags,
    scipy_reports,
)
from ._helper import ABSENT, PUBLIC_MODULE, Helper, ufunc_signature
from ._paths import BY_NAME, blocks, cores, torch_cpu
from ._paths.cuda import cuda_unary
from ._record import Record
from ._state import PROCESS, SCOPED, TAKEN

if TYPE_CHECKING:

    from ._config import RuntimeSettings
    from .table import Function

if TYPE_CHECKING:
    Order = Literal["K", "A", "C", "F"]
    Casting = Literal["no", "equiv", "safe", "same_kind", "unsafe"]

_SERVED_KEYWORDS = frozenset(("out", "where", "casting", "order", "dtype", "subok"))
_CASTINGS: Mapping[str, Casting] = {"no": "no", "equiv": "equiv", "safe": "safe", "same_kind": "same_kind",
                                    "unsafe": "unsafe"}
_ORDERS: Mapping[str, Order] = {"K": "K", "A": "A", "C": "C", "F": "F"}
# Elements per piece when an in-place call must keep its inputs for the error check.
_INPLACE_PIECE = 1 << 22


class Plan(Record):
    """How one (input dtype, out dtype, dtype=, casting) call is served.

    ``loop``: the original's loop dtype; ``wide``: the torch dtype to compute in
    when wider than the loop's (float32 erf: float64), else None; ``cuda_ok``:
    the loop is verified on CUDA, computed there in ``cuda_wide`` when wider;
    ``stage``: the input is cast into the result buffer first (NumPy's own
    input cast); ``name``: the loop's dtype name (``dtype.name`` costs ~2 us:
    looked up once); ``torch``: torch serves the loop exactly (the row lists
    it); else only the exact paths do (the original, the original on every
    core: its own loop, whatever the loop).
    """

    __slots__ = ("loop", "wide", "cuda_ok", "cuda_wide", "stage", "name", "torch")

    def __init__(self, loop: np.dtype, wide: str | None, cuda_ok: bool, cuda_wide: str | None, stage: bool,
                 name: str, torch: bool = True) -> None:
        self.loop = loop
        self.wide = wide
        self.cuda_ok = cuda_ok
        self.cuda_wide = cuda_wide
        self.stage = stage
        self.name = name
        self.torch = torch


class Call(Record):
    """A call torch or the original on every core serves: its ``route`` and ``plan``; ``out`` (the caller's, or
    None), the result's ``order``, ``inplace`` (``out`` is the input itself), the error ``checks`` the result
    needs and the keywords that choose the original's loop (``dtype=``, ``casting=``: each block passes them on)."""

    __slots__ = ("route", "plan", "out", "order", "inplace", "checks", "loop_kwargs")

    def __init__(self, route: Route, plan: Plan, out: np.ndarray | None, order: Order, inplace: bool,
                 checks: ErrorChecks | None, loop_kwargs: Dict[str, Any]) -> None:
        self.route = route
        self.plan = plan
        self.out = out
        self.order = order
        self.inplace = inplace
        self.checks = checks
        self.loop_kwargs = loop_kwargs


class Declined(Record):
    """A call the original serves, and why (``which()`` shows it)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class Ufunc(Helper):
    """An elementwise helper: the row's original, its type plans and the public function (:meth:`make_function`)."""

    cores = True
    """It has the path ``cores``, the original's own loop on every core (:mod:`._paths.cores`)."""

    def __init__(self, row: Function) -> None:
        super().__init__(row)
        self.plans: Dict[Tuple[np.dtype, np.dtype | None, np.dtype | None, Casting], Plan | None] = {}
        self.ledger = Ledger()
        """Plain calls known to take the original's single call (:mod:`._decision.ledger`): (dtype, size) keys."""
        self.function = self.publish(make_function(self))
        if self.front is not None:
            self.front.ledger = self.ledger  # its calls past the floor the ledger holds are passed from C too

    def plan(self, x_dtype: np.dtype, out_dtype: np.dtype | None, dtype: np.dtype | None,
             casting: Casting) -> Plan | None:
        key = (x_dtype, out_dtype, dtype, casting)
        try:
            return self.plans[key]
        except KeyError:
            pass
        found = _make_plan(self.row, self.load(), x_dtype, out_dtype, dtype, casting)
        self.plans[key] = found
        return found

    def loop_of(self, dtype: np.dtype) -> str | None:
        # A dtype=/out= call whose loop differs takes the original below this floor: at worst a
        # missed speed-up, never a change.
        plan = self.plan(dtype, None, None, "same_kind")
        return None if plan is None else plan.name

    def route_call(self, settings: RuntimeSettings, plan: Plan, size: int, dry_run: bool = False) -> Route | None:
        """:meth:`route`, and a clear error for an explicit CUDA device without CUDA."""
        found = self.route(plan.name, size, settings, plan.cuda_ok, dry_run, exact_only=not plan.torch)
        if found is not None and found.path == "cuda" and not dry_run and not cuda_available():
            raise no_cuda(settings)
        return found

    def run_path(self, path: str, x: np.ndarray) -> object:
        if path == "numpy":
            return self.load()(x)
        plan = self.plan(x.dtype, None, None, "same_kind")
        if plan is None or (path != "cores" and not plan.torch):
            raise ValueError(f"{self.name} has no torch loop for {x.dtype}")
        if path == "cores":
            result = _allocate(x, plan, "K")
            cores.compute(self.load(), self.name, x, result, error_checks())
            return result
        taken = BY_NAME[path]
        result = _allocate(x, plan, "K")
        _run(self, taken.device, plan, x, result, False, error_checks(), taken.threads)
        return result

    def which(self, *args: Any, **kwargs: Any) -> tuple[str, str]:
        x, rest = args[0], args[1:]
        if type(x) is not np.ndarray:
            return "numpy", f"{self.name}: not exactly a numpy.ndarray ({type(x).__name__}): the original"
        scoped = SCOPED.get()
        settings = PROCESS.settings if scoped is None else scoped
        prepared = _prepare(self, settings, x, rest, kwargs, dry_run=True)
        if type(prepared) is Declined:
            return "numpy", f"{self.name} over {x.size:,} elements of {x.dtype}: {prepared.reason}"
        assert type(prepared) is Call
        route = prepared.route
        if route.path == "cuda" and route.basis is None and not cuda_available():
            # The call raises (route_call): a CUDA device set explicitly, not a profile's prediction (which the
            # call itself moves off CUDA when there is none).  Asking loads torch, as the call would.
            raise no_cuda(settings)
        kind = route.path if route.path in ("cuda", "numpy", "cores") else "cpu"
        threads_text = " (one thread)" if route.path == "cpu1" else ""
        return kind, f"{self.name} over {x.size:,} elements of {prepared.plan.name}{threads_text}: {route.why}"


def no_cuda(settings: RuntimeSettings) -> RuntimeError:
    """What a call (and :func:`which`) raises when the settings name a CUDA device and torch has none."""
    return RuntimeError(f"np2torch.runtime is configured for device {settings.device!r} (NP2TORCH_DEVICE or "
                        "configure()), but torch reports no usable CUDA device; use 'auto' to fall back")


def make_helper(row: Function) -> Ufunc:
    """The elementwise helper of ``row``."""
    return Ufunc(row)


def _make_plan(row: Function, original: Callable[..., Any], x_dtype: np.dtype, out_dtype: np.dtype | None,
               dtype: np.dtype | None, casting: Casting) -> Plan | None:
    # The original's own type resolution, never a guess: scipy.special.erf
    # returns float64 for float16 input, np.exp float16 for int8.
    if not x_dtype.isnative or not isinstance(original, np.ufunc):
        return None
    try:
        if dtype is None:
            loop_in, loop_out = original.resolve_dtypes((x_dtype, out_dtype), casting=casting)
        else:
            loop_in, loop_out = original.resolve_dtypes((x_dtype, out_dtype), signature=(None, dtype), casting=casting)
    except Exception:
        return None
    if loop_in != loop_out or not cores.beyond_single_call(loop_out, row.loops):
        return None
    if out_dtype is not None and out_dtype != loop_out:
        return None
    stage = x_dtype != loop_in
    # Only casts that are exact (ints/bools/narrower floats -> the loop's float):
    # a lossy cast could raise its own floating-point warnings.
    if stage and not np.can_cast(x_dtype, loop_in, "safe"):
        return None
    name = loop_out.name
    if name not in row.loops:  # a loop torch does not serve exactly: the original's own, on every core where faster
        return Plan(loop=loop_out, wide=None, cuda_ok=False, cuda_wide=None, stage=stage, name=name, torch=False)
    compute = row.loops[name]
    cuda = row.cuda_loops.get(name)
    return Plan(
        loop=loop_out,
        wide=None if compute == name else compute,
        cuda_ok=cuda is not None,
        cuda_wide=None if cuda in (None, name) else cuda,
        stage=stage,
        name=name,
    )


def make_function(state: Ufunc) -> Callable[..., Any]:
    """The public helper of ``state``: the original's signature, torch where exact and faster."""
    ndarray = np.ndarray
    get_scoped = SCOPED.get
    process = PROCESS
    get_extobj = extobj_getter()
    set_extobj = EXTOBJ_VAR.set
    reset_extobj = EXTOBJ_VAR.reset
    redirects = process.redirects.setdefault(state.name, {None: None})  # NumPy error state -> how to call the original
    miss = REDIRECT_MISS
    modules = sys.modules
    scalars = NUMPY_SCALARS
    # A float, float64 or int scalar in the row's quiet interval raises no flag but underflow (an int is
    # computed in float64): where underflow does not warn, the redirect changes nothing for it, and the
    # original is called plainly (~100 ns less: its set and reset).
    low, high = state.row.quiet or (math.nan, math.nan)
    float64 = np.float64
    underflow_unwarned = process.underflow_unwarned
    count = state.ledger.count

    def helper(x: Any = ABSENT, /, *args: Any, **kwargs: Any) -> Any:
        # The hot path: everything below the size test is for large arrays only;
        # a plain array or scalar without arguments then gets numpy_call inlined
        # (a small call costs ~0.3 us here), anything else numpy_call itself.
        kind = type(x)
        if kind is ndarray:
            settings = get_scoped()
            if settings is None:
                settings = process.settings
            gate = settings.gate
            dtype = x.dtype
            if gate is None:
                gate = state.floors.get(dtype, 0)
            if x.size >= gate:
                if args or kwargs or dtype.hasobject or sys.is_finalizing():
                    return _dispatch(state, settings, x, args, kwargs)
                # a plain call decided before to take the original takes it without being decided again (counted
                # towards the rental: ._decision.ledger)
                if not count((dtype, x.size), settings):
                    result = _try_torch(state, settings, x, args, kwargs)
                    if result is not _DECLINED:
                        return result
                # the original through the redirect below, as a call under the floor (the profile keeps it, the ski
                # rental, an error state torch cannot serve)
            elif args or kwargs or dtype.hasobject:
                return numpy_call(state.original, state.name, x, *args, **kwargs)
        elif (kind is float or kind is float64 or kind is int) and low < x < high and not args and not kwargs:
            extobj = get_extobj()
            if extobj in underflow_unwarned or redirects.get(extobj, miss) is None:
                return state.original(x)
            # else: the redirect below
        elif kind not in scalars or args or kwargs:
            if x is ABSENT:
                return state.original(**kwargs)
            if DASK_ARRAY in modules and is_dask_array(x):  # Dask is never imported here (as array-api-compat)
                return dask_elementwise(state.function, state.load(), x, args, kwargs)  # by reference, the public one
            return numpy_call(state.original, state.name, x, *args, **kwargs)
        # Here the call is the original's one argument, nothing else: called as `original(x)` (no unpacking).
        extobj = get_extobj()
        redirect = redirects.get(extobj, miss)
        if redirect is None:
            return state.original(x)
        if redirect is miss:
            return numpy_call(state.original, state.name, x)
        token = set_extobj(redirect)
        try:
            return state.original(x)
        finally:
            reset_extobj(token)

    helper.__name__ = helper.__qualname__ = state.name
    helper.__module__ = PUBLIC_MODULE
    helper.__signature__ = ufunc_signature(1)  # type: ignore[attr-defined]
    helper.__doc__ = (f"Drop-in for ``{state.row.qualname}``: same signature and results; torch computes large "
                      "arrays where that is faster here.")
    return helper


if TYPE_CHECKING:
    ParsedCall = Tuple[Union[np.ndarray, None], Casting, Order, Union[np.dtype, None]]


def _parse_call(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> ParsedCall | None:
    """``(out, casting, order, dtype)`` when every argument is one we reproduce, else None."""
    out = None
    if args:
        if len(args) != 1 or "out" in kwargs:
            return None
        out = args[0]
    casting: Casting = "same_kind"
    order: Order = "K"
    dtype = None
    if kwargs:
        if not _SERVED_KEYWORDS.issuperset(kwargs):
            return None
        out = kwargs.get("out", out)
        if kwargs.get("where", True) is not True:
            return None
        asked_casting = kwargs.get("casting", casting)
        known_casting = _CASTINGS.get(asked_casting) if type(asked_casting) is str else None
        asked_order = kwargs.get("order", order)
        known_order = _ORDERS.get(asked_order) if type(asked_order) is str else None
        if known_casting is None or known_order is None:
            return None
        casting, order = known_casting, known_order
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


def _dispatch(state: Ufunc, settings: RuntimeSettings, x: np.ndarray,
              args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    if sys.is_finalizing():  # a __del__ at exit: only the original runs then (Helper.admits)
        return numpy_call(state.original, state.name, x, *args, **kwargs)
    result = _try_torch(state, settings, x, args, kwargs)
    if result is not _DECLINED:
        return result
    return numpy_call(state.original, state.name, x, *args, **kwargs)


_DECLINED = object()


def _try_torch(state: Ufunc, settings: RuntimeSettings, x: np.ndarray, args: Tuple[Any, ...],
               kwargs: Dict[str, Any]) -> Any:
    if (settings.gate is None and (PROCESS.provisional or x.dtype not in state.floors)
            and not state.past_floor(x.dtype, x.size)):
        return _DECLINED
    decided = None
    if not args and not kwargs:  # a plain call: its route may be the ledger's (._decision.ledger)
        decided = state.ledger.route((x.dtype, x.size), settings)
        if decided is not None and blocks.single_call_serves(x.size, decided.threads, decided.after_sleep):
            return _DECLINED  # the original's single call, as _prepare finds after checks that all lead to it too
    prepared = _prepare(state, settings, x, args, kwargs, dry_run=False, decided=decided)
    if type(prepared) is not Call:
        return _DECLINED
    if prepared.route.device != "cpu" and PROCESS.cuda_lock.held_here():
        return _DECLINED  # made inside this thread's call on the CUDA slots (a signal handler's): never a wait for them
    plan, out = prepared.plan, prepared.out
    result = out if out is not None else _allocate(x, plan, prepared.order)
    if prepared.route.path == "cores":
        if not cores.lays_out_alike(x, result):  # (order= asks for a layout of its own)
            return _DECLINED
        cores.compute(state.load(), state.name, x, result, prepared.checks, **prepared.loop_kwargs)
        TAKEN.device = "cores"
    else:
        if not begin_torch_work():  # the interpreter is closing: the original (_backend)
            return _DECLINED
        try:
            _run(state, prepared.route.device, plan, x, result, prepared.inplace, prepared.checks, prepared.route.threads)
        finally:
            end_torch_work()
        TAKEN.device = prepared.route.device
    if out is not None:
        return out
    return result[()] if result.ndim == 0 else result


def _prepare(state: Ufunc, settings: RuntimeSettings, x: np.ndarray, args: Tuple[Any, ...],
             kwargs: Dict[str, Any], dry_run: bool, decided: Route | None = None) -> Call | Declined:
    """How torch or the original on every core serves the call, or why the original does.  ``decided``: the route
    of a plain call the ledger holds (:mod:`._decision.ledger`), else it is decided here (and the ledger learns a
    plain call's route to an exact path)."""
    parsed = _parse_call(args, kwargs)
    if parsed is None:
        return Declined("an argument or keyword the runtime does not reproduce exactly (where=, a tuple of outputs, "
                        "a subclass, ...)")
    out, casting, order, dtype = parsed
    plan = state.plan(x.dtype, None if out is None else out.dtype, dtype, casting)
    if plan is None:
        return Declined(f"no loop for {x.dtype} input that torch or the original on every core serves (the original's "
                        "type resolution picks another)")
    if settings.device == "numpy":
        return Declined(original_reason(state.name, plan.name, x.size, "numpy", None))
    route = decided
    if route is None:
        plain = not dry_run and not args and not kwargs
        begun = ledger.begin() if plain else 0
        route = state.route_call(settings, plan, x.size, dry_run)
        if plain and (route is None or route.path == "cores"):
            # decided from the settings, the profile, the loop and the size alone (and counted: PROCESS.counted)
            state.ledger.learn((x.dtype, x.size), settings, begun, route)
    if route is None:
        if not dry_run:
            return _ORIGINAL  # the reason is spelled out only for which()
        return Declined(original_reason(state.name, plan.name, x.size, settings.device, settings.min_size))
    # (After the route, as NumPy's error state below: the rental counts the call wherever the profile sends it, so
    # that a call the ledger counts is the original's whatever either error state asks: ._decision.ledger.)
    if state.row.module == "scipy.special" and scipy_reports():
        return Declined("scipy.special.errstate asks for reports, which only SciPy gives")
    if route.path == "cores":
        if not dry_run and not args and not kwargs and blocks.single_call_serves(x.size, route.threads, route.after_sleep):
            # The original's single call: the same loop, without the blocks' cost.  (A plain call: its warnings are
            # redirected to the caller's line; one with keywords may not be: :func:`._exact.errstate.redirect_for`.)
            return _LOADED
        return _on_cores(route, plan, x, out, order, casting, dtype)
    if not dry_run and not load_torch():
        return Declined("torch is not installed")
    checks = error_checks()
    inplace = False
    if out is not None:
        relation = _out_relation(x, out, plan)
        if relation is None:
            return Declined("an out= array torch cannot write exactly (overlapping, broadcast, read-only or another "
                            "layout)")
        inplace = relation
    if inplace and checks is not None and out is not None and not torch_cpu.flat_pair(out, out):
        return Declined("in place under a reporting np.errstate on a non-contiguous array")
    if checks is not None and checks.under and not _dense_loop(x, out, order):
        # NumPy's loops raise the underflow flag by layout: the contiguous float16 loops convert with SIMD
        # instructions that raise none, the strided ones through npy_float_to_half, which does (NumPy 2.4 on
        # AVX512: log1p(6.104e-05), tanh, arctanh, expm1); float32/float64 tan, arcsin, arctan, expm1, log1p,
        # sinh, arcsinh and arctanh of a subnormal flag it when reversed, not when contiguous (this VM).  The
        # flags are reported by re-running the original on a contiguous copy of the suspicious elements: under
        # a reporting under=, only calls NumPy runs as one contiguous loop are torch's.
        return Declined("NumPy's loops flag underflow by layout: a strided call under a reporting under= is the original's")
    return Call(route, plan, out, order, inplace, checks, {})


def _on_cores(route: Route, plan: Plan, x: np.ndarray, out: np.ndarray | None, order: Order, casting: Casting,
              dtype: np.dtype | None) -> Call | Declined:
    """How the original on every core serves the call (:mod:`._paths.cores`), or why its single call does."""
    checks = error_checks()
    if checks is not None and not records_flags():
        return Declined("a reporting np.errstate, whose flags only NumPy >= 2 records per block")
    inplace = False
    if out is None:
        if not cores.dense(x):
            return Declined("the original on every core serves dense arrays whose result is laid out alike")
    else:
        relation = _out_relation(x, out, plan)
        if relation is None or not cores.lays_out_alike(x, out):
            return Declined("an out= the original on every core cannot write in blocks (overlapping, or laid out "
                            "unlike the input)")
        inplace = relation
        if inplace and checks is not None:
            return Declined("in place under a reporting np.errstate: the blocks' inputs are gone once written")
    loop_kwargs: Dict[str, Any] = {} if dtype is None else {"dtype": dtype}
    if casting != "same_kind":
        loop_kwargs["casting"] = casting
    return Call(route, plan, out, order, inplace, checks, loop_kwargs)


def _dense_loop(x: np.ndarray, out: np.ndarray | None, order: Order) -> bool:
    """Whether NumPy runs the call as one contiguous loop: input and result dense in the same order."""
    if out is not None:
        return bool((x.flags.c_contiguous and out.flags.c_contiguous) or (x.flags.f_contiguous and out.flags.f_contiguous))
    return bool((x.flags.c_contiguous and order in ("K", "A", "C")) or (x.flags.f_contiguous and order in ("K", "A", "F")))


_ORIGINAL = Declined("the original")
_LOADED = Declined("the original's single call: other processes hold the cores, or the workers slept since the last such call")


def _out_relation(x: np.ndarray, out: np.ndarray, plan: Plan) -> bool | None:
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


def _allocate(x: np.ndarray, plan: Plan, order: Literal["K", "A", "C", "F"]) -> np.ndarray:
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


def _run(
    state: Ufunc,
    device: str,
    plan: Plan,
    x: np.ndarray,
    result: np.ndarray,
    inplace: bool,
    checks: ErrorChecks | None,
    threads: int = 0,
) -> None:
    """``result[...] = op(x)`` on ``device`` (on the CPU in blocks, on up to ``threads`` threads: 0 as many as
    allowed), then the original's values and reports for the elements NumPy would flag."""
    torch_op = state.row.torch_op
    src = x
    if inplace:
        if checks is not None:
            # The inputs are overwritten as we go: keep each piece's inputs for the check.
            _inplace_checked(state, plan, result, checks, threads)
            return
    elif plan.stage or not can_view(x):
        np.copyto(result, x, casting="unsafe")  # NumPy's own (exact) input cast / layout copy
        src = result
    under = checks is not None and checks.under
    others = checks is not None and checks.others
    dense = bool(result.flags.c_contiguous or result.flags.f_contiguous)
    if device != "cpu" and dense:
        if not torch_cpu.flat_pair(src, result):
            np.copyto(result, src, casting="unsafe")
            src = result
        suspicious = cuda_unary(torch_op, torch_cpu.flat(src), torch_cpu.flat(result), device, plan.cuda_wide, others)
    else:
        suspicious = not torch_cpu.compute(torch_op, plan.wide, src, result, threads, others)
    if under or suspicious:
        _settle_and_report(state, x, result, under)


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


def _settle(state: Ufunc, x: np.ndarray, result: np.ndarray, under: bool) -> np.ndarray | None:
    """Give suspicious elements the original's own values; returns their inputs (None if none)."""
    mask = _suspects(x, result, under)
    if not mask.any():
        return None
    inputs: np.ndarray = x[mask]
    if inputs.dtype != result.dtype:
        # A staged call (float32 input with dtype=float64 or a float64 out=): the original must run
        # the call's loop, not the one the input's own dtype picks (float32 exp underflows to 0 and
        # flags it where the float64 loop gives a subnormal, or a normal number and no flag).
        inputs = inputs.astype(result.dtype)  # exact: a plan stages only safe casts
    with np.errstate(all="ignore"):
        result[mask] = state.load()(inputs)
    return inputs


SETTLE_BLOCK = 1 << 18
"""Elements whose suspects are found and settled at a time: the check's temporaries (a mask, ``abs`` of a part,
the suspects' inputs) are a block's, never the whole call's."""


def _settle_and_report(state: Ufunc, x: np.ndarray, result: np.ndarray, under: bool) -> None:
    """The original's values and reports for the elements NumPy would flag, a block at a time (:class:`Flagged`)
    where ``x`` and ``result`` lay out alike and NumPy records flags (>= 2); else over the whole call at once."""
    if not records_flags() or not cores.lays_out_alike(x, result):
        _report(state, _settle(state, x, result, under))
        return
    flagged = Flagged(state.load())
    src, dst = torch_cpu.flat(x), torch_cpu.flat(result)
    for start in range(0, dst.size, SETTLE_BLOCK):
        flagged.settle(src[start : start + SETTLE_BLOCK], dst[start : start + SETTLE_BLOCK], under)
    flagged.report(state.name)


class Flagged:
    """The flags the original raised on the suspicious elements settled so far, and a few elements raising each
    (:func:`._paths.cores.witnesses`): reported once, by the original itself on those, after the last block."""

    def __init__(self, original: Callable[..., Any]) -> None:
        self.original = original
        self.seen = 0
        self.pieces: list[np.ndarray] = []

    def settle(self, x: np.ndarray, result: np.ndarray, under: bool) -> None:
        """Give ``result``'s suspicious elements the original's own values, recording the flags they raise."""
        mask = _suspects(x, result, under)
        if not mask.any():
            return
        inputs: np.ndarray = x[mask]
        if inputs.dtype != result.dtype:
            inputs = inputs.astype(result.dtype)  # exact: a plan stages only safe casts (see _settle)
        new = cores.recorded(self.original, inputs, result, mask) & ~self.seen
        if new:
            self.pieces += cores.witnesses(self.original, inputs, new)
            self.seen |= new

    def report(self, name: str) -> None:
        if self.pieces:
            numpy_call(self.original, name, np.concatenate(self.pieces))


def _report(state: Ufunc, inputs: np.ndarray | None) -> None:
    """Let NumPy report the flags the original raises on ``inputs``: warn (at the user's line), raise, call, log."""
    if inputs is not None:
        numpy_call(state.load(), state.name, inputs)


def _inplace_checked(state: Ufunc, plan: Plan, result: np.ndarray, checks: ErrorChecks, threads: int) -> None:
    """In place under a non-quiet errstate: piecewise, keeping each piece's inputs for the check.

    Pieces are a fixed number of elements (never a function of the thread count), cut into blocks as any call.
    """
    under = checks.under
    flat = torch_cpu.flat(result)
    saved = np.empty(min(_INPLACE_PIECE, flat.size), dtype=flat.dtype)
    flagged = Flagged(state.load()) if records_flags() else None
    suspects: list[np.ndarray] = []
    for start in range(0, flat.size, _INPLACE_PIECE):
        part = flat[start : start + _INPLACE_PIECE]
        kept = saved[: part.size]
        np.copyto(kept, part)
        if not torch_cpu.compute(state.row.torch_op, plan.wide, part, part, threads, True) or under:
            if flagged is not None:
                for a in range(0, part.size, SETTLE_BLOCK):
                    flagged.settle(kept[a : a + SETTLE_BLOCK], part[a : a + SETTLE_BLOCK], under)
                continue
            found = _settle(state, kept, part, under)
            if found is not None:
                suspects.append(found)
    if flagged is not None:
        flagged.report(state.name)
    elif suspects:
        _report(state, np.concatenate(suspects))
