"""The C front (src/np2torch/runtime/_front.c) passes a call to the original only where the helper's Python
function would give it the original, and then exactly as a call of the original at the caller's line.

For every elementwise and two-argument helper, on scalars of every kind, arrays of many dtypes and layouts,
object arrays, keywords and calls that raise, under six error states, with the profile's floors and with
fixed gates: the front's outcome (value, type, dtype, strides, exception, each warning's file and line)
is the original's; the calls it passes are ones the Python function never offers torch; the calls it keeps
are the Python function's to decide.  Then what makes it a drop-in function: its name, signature, pickling,
no method binding (a ufunc has none), no reference leaked per call, the original imported late, and the
runtime without the front (not built).
"""

from __future__ import annotations

import copy
import functools
import gc
import inspect
import pickle
import shutil
import subprocess
import sys
import textwrap
import warnings
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import np2torch.runtime as np2t
from np2torch.runtime import _api, _binary, _helper, _ufunc
from np2torch.runtime._exact.errstate import redirect_for
from np2torch.runtime.table import BINARY, ELEMENTWISE

FRONTED = sorted(name for name, helper in _api.HELPERS.items() if helper.row.kind in (ELEMENTWISE, BINARY))
built = pytest.mark.skipif(_helper.FRONT is None, reason="the C front is not built in this install")


def test_the_front_is_built_where_a_compiler_is():
    # A development install (README's test command) builds it; without a compiler the helpers are their Python
    # functions (test_the_runtime_without_the_front).
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here")
    assert _helper.FRONT is not None
    assert [name for name in FRONTED if type(getattr(np2t, name)).__name__ != "Front"] == []


class _Runs:
    """Counts the runs of the helper's Python function (a profile hook: the call itself is left untouched, so
    that its warnings name the lines they would name without the count)."""

    def __init__(self, helper: Any) -> None:
        self.code = helper.front.python.__code__
        self.count = 0

    def _profile(self, frame: Any, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is self.code:
            self.count += 1

    def __enter__(self) -> _Runs:
        self.previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(self.previous)


def _call_here(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return function(*args, **kwargs)  # the line the original's warnings name, and the front's


def _outcome(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What a call did: its value (or exception), with each warning's category, message, file and line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = _call_here(function, args, kwargs)
        except Exception as exc:
            value = (type(exc), str(exc))
    return value, [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def _assert_same(got: Any, want: Any) -> None:
    assert got[1] == want[1]
    if isinstance(want[0], tuple):
        assert got[0] == want[0]
        return
    assert type(got[0]) is type(want[0])
    got_array, want_array = np.asarray(got[0]), np.asarray(want[0])
    assert got_array.dtype == want_array.dtype
    if got_array.dtype != object:
        assert got_array.tobytes() == want_array.tobytes()
    else:
        assert [repr(v) for v in got_array.flat] == [repr(v) for v in want_array.flat]
    if isinstance(want[0], np.ndarray):
        assert got[0].strides == want[0].strides


class _ReadsTheErrorState:
    """An object whose methods NumPy runs: it sees the caller's own error state, as without np2torch."""

    def _state(self, *other: object) -> str:
        return "/".join(f"{kind}={mode}" for kind, mode in sorted(np.geterr().items()))


for _name in FRONTED:  # the method NumPy's object loop calls for each ufunc
    setattr(_ReadsTheErrorState, _name, _ReadsTheErrorState._state)


SPECIAL = [0.0, -0.0, 0.5, -3.0, 1e-310, 700.0, 1e300, -np.inf, np.inf, np.nan]


def _values(dtype: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.array(SPECIAL).astype(dtype)


def _calls(name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Calls of every shape the front tells apart: scalars, exact arrays, subclasses, keywords, errors."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.asmatrix
        return _make_calls(name)


def _make_calls(name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    a = _values("float64")
    scalars: list[Any] = [1.5, -2, True, 700.0, 1e300, float("nan"), np.float64(3.0), np.float32(-1.0), np.int8(5),
                          np.float16(2.0), 2 + 1j, np.complex64(1j), 10**400, None, "text"]
    arrays: list[Any] = [_values(dtype) for dtype in ("float64", "float32", "float16", "int64", "int8", "bool",
                                                       "complex128")]
    arrays += [a.reshape(2, 5).T, a[::-2], a.astype(a.dtype.newbyteorder()), a[:0], np.array(2.5), np.array(a, dtype=object),
               np.array([_ReadsTheErrorState()] * 3), np.ma.masked_array(a, a > 1), np.asmatrix(a[:4])]
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    if _api.HELPERS[name].row.kind == BINARY:
        for x in [*arrays, *scalars[:6]]:
            for y in (a, 0.5, 70000, 1e39, a[:3], a[:, None], _values("float32")):
                calls.append(((x, y), {}))
        calls += [((a, a), {"out": np.empty_like(a)}), ((a, a), {"dtype": "float32"}), ((a, a, np.empty_like(a)), {}),
                  ((a,), {}), ((), {}), ((a,), {"x2": a}), ((a, [1.0] * 10), {}), (([0.5] * 10, a), {})]
        return calls
    for x in [*scalars, *arrays, [0.5, 2.0], (1.0,)]:
        calls.append(((x,), {}))
    if _api.HELPERS[name].row.module == "numpy":
        # (SciPy 1.17's xsf loops corrupt the heap with a where= mask: scipy/scipy#25127, test_runtime_parity.py)
        calls.append(((a,), {"where": a > 0, "out": np.zeros(10)}))
    calls += [((a,), {"out": np.empty_like(a)}), ((a, np.empty_like(a)), {}), ((a,), {"dtype": "float32"}),
              ((a.astype("float32"),), {"out": np.empty(10, "float16")}),
              ((1.0,), {"out": np.empty(())}), ((), {"x": a}), ((), {}), ((a, a, a), {}), ((a,), {"bogus": 1})]
    return calls


_ERROR_STATES = [
    {}, {"all": "raise"}, {"all": "ignore"}, {"all": "warn"}, {"over": "warn", "invalid": "raise"}, {"all": "print"},
]


@built
@pytest.mark.parametrize("state", _ERROR_STATES, ids=str)
@pytest.mark.parametrize("min_size", [10**9, None], ids=["below an explicit floor", "default settings"])
@pytest.mark.parametrize("name", FRONTED)
def test_a_passed_call_is_the_originals_and_the_python_function_agrees(name, min_size, state, monkeypatch, capsys):
    helper = _api.HELPERS[name]
    front, python, original = helper.function, helper.front.python, helper.load()
    offered: list[Any] = []  # the calls the Python function offers torch

    def spy(real: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *args, **kwargs: offered.append(args) or real(*args, **kwargs)

    monkeypatch.setattr(_ufunc, "_try_torch", spy(_ufunc._try_torch))
    monkeypatch.setattr(_binary.Binary, "try_torch", spy(_binary.Binary.try_torch))
    with np2t.using(min_size=min_size):
        for args, kwargs in _calls(name):
            with np.errstate(**state):
                want = _outcome(original, args, kwargs)
                python_outcome = _outcome(python, args, kwargs)  # (learns the loop and the floor, as a first call)
                del offered[:]
                with _Runs(helper) as runs:
                    got = _outcome(front, args, kwargs)
                if not runs.count:
                    # Passed: the original's own call, warnings at this file's line (a cast's too), which the
                    # Python function gives the original too, never offering it torch.
                    _assert_same(got, want)
                    again = _outcome(python, args, kwargs)
                    if redirect_for(original, name, args, kwargs) is None:  # called plainly: the runtime's line
                        again, want = (again[0], [w[:2] for w in again[1]]), (want[0], [w[:2] for w in want[1]])
                    _assert_same(again, want)
                    assert offered == [], args
                else:
                    _assert_same(got, python_outcome)
                if min_size is not None and _served_by_the_front(helper.row.kind == BINARY, args, kwargs):
                    assert not runs.count, (args, kwargs)  # no Python function runs for these
    capsys.readouterr()  # the "print" state's messages


def _served_by_the_front(binary: bool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Calls a fixed gate above their size leaves to the front alone (from the second call on)."""
    if binary:
        if len(args) != 2 or kwargs:
            return True  # the original's, whatever the operands
        kinds = [type(v) for v in args]
        return kinds == [np.ndarray, np.ndarray] and args[0].dtype == args[1].dtype and args[0].dtype.isnative \
            and args[0].dtype.kind == "f"
    return not args or type(args[0]) in _ufunc.NUMPY_SCALARS or type(args[0]) is np.ndarray


@built
@pytest.mark.parametrize("name", ["exp", "log1p", "hypot", "logaddexp"])
def test_the_front_keeps_every_call_the_profile_may_send_to_torch(name):
    # Under a fixed gate of 8 elements, and with the profile's floors: nothing at or past the floor passes.
    helper = _api.HELPERS[name]
    binary = helper.row.kind == BINARY
    dtype = next(iter(helper.row.loops))  # a loop torch serves

    def passes(*args: Any) -> bool:
        with _Runs(helper) as runs, np.errstate(all="ignore"):  # (float16 and 1e5: a cast's overflow)
            helper.function(*args)
        return not runs.count

    with np2t.using(min_size=8):
        helper.function(*((np.ones(3, dtype), np.ones(3, dtype)) if binary else (np.ones(3, dtype),)))  # the loop resolved
        for n in (7, 8, 9, 100):
            x = np.linspace(0.1, 1.0, n, dtype=dtype)
            assert passes(*((x, x) if binary else (x,))) == (n < 8), n
        if binary:  # bounded by n1 * n2 (broadcasting), exactly n1 for equal shapes
            one = functools.partial(np.ones, dtype=dtype)
            for x1, x2, passed in [(one(2), one((3, 1)), True), (one(4), one((3, 1)), False), (one(7), 3.0, True),
                                   (one(3), one((3, 1)), False),  # equal sizes, not shapes: 9 elements
                                   (2.0, one(8), False), (one(3), 1e5, False)]:
                assert passes(x1, x2) == passed, (x1, x2)
    # The profile's floors: a dtype without one goes to the Python function (which learns it), then the floor
    # decides; the table is the helper's own, emptied when decisions are forgotten.
    floors = helper.floors
    x = np.linspace(0.1, 1.0, 50, dtype=dtype)
    args = (x, x) if binary else (x,)
    saved = dict(floors)
    try:
        floors.clear()
        if binary:
            helper.loops.clear()
        floors[x.dtype] = 10**9  # (a floor alone: a two-argument helper also needs its loop resolved)
        assert passes(*args) == (not binary)
        assert passes(*args)
        floors[x.dtype] = 50
        assert not passes(*args)
    finally:
        floors.clear()
        floors.update(saved)


@built
@settings(max_examples=60, deadline=None)
@given(
    x=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-10**30, 10**30),
        hnp.arrays(st.sampled_from([np.float64, np.float32, np.float16, np.int32, np.int8]),
                   hnp.array_shapes(min_dims=0, max_dims=3, max_side=5)),
    ),
    state=st.sampled_from(_ERROR_STATES[:5]),
    name=st.sampled_from(["exp", "log", "expm1", "sqrt", "tanh", "hypot", "arctan2", "logaddexp"]),
)
@example(x=1.2711610061536464e+308, state={}, name="hypot")  # Python floats alone: the overflow at the caller's line
def test_calls_below_the_floor_are_the_originals_bit_for_bit(x, state, name):
    # Property: under any explicit floor above the call, the helper is the original, warnings included.
    helper = _api.HELPERS[name]
    args = (x, x) if helper.row.kind == BINARY else (x,)
    with np2t.using(min_size=10**9), np.errstate(**state):
        _assert_same(_outcome(helper.function, args, {}), _outcome(helper.load(), args, {}))


@built
def test_numpys_own_warnings_name_the_callers_line():
    # Where the Python function's plain call names the runtime's line (docs/runtime.md, "Known gaps"): a warning
    # NumPy issues itself, not a floating-point flag.  Passed by the front, it is the caller's own call.
    a = np.linspace(-1.0, 1.0, 10)
    with np2t.using(min_size=10**9):
        got, want = _outcome(np2t.exp, (a,), {"where": a > 0}), _outcome(np.exp, (a,), {"where": a > 0})
    assert [w for w in got[1] if w[0] is UserWarning] == [w for w in want[1] if w[0] is UserWarning] != []
    assert want[1][0][2] == __file__


@built
@pytest.mark.parametrize("name", ["exp", "erf", "hypot", "xlogy"])
def test_the_front_is_a_drop_in_function(name):
    front = getattr(np2t, name)
    python = _api.HELPERS[name].front.python
    for attribute in ("__name__", "__qualname__", "__module__", "__doc__"):
        assert getattr(front, attribute) == getattr(python, attribute)
    assert front.__module__ == "np2torch.runtime" and front.__name__ == name
    assert inspect.signature(front) == inspect.signature(python)
    assert pickle.loads(pickle.dumps(front)) is front
    assert copy.copy(front) is front and copy.deepcopy(front) is front
    assert repr(front) == repr(python)

    class Holder:  # a ufunc is no descriptor: stored on a class, it is called without the instance
        function = front
        original = _api.HELPERS[name].load()

    args = (0.5, 0.25) if _api.HELPERS[name].row.kind == BINARY else (0.5,)
    assert Holder().function(*args) == Holder().original(*args)


@built
def test_no_reference_is_kept_per_call():
    # Every branch of the front, many times: no object it touches gains references (a leak in C grows them).
    a, small, big = np.linspace(0.1, 1.0, 10), 0.5, np.linspace(0.1, 1.0, 10**4)
    watched = [a, a.dtype, small, big, float, int, np.ndarray, _api.HELPERS["exp"].floors, _api.HELPERS["hypot"].loops]
    calls: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
        (np2t.exp, (a,), {}), (np2t.exp, (small,), {}), (np2t.exp, (big,), {}), (np2t.exp, (a,), {"out": a.copy()}),
        (np2t.hypot, (a, a), {}), (np2t.hypot, (a, small), {}), (np2t.hypot, (2, a), {}), (np2t.hypot, (big, big), {}),
        (np2t.hypot, (a, a[:, None]), {}), (np2t.log, (np.array(-1.0),), {}), (np2t.exp, ([1.0],), {}),
    ]
    for gate in (None, 10**9, 0):
        with np2t.using(min_size=gate):
            for function, args, kwargs in calls:
                def repeat(times: int) -> None:
                    with np.errstate(all="ignore"):
                        for _ in range(times):
                            function(*args, **kwargs)
                    with np.errstate(all="raise"):  # (an error raised through the front)
                        for _ in range(times):
                            try:
                                np2t.log(np.array(-1.0))
                            except FloatingPointError:
                                pass

                repeat(2)  # decisions learned once
                gc.collect()
                before = [sys.getrefcount(v) for v in watched]
                repeat(200)
                gc.collect()
                assert [sys.getrefcount(v) for v in watched] == before, (function, args, gate)


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@built
def test_an_original_imported_late_is_passed_to_once_imported():
    out = _run(
        """
        import sys, numpy as np
        import np2torch.runtime as np2t
        from np2torch.runtime import _api
        front = _api.HELPERS['erf'].front
        print(front.original is None, 'scipy.special' in sys.modules)
        print(np2t.erf(0.5) == __import__('scipy.special').special.erf(0.5))
        import scipy.special
        print(front.original is scipy.special.erf)
        """
    )
    assert out.split() == ["True", "False", "True", "True"]


def test_the_runtime_without_the_front():
    # Where the extension is not built, each helper is its Python function, with the same results and warnings,
    # and a drop-in as the front is: no method binding (a ufunc has none), its name, signature and pickling.
    out = _run(
        """
        import copy, inspect, pickle, sys, warnings, numpy as np
        sys.modules['np2torch.runtime._front'] = None  # an import of it fails, as where it was never built
        import np2torch.runtime as np2t
        from np2torch.runtime import _helper
        print(_helper.FRONT is None, type(np2t.exp).__name__, type(np2t.hypot).__name__)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            got = np2t.exp(np.array([1000.0, 1.0]))
        print(got.tobytes() == np.exp(np.array([1000.0, 1.0])).tobytes(), [w.lineno for w in caught])
        print(np2t.hypot(3.0, 4.0), np2t.exp(0.0))
        class B:
            pass
        B.f, B.g = np2t.exp, np2t.hypot
        print(B().f(0.0), B().g(3.0, 4.0), B().f is np2t.exp)
        python = np2t.exp.__wrapped__
        print(all(getattr(np2t.exp, a) == getattr(python, a) for a in ("__name__", "__qualname__", "__module__", "__doc__")),
              inspect.signature(np2t.exp) == inspect.signature(np.exp), repr(np2t.exp) == repr(python))
        print(pickle.loads(pickle.dumps(np2t.hypot)) is np2t.hypot, copy.deepcopy(np2t.exp) is np2t.exp)
        """
    )
    assert out.split() == ["True", "Unbound", "Unbound", "True", "[9]", "5.0", "1.0", "1.0", "5.0", "True", "True",
                           "True", "True", "True", "True"]
