"""np2t.softmax and np2t.log_softmax return what scipy.special.softmax and log_softmax return.

Parity is checked on the torch path itself (it must not decline the inputs it
is meant to serve) and on the public helpers for the inputs that go to SciPy.
Values: NaN/inf/zero identical (signs included); a finite value within 4 ULP of
SciPy's -- of ``max(|result|, 1)`` for log_softmax, whose ``log(sum)`` term is
an absolute error -- or, where farther, no less accurate than SciPy over the
call: the worst distance from SciPy's own formula evaluated in long double on
the same ``x - x_max`` (both compute that subtraction exactly alike; ``exp``
differs, and float32 sums, which the helper accumulates in float64 where
SciPy's drift several ULP over long slices), as docs/catalogue.md measures.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from runtime_checks import outcome

import np2torch.runtime as np2t
from np2torch.runtime import _softmax
from np2torch.runtime._decision.route import Route

NAMES = ["softmax", "log_softmax"]
MAX_ULP = 4


def on_torch(name: str, a: np.ndarray, axis: Any = None) -> np.ndarray:
    """The torch path's result; fails if the path declines."""
    result = _softmax.HELPERS[name].try_torch(a, axis, Route("cpu", "cpu", "forced"))
    assert result is not None, "the torch path declined"
    return result


def reference(name: str, a: np.ndarray, axis: Any) -> np.ndarray:
    """SciPy's formula in long double, on the ``x - x_max`` SciPy computes in the result dtype."""
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.subtract(a, np.max(a, axis=axis, keepdims=True), dtype=None)
        d = d.astype(scipy.special.softmax(a[(slice(0, 1),) * a.ndim]).dtype).astype(np.longdouble)
        s = np.sum(np.exp(d), axis=axis, keepdims=True)
        return np.exp(d) / s if name == "softmax" else d - np.log(s)


def assert_structure(got: Any, want: Any) -> None:
    assert type(got) is type(want), (type(got), type(want))
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    assert got.strides == want.strides, (got.strides, want.strides)
    assert got.flags.c_contiguous == want.flags.c_contiguous and got.flags.f_contiguous == want.flags.f_contiguous
    assert got.flags.writeable


def assert_close(name: str, got: np.ndarray, want: np.ndarray, a: np.ndarray, axis: Any) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg="NaN positions differ")
    special = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(got[special], want[special], err_msg="inf/zero differ")
    np.testing.assert_array_equal(np.signbit(got[special]), np.signbit(want[special]))
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    finite = ~special
    if not finite.any():
        return
    with np.errstate(invalid="ignore"):  # inf - inf at the special positions, masked out below
        scale = np.abs(want) if name == "softmax" else np.maximum(np.abs(want), 1)
        spacing = np.spacing(scale.astype(want.dtype)).astype(np.longdouble)
        apart = np.abs(got.astype(np.longdouble) - want) / spacing
        ref = reference(name, a, axis)
        ours, theirs = (np.max((np.abs(y - ref) / spacing)[finite]) for y in (got, want))
    far = finite & (apart > MAX_ULP)
    assert not far.any() or ours <= theirs, f"{apart[far].max()} ULP from SciPy and less accurate ({ours} ULP, SciPy {theirs})"


def assert_parity(name: str, a: np.ndarray, axis: Any = None) -> None:
    got = on_torch(name, a, axis)
    want = getattr(scipy.special, name)(a, axis=axis)
    assert_structure(got, want)
    assert_close(name, got, want, a, axis)


# ---------------------------------------------------------------- the torch path

AXES = [None, 0, 1, 2, -1, -3, (0, 1), (0, 2), (2, 0), (0, 1, 2), np.int64(1)]
LAYOUTS = {
    "C": lambda a: a,
    "F": np.asfortranarray,
    "transposed": lambda a: a.transpose(1, 2, 0),
    "negative strides": lambda a: a[::-1, :, ::-2],
    "strided": lambda a: np.repeat(a, 2, axis=1)[:, ::2],
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("layout", list(LAYOUTS.values()), ids=list(LAYOUTS))
def test_layouts_and_axes(name: str, layout: Callable) -> None:
    a = layout(np.random.default_rng(1).standard_normal((6, 7, 5)) * 10)
    for axis in AXES:
        assert_parity(name, a, axis)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_dtypes_served(name: str, dtype: str) -> None:
    a = (np.random.default_rng(2).standard_normal((9, 11)) * 20).astype(dtype)
    for axis in (None, 0, 1):
        assert_parity(name, a, axis)


@pytest.mark.parametrize("name", NAMES)
def test_one_dimensional_and_long_slices(name: str) -> None:
    rng = np.random.default_rng(3)
    for a in (rng.standard_normal(5000) * 30, rng.standard_normal((3000, 4)).astype(np.float32) * 5):
        for axis in (None, 0, -1):
            assert_parity(name, a, axis)


SPECIAL_ROWS = {
    "some -inf": [-np.inf, 0.5, -np.inf, 2.0],
    "signed zeros": [-0.0, 0.0, -np.inf, -1.0],
    "ties": [2.0, 2.0, 2.0, 2.0],
    "one dominates": [0.0, -40.0, -745.0, -800.0],
    "subnormal results": [0.0, -740.0, -742.0, -745.0],
    "huge spread": [1e200, -1e200, 0.0, 1e199],
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("row", list(SPECIAL_ROWS.values()), ids=list(SPECIAL_ROWS))
def test_special_values_the_torch_path_serves(name: str, dtype: str, row: list) -> None:
    row = [x if abs(x) < 1e30 or np.isinf(x) else np.sign(x) * 1e30 for x in row] if dtype == "float32" else row
    a = np.array([row, row[::-1], [0.0, 1.0, 2.0, 3.0]], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SciPy warns about none of these
        for axis in (None, 1, 0):
            assert_parity(name, a, axis)


def test_integer_subtraction_is_scipys_until_it_could_wrap() -> None:
    a = np.array([[2**40, -(2**40), 7], [1, 2, 3]], dtype=np.int64)
    for name in NAMES:
        assert_parity(name, a, 1)
    wide = np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min + 5], dtype=np.int64)  # SciPy wraps around
    assert _softmax.HELPERS["softmax"].try_torch(wide, None, Route("cpu", "cpu", "forced")) is None


def test_long_float32_slices() -> None:
    # 2**20 float32 terms: a sum in another order than SciPy's pairwise one drifts several ULP from it.
    a = np.random.default_rng(4).standard_normal(1 << 20).astype(np.float32)
    for name in NAMES:
        assert_parity(name, a)
        assert_parity(name, a.reshape(1024, 1024), 0)


def test_log_softmax_zeros_where_scipys_float32_sum_rounds_to_one() -> None:
    # scripts/catalogue.py's "normal x 30" rows: a float32 sum accumulated in float64 rounded to
    # 1.0000001 on two slices where SciPy's float32 sum gives 1.0 (and log_softmax 0.0 at the maximum).
    a = (np.random.default_rng(0).standard_normal((1562, 64)) * 30).astype(np.float32)
    want = scipy.special.log_softmax(a, axis=1)
    assert (want == 0).sum() > 0
    assert_parity("log_softmax", a, 1)


# ---------------------------------------------------------------- what goes to SciPy

DECLINED = {
    "NaN": np.array([[1.0, np.nan, 0.0], [0.0, 1.0, 2.0]]),
    "+inf": np.array([[1.0, np.inf, np.inf], [0.0, 1.0, 2.0]]),
    "all -inf": np.array([[-np.inf, -np.inf, -np.inf], [0.0, 1.0, 2.0]]),
    "subtraction overflows": np.array([[1.7e308, -1.7e308, 0.0], [0.0, 1.0, 2.0]]),
    "float16": np.ones((3, 4), np.float16),
    "int8": np.arange(12, dtype=np.int8).reshape(3, 4),
    "uint32": np.arange(12, dtype=np.uint32).reshape(3, 4),
    "bool": np.ones((3, 4), bool),
    "complex": np.ones((3, 4), complex),
    "empty": np.ones((0, 4)),
    "0-d": np.array(3.0),
    "broadcast view": np.broadcast_to(np.arange(4.0), (3, 4)),
    "a length-1 axis": np.asfortranarray(np.ones((3, 1, 4))),
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("a", list(DECLINED.values()), ids=list(DECLINED))
def test_declined_inputs_get_scipys_result_warnings_and_errors(name: str, a: np.ndarray) -> None:
    original = getattr(scipy.special, name)
    with np2t.using(device="cpu", min_size=0):
        for axis in (None, 1, 0, 5, (0, 0), 1.5):
            got, want = outcome(getattr(np2t, name), a, axis=axis), outcome(original, a, axis=axis)
            assert got[1] == want[1], (axis, got[1], want[1])
            if isinstance(want[0], tuple):
                assert got[0] == want[0]
            else:
                assert type(got[0]) is type(want[0])
                np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("name", NAMES)
def test_errstate_under_reported_goes_to_scipy(name: str) -> None:
    a = np.array([[0.0, -800.0, -1.0], [0.0, 1.0, 2.0]])
    original = getattr(scipy.special, name)
    with np2t.using(device="cpu", min_size=0):
        assert _softmax.HELPERS[name].try_torch(a, 1, Route("cpu", "cpu", "forced")) is not None
        for mode in ("warn", "raise"):
            with np.errstate(under=mode):
                got, want = outcome(getattr(np2t, name), a, axis=1), outcome(original, a, axis=1)
                assert got[1] == want[1]
                if mode == "raise":
                    assert got[0] == want[0]
        with np.errstate(over="ignore"):  # the overflowing subtraction is then silent and IEEE on both sides
            huge = DECLINED["subtraction overflows"]
            assert_parity(name, huge, 1)


@pytest.mark.parametrize("name", NAMES)
def test_array_likes_and_subclasses_go_to_scipy(name: str) -> None:
    original = getattr(scipy.special, name)

    class Sub(np.ndarray):
        pass

    sub = np.arange(6.0).reshape(2, 3).view(Sub)
    with np2t.using(device="cpu", min_size=0):
        for x in ([1.0, 2.0, 3.0], 2.5, sub, np.ma.masked_array([1.0, 2.0])):
            got, want = getattr(np2t, name)(x), original(x)
            assert type(got) is type(want)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", NAMES)
def test_public_helper_takes_the_torch_path_when_forced_and_not_below_the_size(name: str) -> None:
    a = np.random.default_rng(5).standard_normal((40, 30))
    with np2t.using(device="cpu", min_size=0):
        assert np.array_equal(getattr(np2t, name)(a, axis=0), on_torch(name, a, 0))
        assert np2t.which(name, a, axis=0)[0] == "cpu"
        assert np2t.which(name, a.astype(np.float16), axis=0)[0] == "numpy"
        assert np2t.which(name, [1.0, 2.0])[0] == "numpy"
    with np2t.using(device="cpu", min_size=10**9):
        assert np2t.which(name, a, axis=0)[0] == "numpy"
        assert np.array_equal(getattr(np2t, name)(a, axis=0), getattr(scipy.special, name)(a, axis=0))
    with np2t.using(device="numpy"):
        assert np2t.which(name, a)[0] == "numpy"


@pytest.mark.parametrize("name", NAMES)
def test_run_path_is_what_tune_and_calibration_time(name: str) -> None:
    helper = _softmax.HELPERS[name]
    x = np.random.default_rng(6).standard_normal((64, 32))
    want = getattr(scipy.special, name)(x, axis=0)
    np.testing.assert_array_equal(helper.run_path("numpy", x), want)
    assert_close(name, np.asarray(helper.run_path("cpu", x)), want, x, 0)
    with pytest.raises(ValueError, match="CUDA"):
        helper.run_path("cuda", x)


# ---------------------------------------------------------------- hypothesis

finite_floats = st.floats(-1e3, 1e3, allow_nan=False, width=32)
with_infinities = st.one_of(finite_floats, st.sampled_from([-np.inf, -0.0, 0.0, -745.0, 1e30, -1e30, np.inf, np.nan]))


@st.composite
def cases(draw: Any) -> tuple:
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=7))
    a = draw(hnp.arrays(dtype, shape, elements=draw(st.sampled_from([finite_floats, with_infinities]))))
    if draw(st.booleans()):
        a = np.asfortranarray(a)
    if a.ndim > 1 and draw(st.booleans()):
        a = a.swapaxes(0, -1)
    if draw(st.booleans()):
        a = a[tuple(slice(None, None, -1) for _ in a.shape)]
    axes = st.one_of(
        st.none(),
        st.integers(-a.ndim, a.ndim - 1),
        st.lists(st.integers(0, a.ndim - 1), min_size=1, max_size=a.ndim, unique=True).map(tuple),
    )
    return draw(st.sampled_from(NAMES)), a, draw(axes)


@settings(max_examples=150, deadline=None)
@given(cases())
def test_hypothesis_public_helper_is_scipys(case: tuple) -> None:
    name, a, axis = case
    original = getattr(scipy.special, name)
    with np2t.using(device="cpu", min_size=0):
        got, want = outcome(getattr(np2t, name), a, axis=axis), outcome(original, a, axis=axis)
    assert got[1] == want[1]
    assert_structure(got[0], want[0])
    assert_close(name, got[0], want[0], a, axis)


# ---------------------------------------------------------------- Dask

@pytest.mark.parametrize("name", NAMES)
def test_dask_gives_what_scipy_gives(name: str) -> None:
    da = pytest.importorskip("dask.array")
    an = np.random.default_rng(7).standard_normal((40, 30))
    a = da.from_array(an, chunks=(10, 30))
    with np2t.using(device="cpu", min_size=0):
        for axis in (None, 0, 1):
            got, want = getattr(np2t, name)(a, axis=axis), getattr(scipy.special, name)(a, axis=axis)
            assert type(got) is type(want) is np.ndarray  # SciPy computes the Dask array (its array API off)
            assert_close(name, got, want, an, axis)
            assert np.array_equal(got, getattr(np2t, name)(an, axis=axis))


def test_dask_under_scipys_array_api_stays_lazy() -> None:
    pytest.importorskip("dask.array")
    code = textwrap.dedent("""
        import dask.array as da, numpy as np, scipy.special as sc
        import np2torch.runtime as np2t
        an = np.random.default_rng(8).standard_normal((40, 30))
        a = da.from_array(an, chunks=(10, 15))
        with np2t.using(device="cpu", min_size=0):
            for name in ("softmax", "log_softmax"):
                for axis in (None, 0, 1):
                    got, want = getattr(np2t, name)(a, axis=axis), getattr(sc, name)(a, axis=axis)
                    assert isinstance(got, da.Array) and isinstance(want, da.Array), (type(got), type(want))
                    assert got.dtype == want.dtype and got.shape == want.shape
                    ours, theirs = got.compute(scheduler="sync"), want.compute(scheduler="sync")
                    np.testing.assert_allclose(ours, theirs, rtol=1e-14, atol=1e-300)
                    if axis is not None:  # slices within chunks: each block is one call of the helper
                        whole = da.from_array(an, chunks=(40, 6)) if axis == 0 else a.rechunk((5, 30))
                        mapped = getattr(np2t, name)(whole, axis=axis)
                        assert any(k.startswith(name + "-") for k in mapped.dask.layers), list(mapped.dask.layers)
                        np.testing.assert_array_equal(mapped.compute(scheduler="sync"), getattr(np2t, name)(an, axis=axis))
        print("ok")
    """)
    env = {"SCIPY_ARRAY_API": "1", "NP2TORCH_PROFILE": "builtin", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


@pytest.mark.parametrize("name", NAMES)
def test_default_settings(name: str) -> None:
    """Without using(): the shipped profile decides the path (the original, for rows it has no curve of); same result."""
    a = np.random.default_rng(9).standard_normal((300, 70)).astype(np.float32)
    for axis in (None, 0, 1):
        got, want = getattr(np2t, name)(a, axis=axis), getattr(scipy.special, name)(a, axis=axis)
        assert_structure(got, want)
        assert_close(name, got, want, a, axis)
