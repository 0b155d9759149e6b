"""NumPy's floating-point error reporting (``np.errstate``/``np.seterr``), at the user's line.

Two problems, one mechanism.

*Where warnings point.*  A ufunc's ``RuntimeWarning`` is attributed to the
innermost Python frame.  When NumPy is called from inside the runtime (every
fallback call, every re-run on suspicious elements) that frame is ours, so the
warning would point into np2torch, and Python's default filter, which shows a
warning once per location, would hide every call site but the first.

*What torch does not report.*  torch raises no floating-point flags, so after a
torch op the runtime re-runs the original on just the suspicious elements and
lets NumPy decide what to report.

Both go through :func:`numpy_call`: it runs the original with every ``warn``
mode switched to NumPy's ``call`` mode and a handler that issues the same
``RuntimeWarning("<flag> encountered in <name>")`` with ``stacklevel`` pointing
at the first frame outside the runtime, exactly where NumPy's own warning would
point.  Everything else (``raise``, ``ignore``, ``print``, the order of the
flags, a warning filter that turns the warning into an error) is NumPy's own
handling.  The switched error state is a context variable (NumPy 2), so threads
and tasks do not see each other's; ``warnings.catch_warnings`` (process-global,
not thread-safe) is never used.

This needs NumPy 2's ``numpy._core.umath._extobj_contextvar``/``_make_extobj``:
NumPy has no public API to attribute a ufunc warning to a caller's frame.  On
NumPy 1.x, or when the state mixes ``warn`` with ``call``/``log`` (which would
need the single callback slot twice), the original is called plainly and its
warnings point at the runtime's line (a documented gap).  So is a call whose
warning the handler would misname, since NumPy tells it the flag and not what
raised it: one that may report a cast's flag ("overflow encountered in cast":
:func:`may_warn_in_a_cast`) and a Python-level original running several ufuncs
(:func:`names_its_warnings`).

The switched state is in force only while NumPy itself runs: an input that
makes NumPy run the caller's Python code (a duck array's ``__array_ufunc__``,
a subclass's ``__array_wrap__``/``__array_finalize__``, an object array's
methods, ``__array__``) is handed to the original under the caller's own error
state (:func:`runs_only_numpy`), so that code reads ``np.geterr()`` and
``np.geterrcall()`` as without np2torch, and its own warnings name its own
ufuncs.  The original's warnings then point at the runtime's line, as on
NumPy 1.x.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from contextvars import ContextVar
from types import FrameType
from typing import Any, Callable, Dict, Mapping, NamedTuple

import numpy as np

from .._state import PROCESS

# Any: NumPy's stubs type these private names (Final, a TypedDict keyed by literals), the fallback is None.
_NP_EXTOBJ_VAR: Any
_np_get_extobj_dict: Any
_np_make_extobj: Any
try:  # NumPy >= 2.0: the error state is a context variable holding an "extobj"
    from numpy._core.umath import _extobj_contextvar as _NP_EXTOBJ_VAR
    from numpy._core.umath import _get_extobj_dict as _np_get_extobj_dict
    from numpy._core.umath import _make_extobj as _np_make_extobj
except ImportError:  # pragma: no cover - NumPy 1.x
    _NP_EXTOBJ_VAR = None
    _np_get_extobj_dict = None
    _np_make_extobj = None

ERR_KINDS: tuple[str, ...] = ("divide", "over", "under", "invalid")

RUNTIME_FOLDER = os.path.dirname(os.path.dirname(__file__)) + os.sep
"""Frames of files in the runtime's folder are skipped when attributing a warning to the user's line."""


NUMPY_SCALARS = frozenset(
    {float, int, complex, bool, str, type(None)} | {t for t in np.sctypeDict.values() if t is not np.object_}
)
"""Types whose values NumPy converts without running any Python code of the caller's (``None``: a default)."""


def runs_only_numpy(value: object) -> bool:
    """Whether handing ``value`` to a ufunc runs no Python code but NumPy's (see the module's docstring).

    True for exactly ``np.ndarray`` without objects, the built-in and NumPy
    scalar types, dtypes and lists or tuples of those; False for anything
    else (subclasses, duck arrays, object arrays, a float subclass, ...).
    """
    if type(value) is np.ndarray:
        return not value.dtype.hasobject
    kind = type(value)
    if kind in NUMPY_SCALARS:
        return True
    if isinstance(value, (list, tuple)) and (kind is list or kind is tuple):
        try:
            return all(map(runs_only_numpy, value))
        except RecursionError:  # nested deeper than NumPy allows: NumPy's own error, under the caller's state
            return False
    return isinstance(value, np.dtype) or (kind is type and value in NUMPY_SCALARS)


def quiet(modes: Mapping[str, object]) -> bool:
    """Whether no flag can be reported: then the runtime checks nothing."""
    return all(mode == "ignore" for mode in modes.values())


class ErrorChecks(NamedTuple):
    """What a torch result must be checked for under the current error state."""

    under: bool
    """``under`` is not ignored: tiny results (and tiny inputs) are suspicious."""
    others: bool
    """``divide``/``over``/``invalid`` are not ignored: non-finite results are suspicious."""


def error_checks() -> ErrorChecks | None:
    """The checks the current ``np.errstate`` needs; None when every mode is ``ignore``.

    Cached per NumPy error-state object (``np.geterr()`` alone costs ~0.7 us).
    """
    key = _NP_EXTOBJ_VAR.get() if _NP_EXTOBJ_VAR is not None else None
    cache: Dict[Any, ErrorChecks | None] = PROCESS.error_checks
    if key is not None:
        try:
            return cache[key]
        except KeyError:
            pass
    modes = np.geterr()
    checks = None
    if not quiet(modes):
        checks = ErrorChecks(modes["under"] != "ignore", any(modes[k] != "ignore" for k in ("divide", "over", "invalid")))
    if key is not None:
        if len(cache) >= _REDIRECT_CACHE_LIMIT:
            cache.clear()
        cache[key] = checks
    return checks


def user_stacklevel() -> int:
    """``stacklevel`` for ``warnings.warn`` called from a runtime function: the first frame outside the runtime."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(RUNTIME_FOLDER):
        frame = frame.f_back
        level += 1
    return level


class _WarnAtCaller:
    """NumPy ``call``-mode handler issuing NumPy's warning at the caller's line."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, errtext: str, status: int) -> None:
        # NumPy's text: "<divide by zero|overflow|underflow|invalid value> encountered in <ufunc>"
        warnings.warn(f"{errtext} encountered in {self.name}", RuntimeWarning, stacklevel=user_stacklevel())


class Flags:
    """NumPy ``call``-mode handler recording the flags a ufunc call raised (``status``: NumPy's bits, 1 divide,
    2 over, 4 under, 8 invalid), reporting nothing."""

    __slots__ = ("status",)

    def __init__(self) -> None:
        self.status = 0

    def __call__(self, errtext: str, status: int) -> None:
        self.status |= status


def recording_state(bufsize: int) -> tuple[object, Flags]:
    """A NumPy error state (for :data:`EXTOBJ_VAR`) in which a ufunc call reports nothing and records the flags it
    raised in the returned :class:`Flags`; ``bufsize`` as the caller's (NumPy >= 2 only)."""
    flags = Flags()
    return _np_make_extobj(all="call", call=flags, bufsize=bufsize), flags


def records_flags() -> bool:
    """Whether :func:`recording_state` works here (NumPy >= 2: the error state is a context variable)."""
    return _NP_EXTOBJ_VAR is not None


REDIRECT_MISS = object()
_REDIRECT_CACHE_LIMIT = 64


def _build_redirect(name: str) -> object:
    state = _np_get_extobj_dict()
    modes = {kind: state[kind] for kind in ERR_KINDS}
    warned = [kind for kind, mode in modes.items() if mode == "warn"]
    if not warned or any(mode in ("call", "log") for mode in modes.values()):
        return None
    return _np_make_extobj(call=_WarnAtCaller(name), **{kind: "call" for kind in warned})


def warn_redirect(name: str) -> object:
    """The error state to call ``name``'s original in so that its warnings point at the user's line.

    None when the original can be called plainly (no ``warn`` mode, or NumPy
    1.x).  Cached per extobj object, which NumPy keeps while a state is in
    force (the helper's cache, :attr:`.._state.Process.redirects`, which its
    hot path reads too).
    """
    if _NP_EXTOBJ_VAR is None:
        return None
    cache = PROCESS.redirects.setdefault(name, {None: None})
    current = _NP_EXTOBJ_VAR.get()
    redirect = cache.get(current, REDIRECT_MISS)
    if redirect is REDIRECT_MISS:
        redirect = _build_redirect(name)
        if len(cache) >= _REDIRECT_CACHE_LIMIT:
            cache.clear()  # states made by errstate blocks in a loop are never seen again
        cache[current] = redirect
        unwarned = PROCESS.underflow_unwarned
        if redirect is not None and _np_get_extobj_dict()["under"] != "warn":
            if len(unwarned) >= _REDIRECT_CACHE_LIMIT:
                unwarned.clear()
            unwarned.add(current)
    return redirect


EXTOBJ_VAR: ContextVar[object] = _NP_EXTOBJ_VAR if _NP_EXTOBJ_VAR is not None else ContextVar("np2torch_no_extobj")
"""NumPy's error-state context variable, for hot paths that switch it inline as call_redirected() does
(before NumPy 2 a variable of our own that nothing reads: no redirect is ever built there)."""


def extobj_getter() -> Callable[[], object]:
    """A fast callable returning NumPy's current error-state object (None on NumPy 1.x)."""
    return _NP_EXTOBJ_VAR.get if _NP_EXTOBJ_VAR is not None else _no_extobj


def _no_extobj() -> object:
    return None


def call_redirected(redirect: object, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``original(*args, **kwargs)`` with ``redirect`` as NumPy's error state."""
    token = _NP_EXTOBJ_VAR.set(redirect)
    try:
        return original(*args, **kwargs)
    finally:
        _NP_EXTOBJ_VAR.reset(token)


def numpy_call(original: Callable[..., Any], name: str, *args: Any, **kwargs: Any) -> Any:
    """``original(*args, **kwargs)`` reporting floating-point errors as NumPy would at the user's line."""
    redirect = redirect_for(original, name, args, kwargs)
    if redirect is None:
        return original(*args, **kwargs)
    return call_redirected(redirect, original, args, kwargs)


def redirect_for(original: Callable[..., Any], name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> object:
    """The error state :func:`numpy_call` runs ``original(*args, **kwargs)`` in (None: it calls it plainly);
    ``np2torch run`` sets it up before its clock starts, so that a sampled call is timed as the program pays it."""
    redirect = warn_redirect(name)
    if (
        redirect is None
        or not (runs_only_numpy(args) and runs_only_numpy(tuple(kwargs.values())))
        or not names_its_warnings(original, name)
        or may_warn_in_a_cast(getattr(original, "nin", len(args)), args, kwargs)
    ):
        return None
    return redirect


def names_its_warnings(original: Callable[..., Any], name: str) -> bool:
    """Whether every warning NumPy issues in ``original`` says "... encountered in <name>".

    The redirect's handler is told the flag, never the ufunc that raised it, so
    it names ``name``: right for the ufunc itself (and the runtime's own stand-in
    for one not imported yet), wrong for a Python function running several
    (SciPy's ``logsumexp`` warns "overflow encountered in subtract").  Such a
    function is called plainly: its warnings then point at its own line, as
    the original's do.  The runtime's own callables keep the redirect, so that
    their warnings point at the user's line (``np2torch run``'s spelled-out
    patterns, :func:`.sites._spelled`, call each of their ufuncs and operators
    through :func:`numpy_call` under its own name).
    """
    if type(original) is np.ufunc:
        return bool(original.__name__ == name)
    function = getattr(original, "__func__", original)
    code = getattr(function, "__code__", None)
    return code is None or code.co_filename.startswith(RUNTIME_FOLDER)


HALF_MAX = 65504.0
"""The largest finite float16: a Python scalar beyond it may overflow a float16 (or float32) loop's cast."""


_PYTHON_SCALARS = (float, int, complex)


def may_warn_in_a_cast(nin: int, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Whether NumPy may report an error of a cast in this ufunc call ("overflow encountered in cast").

    The redirect's handler cannot tell a cast's flag from the loop's and would
    name the ufunc, so such a call is not redirected.  A cast can overflow
    where the call asks for a loop (``dtype=``, ``signature=``), where an
    ``out=`` has a dtype of its own (a float64 result into float32), and where a
    Python scalar (NumPy 2's weak scalar) is converted into a narrower float
    loop (``hypot(float16_array, 70000)``); a one-operand ufunc computes a Python scalar in its default loop
    (float64, complex128), which no cast narrows, and so does a ufunc of Python scalars alone (``hypot(1e308,
    1e308)``, whose overflow then warned at the runtime's line).  Without those, every cast is safe.
    """
    if "dtype" in kwargs or "signature" in kwargs:
        return True
    inputs = args[:nin]
    scalars = [value for value in inputs if type(value) in _PYTHON_SCALARS]
    if len(scalars) < len(inputs):  # (Python scalars alone run the default loop: no cast narrows them)
        for value in scalars:
            if HALF_MAX < abs(value) < math.inf:
                return True
    outs = args[nin:] or kwargs.get("out")
    if outs is None:
        return False
    dtypes = {value.dtype if type(value) is np.ndarray else None for value in inputs}
    for out in outs if type(outs) is tuple else (outs,):
        if out is not None and (type(out) is not np.ndarray or dtypes != {out.dtype}):
            return True
    return False


def scipy_reports() -> bool:
    """Whether ``scipy.special.errstate``/``seterr`` asks for any report (default: only ``memory``).

    SciPy's special functions report domain, singularity and overflow errors
    through their own error state, not NumPy's; torch cannot reproduce it, so
    such calls go to SciPy (the elementwise and two-argument helpers ask it).
    """
    special = sys.modules.get("scipy.special")
    if special is None:  # not imported yet: nothing asked of it
        return False
    return any(mode != "ignore" for kind, mode in special.geterr().items() if kind != "memory")
