"""The two-argument helpers (hypot, arctan2, logaddexp, xlogy, xlog1py) return what the originals return.

For every row of kind ``binary``: the torch path itself (forced, ``min_size=0``)
against the original over the loops the row lists, broadcasting, layouts,
Python scalars, dtype mixes, every pair of special values and the error
states; and the calls that go to the original (keywords, subclasses, other
dtypes, shapes that do not broadcast), with their results, warnings and errors.
Values: NaN/inf/zero identical (signs included), finite values within 4 ULP.
"""

from __future__ import annotations

import inspect
import itertools
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from runtime_checks import assert_same_values, outcome

import np2torch.runtime as np2t
from np2torch.runtime.table import BINARY, FUNCTIONS

ROWS = [row for row in FUNCTIONS if row.kind == BINARY]
NAMES = [row.name for row in ROWS]


def original(name: str) -> Callable[..., Any]:
    row = next(row for row in ROWS if row.name == name)
    return getattr(scipy.special if row.module == "scipy.special" else np, name)


def assert_parity(name: str, x1: Any, x2: Any, *, on_torch: bool = True) -> None:
    with np2t.using(device="cpu", min_size=0):
        if on_torch:
            assert np2t.which(name, x1, x2)[0] == "cpu", np2t.which(name, x1, x2)
        got, got_warnings = outcome(getattr(np2t, name), x1, x2)
    want, want_warnings = outcome(original(name), x1, x2)
    assert got_warnings == want_warnings
    if isinstance(want, tuple):
        assert got == want
        return
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray):
        assert got.strides == want.strides, (got.strides, want.strides)
        assert got.flags.c_contiguous == want.flags.c_contiguous and got.flags.f_contiguous == want.flags.f_contiguous
    assert_same_values(np.asarray(got), np.asarray(want))


def operands(name: str, dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    row = next(row for row in ROWS if row.name == name)
    low, high = row.domain
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


def loops(name: str) -> list[str]:
    return list(next(row for row in ROWS if row.name == name).loops)


CASES = [pytest.param(name, dtype, id=f"{name}-{dtype}") for name in NAMES for dtype in loops(name)]


@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_broadcasting_and_layouts(name: str, dtype: str) -> None:
    a = operands(name, dtype, (6, 5, 4), 1)
    b = operands(name, dtype, (6, 5, 4), 2)
    layouts: list[Callable[[np.ndarray], np.ndarray]] = [
        lambda v: v, np.asfortranarray, lambda v: v.transpose(2, 0, 1).copy().transpose(1, 2, 0),
        lambda v: v[::-1, :, ::-2], lambda v: v[:, :1, :],
    ]
    for left, right in itertools.product(layouts, repeat=2):
        x, y = left(a), right(b)
        try:
            np.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            assert_parity(name, x, y, on_torch=False)  # the original's error
            continue
        assert_parity(name, x, y)
    assert_parity(name, a, b[0, 0])  # (6, 5, 4) with (4,)
    assert_parity(name, a[:, :1], b[:1])  # (6, 1, 4) with (1, 5, 4)
    assert_parity(name, a[0, 0, 0:1].reshape(()), b)  # a 0-d array
    assert_parity(name, np.broadcast_to(a[0], (6, 5, 4)), b)  # a zero-stride operand


@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_python_scalars_are_weak(name: str, dtype: str) -> None:
    a = operands(name, dtype, (30, 7), 3)
    for scalar in (2.0, 3, 0.5):
        assert_parity(name, a, scalar)
        assert_parity(name, scalar, a)


@pytest.mark.parametrize("name", NAMES)
def test_dtype_mixes_follow_numpys_resolution(name: str) -> None:
    a = operands(name, "float64", (20, 9), 4)
    served = loops(name)
    for first, second in [("float32", "float64"), ("int64", "float64"), ("int32", "float32"), ("int8", "int8"),
                          ("float16", "float32"), ("bool", "float64"), ("float32", "float32")]:
        x, y = a.astype(first), a[::-1].astype(second)
        with np.errstate(all="ignore"):
            loop = np.asarray(original(name)(x[:1], y[:1])).dtype.name
        assert_parity(name, x, y, on_torch=loop in served and np.can_cast(first, loop) and np.can_cast(second, loop))


SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.0, 1e-300, -1e-300, 5e-324, 1e300, -1e300,
           1.7976931348623157e308, -1.7976931348623157e308, 700.0, -745.0]


@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_every_pair_of_special_values(name: str, dtype: str) -> None:
    with np.errstate(over="ignore"):
        values = np.array(SPECIAL).astype(dtype)
    x, y = np.repeat(values, values.size), np.tile(values, values.size)
    for mode in ("ignore", "warn", "raise"):
        with np.errstate(divide=mode, over=mode, invalid=mode, under="ignore"):
            assert_parity(name, x, y)
            assert_parity(name, x.reshape(values.size, -1), y[: values.size])


@pytest.mark.parametrize("name", NAMES)
def test_underflow_reported_goes_to_the_original(name: str) -> None:
    x = operands(name, loops(name)[-1], (40,), 5)
    with np2t.using(device="cpu", min_size=0), np.errstate(under="warn"):
        assert np2t.which(name, x, x)[0] == "numpy"
        assert outcome(getattr(np2t, name), x, x)[1] == outcome(original(name), x, x)[1]


@pytest.mark.parametrize("name", [row.name for row in ROWS if row.module == "scipy.special"])
def test_scipy_errstate_reporting_goes_to_scipy(name: str) -> None:
    x = np.array([1.0, -1.0, 0.0, 2.0] * 10)
    with np2t.using(device="cpu", min_size=0), scipy.special.errstate(all="raise"):
        got, want = outcome(getattr(np2t, name), x, x[::-1].copy()), outcome(original(name), x, x[::-1].copy())
    assert type(got[0]) is type(want[0]) and got[1] == want[1]


class Sub(np.ndarray):
    pass


@pytest.mark.parametrize("name", NAMES)
def test_keywords_subclasses_and_others_go_to_the_original(name: str) -> None:
    dtype = loops(name)[-1]
    a, b = operands(name, dtype, (8, 5), 6), operands(name, dtype, (8, 5), 7)
    out = np.empty_like(a)
    calls = [
        ((a, b), {"out": out}), ((a, b, out), {}), ((a, b), {"where": a > a.mean()}), ((a, b), {"dtype": "float64"}),
        ((a, b), {"casting": "no"}), ((a.view(Sub), b), {}), ((a.tolist(), b), {}), ((a, b[:3]), {}),
        ((a, np.float64(2.0)), {}), ((a, "x"), {}), ((a.astype(np.complex128), b), {}), ((a, b), {"order": "F"}),
    ]
    if next(row for row in ROWS if row.name == name).module == "scipy.special":
        # scipy.special ufuncs corrupt the heap with where= (SciPy 1.17, scipy/xsf#146): the helper hands such a
        # call to SciPy unchanged (as erf's, docs/rules.md), so it is not made here.
        calls = [(args, kwargs) for args, kwargs in calls if "where" not in kwargs]
    with np2t.using(device="cpu", min_size=0):
        for args, kwargs in calls:
            got, want = outcome(getattr(np2t, name), *args, **kwargs), outcome(original(name), *args, **kwargs)
            assert got[1] == want[1], (args, kwargs)
            if isinstance(want[0], tuple):
                assert got[0] == want[0]
                continue
            assert type(got[0]) is type(want[0])
            np.testing.assert_array_equal(got[0], want[0])
            if isinstance(want[0], np.ndarray):
                assert got[0].strides == want[0].strides


@pytest.mark.parametrize("name", NAMES)
def test_below_the_floor_and_run_path(name: str) -> None:
    from np2torch.runtime._api import HELPERS

    dtype = loops(name)[-1]
    a, b = operands(name, dtype, (40, 30), 8), operands(name, dtype, (40, 30), 9)
    with np2t.using(device="cpu", min_size=10**9):
        assert np2t.which(name, a, b)[0] == "numpy"
        assert np.array_equal(getattr(np2t, name)(a, b), original(name)(a, b))
    helper = HELPERS[name]
    x = operands(name, dtype, (64, 32), 10)
    want = helper.run_path("numpy", x)
    assert_same_values(np.asarray(helper.run_path("cpu", x)), np.asarray(want))
    with pytest.raises(ValueError, match="CUDA"):
        helper.run_path("cuda", x)


@pytest.mark.parametrize("name", NAMES)
def test_dask_goes_through_the_original(name: str) -> None:
    da = pytest.importorskip("dask.array")
    a = operands(name, loops(name)[-1], (20, 10), 11)
    x = da.from_array(a, chunks=5)
    got, want = getattr(np2t, name)(x, a), original(name)(x, a)
    assert type(got) is type(want)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@settings(max_examples=120, deadline=None)
@given(st.sampled_from([(name, dtype) for name in NAMES for dtype in loops(name)]), st.data())
def test_hypothesis(case: tuple[str, str], data: st.DataObject) -> None:
    name, dtype = case
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, base_shape=shape))
    width = 16 if dtype == "float16" else 32 if dtype == "float32" else 64
    elements = st.floats(width=width, allow_subnormal=True)
    x = data.draw(hnp.arrays(dtype, shapes.input_shapes[0], elements=elements))
    y = data.draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=elements))
    if data.draw(st.booleans()):
        x = np.asfortranarray(x)
    with np.errstate(all="ignore"):
        assert_parity(name, x, y)


def _random_layout(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    a = rng.standard_normal(shape)
    kind = rng.integers(0, 6)
    if kind == 5 and a.ndim:  # a broadcast view: a zero stride, which a cast copy does not keep
        return np.broadcast_to(a[..., :1], shape)
    if kind == 1:
        return np.asfortranarray(a)
    if kind == 2 and a.ndim > 1:
        perm = rng.permutation(a.ndim)
        return np.ascontiguousarray(a.transpose(perm)).transpose(np.argsort(perm))
    if kind in (3, 4) and a.ndim:
        index = [slice(None)] * a.ndim
        axis = int(rng.integers(0, a.ndim))
        if kind == 3:
            index[axis] = slice(None, None, -1)
            return a[tuple(index)]
        index[axis] = slice(None, None, 2)
        return np.repeat(a, 2, axis=axis)[tuple(index)]
    return a


def test_result_layout_is_the_ufuncs() -> None:
    """The helper's allocation against np.hypot's over random pairs: layouts, broadcasting, length-1 axes, casts."""
    from np2torch.runtime._binary import _allocate

    rng = np.random.default_rng(12)
    checked = 0
    for _ in range(3000):
        ndim = int(rng.integers(1, 4))
        base = tuple(int(v) for v in rng.integers(1, 4, ndim))
        first = _random_layout(rng, tuple(1 if rng.random() < 0.3 else n for n in base))
        second: Any = _random_layout(rng, tuple(1 if rng.random() < 0.3 else n for n in base)[int(rng.integers(0, ndim + 1)):])
        if rng.random() < 0.2:
            second = 2.0
        if rng.random() < 0.3:
            first = first.astype(np.int64) if rng.random() < 0.5 else first.astype(np.float32)
        want = np.hypot(first, second)
        loop = want.dtype
        got = _allocate(first, second, first.astype(loop), np.asarray(second, dtype=loop), loop)
        assert got.shape == want.shape and got.strides == want.strides, (first.strides, np.shape(second), want.strides, got.strides)
        checked += 1
    assert checked == 3000


@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_default_settings(name: str, dtype: str) -> None:
    """Without using(): the shipped profile decides the path (the original, for rows it has no curve of); same result."""
    a, b = operands(name, dtype, (300, 70), 13), operands(name, dtype, (70,), 14)
    got, want = outcome(getattr(np2t, name), a, b), outcome(original(name), a, b)
    assert got[1] == want[1]
    assert got[0].strides == want[0].strides
    assert_same_values(got[0], want[0])


@pytest.mark.parametrize("name", NAMES)
def test_signature_is_the_originals(name):
    assert inspect.signature(getattr(np2t, name)) == inspect.signature(original(name))


@pytest.mark.parametrize("name", NAMES)
def test_a_length_one_axis_with_a_negative_stride(name):
    # C-contiguous all the same (a length-1 axis's stride does not count): torch still rejects it.
    dtype = next(row for row in ROWS if row.name == name).loops.keys().__iter__().__next__()
    x = np.linspace(0.5, 2, 6, dtype=dtype).reshape(6, 1)[:, ::-1]
    assert x.strides[1] < 0 and x.flags.c_contiguous
    assert_parity(name, x, np.linspace(1, 3, 4, dtype=dtype).reshape(1, 4))
    assert_parity(name, x, 2.0)


class _Duck:
    """A duck array: ufuncs through ``__array_ufunc__``, every other NumPy function refused."""

    def __init__(self, value: np.ndarray) -> None:
        self.value = value

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        inputs = tuple(x.value if isinstance(x, _Duck) else x for x in inputs)
        return _Duck(getattr(ufunc, method)(*inputs, **kwargs))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return NotImplemented


@pytest.mark.parametrize("min_size", [None, 0], ids=["default settings", "torch forced"])
@pytest.mark.parametrize("name", NAMES)
def test_a_duck_array_beside_an_ndarray_is_the_originals(name, min_size):
    # np.shape(duck) calls its __array_function__, which refuses it: the helper raised TypeError.
    x = np.linspace(0.5, 2, 50, dtype=next(iter(next(row for row in ROWS if row.name == name).loops)))
    for args in ((x, _Duck(x)), (_Duck(x), x)):
        with np2t.using(min_size=min_size):
            got = getattr(np2t, name)(*args)
        want = original(name)(*args)
        assert type(got) is _Duck
        assert got.value.tobytes() == want.value.tobytes()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "args, kwargs",
    [((), {}), ((np.ones(3),), {}), ((), {"x1": np.ones(3), "x2": np.ones(3)}), ((np.ones(3),), {"x2": np.ones(3)}),
     ((np.ones(3),), {"out": np.ones(3)})],
    ids=["nothing", "one input", "both by keyword", "the second by keyword", "one input and out"],
)
def test_a_call_without_both_inputs_raises_the_originals_type_error(name, args, kwargs):
    assert outcome(getattr(np2t, name), *args, **kwargs) == outcome(original(name), *args, **kwargs)


def _call_here(function: Callable[..., Any], x1: Any, x2: Any) -> Any:
    return function(x1, x2)  # the line both the original's and the helper's warnings name


def _outcome_here(function: Callable[..., Any], x1: Any, x2: Any) -> Any:
    """What a call did, its warnings with the file and line they name."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = _call_here(function, x1, x2)
        except Exception as exc:
            value = (type(exc), str(exc))
    return value, [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


class _ReadsTheErrorState:
    def _state(self, other: object) -> str:
        return "/".join(f"{kind}={mode}" for kind, mode in sorted(np.geterr().items())) + str(np.geterrcall())

    hypot = arctan2 = logaddexp = _state


def _hot_path_operands(name: str) -> list[tuple[Any, Any]]:
    pairs: list[tuple[Any, Any]] = []
    with np.errstate(all="ignore"):
        for dtype in [*loops(name), "float64", "float32", "int64", "int8"]:
            values = np.array(SPECIAL).astype(dtype)
            pairs += [(np.repeat(values, 4), np.tile(values, 4)), (values[:, None], values[None, :4]), (values, 0.5),
                      (3, values), (values, 70000), (values, 1e39)]
    a = operands(name, loops(name)[-1], (6, 5), 12)
    pairs += [
        (a, a[:3]),  # shapes that do not broadcast
        (a.astype(a.dtype.newbyteorder()), a),  # non-native byte order
        (a.astype(object), a),
        # Objects whose methods NumPy runs: they see the caller's own error state, as without np2torch.
        (np.array([_ReadsTheErrorState()] * 3), np.array([_ReadsTheErrorState()] * 3)),
        (a[:0], a[:0]),  # empty
        (a[::2, ::-1], a[0]),  # strided, broadcast
    ]
    return pairs


_ERROR_STATES = [
    {}, {"all": "raise"}, {"all": "ignore"}, {"all": "warn"}, {"over": "warn", "invalid": "raise"}, {"all": "print"},
]


@pytest.mark.parametrize("state", _ERROR_STATES, ids=str)
@pytest.mark.parametrize("min_size", [None, 10**9], ids=["default settings", "below an explicit floor"])
@pytest.mark.parametrize("name", NAMES)
def test_repeated_calls_below_the_floor_are_the_originals(name, min_size, state, monkeypatch):
    # A call whose loop and floor are known takes the helper's hot path from its second call on: the
    # original's result, errors and warnings, at the caller's line, as the first call's full path gives them.
    from np2torch.runtime import _binary
    from np2torch.runtime._exact.errstate import may_warn_in_a_cast

    prepared: list[Any] = []
    real_prepare = _binary.Binary.prepare
    monkeypatch.setattr(_binary.Binary, "prepare", lambda self, *a, **k: prepared.append(a) or real_prepare(self, *a, **k))
    helper = getattr(np2t, name)
    with np2t.using(min_size=min_size):
        for x1, x2 in _hot_path_operands(name):
            with np.errstate(**state):
                want = _outcome_here(original(name), x1, x2)
                first = _outcome_here(helper, x1, x2)
                # A call whose cast may warn is the original's, plainly: its warnings point into the runtime
                # (docs/runtime.md: the redirect would misname a cast's).
                where = slice(None, 2) if may_warn_in_a_cast(2, (x1, x2), {}) else slice(None)
                for got in (first, _outcome_here(helper, x1, x2), _outcome_here(helper, x1, x2)):
                    assert [w[where] for w in got[1]] == [w[where] for w in want[1]], (x1, x2)
                    assert got[1] == first[1]
                    if isinstance(want[0], tuple):
                        assert got[0] == want[0]
                        continue
                    assert type(got[0]) is type(want[0])
                    assert np.asarray(got[0]).dtype == np.asarray(want[0]).dtype
                    np.testing.assert_array_equal(got[0], want[0])
                    if isinstance(want[0], np.ndarray):
                        assert got[0].strides == want[0].strides
    if min_size is not None:  # (under a machine's profile, a call this small may be torch's: the full path)
        # The full path for first calls, and for the calls the hot path hands on (scalars a cast may overflow).
        assert len(prepared) < 2 * len(_hot_path_operands(name))
