"""np2torch.runtime on Dask arrays, on one machine and on a two-process LocalCluster (docs/scaling.md).

The helpers build the graph the original builds (dtype, shape, chunks, meta,
keywords, errors), with np2torch computing each block; ``logsumexp`` computes a
tree reduction whose results are SciPy's within its documented bounds, and
returns what SciPy returns (an ``ndarray`` or NumPy scalar: SciPy computes;
lazy only where SciPy is, under ``SCIPY_ARRAY_API=1``); the lazy reduction
itself is ``np2torch.runtime.dask.logsumexp``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import warnings
from typing import Any, Callable, Iterator, List

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
sc = pytest.importorskip("scipy.special")

import np2torch.runtime as np2t  # noqa: E402
from np2torch.runtime._api import HELPERS as RUNTIME_HELPERS  # noqa: E402
from np2torch.runtime._dask import explicit_settings, is_dask_array  # noqa: E402
from np2torch.runtime.dask import logsumexp as lazy_logsumexp  # noqa: E402
from np2torch.runtime.table import FUNCTIONS_BY_NAME  # noqa: E402

ELEMENTWISE = [row for row in FUNCTIONS_BY_NAME.values() if row.kind == "elementwise"]
ORIGINALS = {row.name: getattr(np if row.module == "numpy" else sc, row.name) for row in ELEMENTWISE}
HELPERS = {row.name: RUNTIME_HELPERS[row.name].function for row in ELEMENTWISE}
SYNC = {"scheduler": "synchronous"}


def _inputs(name: str, dtype: str, shape=(50, 40), seed: int = 0) -> np.ndarray:
    """Inputs from the function's domain in the table (integers: its range, rounded)."""
    low, high = FUNCTIONS_BY_NAME[name].domain
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


def _same_array(ours: Any, theirs: Any) -> None:
    assert type(ours) is type(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape and ours.chunks == theirs.chunks
    assert type(ours._meta) is type(theirs._meta)
    assert ours._meta.dtype == theirs._meta.dtype and ours._meta.shape == theirs._meta.shape


# ---------------------------------------------------------------- elementwise helpers


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16"])
@pytest.mark.parametrize("name", sorted(HELPERS))
def test_a_helper_builds_the_originals_graph_and_values(name: str, dtype: str) -> None:
    x = da.from_array(_inputs(name, dtype), chunks=(20, 15))
    ours, theirs = HELPERS[name](x), ORIGINALS[name](x)
    _same_array(ours, theirs)
    assert ours.name != theirs.name and ours.name.startswith(f"{name}-")
    with np.errstate(all="ignore"):  # rounded integers may leave the domain (log(0)): the same values either way
        np.testing.assert_array_equal(ours.compute(**SYNC), theirs.compute(**SYNC))


def test_keywords_are_the_originals() -> None:
    xn = _inputs("exp", "float32")
    x = da.from_array(xn, chunks=(20, 15))
    target = da.zeros(x.shape, dtype="float32", chunks=(25, 25))
    assert np2t.exp(x, out=target) is target
    np.testing.assert_array_equal(target.compute(**SYNC), np.exp(xn))
    target = da.zeros(x.shape, dtype="float32", chunks=(25, 25))
    assert np2t.exp(x, target) is target  # positional out, as NumPy normalizes it
    mask = da.from_array(xn > 0, chunks=(20, 15))
    for kwargs in ({"dtype": "float64"}, {"where": mask, "out": da.ones(x.shape, dtype="float32")}, {"out": (None,)}):
        ours, theirs = np2t.exp(x, **kwargs), np.exp(x, **kwargs)
        _same_array(ours, theirs)
        np.testing.assert_array_equal(ours.compute(**SYNC), theirs.compute(**SYNC))


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"casting": "unsafe"}, id="a keyword Dask does not take"),
        pytest.param({"out": np.empty((50, 40), "float32")}, id="a NumPy out"),
        pytest.param({"out": (da.zeros(3), da.zeros(3))}, id="two outputs"),
    ],
)
def test_what_the_original_rejects_is_rejected_alike(kwargs: dict) -> None:
    x = da.from_array(_inputs("exp", "float32"), chunks=(20, 15))
    with pytest.raises(Exception) as theirs:
        np.exp(x, **kwargs)
    with pytest.raises(type(theirs.value)) as ours:
        np2t.exp(x, **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_nothing_is_computed_until_compute() -> None:
    calls: List[int] = []

    def source(block: np.ndarray) -> np.ndarray:
        calls.append(1)
        return block

    x = da.from_array(_inputs("log", "float64"), chunks=(25, 20)).map_blocks(source, dtype="float64", meta=np.empty((0, 0)))
    results = [np2t.exp(x), np2t.log(x), np2t.erf(x), lazy_logsumexp(x, axis=0), lazy_logsumexp(x, b=x, return_sign=True)[0]]
    assert calls == []
    for result in results:
        result.compute(**SYNC)
    assert calls


@pytest.mark.parametrize("min_size", [None, 0], ids=["profile", "torch forced"])
def test_floating_point_errors_come_at_compute_as_the_originals(min_size: Any) -> None:
    x = da.from_array(np.array([1.0, 800.0, -1.0, 2.0]), chunks=2)
    with np2t.using(min_size=min_size):
        ours = np2t.exp(x)
    theirs = np.exp(x)
    with warnings.catch_warnings(record=True) as ours_seen:
        warnings.simplefilter("always")
        ours_values = ours.compute(**SYNC)
    with warnings.catch_warnings(record=True) as theirs_seen:
        warnings.simplefilter("always")
        theirs_values = theirs.compute(**SYNC)
    np.testing.assert_array_equal(ours_values, theirs_values)
    assert [str(w.message) for w in ours_seen] == [str(w.message) for w in theirs_seen] == ["overflow encountered in exp"]
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            theirs.compute(**SYNC)
        with pytest.raises(FloatingPointError, match="overflow"):
            ours.compute(**SYNC)
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        ours.compute(**SYNC)


def test_the_ndarray_path_never_looks_at_dask(monkeypatch: pytest.MonkeyPatch) -> None:
    class Exploding:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError("dask.array touched on the ndarray path")

    monkeypatch.setitem(sys.modules, "dask.array", Exploding())
    small, large = np.ones(10), np.ones(200_000)
    assert np2t.exp(small)[0] == np.e and np2t.exp(large)[0] == np.e
    assert np2t.logsumexp(small) == sc.logsumexp(small)
    assert np2t.logsumexp(large) == pytest.approx(sc.logsumexp(large), rel=1e-15)


def test_dask_is_imported_only_when_given_a_dask_array() -> None:
    script = textwrap.dedent(
        """
        import sys
        import numpy as np
        import np2torch.runtime as np2t
        np2t.exp(np.ones(10)); np2t.exp([1.0, 2.0]); np2t.exp(2.0); np2t.logsumexp([1.0, 2.0]); np2t.erf(np.ones(3))
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed", "xarray")))
        """
    )
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "[]"
    assert not is_dask_array(np.ones(3)) and is_dask_array(da.ones(3))


# ---------------------------------------------------------------- logsumexp


def _ulps(ours: np.ndarray, theirs: np.ndarray, scale: np.ndarray) -> float:
    """Worst distance in ULPs of max(|SciPy's result|, |a_max|), as docs/logsumexp.md measures."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    finite = np.isfinite(theirs)
    np.testing.assert_array_equal(ours[~finite & ~np.isnan(theirs)], theirs[~finite & ~np.isnan(theirs)])
    if not finite.any():
        return 0.0
    unit = np.spacing(np.maximum(np.abs(theirs), np.abs(np.asarray(scale, theirs.dtype)))[finite])
    return float(np.max(np.abs(ours[finite].astype(np.float64) - theirs[finite]) / unit))


def _lse_input(dtype: str, shape=(60, 45), seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.normal(0.0, 10.0, shape)
    values[3, :] += 40.0  # one dominant term in some slices
    values[:, shape[1] // 2] = values[0, shape[1] // 2]  # ties: several maxima in one slice
    if np.dtype(dtype).kind in "iub":
        return (values > 0) if dtype == "bool" else values.astype(dtype)
    return values.astype(dtype)


AXES = [None, 0, 1, -1, (0, 1), (1, 0)]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_is_scipys_as_a_reduction(dtype: str, axis: Any, keepdims: bool) -> None:
    an = _lse_input(dtype)
    a = da.from_array(an, chunks=(13, 10))
    ours = lazy_logsumexp(a, axis=axis, keepdims=keepdims)
    theirs = sc.logsumexp(an, axis=axis, keepdims=keepdims)
    own = da.max(a.astype(theirs.dtype), axis=axis, keepdims=keepdims)  # Dask's own reduction: the layout SciPy gives on Dask
    assert (ours.dtype, ours.shape, ours.chunks) == (theirs.dtype, np.shape(theirs), own.chunks)
    assert type(ours._meta) is np.ndarray and ours._meta.dtype == theirs.dtype and ours._meta.ndim == np.ndim(theirs)
    computed = ours.compute(**SYNC)
    assert type(computed) is type(theirs)
    a_max = np.max(an.astype(theirs.dtype), axis=axis, keepdims=keepdims)
    assert _ulps(computed, theirs, a_max) <= 4


@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"axis": (0, 1), "keepdims": True}, {"axis": 1, "return_sign": True},
                                    {"axis": 0, "b": 2.0}, {"return_sign": True}], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_logsumexp_returns_what_scipy_returns_for_a_dask_array(kwargs: dict, dtype: str) -> None:
    # SciPy 1.17 computes a Dask array's logsumexp (an ndarray or a NumPy scalar): a fix must not
    # turn it into a lazy Dask array. The work is np2torch's reduction on the graph.
    an = _lse_input(dtype)
    a = da.from_array(an, chunks=(13, 10))
    with np.errstate(all="ignore"):
        ours, theirs = np2t.logsumexp(a, **kwargs), sc.logsumexp(a, **kwargs)
    ours_parts, theirs_parts = (ours, theirs) if kwargs.get("return_sign") else ((ours,), (theirs,))
    assert type(ours) is type(theirs) and len(ours_parts) == len(theirs_parts)
    for got, want in zip(ours_parts, theirs_parts):
        assert type(got) is type(want) and got.dtype == want.dtype and np.shape(got) == np.shape(want)
        a_max = np.max(an, axis=kwargs.get("axis"), keepdims=kwargs.get("keepdims", False))
        assert _ulps(np.asarray(got), np.asarray(want), a_max) <= 4


def test_the_lazy_logsumexp_is_the_helpers_reduction_and_only_for_dask_arrays() -> None:
    an = _lse_input("float64")
    a = da.from_array(an, chunks=(13, 10))
    lazy = lazy_logsumexp(a, axis=1)
    assert is_dask_array(lazy)
    np.testing.assert_array_equal(lazy.compute(**SYNC), np2t.logsumexp(a, axis=1))
    assert lazy_logsumexp(an, axis=1).tobytes() == np2t.logsumexp(an, axis=1).tobytes()


@pytest.mark.parametrize("axis", [None, 0, 1], ids=str)
def test_logsumexp_special_values_and_sign(axis: Any) -> None:
    an = _lse_input("float64", shape=(8, 6))
    an[:, 0] = -np.inf  # an all -inf slice
    an[2, 1] = np.inf
    an[5, 2] = np.nan
    an[:4, 3] = -np.inf  # a block of -inf beside finite blocks
    a = da.from_array(an, chunks=(3, 4))
    ours = lazy_logsumexp(a, axis=axis, return_sign=True)
    theirs = sc.logsumexp(an, axis=axis, return_sign=True)
    assert isinstance(ours, tuple) and len(ours) == 2
    values, signs = (part.compute(**SYNC) for part in ours)
    assert _ulps(values, theirs[0], np.nanmax(an, axis=axis)) <= 4
    np.testing.assert_array_equal(signs, theirs[1])
    assert signs.dtype == theirs[1].dtype


@pytest.mark.parametrize(
    "make_b",
    [
        pytest.param(lambda an: an, id="b an array like a"),
        pytest.param(lambda an: np.where(an > 5, -1.0, 0.5), id="negative weights"),
        pytest.param(lambda an: np.linspace(0, 1, an.shape[1]), id="b broadcast"),
        pytest.param(lambda an: [2.0], id="b a list"),
    ],
)
@pytest.mark.parametrize("return_sign", [False, True])
def test_logsumexp_with_b_is_scipys(make_b: Callable[[np.ndarray], Any], return_sign: bool) -> None:
    an = _lse_input("float64", shape=(30, 20))
    bn = make_b(an)
    a = da.from_array(an, chunks=(7, 8))
    b = da.from_array(bn, chunks=8) if isinstance(bn, np.ndarray) and bn.ndim == 1 else bn
    with np.errstate(all="ignore"):
        theirs = sc.logsumexp(an, axis=0, b=bn, return_sign=return_sign)
        ours = lazy_logsumexp(a, axis=0, b=b, return_sign=return_sign)
        computed = tuple(part.compute(**SYNC) for part in ours) if return_sign else (ours.compute(**SYNC),)
    expected = theirs if return_sign else (theirs,)
    for got, want in zip(computed, expected):
        np.testing.assert_allclose(got, want, rtol=4e-16, atol=0, equal_nan=True)


@pytest.mark.parametrize(
    "an",
    [
        pytest.param(np.array(3.5), id="0-d"),
        pytest.param(np.empty((0, 4)), id="empty"),
        pytest.param(np.arange(12, dtype=np.complex128).reshape(3, 4), id="complex"),
        pytest.param(np.linspace(-3, 3, 12, dtype=np.float16).reshape(3, 4), id="float16"),
    ],
)
def test_logsumexp_of_other_inputs_is_scipys(an: np.ndarray) -> None:
    a = da.from_array(an, chunks=2)
    if an.size == 0:  # SciPy 1.17 raises IndexError for axis=None here: when called, both
        with pytest.raises(Exception) as theirs:
            sc.logsumexp(an)
        with pytest.raises(type(theirs.value)):
            np2t.logsumexp(a)
    for axis in ((-1,) if an.size == 0 else (None, -1)) if an.ndim else (None,):
        ours = lazy_logsumexp(a, axis=axis, return_sign=True)
        theirs = sc.logsumexp(an, axis=axis, return_sign=True)
        for part, want in zip(ours, theirs):
            got = part.compute(**SYNC)
            assert part.dtype == np.asarray(want).dtype and part.shape == np.shape(want)
            np.testing.assert_allclose(got, want, rtol=2e-15)


def test_logsumexp_with_unknown_chunk_sizes() -> None:
    an = _lse_input("float64", shape=(40, 30))
    keep = an[:, 0] > 0
    a = da.from_array(an, chunks=(10, 30))[da.from_array(keep, chunks=10)]
    assert np.isnan(a.shape[0])
    for axis in (0, 1):
        ours = lazy_logsumexp(a, axis=axis)
        assert _ulps(ours.compute(**SYNC), sc.logsumexp(an[keep], axis=axis), np.max(an[keep], axis=axis)) <= 4
    # b= needs whole slices in one block, which unknown sizes cannot give: SciPy's own call (it gathers the array)
    np.testing.assert_allclose(np2t.logsumexp(a, axis=0, b=2.0), sc.logsumexp(an[keep], axis=0, b=2.0), rtol=1e-15)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"axis": 2}, id="axis out of range"),
        pytest.param({"axis": (0, 0)}, id="repeated axis"),
        pytest.param({"axis": 0.5}, id="float axis"),
        pytest.param({"b": np.ones(7)}, id="b that does not broadcast"),
    ],
)
def test_logsumexp_rejects_what_scipy_rejects_when_called(kwargs: dict) -> None:
    an = _lse_input("float64", shape=(6, 5))
    with pytest.raises(Exception) as theirs:
        sc.logsumexp(an, **kwargs)
    with pytest.raises(type(theirs.value)):
        np2t.logsumexp(da.from_array(an, chunks=3), **kwargs)


def test_logsumexp_layout_is_scipys_on_dask_under_the_array_api() -> None:
    """With SCIPY_ARRAY_API=1 SciPy itself returns Dask arrays: dtype, shape, chunks and meta agree."""
    script = textwrap.dedent(
        """
        import numpy as np, dask.array as da, scipy.special as sc
        import np2torch.runtime as np2t
        a = da.from_array(np.random.default_rng(0).normal(size=(40, 30)).astype("float32"), chunks=(15, 12))
        for axis in (None, 0, 1, (0, 1)):
            for keepdims in (False, True):
                ours, theirs = np2t.logsumexp(a, axis=axis, keepdims=keepdims), sc.logsumexp(a, axis=axis, keepdims=keepdims)
                assert type(ours) is type(theirs), (axis, keepdims)
                assert (ours.dtype, ours.shape, ours.chunks) == (theirs.dtype, theirs.shape, theirs.chunks), (axis, keepdims)
                assert (type(ours._meta), ours._meta.dtype, ours._meta.shape) == (type(theirs._meta), theirs._meta.dtype, theirs._meta.shape)
        print("ok")
        """
    )
    env = {**__import__("os").environ, "SCIPY_ARRAY_API": "1"}
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "ok"


# ---------------------------------------------------------------- settings


def test_settings_given_explicitly_travel_with_the_graph() -> None:
    assert explicit_settings() is None  # the environment's: each worker reads its own
    with np2t.using(min_size=0):
        assert explicit_settings() == ("auto", 0, "ulp")
    with np2t.using(device="numpy"):
        assert explicit_settings() == ("numpy", None, "ulp")
    with np2t.using(exact="bits"):
        assert explicit_settings() == ("auto", None, "bits")
    previous = np2t.configure(min_size=123)
    try:
        assert explicit_settings() == ("auto", 123, "ulp")
    finally:
        np2t.configure(device=previous.device, min_size=previous.min_size)
    assert explicit_settings() is None


def _forced_torch_exp(xn: np.ndarray) -> np.ndarray:
    with np2t.using(min_size=0):
        return np2t.exp(xn)


def test_a_graph_built_under_using_runs_on_torch_in_other_threads() -> None:
    xn = np.random.default_rng(1).uniform(-80, 80, (400, 50)).astype(np.float32)
    x = da.from_array(xn, chunks=(100, 50))
    with np2t.using(min_size=0):
        forced = np2t.exp(x)
    default = np2t.exp(x)
    torch_bits = np.concatenate([_forced_torch_exp(xn[i : i + 100]) for i in range(0, 400, 100)])
    assert not np.array_equal(torch_bits, np.exp(xn))  # the two paths are told apart
    np.testing.assert_array_equal(forced.compute(scheduler="threads"), torch_bits)
    np.testing.assert_array_equal(default.compute(scheduler="threads"), np.exp(xn))  # the built-in profile: NumPy at 5,000


# ---------------------------------------------------------------- xarray


def test_xarray_on_dask_keeps_its_own_dispatch() -> None:
    xr = pytest.importorskip("xarray")
    xn = _inputs("exp", "float64")
    array = xr.DataArray(xn, dims=("t", "x"), coords={"t": np.arange(50)}, name="v", attrs={"units": "m"}).chunk({"t": 20})
    ours, theirs = np2t.exp(array), np.exp(array)
    assert type(ours) is type(theirs) and is_dask_array(ours.data)
    assert ours.chunks == theirs.chunks
    xr.testing.assert_identical(ours.compute(**SYNC), theirs.compute(**SYNC))
    dataset = array.to_dataset()
    xr.testing.assert_identical(np2t.log(np.abs(dataset)).compute(**SYNC), np.log(np.abs(dataset)).compute(**SYNC))
    # xarray's dispatch computes the chunks with NumPy; apply_ufunc hands the helper the Dask array itself.
    with np2t.using(min_size=0):
        forced = xr.apply_ufunc(np2t.exp, array.astype(np.float32), dask="allowed", keep_attrs=True)
    assert forced.chunks == theirs.chunks and forced.attrs == array.attrs
    np.testing.assert_array_equal(forced.compute(**SYNC).values, _forced_torch_exp(xn.astype(np.float32)))


# ---------------------------------------------------------------- a real cluster


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    distributed = pytest.importorskip("distributed")
    # Workers force the torch path through their own environment: a graph
    # built with default settings must follow it, an explicit one must not.
    cluster = distributed.LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
        worker_dashboard_address=None,
        env={"NP2TORCH_MIN_SIZE": "0"},
    )
    try:
        with distributed.Client(cluster) as connected:
            yield connected
    finally:
        cluster.close()


def test_the_cluster_computes_what_the_original_computes(client: Any) -> None:
    xn = np.random.default_rng(2).uniform(0.5, 20.0, (400, 300))
    x = da.from_array(xn, chunks=(100, 150))
    for ours, theirs in ((np2t.exp(x), np.exp(x)), (np2t.log(x), np.log(x)), (np2t.erf(x - 10), sc.erf(x - 10))):
        _same_array(ours, theirs)
        got, want = client.compute([ours, theirs], sync=True)
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np.float64).eps)
    for axis in (None, 0, 1):
        want = client.submit(sc.logsumexp, xn, axis=axis).result()
        lazy = lazy_logsumexp(x, axis=axis)
        assert _ulps(client.compute(lazy, sync=True), want, np.max(xn, axis=axis)) <= 4
        computed = np2t.logsumexp(x, axis=axis)  # reduced on the cluster, returned as SciPy returns it
        assert type(computed) is type(sc.logsumexp(x, axis=axis))
        assert _ulps(computed, want, np.max(xn, axis=axis)) <= 4


def test_the_chunks_go_through_np2torch_on_the_workers(client: Any) -> None:
    xn = np.random.default_rng(1).uniform(-80, 80, (400, 50)).astype(np.float32)
    x = da.from_array(xn, chunks=(100, 50))
    torch_bits = np.concatenate([_forced_torch_exp(xn[i : i + 100]) for i in range(0, 400, 100)])
    assert not np.array_equal(torch_bits, np.exp(xn))
    with np2t.using(min_size=0):
        forced = np2t.exp(x)
    with np2t.using(device="numpy"):
        off = np2t.exp(x)
    default = np2t.exp(x)  # the workers' own environment: NP2TORCH_MIN_SIZE=0
    got_forced, got_off, got_default, original = client.compute([forced, off, default, np.exp(x)], sync=True)
    np.testing.assert_array_equal(got_forced, torch_bits)
    np.testing.assert_array_equal(got_default, torch_bits)
    np.testing.assert_array_equal(got_off, np.exp(xn))
    np.testing.assert_array_equal(original, np.exp(xn))
    workers = client.run(lambda: threading.current_thread() is not None and "np2torch.runtime" in sys.modules)
    assert len(workers) == 2 and all(workers.values())
