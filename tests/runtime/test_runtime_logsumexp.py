"""np2t.logsumexp returns what scipy.special.logsumexp returns.

Parity is checked on the torch path itself (``_try_torch`` must not decline),
with the block size shrunk so that small arrays cross many blocks, and on the
public helper for the inputs that go to SciPy.  Values: NaN/inf/zero identical,
finite values within 4 ULP of SciPy in units of the slice's scale
max(|result|, |max(slice)|) -- the size of the terms SciPy's formula adds -- or
closer than SciPy to a reference computed in long double.
"""

from __future__ import annotations

import functools
import multiprocessing
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from typing import Any, Callable, Optional

import mpmath
import numpy as np
import pytest
import scipy
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from runtime_checks import outcome, ulp_distance

import np2torch.runtime as np2t
from np2torch.runtime import _logsumexp as lse
from np2torch.runtime._backend import load_torch
from np2torch.runtime._exact import logsumexp_check as lse_check
from np2torch.runtime._paths import lean
from np2torch.runtime._state import PROCESS, TAKEN

MAX_ULP = 4
PRODUCTION_BLOCK = lse._CPU_BLOCK  # before the fixture below shrinks it


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 64 elements: every test array crosses block boundaries."""
    monkeypatch.setattr(lse, "_CPU_BLOCK", 64)


@pytest.fixture
def forced():
    with np2t.using(device="cpu", min_size=0):
        yield


def on_torch(a: np.ndarray, axis: Any = None, keepdims: bool = False, return_sign: bool = False) -> Any:
    """The torch path's result; fails if the path declines (skips if the installed SciPy's verdict made it)."""
    with np2t.using(device="cpu", min_size=0):
        result = lse._try_torch(a, axis, keepdims, return_sign, np2t.current_settings())
    verdict = lse.HELPER.verdict()
    if result is None and not (verdict.finite and verdict.infinite):
        pytest.skip(f"scipy {scipy.__version__}: {verdict} (see test_installed_scipy_passes_the_check)")
    assert result is not None, "the torch path declined"
    return result


def reference(a: np.ndarray, axis: Any, keepdims: bool) -> np.ndarray:
    """SciPy's formula in long double: ~11 more bits than float64."""
    return np.asarray(scipy.special.logsumexp(a.astype(np.longdouble), axis=axis, keepdims=keepdims))


def assert_structure(got: Any, want: Any) -> None:
    assert type(got) is type(want), (type(got), type(want))
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert np.shape(got) == np.shape(want)
    if isinstance(want, np.ndarray):
        assert got.strides == want.strides, (got.strides, want.strides)
        assert got.flags.c_contiguous == want.flags.c_contiguous
        assert got.flags.f_contiguous == want.flags.f_contiguous
        assert got.flags.writeable


def assert_close(got: Any, want: Any, a: np.ndarray, axis: Any, keepdims: bool) -> None:
    got, want = np.atleast_1d(got), np.atleast_1d(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg="NaN positions differ")
    special = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(got[special], want[special], err_msg="inf/zero differ")
    np.testing.assert_array_equal(np.signbit(got[special]), np.signbit(want[special]))
    finite = ~special
    if not finite.any():
        return
    a_max = np.atleast_1d(np.max(a, axis=axis, keepdims=keepdims)).astype(want.dtype)
    scale = np.maximum(np.abs(want), np.abs(a_max))[finite]
    apart = np.abs(got[finite].astype(np.float64) - want[finite]) / np.spacing(scale).astype(np.float64)
    ref = np.atleast_1d(reference(a, axis, keepdims))[finite]
    closer = np.abs(got[finite] - ref) <= np.abs(want[finite] - ref)
    bad = (apart > MAX_ULP) & ~closer
    assert not bad.any(), f"{apart[bad].max()} ULP of scale from SciPy and less accurate: {got[finite][bad]} vs {want[finite][bad]}"


def assert_parity(a: np.ndarray, axis: Any = None, keepdims: bool = False, return_sign: bool = False) -> None:
    got = on_torch(a, axis, keepdims, return_sign)
    want = scipy.special.logsumexp(a, axis=axis, keepdims=keepdims, return_sign=return_sign)
    if return_sign:
        assert type(got) is tuple and len(got) == 2
        assert_structure(got[1], want[1])
        np.testing.assert_array_equal(got[1], want[1])
        got, want = got[0], want[0]
    assert_structure(got, want)
    assert_close(got, want, a, axis, keepdims)


# ---------------------------------------------------------------- the torch path


AXES = [None, 0, 1, 2, -1, -3, (0, 1), (0, 2), (1, 2), (2, 0), (0, 1, 2), np.int64(1)]


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize(
    "layout",
    [
        pytest.param(lambda a: a, id="C"),
        pytest.param(np.asfortranarray, id="F"),
        pytest.param(lambda a: a.transpose(1, 2, 0), id="transposed"),
        pytest.param(lambda a: a[::-1, :, ::-2], id="negative strides"),
        pytest.param(lambda a: np.repeat(a, 2, axis=1)[:, ::2], id="strided"),
    ],
)
def test_layouts_and_axes(layout: Callable, axis: Any) -> None:
    a = layout(np.random.default_rng(1).standard_normal((6, 7, 5)))
    for keepdims in (False, True):
        for return_sign in (False, True):
            assert_parity(a, axis, keepdims, return_sign)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "int16", "int8", "uint8", "bool"])
def test_dtypes(dtype: str) -> None:
    a = (np.random.default_rng(2).standard_normal((9, 11)) * 20).astype(dtype)
    for axis in (None, 0, 1):
        assert_parity(a, axis)


def test_one_dimensional_and_scalar_results() -> None:
    a = np.random.default_rng(3).standard_normal(300)
    assert_parity(a)
    assert_parity(a, 0)
    assert_parity(a, -1, keepdims=True)
    assert isinstance(on_torch(a), np.float64)
    assert isinstance(on_torch(a.astype(np.float32)), np.float32)


def test_read_only_input_without_warnings() -> None:
    a = np.random.default_rng(4).standard_normal((40, 30))
    a.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_parity(a, 0)


SPECIAL_ROWS = {
    "inf": [np.inf, 1.0, -np.inf],
    "two infs": [np.inf, np.inf, 3.0],
    "all -inf": [-np.inf, -np.inf, -np.inf],
    "some -inf": [-np.inf, 0.5, -np.inf],
    "signed zeros": [-0.0, 0.0, -np.inf],
    "negative zero": [-0.0, -np.inf, -50.0],
    "ties": [2.0, 2.0, 2.0],
    "one dominates": [0.0, -40.0, -745.0],
    "subnormal sum": [-740.0, -742.0, -745.0],
    "huge": [1e291, -1e291, 0.0],
}


@pytest.mark.parametrize("row", list(SPECIAL_ROWS.values()), ids=list(SPECIAL_ROWS))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_special_values(row: list, dtype: str) -> None:
    if dtype == "float32":
        row = [np.float32(x) if abs(x) < 1e30 or np.isinf(x) else np.float32(np.sign(x) * 1e30) for x in row]
    a = np.array([row, row[::-1], [0.0, 1.0, 2.0]], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SciPy warns about none of these
        for axis in (None, 1, 0):
            assert_parity(a, axis, return_sign=False)
            assert_parity(a, axis, return_sign=True)


@pytest.mark.parametrize("mode", ["raise", "warn", "ignore"])
def test_errstate_modes_other_than_under(mode: str) -> None:
    a = np.array([[1.0, 1.0, -np.inf], [np.inf, -np.inf, 0.0], [-np.inf, -np.inf, -np.inf], [-1000.0, 0.0, 700.0]])
    with np.errstate(divide=mode, over=mode, invalid=mode, under="ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for axis in (None, 0, 1):
                assert_parity(a, axis, return_sign=True)


finite_floats = st.floats(-1e3, 1e3, allow_nan=False, width=32)
any_floats = st.one_of(finite_floats, st.sampled_from([np.inf, -np.inf, -0.0, 0.0, -745.0, 1e30, -1e30]))


@st.composite
def cases(draw: Any, special: bool = True) -> tuple:
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=7))
    elements = draw(st.sampled_from([finite_floats, any_floats] if special else [finite_floats]))
    a = draw(hnp.arrays(dtype, shape, elements=elements))
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
    return a, draw(axes), draw(st.booleans()), draw(st.booleans())


@settings(max_examples=150, deadline=None)
@given(cases())
def test_hypothesis_parity(case: tuple) -> None:
    a, axis, keepdims, return_sign = case
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_parity(a, axis, keepdims, return_sign)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 40), st.integers(1, 40)), elements=finite_floats))
def test_hypothesis_public_helper_equals_torch_path(a: np.ndarray) -> None:
    with np2t.using(device="cpu", min_size=0):
        assert np.array_equal(np2t.logsumexp(a, axis=0), on_torch(a, 0))


def test_accuracy_against_mpmath() -> None:
    """Never less accurate than SciPy (max error over each family), and within 4 ULP of scale."""
    rng = np.random.default_rng(5)
    families = {
        "normal": rng.standard_normal((40, 60)),
        "one dominates": np.concatenate([np.zeros((40, 1)), rng.uniform(-60, -20, (40, 59))], axis=1),
        "log-probs": np.log(rng.dirichlet(np.ones(60), size=40)),
    }
    mpmath.mp.prec = 160
    for name, data in families.items():
        for dtype in (np.float64, np.float32):
            x = data.astype(dtype)
            exact = np.array([float(mpmath.log(mpmath.fsum(mpmath.exp(mpmath.mpf(float(v))) for v in row))) for row in x])
            scale = np.spacing(np.maximum(np.abs(exact), np.abs(x.max(axis=1))).astype(dtype)).astype(np.float64)
            for axis, arr in ((1, x), (0, np.ascontiguousarray(x.T))):
                ours = np.abs(on_torch(arr, axis) - exact) / scale
                theirs = np.abs(scipy.special.logsumexp(arr, axis=axis) - exact) / scale
                assert ours.max() <= MAX_ULP, (name, dtype, axis, ours.max())
                assert ours.max() <= theirs.max() + 1, (name, dtype, axis, ours.max(), theirs.max())


def test_dominant_term_keeps_its_tiny_contribution() -> None:
    # log(sum(exp(a - a_max))) would round 1 + 4.2e-18 to 1 and return 0.0.
    a = np.array([0.0, -40.0] * 5000)
    got = on_torch(a)
    want = scipy.special.logsumexp(a)
    assert got > 0 and ulp_distance(np.array([got]), np.array([want]))[0] <= 1


def _blockwise(a: np.ndarray, dims: tuple) -> tuple:
    assert load_torch()
    import torch

    t = torch.from_numpy(a)
    return tuple(x.numpy() for x in lse._blockwise(t, dims, t.dtype, t.device, lse._CPU_BLOCK))


def test_each_pass_over_the_blocks_is_its_own_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first block of a kind of torch work runs alone (MKL picks a function's kernel on its first call:
    # blocks._first_alone): a kind is one set of ops, so the maxima pass (no exp) and the sums pass are two kinds.
    from np2torch.runtime._paths import blocks

    kinds: list = []
    real_run = blocks.run
    monkeypatch.setattr(blocks, "run", lambda tasks, threads, kind: (kinds.append(kind), real_run(tasks, threads, kind))[1])
    a = np.random.default_rng(3).standard_normal((1000, 200))
    _blockwise(a, (0,))
    _blockwise(a, (1,))
    assert [kind[1] for kind in kinds] == ["maxima", "sums", "whole slices"]
    assert len(set(kinds)) == 3


BLOCK_INPUTS = {
    "normal": lambda rng: rng.standard_normal((1000, 200)),
    "ties everywhere": lambda rng: rng.integers(-3, 3, (1000, 200)).astype(np.float64),
    "float32 ties": lambda rng: rng.integers(-2, 2, (1000, 200)).astype(np.float32),
    "infinities": lambda rng: np.where(rng.random((1000, 200)) < 0.01, np.inf, np.where(rng.random((1000, 200)) < 0.3, -np.inf, 0.0)),
    "3-d": lambda rng: rng.integers(-5, 5, (40, 25, 60)).astype(np.float64),
    "tied maxima": lambda rng: _tied_maxima(rng.standard_normal((1000, 200))),
}


def _tied_maxima(a: np.ndarray) -> np.ndarray:
    """Columns whose maximum 10.0 is reached twice: in one block (rows i, i+1) or two (i, i+500)."""
    for j in range(0, 200, 3):
        i = (j * 37) % 480
        a[[i, i + (1 if j % 2 else 500)], j] = 10.0
    return a


@pytest.mark.parametrize("make", list(BLOCK_INPUTS.values()), ids=list(BLOCK_INPUTS))
def test_masking_only_slices_whose_maximum_a_block_holds_changes_no_bit(make: Callable, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks that skip the mask, mask a few columns, or look for their maxima give the all-mask sums bit for bit."""
    monkeypatch.setattr(lse, "_CPU_BLOCK", 4096)  # runs of rows, a few maxima per block
    a = make(np.random.default_rng(10))
    dropped: list = []
    real_drop = lse._drop_maxima_of
    monkeypatch.setattr(lse, "_drop_maxima_of", lambda *args: (dropped.append(1), real_drop(*args)))
    for dims in [(0,), tuple(range(a.ndim)), (0, 1)]:
        with np.errstate(invalid="ignore"):
            kept = _blockwise(a, dims)
            with monkeypatch.context() as patch:
                patch.setattr(lse, "_PARTS_PER_ELEMENT", 10**9)  # each block looks for its maxima
                looked = _blockwise(a, dims)
            with monkeypatch.context() as patch:
                real_sums = lse._block_sums
                patch.setattr(lse, "_block_sums", lambda chunk, a_max, dims, s, m, holds, *rest: real_sums(chunk, a_max, dims, s, m, None, *rest))
                masked = _blockwise(a, dims)
        finite = np.isfinite(masked[0])
        for got in (kept, looked):
            assert np.array_equal(got[0], masked[0])
            assert np.array_equal(got[1][finite], masked[1][finite])
            assert np.array_equal(got[2][finite].view(np.uint8), masked[2][finite].view(np.uint8))
        if make is BLOCK_INPUTS["tied maxima"] and dims == (0,):
            assert np.count_nonzero(kept[1] == 2) == len(range(0, 200, 3))
    # Random normals: a block of 20 rows holds the maxima of ~4 of 200 columns.
    # (The counts are compared too: 2 for the tied maxima.)
    sparse = make in (BLOCK_INPUTS["normal"], BLOCK_INPUTS["tied maxima"])
    assert bool(dropped) is sparse, "blocks masked column by column where they should not, or never"


@pytest.mark.parametrize("axis", [0, (0, 1), None], ids=str)
def test_parity_with_a_few_maxima_per_block(axis: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lse, "_CPU_BLOCK", 4096)
    rng = np.random.default_rng(11)
    for a in (rng.integers(-3, 3, (40, 25, 60)).astype(np.float64), rng.standard_normal((40, 25, 60)).astype(np.float32)):
        for return_sign in (False, True):
            assert_parity(a, axis, return_sign=return_sign)


@pytest.mark.parametrize("layout", [pytest.param(lambda a: a, id="C"), pytest.param(np.asfortranarray, id="F")])
def test_parity_with_the_production_block_size(layout: Callable, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 2**19 elements over a 1.1e6-element input: slices span blocks or fill them."""
    monkeypatch.setattr(lse, "_CPU_BLOCK", PRODUCTION_BLOCK)
    a = layout(np.random.default_rng(12).standard_normal((1200, 900)))
    a[::97, ::5] = 4.5  # tied maxima in many columns and rows
    for axis in (0, 1, None):
        assert_parity(a, axis, return_sign=True)

# ---------------------------------------------------------------- what goes to SciPy


def declines(a: Any, **kwargs: Any) -> bool:
    with np2t.using(device="cpu", min_size=0):
        return lse._try_torch(a, kwargs.get("axis"), kwargs.get("keepdims", False), kwargs.get("return_sign", False), np2t.current_settings()) is None


@pytest.mark.parametrize(
    "a, kwargs",
    [
        pytest.param(np.ones(5, np.float16), {}, id="float16"),
        pytest.param(np.ones(5, np.longdouble), {}, id="longdouble"),
        pytest.param(np.ones(5, np.complex128), {}, id="complex"),
        pytest.param(np.ones(5, np.uint64), {}, id="uint64"),
        pytest.param(np.ones(5, ">f8"), {}, id="big-endian"),
        pytest.param(np.ones(5, object), {}, id="object"),
        pytest.param(np.broadcast_to(np.arange(3.0), (4, 3)), {"axis": 1}, id="broadcast view"),
        pytest.param(np.array(1.0), {}, id="0-d"),
        pytest.param(np.zeros((0, 3)), {"axis": 0}, id="empty"),
        pytest.param(np.ones((2, 3)), {"axis": (0, 0)}, id="duplicate axis"),
        pytest.param(np.ones((2, 3)), {"axis": 2}, id="axis out of range"),
        pytest.param(np.ones((2, 3)), {"axis": [0, 1]}, id="axis list"),
        pytest.param(np.ones((2, 3)), {"axis": True}, id="axis bool"),
        pytest.param(np.ones((2, 3)), {"axis": 1.0}, id="axis float"),
        pytest.param(np.ones((2, 3)), {"axis": ()}, id="empty axis tuple"),
        pytest.param(np.ones((2, 3)), {"keepdims": np.array([1])}, id="keepdims array"),
        pytest.param(np.ones((2, 3)), {"return_sign": 1}, id="return_sign int"),
        pytest.param(np.array([1.0, np.nan, 2.0] * 3), {}, id="NaN"),
        pytest.param(np.array([1e300, -1e300]), {}, id="a - a_max overflows"),
        pytest.param(np.array([3e38, -3e38], np.float32), {}, id="float32 a - a_max overflows"),
    ],
)
def test_declines_what_it_does_not_reproduce(a: Any, kwargs: dict) -> None:
    assert declines(a, **kwargs)


def test_overflow_is_served_only_when_silent() -> None:
    a = np.array([1e300, -1e300])
    with np.errstate(over="ignore"):
        assert not declines(a)
    assert declines(a)


def test_underflow_reporting_goes_to_scipy() -> None:
    a = np.array([-1000.0, 0.0] * 100)
    with np.errstate(under="warn"):
        assert declines(a)
    assert not declines(a)


def _matrix() -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.matrix([[1.0, 2.0], [3.0, 4.0]])


UNSERVED = [
    pytest.param(([1.0, 2.0, 3.0],), {}, id="list"),
    pytest.param((2.5,), {}, id="python float"),
    pytest.param((np.float32(2.5),), {}, id="numpy scalar"),
    pytest.param((np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0]),), {}, id="masked array"),
    pytest.param((_matrix(),), {"axis": 0}, id="matrix raises"),
    pytest.param((np.arange(6.0),), {"b": np.array([1, -2, 0, 1, 1, 1])}, id="b"),
    pytest.param((np.arange(6.0),), {"b": np.array([1, -2, 0, 1, 1, 1]), "return_sign": True}, id="b with sign"),
    pytest.param((np.arange(3.0),), {"b": np.ones((2, 3))}, id="b broadcasts a"),
    pytest.param((np.zeros((0, 3)),), {"axis": 0, "return_sign": True}, id="empty"),
    pytest.param((np.zeros((0, 3)),), {}, id="empty axis None raises"),
    pytest.param((np.ones((2, 3)),), {"axis": (0, 0)}, id="duplicate axis raises"),
    pytest.param((np.ones((2, 3)),), {"axis": 2}, id="bad axis raises"),
    pytest.param((np.ones((2, 3)),), {"keepdims": np.array([1, 2])}, id="ambiguous keepdims raises"),
    pytest.param((np.array([1e300, -1e300]),), {}, id="overflow warns"),
    pytest.param((np.ones(4, np.complex128) * 1j,), {"return_sign": True}, id="complex"),
    pytest.param((np.ones(4, np.float16),), {}, id="float16"),
]


@pytest.mark.parametrize("args, kwargs", UNSERVED)
def test_public_helper_matches_scipy_where_it_falls_back(args: tuple, kwargs: dict, forced: None) -> None:
    got, got_warnings = outcome(np2t.logsumexp, *args, **kwargs)
    want, want_warnings = outcome(scipy.special.logsumexp, *args, **kwargs)
    assert got_warnings == want_warnings
    if isinstance(want, tuple) and isinstance(want[0], type):  # an exception
        assert got == want
        return
    for g, w in zip(got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert type(g) is type(w) and np.array_equal(g, w, equal_nan=True)


@pytest.mark.parametrize("nan", [np.nan, -np.nan], ids=["nan", "-nan"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_nan_slices_are_scipys_bit_for_bit(nan: float, dtype: str, forced: None) -> None:
    a = np.random.default_rng(9).standard_normal((4, 30)).astype(dtype)
    a[1, 3] = a[2, 5] = nan
    for axis in (None, 0, 1):
        for return_sign in (False, True):
            got = np2t.logsumexp(a, axis=axis, return_sign=return_sign)
            want = scipy.special.logsumexp(a, axis=axis, return_sign=return_sign)
            for g, w in zip(got if return_sign else (got,), want if return_sign else (want,)):
                assert np.array_equal(np.asarray(g).view(f"u{a.itemsize}"), np.asarray(w).view(f"u{a.itemsize}"))


def test_pandas_goes_to_scipy(forced: None) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.0, -1.0, 5.0]})
    for value in (frame, frame["a"]):
        got = np2t.logsumexp(value, axis=0)
        want = scipy.special.logsumexp(value, axis=0)
        assert type(got) is type(want) and np.array_equal(got, want)


def test_under_warn_gives_scipys_warnings(forced: None) -> None:
    a = np.array([-1000.0, 0.0] * 50)
    with np.errstate(under="warn"):
        assert outcome(np2t.logsumexp, a) == outcome(scipy.special.logsumexp, a)
    with np.errstate(under="raise"):
        assert outcome(np2t.logsumexp, a) == outcome(scipy.special.logsumexp, a)


# ---------------------------------------------------------------- dispatch


@pytest.fixture
def torch_path_calls(monkeypatch: pytest.MonkeyPatch) -> list:
    calls: list = []
    real = lse._blockwise

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(lse, "_blockwise", spy)
    return calls


def test_small_arrays_go_straight_to_scipy(torch_path_calls: list, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any) -> None:
        raise AssertionError("guards ran below the size threshold")

    monkeypatch.setattr(lse, "_try_torch", refuse)
    a = np.ones(10)
    assert np2t.logsumexp(a) == scipy.special.logsumexp(a)


def test_thresholds_and_devices(torch_path_calls: list) -> None:
    from np2torch.runtime import _backend
    from np2torch.runtime._decision import route as _route

    _backend.load_torch()  # nothing to rent: the profile alone decides
    bands = _route.describe_bands("logsumexp", "float64", "cpu", "long-outer")
    first = next((start for start, path in bands if path != "numpy"), None)
    if first is None:
        pytest.skip("the built-in profile never sends float64 logsumexp along a long strided axis to torch")
    big = np.random.default_rng(6).standard_normal((max(2_000, -(-first // 3)), 3))  # axis 0: long-outer
    assert np2t.which("logsumexp", big, axis=0)[0] == "cpu"
    np2t.logsumexp(big, axis=0)
    assert len(torch_path_calls) == 1
    with np2t.using(device="numpy", min_size=0):
        np2t.logsumexp(big, axis=0)
    with np2t.using(min_size=10**9):
        np2t.logsumexp(big, axis=0)
    assert len(torch_path_calls) == 1
    with np2t.using(min_size=0):
        np2t.logsumexp(np.ones((3, 40)))
    assert len(torch_path_calls) == 2


def test_chunk_plan_prefers_contiguous_blocks() -> None:
    # C order (100, 50): rows are contiguous, so blocks are runs of rows.
    assert lse._chunk_dim((100, 50), (50, 1), 1000) == (0, 20)
    # A row does not fit: cut along the columns instead.
    assert lse._chunk_dim((100, 5000), (5000, 1), 1000) == (1, 10)
    # Nothing fits: the axis with the smallest slab, one index at a time.
    assert lse._chunk_dim((40, 40), (40, 1), 10) == (0, 1)


def test_pairwise_partial_sums() -> None:
    acc = lse._Pairwise()
    for value in range(1, 12):
        acc.add(value)
    assert acc.result() == sum(range(1, 12))


# ---------------------------------------------------------------- the check of the installed SciPy


def test_installed_scipy_passes_the_check() -> None:
    probes = list(lse_check.finite_probes()) + list(lse_check.infinite_probes())
    failing = [probe for probe in probes if not lse_check.agrees(scipy.special.logsumexp, lse._expected, probe)]
    assert not failing, f"scipy {scipy.__version__} differs from the torch path on {failing[:3]}"
    assert lse_check.check(scipy.special.logsumexp, lse._expected) == lse_check.LseVerdict(finite=True, infinite=True)


def test_the_check_is_cheap() -> None:
    # Its cost in work, not seconds (CI runs on a busy machine): one small call of each side per probe, a few
    # hundred elements in all (~7 ms on the 2-core VM).
    seen: dict[str, list[int]] = {"original": [], "expected": []}

    def original(a: Any, **kwargs: Any) -> Any:
        seen["original"].append(np.size(a))
        return scipy.special.logsumexp(a, **kwargs)

    def expected(a: Any, *args: Any) -> Any:
        seen["expected"].append(np.size(a))
        return lse._expected(a, *args)

    assert lse_check.check(original, expected) == lse_check.LseVerdict(finite=True, infinite=True)
    probes = len(list(lse_check.finite_probes())) + len(list(lse_check.infinite_probes()))
    for sizes in seen.values():
        assert len(sizes) == probes and sum(sizes) <= 2_000, sizes


@pytest.mark.parametrize("probe", list(lse_check.finite_probes()) + list(lse_check.infinite_probes()), ids=repr)
def test_every_probe_is_one_the_torch_path_serves(probe: lse_check.Probe) -> None:
    with np.errstate(over=probe.over):
        assert_parity(probe.a, probe.axis, probe.keepdims, probe.return_sign)


def _replace_values(result: Any, values: np.ndarray) -> Any:
    if isinstance(result, np.ndarray):
        result[...] = values
        return result
    return type(result)(values)


def scipy_before_1_15(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False) -> Any:
    """log(sum(exp(a - a_max))) + a_max, the formula before 1.15, laid out as 1.17 lays it out."""
    want = scipy.special.logsumexp(a, axis=axis, keepdims=keepdims, return_sign=return_sign)
    x = a.astype(a.dtype if a.dtype in (np.float32, np.float64) else np.float64)
    dims = tuple(range(x.ndim)) if axis is None else axis
    with np.errstate(all="ignore"):
        a_max = np.max(x, axis=dims, keepdims=True)
        a_max = np.where(np.isfinite(a_max), a_max, 0)
        values = np.log(np.sum(np.exp(x - a_max), axis=dims, keepdims=True)) + a_max
    values = values if keepdims else np.squeeze(values, axis=dims)
    if return_sign:
        return _replace_values(want[0], values), want[1]
    return _replace_values(want, values)


def scipy_1_16(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False) -> Any:
    """1.17 except that the sign of a +inf result is NaN (1.16's ``_sign(inf)``)."""
    want = scipy.special.logsumexp(a, axis=axis, keepdims=keepdims, return_sign=return_sign)
    if not return_sign:
        return want
    out, sign = want
    if isinstance(sign, np.ndarray):
        sign[np.isposinf(out)] = np.nan
    elif np.isposinf(out):
        sign = type(sign)(np.nan)
    return out, sign


def c_order_results(*args: Any, **kwargs: Any) -> Any:
    """1.17's values, every array result copied to C order."""
    want = scipy.special.logsumexp(*args, **kwargs)
    c_order = lambda value: np.ascontiguousarray(value) if isinstance(value, np.ndarray) else value  # noqa: E731
    return tuple(map(c_order, want)) if isinstance(want, tuple) else c_order(want)


def zero_d_results(*args: Any, **kwargs: Any) -> Any:
    """1.17's values, a 0-d array where 1.17 returns a NumPy scalar."""
    want = scipy.special.logsumexp(*args, **kwargs)
    return tuple(map(np.asarray, want)) if isinstance(want, tuple) else np.asarray(want)


def rejects_bool(a: Any, *args: Any, **kwargs: Any) -> Any:
    """1.15: bool input raises."""
    if a.dtype == bool:
        raise TypeError("bool input")
    return scipy.special.logsumexp(a, *args, **kwargs)


def leaks_divide_by_zero(a: Any, *args: Any, **kwargs: Any) -> Any:
    """A SciPy without its own errstate: log(0) reaches the caller's np.errstate."""
    np.log(np.sum(np.exp(a.astype(np.float64)), axis=kwargs.get("axis")))
    return scipy.special.logsumexp(a, *args, **kwargs)


def float64_results(a: Any, *args: Any, **kwargs: Any) -> Any:
    """float32 input promoted to a float64 result."""
    return scipy.special.logsumexp(a.astype(np.float64), *args, **kwargs)


STAND_INS = [
    pytest.param(scipy_before_1_15, False, False, id="textbook formula before 1.15"),
    pytest.param(scipy_1_16, True, False, id="1.16 sign of an infinite slice is NaN"),
    pytest.param(c_order_results, False, False, id="results in another layout"),
    pytest.param(zero_d_results, False, False, id="0-d arrays instead of scalars"),
    pytest.param(rejects_bool, False, False, id="1.15 raises on bool"),
    pytest.param(leaks_divide_by_zero, False, False, id="floating-point error escapes"),
    pytest.param(float64_results, False, False, id="float32 promoted to float64"),
]


@pytest.mark.parametrize("stand_in, finite, infinite", STAND_INS)
def test_the_check_fails_stand_ins_for_other_scipys(stand_in: Callable, finite: bool, infinite: bool) -> None:
    assert lse_check.check(stand_in, lse._expected) == lse_check.LseVerdict(finite, infinite)


def test_the_dominant_term_probe_alone_catches_the_textbook_formula() -> None:
    probe = lse_check.Probe(np.array([0.0, -40.0]))
    assert lse_check.agrees(scipy.special.logsumexp, lse._expected, probe)
    assert not lse_check.agrees(scipy_before_1_15, lse._expected, probe)


@pytest.fixture
def fresh_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check runs again, on whatever the helper's original is now."""
    monkeypatch.delitem(PROCESS.verdicts, "logsumexp", raising=False)


@pytest.mark.parametrize(
    "stand_in, finite_served, infinite_served",
    [
        pytest.param(None, True, True, id="installed scipy"),
        pytest.param(scipy_1_16, True, False, id="1.16"),
        pytest.param(scipy_before_1_15, False, False, id="before 1.15"),
        pytest.param(c_order_results, False, False, id="another layout"),
    ],
)
def test_dispatch_follows_the_verdict(stand_in: Optional[Callable], finite_served: bool, infinite_served: bool, fresh_verdict: None, monkeypatch: pytest.MonkeyPatch) -> None:
    if stand_in is not None:
        monkeypatch.setattr(lse.HELPER, "loaded", stand_in)
        monkeypatch.setattr(lse.HELPER, "original", stand_in)
    assert declines(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=0) is not finite_served
    assert declines(np.array([[1.0, np.inf], [3.0, 4.0]]), axis=0) is not infinite_served
    assert declines(np.array([[1.0, -np.inf], [3.0, -np.inf]]), axis=0) is not infinite_served


def test_the_check_runs_once_and_only_for_calls_that_could_use_torch(fresh_verdict: None, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list = []
    real = lse_check.check

    def counted(original: Callable, expected: Callable) -> Any:
        calls.append(original)
        return real(original, expected)

    monkeypatch.setattr(lse_check, "check", counted)
    np2t.logsumexp(np.ones(10))  # below the size gate
    with np2t.using(device="numpy", min_size=0):
        np2t.logsumexp(np.ones((30, 30)))
    assert calls == [] and "logsumexp" not in PROCESS.verdicts
    for _ in range(3):
        assert not declines(np.ones((30, 30)), axis=0)
    assert calls == [scipy.special.logsumexp]


def test_threads_that_check_at_once_keep_one_verdict(fresh_verdict: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # No lock is held over the check (it calls SciPy: test_runtime_concurrency.py), so threads may each check; they
    # find the same answer, and every one of them gets the one kept.
    calls: list = []
    real = lse_check.check

    def slow(original: Callable, expected: Callable) -> Any:
        calls.append(original)
        time.sleep(0.05)
        return real(original, expected)

    monkeypatch.setattr(lse_check, "check", slow)
    got: list = []
    threads = [threading.Thread(target=lambda: got.append(lse.HELPER.verdict())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert 1 <= len(calls) <= 4 and len(got) == 4
    assert all(verdict is PROCESS.verdicts["logsumexp"] for verdict in got)
    checked = len(calls)
    assert lse.HELPER.verdict() is got[0] and len(calls) == checked  # kept: a later call checks no more


# ---------------------------------------------------------------- processes and threads


def test_threads_each_with_their_own_errstate() -> None:
    # warnings.catch_warnings is process-wide, so the threads use under="raise"
    # (thread-local in NumPy 2) to see which path served them.
    a = np.random.default_rng(7).standard_normal((300, 40))
    a[0, 0] = -1000.0  # underflows in SciPy's exp
    want = scipy.special.logsumexp(a, axis=0)
    errors: list = []

    def work(under: str) -> None:
        try:
            with np2t.using(min_size=0), np.errstate(under=under):
                for _ in range(5):
                    if under == "raise":
                        with pytest.raises(FloatingPointError, match="underflow encountered in exp"):
                            np2t.logsumexp(a, axis=0)
                    else:
                        np.testing.assert_allclose(np2t.logsumexp(a, axis=0), want, rtol=1e-14)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(mode,)) for mode in ("ignore", "raise") * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]


def _child_logsumexp(seed: int) -> float:
    a = np.random.default_rng(seed).standard_normal((400, 400))
    return float(np2t.logsumexp(a))


@pytest.mark.skipif(sys.platform != "linux", reason="fork is the Linux default")
def test_forked_pool_does_not_hang() -> None:
    _child_logsumexp(0)  # the parent's thread pool is now up
    with multiprocessing.get_context("fork").Pool(2) as pool:
        got = pool.map_async(_child_logsumexp, [1, 2]).get(timeout=60)
    assert got == [_child_logsumexp(1), _child_logsumexp(2)]


def test_without_torch_everything_goes_to_scipy() -> None:
    code = textwrap.dedent(
        """
        import sys
        class NoTorch:
            def find_spec(self, name, path=None, target=None):
                if name == "torch" or name.startswith("torch."):
                    raise ImportError("torch hidden")
        sys.meta_path.insert(0, NoTorch())
        import numpy as np, scipy.special
        import np2torch.runtime as np2t
        a = np.random.default_rng(0).standard_normal((300, 300))
        with np2t.using(min_size=0):
            assert np.array_equal(np2t.logsumexp(a, axis=0), scipy.special.logsumexp(a, axis=0))
        assert "torch" not in sys.modules
        print("ok")
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


def test_import_does_not_load_scipy_or_torch() -> None:
    code = "import sys, np2torch.runtime; assert 'scipy' not in sys.modules and 'torch' not in sys.modules; print('ok')"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


@pytest.mark.cuda
def test_cuda_parity() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    a = np.random.default_rng(8).standard_normal((300, 200))
    want = scipy.special.logsumexp(a, axis=0)
    with np2t.using(device="cuda", min_size=0):
        got = np2t.logsumexp(a, axis=0)
    assert_structure(got, want)
    assert_close(got, want, a, 0, False)


# ---------------------------------------------------------------- short slices along the contiguous axis


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 16),
    st.integers(1, 300),
    st.sampled_from([np.float64, np.float32, np.int32, np.bool_]),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_short_slices_column_by_column_match_scipy(length: int, rows: int, dtype: Any, keepdims: bool, return_sign: bool,
                                                   data: st.DataObject) -> None:
    # The emcee shape (logsumexp(comp, axis=1) over a few components) takes the column-by-column path: rows in
    # blocks of 64 elements here (the fixture), ties, infinities and a third dimension included.
    elements = st.floats(-50, 50, width=32) if dtype in (np.float64, np.float32) else st.integers(-5, 5)
    if dtype is np.bool_:
        elements = st.booleans()
    a = data.draw(hnp.arrays(dtype, (rows, length), elements=elements))
    if dtype in (np.float64, np.float32) and data.draw(st.booleans()):
        a[data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, length - 1))] = data.draw(st.sampled_from([np.inf, -np.inf]))
    if data.draw(st.booleans()):
        a = a.reshape(1, rows, length)
    before = a.copy()
    assert_parity(a, -1, keepdims=keepdims, return_sign=return_sign)
    np.testing.assert_array_equal(a, before)  # the input is never written (a one-row block is a view of it)


def test_short_slices_take_the_column_path_and_give_the_same_bits_in_any_block_size(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = lse._short_rows
    monkeypatch.setattr(lse, "_short_rows", lambda *args: calls.append(args[0].shape) or real(*args))
    a = np.random.default_rng(3).standard_normal((5000, 3))
    small = on_torch(a, 1)
    monkeypatch.setattr(lse, "_CPU_BLOCK", PRODUCTION_BLOCK)
    assert on_torch(a, 1).tobytes() == small.tobytes()  # per row: the block boundaries change no bit
    assert calls == [(5000, 3), (5000, 3)]


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([(40, 3), (7, 5, 2), (1, 9), (12, 1), (6, 1, 4)]),
    st.sampled_from([np.float64, np.float32]),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_the_common_finish_gives_the_general_ones_bits_and_layout(shape: tuple[int, ...], dtype: Any, keepdims: bool,
                                                                   fortran: bool, data: st.DataObject) -> None:
    # Every maximum finite and reached once: finish's two-op shortcut must give what SciPy's full
    # expressions give, to the bit and the stride (a kept length-1 dimension included), or not be taken.
    a = data.draw(hnp.arrays(dtype, shape, elements=st.floats(-700, 700, width=32), unique=True))
    if fortran:
        a = np.asfortranarray(a)
    dims = (data.draw(st.integers(0, a.ndim - 1)),)
    view, flipped = lse._positive_strides(a)
    reduced = lse._reduce_like_blocks(view, dims, np.dtype(dtype))
    with np.errstate(all="ignore"):
        general = lean.finish(a, dims, flipped, reduced, np.dtype(dtype), keepdims, False)
        common = lean.finish(a, dims, flipped, reduced, np.dtype(dtype), keepdims, False, finite=True)
    assert type(common) is type(general)
    if isinstance(general, np.ndarray):
        assert common.strides == general.strides and common.dtype == general.dtype
    assert np.asarray(common).tobytes() == np.asarray(general).tobytes()


# ---------------------------------------------------------------- the lean path: SciPy's bits without its overhead


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 7),
    st.integers(1, 200),
    st.sampled_from([np.float64, np.float32]),
    st.booleans(),
    st.sampled_from(["C", "F", "3d", "1d"]),
    st.data(),
)
def test_the_lean_path_gives_scipys_bits_and_layout(length: int, rows: int, dtype: Any, keepdims: bool, layout: str,
                                                    data: st.DataObject) -> None:
    # Along one short contiguous axis the helper computes SciPy's own arithmetic in NumPy: the very bits
    # SciPy returns (not within a few ULP: equal), its type, dtype, shape and strides, ties and -inf included.
    a = data.draw(hnp.arrays(dtype, (rows, length), elements=st.floats(-300, 300, width=32)))
    if data.draw(st.booleans()):
        a = np.round(a / 8)  # ties: a maximum reached more than once
    if data.draw(st.booleans()):
        a[data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, length - 1))] = -np.inf
    axis: Any = 1
    if layout == "F":
        a, axis = np.ascontiguousarray(a).T, 0  # the reduced axis 0 is the contiguous one
    elif layout == "3d":
        a, axis = a.reshape(1, rows, length), -1
    elif layout == "1d":  # one slice: a scalar result (or a (1,) array with keepdims)
        a, axis = a[rows // 2].copy(), data.draw(st.sampled_from([None, 0, -1, (0,)]))
    found = lean.compute(a, axis, keepdims, False, lse.HELPER.load)
    want = scipy.special.logsumexp(a, axis=axis, keepdims=keepdims)
    if np.isfinite(np.max(a, axis=axis)).all():
        assert found is not None
    if found is not None:
        assert lse_check.same_result(found, want)
    got = np2t.logsumexp(a, axis=axis, keepdims=keepdims)  # the default dispatch, whichever path it takes
    assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape


def test_the_lean_path_serves_the_emcee_shape_where_torch_does_not() -> None:
    # A threshold no call reaches keeps torch out whatever this machine's profile says: the lean path serves.
    a = np.random.default_rng(5).normal(size=(5000, 3))
    with np2t.using(device="auto", min_size=10**12):
        TAKEN.device = None
        got = np2t.logsumexp(a, axis=1)
        assert TAKEN.device == "lean"
        TAKEN.device = None
        logits = a[7].copy()  # the mixture's weights, normalized: one slice, a scalar
        scalar = np2t.logsumexp(logits)
        assert TAKEN.device == "lean" and type(scalar) is np.float64
        assert scalar.tobytes() == scipy.special.logsumexp(logits).tobytes()
        path, why = np2t.which("logsumexp", a, axis=1)
        assert np2t.which("logsumexp", a.reshape(3, 5000), axis=0)[0] == "numpy"  # a strided axis: SciPy's
        assert "without its overhead" not in np2t.which("logsumexp", a.reshape(3, 5000), axis=0)[1]
    assert got.tobytes() == scipy.special.logsumexp(a, axis=1).tobytes()
    assert path == "numpy" and "SciPy's own arithmetic without its overhead" in why


@pytest.mark.parametrize(
    "case",
    ["return_sign", "nan", "long slices", "under", "two axes", "strided", "inf maximum", "int", "near overflow"],
)
def test_the_lean_path_leaves_to_scipy_what_it_does_not_reproduce(case: str) -> None:
    a = np.random.default_rng(6).normal(size=(50, 4))
    axis: Any = 1
    return_sign = case == "return_sign"
    if case == "nan":
        a[3, 2] = np.nan
    elif case == "long slices":
        a = np.random.default_rng(6).normal(size=(50, 8))  # NumPy's pairwise sum from eight terms on
    elif case == "two axes":
        a, axis = a.reshape(50, 2, 2), (1, 2)
    elif case == "strided":
        a = a[::2]
    elif case == "inf maximum":
        a[7, 1] = np.inf
    elif case == "int":
        a = (a * 10).astype(np.int64)
    elif case == "near overflow":
        a[0, 0] = 2.0**980
    with np.errstate(under="warn" if case == "under" else "ignore"):
        assert lean.compute(a, axis, False, return_sign, lse.HELPER.load) is None


def test_the_lean_check_catches_another_order_of_the_additions() -> None:
    # The probes' sums round differently in other orders: a lean path adding each slice backwards fails.
    def backwards(a: np.ndarray, axis: Any, keepdims: bool, return_sign: bool) -> Any:
        flipped = np.flip(a, axis).copy(order="K")
        return lean.compute(flipped, axis, keepdims, return_sign, None)

    original = scipy.special.logsumexp
    assert lse_check.check_lean(original, functools.partial(lean.compute, original=None))
    assert not lse_check.check_lean(original, backwards)


def _line_of(function: Callable[..., Any], text: str) -> int:
    """The line number of the first line of ``function``'s source holding ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="POSIX signals")
def test_a_signal_handler_calling_the_helper_inside_a_block_leaves_both_results_exact() -> None:
    # A Python signal handler runs between two bytecodes of the main thread, here inside `_block_sums` once the
    # block's buffer holds `x - a_max`.  Its own large logsumexp used to overwrite the thread's block buffers, and
    # the interrupted call returned a wrong value, silently.  SciPy's logsumexp is re-entrant; so is the helper.
    # (A trace function raises the signal at that line: the same moment on every run, whatever the machine's speed.)
    import torch

    rng = np.random.default_rng(11)
    a, b = rng.standard_normal(2_000_000), rng.standard_normal(2_000_000) * 3
    block_sums = lse._block_sums.__code__
    at = _line_of(lse._block_sums, "if isinstance(holds, str):")
    seen: dict = {}

    def handler(signum: int, frame: Any) -> None:
        inside = sys._getframe()
        while inside is not None and inside.f_code is not block_sums:
            inside = inside.f_back
        seen["inside a block"] = inside is not None
        seen["b"] = np2t.logsumexp(b)

    def local(frame: Any, event: str, arg: object) -> Any:
        if event == "line" and frame.f_lineno == at and "b" not in seen:
            sys.settrace(None)
            signal.raise_signal(signal.SIGUSR1)
            return None
        return local

    def tracer(frame: Any, event: str, arg: object) -> Any:
        return local if frame.f_code is block_sums else None

    threads = torch.get_num_threads()
    previous = signal.signal(signal.SIGUSR1, handler)
    torch.set_num_threads(1)  # every block in this thread, where the trace function and the handler run
    try:
        with np2t.using(device="cpu", min_size=0):
            want_a, want_b = np2t.logsumexp(a), np2t.logsumexp(b)
            assert TAKEN.device == "cpu"
            sys.settrace(tracer)
            try:
                got_a = np2t.logsumexp(a)
            finally:
                sys.settrace(None)
    finally:
        torch.set_num_threads(threads)
        signal.signal(signal.SIGUSR1, previous)
    assert seen.get("inside a block") is True
    assert (got_a.tobytes(), seen["b"].tobytes()) == (want_a.tobytes(), want_b.tobytes())
