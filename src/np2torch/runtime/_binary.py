"""Two-argument ufuncs (``np.hypot``, ``np.arctan2``, ``np.logaddexp``, ``scipy.special.xlogy``, ``xlog1py``),
computed with torch where that returns the original's result.

A call takes the torch path when it is a plain call, ``f(x1, x2)`` with no
keyword, of exact ndarrays or Python ``float``/``int`` scalars (NumPy 2's weak
scalars), at least one an array, large enough for this machine's profile:

* **dtypes** from the original's own resolution, ``ufunc.resolve_dtypes((x1, x2, None))``
  (Python scalars passed as their type, as NumPy 2 resolves weak scalars:
  ``hypot(float32, 2.0)`` is float32, SciPy's ``xlogy(float32, 2.0)`` float64);
  the loop must be one the row lists, each input cast into it exactly (a
  ``safe`` cast: NumPy's own ``astype``; a scalar rounded as NumPy rounds it,
  declined if it overflows the loop);
* **shape and strides**: the result is allocated as the ufunc allocates it
  (:func:`_allocate`: NumPy's trivial loop, else its iterator for the pair),
  broadcasting and length-1 axes included;
* **values**: torch's, in place in the result; every element whose torch value
  is not finite is recomputed by the original (its value, its NaN's sign, and
  the warnings or errors NumPy's error state asks for, attributed to the
  caller's line): the catalogue's errstate check found no flag on any pair
  whose torch value is finite (docs/catalogue.md, "Two-argument ufuncs");
  ``np.errstate(under=...)`` other than ``ignore`` sends the call to the
  original, as does ``scipy.special.errstate`` reporting anything.

Everything else -- ``out=``, ``where=``, ``dtype=`` and the other keywords,
subclasses, duck arrays (Dask: the original dispatches to Dask's own
``__array_ufunc__``), NumPy scalars, lists, incompatible shapes -- is the
original's call, with its result or error.  CUDA: no loop verified.
"""

from __future__ import annotations

import functools
import operator
import sys
from functools import reduce
from typing import TYPE_CHECKING, Any, Callable, Union

import numpy as np

from ._backend import begin_torch_work, can_view, end_torch_work, load_torch
from ._config import RuntimeSettings
from ._decision import ledger
from ._decision.ledger import Ledger
from ._decision.route import Route, original_reason
from ._exact.errstate import (
    EXTOBJ_VAR,
    HALF_MAX,
    REDIRECT_MISS,
    error_checks,
    extobj_getter,
    may_warn_in_a_cast,
    names_its_warnings,
    numpy_call,
    records_flags,
    scipy_reports,
)
from ._helper import ABSENT, PUBLIC_MODULE, Helper, dtype_name, ufunc_signature
from ._paths import blocks, cores, torch_cpu
from ._state import PROCESS, SCOPED, TAKEN

if TYPE_CHECKING:
    import torch

    from .table import Function

Operand = Union[np.ndarray, float, int]
"""An ndarray, or a Python ``float``/``int`` (NumPy 2's weak scalar)."""


class Binary(Helper):
    """A two-argument elementwise helper: the row's original (a ufunc) and the torch path below."""

    cores = True
    """It has the path ``cores``, the original's own loop on every core (:mod:`._paths.cores`)."""

    def __init__(self, row: Function) -> None:
        super().__init__(row)
        self.scipy = row.module.startswith("scipy")
        self.loops: dict[tuple[Any, Any], np.dtype | None] = {}
        """(dtype or Python type, dtype or Python type) -> :meth:`resolve`'s answer (NumPy's resolution costs µs)."""
        self.named: bool | None = None
        self.ledger = Ledger()
        """Plain calls known to take the original's single call (:mod:`._decision.ledger`): (loop, size) keys."""
        self.function = self.publish(_make_function(self), self.loops)
        if self.front is not None:
            self.front.ledger = self.ledger  # its calls past the floor the ledger holds are passed from C too

    def names_its_warnings(self) -> bool:
        """Whether the loaded original's warnings name it (:func:`._exact.errstate.names_its_warnings`), asked once."""
        named = self.named
        if named is None:
            assert self.loaded is not None
            named = self.named = names_its_warnings(self.loaded, self.name)
        return named

    def resolve(self, first: Any, second: Any) -> np.dtype | None:
        """The loop dtype for operands of these dtypes (or Python types), if a path other than the original's single
        call may serve it: torch where the row lists it, else the original on every core (a floating or complex
        loop: :data:`._paths.cores.LOOP_KINDS`)."""
        key = (first, second)
        try:
            return self.loops[key]
        except KeyError:
            pass
        found = self.loops[key] = self._resolve(first, second)
        return found

    def _resolve(self, first: Any, second: Any) -> np.dtype | None:
        ufunc = self.load()
        if not isinstance(ufunc, np.ufunc):
            return None
        try:
            loops = ufunc.resolve_dtypes((first, second, None))
        except Exception:  # NumPy's type resolution refuses the pair: the original raises it
            return None
        loop = loops[2]
        if loops[0] != loop or loops[1] != loop or not cores.beyond_single_call(loop, self.row.loops):
            return None
        if any(isinstance(d, np.dtype) and not np.can_cast(d, loop, "safe") for d in (first, second)):
            return None
        return loop

    def loop_of(self, dtype: np.dtype) -> str | None:
        loop = self.resolve(dtype, dtype)
        return None if loop is None else loop.name

    def run_path(self, path: str, x: np.ndarray) -> object:
        """One call through ``path`` on the scratch input ``x`` and its reverse (as bench's second operand)."""
        y = second_operand(x)
        if path == "numpy":
            return self.load()(x, y)
        if path == "cuda":
            raise ValueError(f"{self.name}: no loop is verified on CUDA")
        loop = self.resolve(x.dtype, y.dtype)
        if path == "cores":
            result = None if loop is None else self.on_cores(x, y, loop)
        elif loop is not None and dtype_name(loop) not in self.row.loops:
            raise ValueError(f"{self.name} has no torch loop for {loop}")
        else:
            result = None if loop is None else self.try_torch(x, y, loop, Route(path, "cpu", "forced"))
        if result is None:
            raise ValueError("the torch path declined the calibration input")
        return result

    def prepare(self, x1: Any, x2: Any, settings: RuntimeSettings, dry_run: bool = False,
                decided: Route | None = None) -> tuple[np.dtype, Route] | str:
        """The loop and route of a plain call, or why the original serves it.  ``decided``: its route as the ledger
        holds it, already counted (:mod:`._decision.ledger`), else the ledger is asked here."""
        kinds = [_kind(x) for x in (x1, x2)]
        # (not `None in kinds`: np.dtype("float64") == None is True, None meaning the default dtype)
        if any(kind is None for kind in kinds) or (type(x1) is not np.ndarray and type(x2) is not np.ndarray):
            return "not exact ndarrays or Python scalars: the original"
        loop = self.resolve(*kinds)
        if loop is None:
            return "no loop of the original that torch or its own loop on every core serves for these dtypes"
        try:
            n = _size(np.broadcast_shapes(np.shape(x1), np.shape(x2)))
        except ValueError:
            return "the shapes do not broadcast: the original raises"
        if not dry_run and not self.admits(loop, n, settings):
            return "below the size floor"
        if settings.device == "numpy":
            return "device='numpy'"
        checks = error_checks()
        name = dtype_name(loop)
        route = decided if decided is not None or dry_run else self.ledger.route((loop, n), settings)
        if route is None:
            begun = 0 if dry_run else ledger.begin()
            route = self.route(name, n, settings, name in self.row.cuda_loops, dry_run,
                               exact_only=name not in self.row.loops)
            if not dry_run and (route is None or route.path == "cores"):
                # decided from the settings, the profile, the loop and the size alone (counted: PROCESS.counted)
                self.ledger.learn((loop, n), settings, begun, route)
        if route is None or route.device != "cpu":
            if not dry_run:
                return "the original"  # why is spelled out for which() only
            return original_reason(self.name, name, n, settings.device, settings.min_size)
        # (After the route: the rental counts the call wherever the profile sends it, so that a call the ledger counts
        # is the original's whatever either error state asks: ._decision.ledger.)
        if self.scipy and scipy_reports():
            return "scipy.special.errstate reports: SciPy"
        if checks is not None and checks.under:
            return "np.errstate(under=...) reports underflow: the original"
        if (route.path == "cores" and not dry_run and blocks.single_call_serves(n, route.threads, route.after_sleep)
                and not may_warn_in_a_cast(2, (x1, x2), {})):  # (else its warnings could not name the caller's line)
            return "the original's single call, the same loop without the blocks' cost: other processes hold the cores, or its workers slept"
        return loop, route

    def try_torch(self, x1: Operand, x2: Operand, loop: np.dtype, route: Route) -> np.ndarray | np.generic | None:
        """The original's result computed with torch on ``route`` (None where only the original can give it)."""
        a1, a2 = _in_loop(x1, loop), _in_loop(x2, loop)
        if a1 is None or a2 is None or not load_torch():
            return None
        result = _allocate(x1, x2, a1, a2, loop)
        if not can_view(result) or not begin_torch_work():  # (not once the interpreter is closing: _backend)
            return None
        try:
            mask = self.on_torch(a1, a2, result, loop, route)
        finally:
            end_torch_work()
        if mask is not None:
            # The original's values, warnings and errors for the elements torch could not be trusted with.
            shape = result.shape
            result[mask] = numpy_call(self.load(), self.name, np.broadcast_to(a1, shape)[mask], np.broadcast_to(a2, shape)[mask])
        TAKEN.device = "cpu"  # which path this call took, for np2torch run's sites
        return result[()] if result.ndim == 0 else result

    def on_torch(self, a1: np.ndarray, a2: np.ndarray, result: np.ndarray, loop: np.dtype, route: Route) -> np.ndarray | None:
        """``result[...] = op(a1, a2)`` on torch; the mask of the elements it left non-finite (None: none)."""
        import torch

        compute = getattr(torch, self.row.loops[dtype_name(loop)])
        op = torch_cpu.torch_op(self.row.torch_op)
        t1, t2, out = _tensor(a1), _tensor(a2), torch.from_numpy(result)
        _blocked(op, compute, t1, t2, out, route.threads)
        return _non_finite(result)

    def on_cores(self, x1: Operand, x2: Operand, loop: np.dtype) -> np.ndarray | np.generic | None:
        """The original's result computed by its own loop on every core (:mod:`._paths.cores`); None where operands laid
        out unlike the result (or a reporting error state before NumPy 2) leave it to the original's single call."""
        checks = error_checks()
        if checks is not None and not records_flags():
            return None
        a1, a2 = (x if type(x) is np.ndarray else _in_loop(x, loop) for x in (x1, x2))
        if a1 is None or a2 is None:
            return None
        result = _allocate(x1, x2, a1, a2, loop)
        if not all(type(x) is not np.ndarray or x.ndim == 0 or cores.lays_out_alike(x, result) for x in (x1, x2)):
            return None
        cores.compute(self.load(), self.name, x1, result, checks, second=x2)
        TAKEN.device = "cores"  # which path this call took, for np2torch run's sites
        return result[()] if result.ndim == 0 else result

    def which(self, *args: object, **kwargs: object) -> tuple[str, str]:
        if len(args) != 2 or kwargs:
            return "numpy", f"{self.name}: not a plain call with two operands: the original"
        scoped = SCOPED.get()
        settings = PROCESS.settings if scoped is None else scoped
        prepared = self.prepare(args[0], args[1], settings, dry_run=True)
        if isinstance(prepared, str):
            return "numpy", f"{self.name}: {prepared}"
        loop, route = prepared
        if route.path in ("numpy", "cores"):  # (the original's single call: while the rental waits for torch)
            return route.path, f"{self.name} of {loop}: {route.why}"
        return "cpu", f"{self.name} of {loop}: {route.why} (non-finite results are recomputed by the original)"


def make_helper(row: Function) -> Binary:
    """The two-argument helper of ``row``."""
    return Binary(row)


def second_operand(x: np.ndarray) -> np.ndarray:
    """The second input bench and tune give a two-argument function: ``x`` reversed, in the same domain."""
    return np.ascontiguousarray(x[::-1])


def _make_function(helper: Binary) -> Callable[..., object]:
    ndarray = np.ndarray
    loops = helper.loops
    floors = helper.floors
    process = PROCESS
    get_scoped = SCOPED.get
    get_extobj = extobj_getter()
    set_extobj, reset_extobj = EXTOBJ_VAR.set, EXTOBJ_VAR.reset
    redirects = process.redirects.setdefault(helper.name, {None: None})  # NumPy error state -> how to call the original
    miss = REDIRECT_MISS
    count, route_of = helper.ledger.count, helper.ledger.route
    single_call_serves = blocks.single_call_serves

    def function(x1: Any = ABSENT, x2: Any = ABSENT, /, *args: Any, **kwargs: Any) -> Any:
        # The hot path: two arrays (or an array and a small Python scalar) whose loop and size floor are known,
        # below that floor: the original, its warnings at the caller's line, as numpy_call would give them
        # (exact non-object arrays and scalars no cast can overflow: the redirect's conditions hold).
        t1, t2 = type(x1), type(x2)
        decided = None  # a route the ledger holds, counted (._decision.ledger)
        if not args and not kwargs and (t1 is ndarray or t2 is ndarray):
            if t1 is ndarray:
                n1, k1 = x1.size, x1.dtype
            elif (t1 is float or t1 is int) and -HALF_MAX <= x1 <= HALF_MAX:
                n1, k1 = 1, t1
            else:
                n1 = -1
            if t2 is ndarray:
                n2, k2 = x2.size, x2.dtype
            elif (t2 is float or t2 is int) and -HALF_MAX <= x2 <= HALF_MAX:
                n2, k2 = 1, t2
            else:
                n2 = -1
            if n1 >= 0 and n2 >= 0:
                loop: Any = loops.get((k1, k2), miss)
                if loop is None:  # resolved before: no loop torch serves (an object array's too)
                    original_only = not ((t1 is ndarray and k1.hasobject) or (t2 is ndarray and k2.hasobject))
                elif loop is miss:
                    original_only = False  # prepare() resolves it
                else:
                    settings = get_scoped() or process.settings
                    gate = settings.gate
                    if gate is None:
                        gate = floors.get(loop, -1)  # -1: not learned yet (prepare() learns it)
                    # At most n1 * n2 elements: that beside a scalar, n1 for equal shapes.  Past the floor, a call of a
                    # known size decided before to take the original takes it (counted: ._decision.ledger).
                    same = n1 == n2 and (t1 is not ndarray or t2 is not ndarray or x1.shape == x2.shape)
                    n = n1 if same else n1 * n2
                    original_only = n < gate
                    if not original_only and gate >= 0 and (same or n1 == 1 or n2 == 1):
                        original_only = count((loop, n), settings)
                        if not original_only:  # one the ledger sends to the cores, which the load may leave one
                            decided = route_of((loop, n), settings)
                            original_only = decided is not None and single_call_serves(n, decided.threads, decided.after_sleep)
                original = helper.loaded
                if original_only and original is not None:
                    redirect = redirects.get(get_extobj(), miss)
                    if redirect is None:
                        return original(x1, x2)
                    if redirect is not miss and helper.names_its_warnings():
                        token = set_extobj(redirect)
                        try:
                            return original(x1, x2)
                        finally:
                            reset_extobj(token)
                if original_only:  # a state not seen yet (numpy_call learns it), or the original not found yet
                    return numpy_call(helper.original, helper.name, x1, x2)
        return _decided(helper, x1, x2, args, kwargs, decided)

    function.__name__ = function.__qualname__ = helper.name
    function.__module__ = PUBLIC_MODULE
    function.__signature__ = ufunc_signature(2)  # type: ignore[attr-defined]
    function.__doc__ = f"``{helper.row.qualname}(x1, x2, ...)``: same result, computed with torch where exact and faster."
    return function


def _decided(helper: Binary, x1: Any, x2: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
             decided: Route | None) -> Any:
    """A call past the hot path: decided (``decided``: its route from the ledger, counted) and computed, or the
    original's."""
    if x2 is ABSENT:
        return helper.original(*(() if x1 is ABSENT else (x1,)), **kwargs)
    if not args and not kwargs and not sys.is_finalizing():  # at exit only the original runs (Helper.admits)
        scoped = SCOPED.get()
        settings = PROCESS.settings if scoped is None else scoped
        prepared = helper.prepare(x1, x2, settings, decided=decided)
        if not isinstance(prepared, str):
            loop, route = prepared
            if route.path == "cores":
                result = helper.on_cores(x1, x2, loop)
            else:
                result = helper.try_torch(x1, x2, loop, route)
            if result is not None:
                return result
    return numpy_call(helper.original, helper.name, x1, x2, *args, **kwargs)


def _allocate(x1: Operand, x2: Operand, a1: np.ndarray, a2: np.ndarray, loop: np.dtype) -> np.ndarray:
    """The result array the ufunc allocates for the operands ``x1``, ``x2`` (``a1``, ``a2``: them in the loop's dtype).

    NumPy's trivial loop first (numpy/_core/src/umath/ufunc_object.c,
    ``try_trivial_single_output_loop``): operands of the loop's dtype and the
    result's shape (0-d ones aside), all C- or all F-contiguous, give a plain C-
    or F-ordered result (C when all are both); else the iterator's
    allocation (``order='K'``: broadcasting and length-1 axes) for the operands
    as given, casting them as the ufunc's buffered iterator does: a cast copy
    has a layout of its own (``astype`` of a broadcast view is dense), which
    the ufunc never sees.
    """
    shape = np.broadcast_shapes(a1.shape, a2.shape)
    shaped = [x for x in (x1, x2) if type(x) is np.ndarray and x.ndim]
    if all(a.shape == shape and a.dtype == loop and a.flags.aligned for a in shaped):
        if all(a.flags.c_contiguous for a in shaped):
            return np.empty(shape, loop, order="C")
        if all(a.flags.f_contiguous for a in shaped):
            return np.empty(shape, loop, order="F")
    operands = [x if type(x) is np.ndarray else a for x, a in ((x1, a1), (x2, a2))]
    allocated: np.ndarray = np.nditer(
        [*operands, None],
        flags=["refs_ok", "zerosize_ok", "buffered", "delay_bufalloc", "external_loop", "growinner"],
        op_flags=[["readonly"], ["readonly"], ["writeonly", "allocate", "no_broadcast"]],
        op_dtypes=[loop, loop, loop],
        order="K",
        casting="unsafe",
    ).operands[2]
    return allocated


def _blocked(op: Callable[..., torch.Tensor], compute: torch.dtype, t1: torch.Tensor, t2: torch.Tensor, out: torch.Tensor,
             threads: int) -> None:
    """``out = op(t1, t2)`` in ``compute``, in aligned blocks, each on one torch thread (:func:`._paths.blocks.elementwise`):
    the same bits on any thread count.  Operands laid out as the dense result (or 0-d) are cut into blocks of the
    flat result; any other layout is computed whole, on one thread."""

    def whole(a: torch.Tensor, b: torch.Tensor, dst: torch.Tensor) -> None:
        if compute == dst.dtype:
            op(a, b, out=dst)
        else:
            dst.copy_(op(a.to(compute), b.to(compute)))

    flat_out = _flat_view(out) if out.dim() else None
    if flat_out is None or not all(t.dim() == 0 or (t.shape == out.shape and t.stride() == out.stride()) for t in (t1, t2)):
        blocks.run([functools.partial(whole, t1, t2, out)], 1, (op, compute))
        return
    def flat(t: torch.Tensor) -> torch.Tensor:
        found = t if t.dim() == 0 else _flat_view(t)  # laid out as the dense result: never None
        assert found is not None
        return found

    def part(v: torch.Tensor, a: int, b: int) -> torch.Tensor:
        return v if v.dim() == 0 else v[a:b]

    f1, f2 = flat(t1), flat(t2)

    blocks.elementwise(flat_out.numel(), lambda a, b: whole(part(f1, a, b), part(f2, a, b), flat_out[a:b]), threads,
                      (op, compute))


_CHECK_BLOCK = 1 << 18
"""Elements checked for finiteness at a time: the check's temporary is a block's (torch's ``isfinite`` of a whole
float64 result took 1.4x the result's memory)."""


def _non_finite(result: np.ndarray) -> np.ndarray | None:
    """The mask of ``result``'s non-finite elements (in NumPy's memory: no tensor outlives the call's torch work), or
    None when every element is finite (checked a block at a time where the result is dense)."""
    flat = result.ravel(order="K") if result.flags.c_contiguous or result.flags.f_contiguous else None
    if flat is not None:
        if all(np.isfinite(flat[a : a + _CHECK_BLOCK]).all() for a in range(0, flat.size, _CHECK_BLOCK)):
            return None
    mask: np.ndarray = ~np.isfinite(result)
    return mask if mask.any() else None


def _flat_view(t: torch.Tensor) -> torch.Tensor | None:
    """A 1-D view of a dense ``t`` in its memory order (C or F order), else None."""
    if t.is_contiguous():
        return t.view(-1)
    reversed_t = t.permute(*range(t.dim() - 1, -1, -1))
    return reversed_t.view(-1) if reversed_t.is_contiguous() else None


def _kind(x: Any) -> Any:
    """What NumPy's type resolution takes for ``x``: its dtype, or the Python type of a weak scalar; None: the original."""
    t = type(x)
    if t is np.ndarray:
        return x.dtype if x.dtype.isnative else None
    return t if t is float or t is int else None


def _size(shape: tuple[int, ...]) -> int:
    return reduce(operator.mul, shape, 1)


def _elements(x1: Any, x2: Any) -> int:
    """The call's element count (0 when no decision was made on it: an operand the torch path never takes, whose
    ``np.shape`` could run its code -- a duck array's ``__array_function__`` -- or shapes that do not broadcast)."""
    if _kind(x1) is None or _kind(x2) is None:
        return 0
    try:
        return _size(np.broadcast_shapes(np.shape(x1), np.shape(x2)))
    except ValueError:
        return 0


def _in_loop(x: Operand, loop: np.dtype) -> np.ndarray | None:
    """``x`` in the loop's dtype: NumPy's cast of an array; a scalar as NumPy converts it (None if that overflows)."""
    if type(x) is np.ndarray:
        return x if x.dtype == loop else x.astype(loop)
    if type(x) is int and abs(x) > 2**53:
        return None
    with np.errstate(over="ignore"):
        value = np.array(x, dtype=loop)
    return value if np.isfinite(value) or not np.isfinite(x) else None


def _tensor(a: np.ndarray) -> torch.Tensor:
    import torch

    # A copy, not np.ascontiguousarray: an array already C-contiguous (a length-1 axis
    # with a negative stride) comes back from it unchanged, and torch rejects it.
    return torch.from_numpy(a if can_view(a) else a.copy(order="C"))
