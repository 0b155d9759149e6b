"""The catalogue's helpers (docs/catalogue.md): the facts measured there, pinned.

The shared matrix (dtypes, layouts, keywords, special values) runs every spec in
tests/runtime/test_runtime_parity.py; here: every ``np.errstate`` mode on each spec's
special values, SciPy's own error state, and the function-specific findings that
decided how each spec is restricted.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Callable

import numpy as np
import pytest
import scipy.special
from runtime_checks import assert_same_values
from test_runtime_errstate import CALL_LINE, MODES, observe
from test_runtime_errstate import __file__ as ERRSTATE_FILE

import np2torch.runtime as np2t
from np2torch.lint.rules import RULES
from np2torch.runtime import table as _table
from np2torch.runtime import tuning
from np2torch.runtime._api import HELPERS
from np2torch.runtime._decision import model as _model
from np2torch.runtime._decision import profile as _profile
from np2torch.runtime._paths import torch_cpu

SPECS = {row.name: row for row in _table.ELEMENTWISE_FUNCTIONS}


def _original(name: str) -> Callable:
    row = SPECS[name]
    return getattr(importlib.import_module(row.module), row.name)


def _specials(dtype: str) -> np.ndarray:
    info = np.finfo(dtype)
    values = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, 1e300, -1e300, 700.0, 710.0, -745.0,
              float(info.smallest_subnormal), -float(info.smallest_subnormal), float(info.smallest_normal), float(info.max)]
    filler = np.linspace(0.1, 0.9, 40)
    with np.errstate(all="ignore"):
        return np.concatenate([filler[:20], np.array(values), filler[20:]]).astype(dtype)


REAL_LOOPS = [(name, dtype) for name, spec in SPECS.items() for dtype in spec.loops if dtype.startswith("float")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,dtype", REAL_LOOPS, ids=[f"{n}-{d}" for n, d in REAL_LOOPS])
def test_every_errstate_mode_on_special_values(name, dtype, mode, capsys):
    x = _specials(dtype)
    with np2t.using(device="cpu", min_size=0):
        got = observe(getattr(np2t, name), x, mode, capsys)
    want = observe(_original(name), x, mode, capsys)
    for key in ("error", "warnings", "calls", "log", "printed"):
        assert got[key] == want[key], key
    for _, _, filename, lineno in got["warnings"]:
        assert (filename, lineno) == (ERRSTATE_FILE, CALL_LINE)
    if want["value"] is not None:
        assert_same_values(got["value"], want["value"])
        bad = ~np.isfinite(want["value"])
        # reporting modes: non-finite results are the original's own, bit for bit
        # (NaN sign included; under "ignore" nothing is recomputed: docs/runtime.md)
        if mode != "ignore":
            assert got["value"][bad].tobytes() == want["value"][bad].tobytes()


SCIPY_SPECS = [name for name, spec in SPECS.items() if spec.module == "scipy.special"]


@pytest.mark.parametrize("sf_mode", ["raise", "warn"])
@pytest.mark.parametrize("np_mode", ["ignore", "warn"])
@pytest.mark.parametrize("name", SCIPY_SPECS)
def test_scipy_special_errstate_goes_to_scipy(name, np_mode, sf_mode):
    # scipy.special reports domain/singular/overflow errors through its own
    # error state, which torch cannot reproduce: such calls must reach SciPy.
    x = _specials("float64")
    results = []
    for func in (getattr(np2t, name), _original(name)):
        with np2t.using(device="cpu", min_size=0), np.errstate(all=np_mode), scipy.special.errstate(all=sf_mode):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    value = func(x.copy())
                except scipy.special.SpecialFunctionError as exc:
                    value = str(exc)
        results.append((value, [(w.category, str(w.message)) for w in caught]))
    (got, got_w), (want, want_w) = results
    assert got_w == want_w
    assert want_w or isinstance(want, str), "the input must make SciPy report something"
    if isinstance(want, str):
        assert got == want
    else:
        assert_same_values(got, want)


def test_scipy_errstate_check_costs_nothing_when_quiet(monkeypatch):
    calls = []
    real = torch_cpu.compute
    monkeypatch.setattr(torch_cpu, "compute", lambda *a, **k: calls.append(1) or real(*a, **k))
    x = np.linspace(-0.9, 0.9, 100)
    with np2t.using(device="cpu", min_size=0):
        np2t.erfinv(x)
        assert calls, "default scipy.special error state: torch path"
        calls.clear()
        with scipy.special.errstate(domain="warn"):
            np2t.erfinv(x)
        assert not calls, "a reporting scipy.special error state: SciPy"


# --- function-specific findings (docs/catalogue.md) -----------------------------


def _ulp(a: np.ndarray, b: np.ndarray) -> int:
    ints = {4: np.int32, 8: np.int64}[a.itemsize]
    oa, ob = a.view(ints).astype(np.int64), b.view(ints).astype(np.int64)
    assert ((oa < 0) == (ob < 0)).all()
    return int(np.max(np.abs(oa - ob)))


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_float64_trig_within_one_ulp_over_a_wide_range(name):
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-10, 10, 40_000), 10 ** rng.uniform(1, 22, 20_000) * rng.choice([-1, 1], 20_000),
                        10 ** rng.uniform(-300, -1, 5_000)])
    with np2t.using(device="cpu", min_size=0):
        got = getattr(np2t, name)(x)
    want = _original(name)(x)
    assert _ulp(got, want) <= 1  # measured: 90 (sin) / 102 (cos) of 100,032 differ, all by 1 ULP


def test_float32_sin_stays_with_numpy_for_its_underflow_flag():
    # NumPy's float32 sin raises underflow for a tiny *normal* input whose
    # result is normal: not among the elements the dispatcher recomputes, so
    # float32 is not served (and was no faster).
    x = np.full(100, 6.778948e-24, dtype=np.float32)
    with np2t.using(device="cpu", min_size=0), np.errstate(under="raise"):
        with pytest.raises(FloatingPointError):
            np.sin(x)
        with pytest.raises(FloatingPointError):
            np2t.sin(x)


def test_erfinv_of_minus_zero_is_scipys_plus_zero():
    x = np.array([-0.0, 0.0, -0.0] * 100)
    with np2t.using(device="cpu", min_size=0), np.errstate(all="ignore"):
        got = np2t.erfinv(x)
        got32 = np2t.erfinv(x.astype(np.float32))
    assert got.tobytes() == scipy.special.erfinv(x).tobytes()
    assert got32.tobytes() == scipy.special.erfinv(x.astype(np.float32)).tobytes()
    assert not np.signbit(got).any()


def test_erfinv_float32_and_float16_inputs():
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.uniform(-1, 1, 50_000), 1 - 10 ** rng.uniform(-7, -1, 5_000)]).astype(np.float32)
    with np2t.using(device="cpu", min_size=0):
        got = np2t.erfinv(x)
        half = np2t.erfinv(x.astype(np.float16))
    want = scipy.special.erfinv(x)
    assert got.dtype == np.float32 and half.dtype == np.float32  # SciPy's float32 loop for float16 too
    assert _ulp(got, want) <= 3  # computed in float64, rounded once: closer to exact than SciPy's float32 loop
    assert_same_values(half, scipy.special.erfinv(x.astype(np.float16)), max_ulp=3)


# --- issue 12: the opt-in rows, accepted by exactness ----------------------------


def _bit_patterns(dtype: str, n: int = 20_000) -> np.ndarray:
    """Inputs over every exponent, both signs, subnormals, inf and NaN: random bit patterns (float16: all)."""
    if dtype == "float16":
        return np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    ints = {"float32": np.uint32, "float64": np.uint64}[dtype]
    return np.random.default_rng(12).integers(0, np.iinfo(ints).max, n, dtype=ints, endpoint=True).view(dtype)


@pytest.mark.parametrize("name,dtype", REAL_LOOPS, ids=[f"{n}-{d}" for n, d in REAL_LOOPS])
def test_every_served_loop_over_the_whole_range(name, dtype):
    # The catalogue's sweep in small: special values identical, finite values within 4 ULP
    # (scripts/catalogue.py sweeps 4,194,304 float32 and 2,000,000 float64 inputs per loop).
    x = _bit_patterns(dtype)
    with np2t.using(device="cpu", min_size=0), np.errstate(all="ignore"):
        got = getattr(np2t, name)(x)
        want = _original(name)(x)
    assert_same_values(got, want)


def _tiny_normals(dtype: str) -> np.ndarray:
    info = np.finfo(dtype)
    exps = np.linspace(np.log10(float(info.smallest_normal)), -3 if dtype == "float16" else -10, 60)
    with np.errstate(all="ignore"):
        x = (10.0**exps).astype(dtype)
    return np.concatenate([x, -x, np.full(40, 0.5, dtype)])


@pytest.mark.parametrize("mode", ["warn", "raise"])
@pytest.mark.parametrize("name,dtype", REAL_LOOPS, ids=[f"{n}-{d}" for n, d in REAL_LOOPS])
def test_underflow_flags_of_tiny_normal_inputs(name, dtype, mode, capsys):
    # The dispatcher recomputes only non-finite or tiny results and tiny inputs; a loop
    # whose original flags underflow for a tiny *normal* input (float32 np.sin) would
    # lose the flag, so no served loop may do that (measured per loop by the catalogue).
    x = _tiny_normals(dtype)
    with np2t.using(device="cpu", min_size=0):
        got = observe(getattr(np2t, name), x, mode, capsys)
    want = observe(_original(name), x, mode, capsys)
    for key in ("error", "warnings"):
        assert got[key] == want[key], key


def _served(name: str) -> dict:
    return dict(SPECS[name].loops)


def test_the_loops_the_catalogue_accepted():
    # docs/catalogue.md, "Accepted": the first computation that passed per loop.
    f16, f32, f64 = "float16", "float32", "float64"
    native = {f16: f16, f32: f32, f64: f64}
    wide32 = {f16: f16, f32: f64}
    expected = {
        "exp2": {f16: f16},
        "expm1": native, "log2": native, "log10": native, "tan": native, "arcsin": native, "arccos": native,
        "tanh": native, "arctanh": native,
        "log1p": {f16: f16, f32: f32}, "arctan": {f16: f16, f32: f32},
        "sqrt": wide32, "sinh": wide32, "cosh": wide32, "arcsinh": wide32, "arccosh": wide32,
        "expit": {f32: f32, f64: f64},
        **{n: {f32: f64} for n in ("logit", "erfc", "erfcx", "log_ndtr", "ndtri", "digamma", "i0", "i0e", "i1", "i1e")},
    }
    assert {name: _served(name) for name in expected} == expected
    assert not any(row.cuda_loops for row in _table.FUNCTIONS if not row.default), "CUDA: not verified"


@pytest.mark.parametrize("name", ["erfc", "erfcx", "log_ndtr", "ndtri", "digamma", "i0", "i0e", "i1", "i1e"])
def test_float32_scipy_loops_computed_in_float64_are_bitwise_scipys(name):
    # SciPy's float32 loops of these compute in double and round once: so does the helper.
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-30, 30, 20_000).astype(np.float32), rng.uniform(0, 1, 20_000).astype(np.float32),
                        _bit_patterns("float32")])
    with np2t.using(device="cpu", min_size=0), np.errstate(all="ignore"):
        got = getattr(np2t, name)(x)
        want = _original(name)(x)
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()
    assert got[~nan].tobytes() == want[~nan].tobytes()  # a NaN's sign and payload: docs/runtime.md, "Known gaps"


def test_sqrt_float32_is_correctly_rounded_and_float64_stays_with_numpy():
    # torch's own float32 sqrt is not correctly rounded (0.74 ULP from exact on the
    # catalogue's sweep); computed in float64 and rounded once it is NumPy's, bit for bit.
    torch = pytest.importorskip("torch")
    x = np.abs(_bit_patterns("float32", 100_000))
    with np2t.using(device="cpu", min_size=0), np.errstate(all="ignore"):
        assert np2t.sqrt(x).tobytes() == np.sqrt(x).tobytes()
        assert torch.sqrt(torch.from_numpy(x)).numpy().tobytes() != np.sqrt(x).tobytes()
    assert "float64" not in _served("sqrt")


@pytest.mark.parametrize("name", ["sinh", "cosh"])
def test_hyperbolic_near_overflow(name):
    # torch's vectorized sinh/cosh overflow early (float32 near |x| = 89, float64 near 710)
    # where NumPy's result is finite: float32 is computed in float64, float64 is NumPy's.
    torch = pytest.importorskip("torch")
    x32 = np.linspace(88.5, 89.4, 1000, dtype=np.float32)
    x64 = np.linspace(709.5, 710.4, 1000)
    with np2t.using(device="cpu", min_size=0), np.errstate(all="ignore"):
        assert_same_values(getattr(np2t, name)(x32), _original(name)(x32))
        assert_same_values(getattr(np2t, name)(x64), _original(name)(x64))
        finite = np.isfinite(_original(name)(x64))
        assert finite.any() and not np.isfinite(getattr(torch, name)(torch.from_numpy(x64)).numpy()[finite]).all()


def test_logit_float64_stays_with_scipy():
    # torch computes log(x / (1 - x)): tens of thousands of ULP from SciPy near x = 0.5 in float64;
    # float32 computed in float64 and rounded once is within 2 ULP.
    x = np.linspace(0.4999, 0.5001, 20_001)
    with np2t.using(device="cpu", min_size=0):
        assert np2t.logit(x).tobytes() == scipy.special.logit(x).tobytes()
        assert_same_values(np2t.logit(x.astype(np.float32)), scipy.special.logit(x.astype(np.float32)), max_ulp=2)
    assert _served("logit") == {"float32": "float64"}


# --- the table, the specs and the thresholds agree ------------------------------


def test_every_spec_has_a_rule_and_the_builtin_profile_measures_only_served_loops():
    # A loop missing from the built-in profile stays on the original until `np2torch tune` measures it (a new
    # function needs no profile edit); a curve for a loop no longer served, or a shape class no reduction has, is stale.
    helpers = {rule.helper for rule in RULES}
    assert set(SPECS) <= helpers
    served = {_model.curve_key(row.name, dtype, klass) for row in _table.FUNCTIONS for dtype in row.loops
              for klass in (_model.REDUCTION_CLASSES if row.kind == "reduction" else ("",))}
    # The loops torch does not serve exactly: the original on every core's, measured against the original alone.
    own = {_model.curve_key(row.name, dtype) for row in _table.FUNCTIONS for dtype in tuning.cores_only_loops(row.name)}
    builtin = _profile.load_builtin().curves
    assert set(builtin) <= served | own and own <= set(builtin)
    assert all(set(builtin[key].seconds) == {"numpy", "cores"} for key in own)
    curves = set(builtin)
    reductions = {row.name for row in _table.FUNCTIONS if row.kind == "reduction"}
    assert all(key.count("/") == 2 for key in curves if key.split("/")[0] in reductions)  # measured per shape class
    for name, spec in SPECS.items():
        assert HELPERS[name].row is spec and HELPERS[name].function is getattr(np2t, name)
        assert name in np2t.__all__
