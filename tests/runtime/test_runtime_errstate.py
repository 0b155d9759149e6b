"""np.errstate / np.seterr: the same warnings (at the caller's line), exceptions and callbacks as NumPy."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, List

import numpy as np
import pytest
import scipy.special
from runtime_checks import assert_same_values

import np2torch.runtime as np2t
from np2torch.runtime import _helper, _ufunc
from np2torch.runtime._paths import torch_cpu
from np2torch.runtime.table import ELEMENTWISE_FUNCTIONS

PAIRS = {"exp": (np2t.exp, np.exp), "log": (np2t.log, np.log), "erf": (np2t.erf, scipy.special.erf)}


def _with_filler(values: List[float], dtype: str = "d") -> np.ndarray:
    filler = np.linspace(0.5, 1.5, 40)
    return np.concatenate([filler[:20], np.array(values), filler[20:]]).astype(dtype)


CASES = {
    "exp overflow": ("exp", _with_filler([1000.0])),
    "exp underflow": ("exp", _with_filler([-1000.0])),
    "exp subnormal result": ("exp", _with_filler([-740.0])),
    "exp float32 subnormal input": ("exp", _with_filler([1e-45], "f")),
    "exp float16 overflow": ("exp", _with_filler([12.0], "e")),
    "exp nan and inf (silent)": ("exp", _with_filler([np.nan, np.inf, -np.inf])),
    "log divide": ("log", _with_filler([0.0])),
    "log minus zero": ("log", _with_filler([-0.0])),
    "log invalid": ("log", _with_filler([-1.0])),
    "log every flag": ("log", _with_filler([-1.0, 0.0, np.nan, np.inf, -np.inf])),
    "log float32": ("log", _with_filler([0.0, -2.0], "f")),
    "log complex zero": ("log", _with_filler([0.0], "D")),
    "erf nan (silent)": ("erf", _with_filler([np.nan, np.inf])),
    "erf tiny": ("erf", _with_filler([1e-310, -5e-324])),
    "exp int64": ("exp", np.array([1, 2, 800, 3] * 10, dtype=np.int64)),
    "log int8 zero": ("log", np.array([1, 0, -1, 3] * 10, dtype=np.int8)),
}
MODES = ["ignore", "warn", "raise", "call", "log", "print"]


class _Log:
    def __init__(self) -> None:
        self.lines: List[str] = []

    def write(self, text: str) -> None:
        self.lines.append(text)


def call_here(func: Callable, x: Any, **kwargs: Any) -> Any:
    return func(x, **kwargs)  # the line every warning below must point at


CALL_LINE = call_here.__code__.co_firstlineno + 1


def observe(func: Callable, x: np.ndarray, mode: str, capsys: Any, **kwargs: Any) -> dict:
    calls: List[tuple] = []
    log = _Log()
    handler = log if mode == "log" else (lambda kind, flag: calls.append((kind, flag)))
    errcall = {"call": handler} if mode in ("call", "log") else {}
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(all=mode, **errcall):
            try:
                value = call_here(func, x.copy(), **kwargs)
                error = None
            except FloatingPointError as exc:
                value, error = None, str(exc)
    printed = capsys.readouterr()
    return {
        "value": value,
        "error": error,
        "warnings": [(w.category, str(w.message), w.filename, w.lineno) for w in caught],
        "calls": calls,
        "log": log.lines,
        "printed": printed.out + printed.err,
    }


@pytest.mark.parametrize("path", ["torch", "numpy"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(CASES))
def test_every_mode_matches_numpy(case, mode, path, capsys):
    name, x = CASES[case]
    helper, original = PAIRS[name]
    with np2t.using(device="cpu", min_size=0 if path == "torch" else 10**9):
        got = observe(helper, x, mode, capsys)
    want = observe(original, x, mode, capsys)
    for key in ("error", "warnings", "calls", "log", "printed"):
        assert got[key] == want[key], key
    for _, _, filename, lineno in got["warnings"]:
        assert (filename, lineno) == (__file__, CALL_LINE)
    if want["value"] is not None:
        assert_same_values(got["value"], want["value"])


@pytest.mark.parametrize("path", ["torch", "numpy"])
def test_mixed_modes_warn_then_raise_in_numpys_order(path):
    x = _with_filler([0.0, -1.0])
    for state in ({"divide": "warn", "invalid": "raise"}, {"divide": "raise", "invalid": "warn"}):
        seen = []
        for func in (np2t.log, np.log):
            with np2t.using(min_size=0 if path == "torch" else 10**9):
                with warnings.catch_warnings(record=True) as caught, np.errstate(**state):
                    warnings.simplefilter("always")
                    with pytest.raises(FloatingPointError) as info:
                        call_here(func, x)
            seen.append(([str(w.message) for w in caught], str(info.value)))
        assert seen[0] == seen[1]


@pytest.mark.parametrize("path", ["torch", "numpy"])
def test_warning_filter_error_raises_runtimewarning(path):
    with np2t.using(min_size=0 if path == "torch" else 10**9), warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in log"):
            np2t.log(_with_filler([0.0]))


@pytest.mark.parametrize("path", ["torch", "numpy"])
def test_two_call_sites_both_warn_under_the_default_filter(path):
    # The default action shows a warning once per location: a warning attributed
    # to a line inside the runtime would hide the second call site.
    source = "import numpy as np\nimport np2torch.runtime as np2t\nx = np.zeros(50)\ndef first():\n    return np2t.log(x)\ndef second():\n    return np2t.log(x)\n"
    module = types.ModuleType("two_sites")
    module.__file__ = "/virtual/two_sites.py"
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    with np2t.using(min_size=0 if path == "torch" else 10**9), warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for _ in range(3):
            module.first()
            module.second()
    assert [(w.filename, w.lineno) for w in caught] == [("/virtual/two_sites.py", 5), ("/virtual/two_sites.py", 7)]


def test_fallback_calls_warn_at_the_callers_line_too():
    # Non-ndarray inputs always go to NumPy; the warning must still point here.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call_here(np2t.log, [0.0, 1.0])
        call_here(np2t.log, 0.0)
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, CALL_LINE)] * 2


@pytest.mark.parametrize("min_size", [0, None], ids=["torch forced", "default settings"])
def test_calls_above_the_floor_that_torch_declines_warn_at_the_callers_line(min_size):
    # Above the size floor, a call the torch path declines is the original's, through the same redirect.
    x = np.repeat([1000.0, 0.0, -1000.0], 200_000)[::2]  # strided: declined under a reporting under=
    with np2t.using(device="cpu", min_size=min_size), np.errstate(under="warn"):
        if min_size == 0:
            assert np2t.which("exp", x)[0] == "numpy"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                call_here(np2t.exp, x)
    want = ["overflow encountered in exp", "underflow encountered in exp"] * 2
    assert [str(w.message) for w in caught] == want
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, CALL_LINE)] * 4


def _messages(function: Callable[..., Any], *args: Any, **kwargs: Any) -> List[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        function(*args, **kwargs)
    return [f"{w.category.__name__}: {w.message}" for w in caught]


CAST_CASES = {
    "an input cast by dtype=": ("exp", (np.array([1e300, 1.0]),), {"dtype": np.float32, "casting": "unsafe"}),
    "an input cast by signature=": ("log", (np.array([1e300, 0.0]),), {"signature": ("f", "f"), "casting": "unsafe"}),
    "a Python int into a float16 loop": ("hypot", (np.ones(3, np.float16), 70000), {}),
    "a Python float into a float16 loop, first": ("arctan2", (1e5, np.ones(3, np.float16)), {}),
    "a Python float into a float32 loop": ("logaddexp", (np.ones(3, np.float32), 1e39), {}),
}


@pytest.mark.parametrize("min_size", [None, 0], ids=["default settings", "torch forced"])
@pytest.mark.parametrize("case", list(CAST_CASES))
def test_a_casts_warning_names_the_cast_as_numpys_does(case, min_size):
    # NumPy's call-mode handler is told the flag, not what raised it: a redirected call
    # said "overflow encountered in hypot" where NumPy says "... in cast".
    name, args, kwargs = CAST_CASES[case]
    want = _messages(getattr(np, name), *args, **kwargs)
    assert want  # the case does warn
    with np2t.using(min_size=min_size):
        assert _messages(getattr(np2t, name), *args, **kwargs) == want


def test_a_python_original_running_several_ufuncs_names_each():
    # np2torch run's sampled calls run SciPy's logsumexp through the same call: its
    # warnings name its own ufuncs ("... in subtract"), never "... in logsumexp".
    from np2torch.runtime._exact.errstate import numpy_call

    a = np.array([1e308, -1e308])
    want = _messages(scipy.special.logsumexp, a)
    assert want == ["RuntimeWarning: overflow encountered in subtract"]
    assert _messages(numpy_call, scipy.special.logsumexp, "logsumexp", a) == want


def test_ignore_pays_nothing(monkeypatch):
    checks: List[Any] = []
    real = torch_cpu.all_finite

    def spy(t: Any) -> bool:
        checks.append(t)
        return real(t)

    monkeypatch.setattr(torch_cpu, "all_finite", spy)
    x = np.linspace(-5, 5, 1000)
    with np2t.using(min_size=0):
        with np.errstate(all="ignore"):
            np2t.exp(x)
        assert not checks
        np2t.exp(x)  # default state: over/divide/invalid warn
        assert len(checks) == 1


def test_suspicious_elements_are_recomputed_only_when_seen(monkeypatch):
    settled: List[Any] = []
    real = _ufunc._settle_and_report

    def spy(*args: Any) -> Any:
        settled.append(args)
        return real(*args)

    monkeypatch.setattr(_ufunc, "_settle_and_report", spy)
    with np2t.using(min_size=0):
        np2t.exp(np.linspace(-5, 5, 1000))
        assert not settled
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np2t.exp(np.array([0.0, 1000.0] * 500))
        assert len(settled) == 1


def test_threads_each_honour_their_own_errstate():
    # np.errstate is a context variable in NumPy 2: each thread has its own.
    x = np.concatenate([np.linspace(0.5, 2, 20_000), [0.0, -1.0]])
    want = np.log(x)

    def warn_worker(_: int) -> Any:
        with np2t.using(min_size=0), np.errstate(all="warn"):
            return np2t.log(x)  # WARN_LINE

    def raise_worker(_: int) -> Any:
        with np2t.using(min_size=0), np.errstate(all="raise"):
            try:
                np2t.log(x)
            except FloatingPointError as exc:
                return str(exc)
            return "no error"

    def ignore_worker(_: int) -> Any:
        with np2t.using(min_size=0), np.errstate(all="ignore"):
            return np2t.log(x)

    warn_line = warn_worker.__code__.co_firstlineno + 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ThreadPoolExecutor(max_workers=6) as pool:
            jobs = []
            for i in range(8):
                jobs.append(("warn", pool.submit(warn_worker, i)))
                jobs.append(("raise", pool.submit(raise_worker, i)))
                jobs.append(("ignore", pool.submit(ignore_worker, i)))
            results = [(kind, job.result(timeout=120)) for kind, job in jobs]
    for kind, result in results:
        if kind == "raise":
            assert result == "divide by zero encountered in log"
        else:
            assert_same_values(result, want)
    messages = sorted((str(w.message), w.lineno) for w in caught)
    expected = sorted([("divide by zero encountered in log", warn_line), ("invalid value encountered in log", warn_line)] * 8)
    assert messages == expected


def test_seterr_is_honoured_like_errstate():
    old = np.seterr(divide="raise")
    try:
        with np2t.using(min_size=0), pytest.raises(FloatingPointError, match="divide by zero encountered in log"):
            np2t.log(np.zeros(10))
    finally:
        np.seterr(**old)


def test_output_values_are_written_before_raising():
    # NumPy fills `out` and then raises: so does the runtime.
    x = _with_filler([0.0])
    got, want = np.full(x.shape, 7.0), np.full(x.shape, 7.0)
    for func, out in ((np2t.log, got), (np.log, want)):
        with np2t.using(min_size=0), np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            func(x, out=out)
    assert not (got == 7.0).any()
    assert_same_values(got, want)  # torch's values, within the contract's ULP bound of NumPy's


def test_print_mode_writes_where_numpy_does(capfd):
    with np2t.using(min_size=0), np.errstate(all="print"):
        np2t.log(np.zeros(10))
    ours = capfd.readouterr()
    with np.errstate(all="print"):
        np.log(np.zeros(10))
    theirs = capfd.readouterr()
    assert (ours.out, ours.err) == (theirs.out, theirs.err)
    assert "divide by zero" in theirs.out + theirs.err


def test_numpy_1_style_state_without_contextvar_still_calls_numpy(monkeypatch):
    # On NumPy 1.x the runtime cannot redirect warnings; it must still work.
    from np2torch.runtime._exact import errstate

    monkeypatch.setattr(errstate, "_NP_EXTOBJ_VAR", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert errstate.numpy_call(np.log, "log", np.zeros(3)).tolist() == [-np.inf] * 3
    assert [str(w.message) for w in caught] == ["divide by zero encountered in log"]
    assert sys.modules["numpy"] is np


class _Seen:
    """What the caller's own code, run by NumPy during a call, observes of NumPy's error state."""

    def __init__(self) -> None:
        self.log: List[Any] = []

    def look(self) -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            np.subtract(np.array([np.inf]), np.array([np.inf]))
        self.log.append((np.geterr(), np.geterrcall(), [str(w.message) for w in caught]))


class _Duck:
    def __init__(self, seen: _Seen, value: np.ndarray) -> None:
        self.seen, self.value = seen, value

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        self.seen.look()
        return ufunc(self.value)


class _Sub(np.ndarray):
    seen: _Seen

    def __array_finalize__(self, obj: Any) -> None:
        if obj is not None:
            _Sub.seen.look()


class _Element:
    def __init__(self, seen: _Seen) -> None:
        self.seen = seen

    def exp(self) -> float:
        self.seen.look()
        return 1.0


def _duck(seen: _Seen) -> Any:
    return _Duck(seen, np.ones(3))


def _subclass(seen: _Seen) -> Any:
    _Sub.seen = seen
    return np.ones(3).view(_Sub)


def _objects(seen: _Seen) -> Any:
    return np.array([_Element(seen) for _ in range(3)], dtype=object)


def _list_of_objects(seen: _Seen) -> Any:
    return [_Element(seen), _Element(seen)]


@pytest.mark.parametrize("min_size", [None, 0], ids=["default settings", "torch forced"])
@pytest.mark.parametrize("state", [{}, {"all": "warn"}, {"all": "raise"}], ids=["default", "warn", "raise"])
@pytest.mark.parametrize("make", [_duck, _subclass, _objects, _list_of_objects])
def test_code_numpy_runs_for_the_input_sees_the_callers_error_state(make, state, min_size):
    # A duck array's __array_ufunc__, a subclass's __array_finalize__, an object's own
    # method: the caller's code, which reads NumPy's error state and warns about its own ufuncs.
    seen = {}
    for func in (np2t.exp, np.exp):
        watcher = _Seen()
        with np2t.using(min_size=min_size), np.errstate(**state):
            try:
                func(make(watcher))
            except FloatingPointError as exc:
                watcher.log.append(str(exc))
        seen[func] = watcher.log
    assert seen[np2t.exp] == seen[np.exp]
    assert seen[np.exp]


# Inputs whose underflow flag NumPy 2.4's contiguous and strided loops disagree on, with their
# neighbours: float16 (AVX512: log1p, expm1, tanh, arctanh, arcsinh, sinh, exp2); float32 and float64
# subnormals, whose reversed (negative-stride) loops flag underflow and contiguous ones do not (this
# VM: tan, arcsin, arctan, expm1, log1p, sinh, arcsinh, arctanh).
_TINY = {
    "float16": [6.104e-05, -6.104e-05, 1.192e-07, -1.192e-07, -5.96e-08, 3.576e-07, 1.19e-06, 6.557e-07,
                3.24e-05, 3.624e-05, -149.5, -150.0, 5.96e-08, 6.0e-05],
    **{
        name: [float(info.smallest_subnormal), -float(info.smallest_subnormal), float(info.smallest_normal) / 3,
               -float(info.smallest_normal) / 3, float(info.smallest_normal), 1e-30]
        for name, info in (("float32", np.finfo(np.float32)), ("float64", np.finfo(np.float64)))
    },
}
_TINY_CASES = [(row, dtype) for dtype in _TINY for row in ELEMENTWISE_FUNCTIONS if dtype in row.loops]


def _layouts(values: np.ndarray) -> dict:
    n = values.size
    tiled = np.resize(values, 8 * n)
    return {
        "contiguous": values.copy(),
        "strided": np.repeat(values, 2)[::2],
        "reversed": values[::-1],
        "2-d C": tiled.reshape(8, n),
        "2-d F": np.asfortranarray(tiled.reshape(8, n)),
        "2-d rows of a wider array": np.resize(values, (8, 2 * n))[:, :n],
    }


@pytest.mark.parametrize("state", [{"under": "warn"}, {"all": "warn"}, {"all": "raise"}], ids=["under", "all warn", "raise"])
@pytest.mark.parametrize("row,dtype", _TINY_CASES, ids=[f"{row.name}-{dtype}" for row, dtype in _TINY_CASES])
def test_underflow_flags_match_numpys_loop_for_the_layout(row, dtype, state):
    helper, original = getattr(np2t, row.name), getattr(importlib.import_module(row.module), row.name)
    filler = float(np.mean(row.domain))
    for value in _TINY[dtype]:
        for name, x in _layouts(np.array([filler, value, filler], dtype=dtype)).items():
            seen = []
            for func in (helper, original):
                with np2t.using(device="cpu", min_size=0), np.errstate(**state), \
                        warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        result, error = func(x), None
                    except FloatingPointError as exc:
                        result, error = None, str(exc)
                seen.append((result, error, [str(w.message) for w in caught]))
            assert seen[0][1:] == seen[1][1:], (value, name)
            if seen[1][0] is not None:
                assert_same_values(seen[0][0], seen[1][0])


_QUIET_ROWS = [row for row in ELEMENTWISE_FUNCTIONS if row.quiet is not None]


def _inside(low: float, high: float) -> List[float]:
    """Values just inside ``(low, high)`` and the awkward ones between: the edges, zeros, tiny and huge magnitudes."""
    edges = [np.nextafter(low, high), np.nextafter(high, low)]
    awkward = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -2.2250738585072014e-308, 1e-300, -1e-300,
               1e-160, 0.5, -0.5, 1.0, -1.0, 1e300, -1e300, 1.7976931348623157e308, -1.7976931348623157e308]
    return [float(v) for v in edges + awkward if low < v < high]


def _flags_but_underflow(original: Callable[..., Any], value: Any) -> List[str]:
    with np.errstate(divide="raise", over="raise", invalid="raise", under="ignore"), \
            scipy.special.errstate(all="ignore"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            original(value)
        except FloatingPointError as exc:
            return [str(exc)]
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("row", _QUIET_ROWS, ids=[row.name for row in _QUIET_ROWS])
def test_a_rows_quiet_interval_raises_no_flag_but_underflow(row):
    # The table's promise that lets the helper call the original without the redirect (runtime/_ufunc.py).
    from hypothesis import given, settings
    from hypothesis import strategies as st

    original = getattr(importlib.import_module(row.module), row.name)
    low, high = row.quiet
    assert low < high
    for value in _inside(low, high):
        for scalar in (value, np.float64(value)):
            assert _flags_but_underflow(original, scalar) == [], (value, type(scalar))
    for whole in (-(2**63), -(2**53), -1000, -1, 0, 1, 2, 700, 2**53, 2**63 - 1):  # an int is computed in float64
        if low < whole < high:
            assert _flags_but_underflow(original, whole) == [], whole

    @settings(max_examples=300, deadline=None, database=None)
    @given(st.floats(min_value=None if low == -np.inf else low, max_value=None if high == np.inf else high,
                     exclude_min=low != -np.inf, exclude_max=high != np.inf, allow_nan=False, allow_infinity=False))
    def flag_free(value):
        assert _flags_but_underflow(original, value) == [], value

    flag_free()


def test_every_elementwise_row_has_a_quiet_interval_holding_its_bench_domain():
    # bench and tune time the row's domain (no flag raised) in float64 too: it lies inside the quiet interval
    for row in ELEMENTWISE_FUNCTIONS:
        assert row.quiet is not None, row.name
        assert row.quiet[0] <= row.domain[0] and row.domain[1] <= row.quiet[1], row.name


@pytest.mark.parametrize("state", [{}, {"under": "warn"}, {"all": "warn"}, {"under": "raise"}, {"all": "raise"},
                                   {"all": "ignore"}], ids=["default", "under warns", "all warn", "under raises",
                                                            "all raise", "ignore"])
@pytest.mark.parametrize("kind", [float, np.float64, int], ids=["float", "float64", "int"])
@pytest.mark.parametrize("name,value", [("exp", -800.0), ("exp", -745.2), ("exp", 0.5), ("log", 0.5), ("log", 5e-324),
                                        ("erf", 1e-310), ("erf", -0.3), ("sin", 1e-320), ("exp", 710.0), ("exp", -746.0),
                                        ("log", 0.0), ("log", -1.0), ("exp", 1e5)])
def test_a_scalar_warns_where_and_as_numpy_does_inside_the_quiet_interval_too(name, value, kind, state, capsys):
    # exp(-800.0) lies inside exp's quiet interval but underflows: where underflow warns, the warning must point
    # here as NumPy's does; a value outside the interval takes the redirect as before.
    helper, original = PAIRS[name] if name in PAIRS else (getattr(np2t, name), getattr(np, name))
    x = kind(value)
    seen = []
    for func in (helper, original, helper):  # the helper twice: its caches are filled the second time
        with np.errstate(**state), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result, error = call_here(func, x), None
            except FloatingPointError as exc:
                result, error = None, str(exc)
        seen.append((result, error, [(str(w.message), w.filename, w.lineno) for w in caught]))
    for got in (seen[0], seen[2]):
        assert got[1:] == seen[1][1:]
        if got[0] is not None:
            assert type(got[0]) is type(seen[1][0])
            assert_same_values(np.asarray(got[0]), np.asarray(seen[1][0]))
    for _, filename, lineno in seen[0][2] + seen[2][2]:
        assert (filename, lineno) == (__file__, CALL_LINE)


WITHOUT_THE_FRONT = "warn or every_mode or cast or several_ufuncs"
"""The tests of where a warning points and what it says, run again below with the helpers as their Python functions."""


@pytest.mark.skipif(_helper.FRONT is None, reason="the C front is not built: the tests above ran without it")
def test_the_warning_suite_passes_without_the_c_front_too():
    # The C front hands a scalar straight to the original; a vendored copy or an install without a compiler has
    # only the Python functions, whose warnings must point at the same lines (np2t.exp(1e5) pointed into the
    # runtime on the first call in each errstate block).  The same tests, in a process where the front is absent.
    code = ("import sys; sys.modules['np2torch.runtime._front'] = None\n"
            "import pytest; from np2torch.runtime import _helper; assert _helper.FRONT is None\n"
            f"raise SystemExit(pytest.main(['-q', '-p', 'no:cacheprovider', '-k', {WITHOUT_THE_FRONT!r}, {__file__!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          cwd=os.path.dirname(__file__), timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "deselected" in done.stdout
