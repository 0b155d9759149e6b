#!/usr/bin/env python
"""Which NumPy/SciPy functions can np2torch.runtime serve with torch? Exactness decides; speed is informational.

For every candidate (NumPy ufuncs, ``scipy.special`` functions, a few non-ufuncs)
this judges each real loop of the original (float16, float32, float64 where the
original has one) against the runtime contract (docs/runtime.md), computed in the
loop's own dtype and, where that fails, in a wider one rounded once:

* **special values**: NaN where the original has NaN, inf and zero bitwise (signs
  included), finite where it is finite;
* **ULP**: at most 4 from the original on every finite input;
* **accuracy**: against mpmath at 200 bits, torch's worst error may exceed the
  original's by at most 0.01 ULP (a misrounding within 0.01 ULP of a tie);
* **errstate**: the original raises no flag on the elements the dispatcher would
  *not* recompute (runtime/_ufunc.py ``_suspects``: non-finite results; with
  ``under`` on, tiny results and inputs), under the default error state and with
  ``under`` on -- otherwise the helper would lose that warning.

The inputs: ``--samples`` draws over the function's range, the special values
(NaN, ±inf, ±0, subnormals, ±max, poles and domain edges) and a sweep over every
exponent: all 65,536 float16 values, every 1024th float32 bit pattern (4,194,304),
2,000,000 random float64 bit patterns. ``--ref-samples`` of them per loop are
checked against mpmath. The first computation that passes each loop is the loop
for the function's row in runtime/table.py (docs/catalogue.md).

Also reported: the original's result dtype for every input dtype next to torch's
(``dtypes``); with ``--details`` the first catalogue's per-dtype value table; with
``--speed`` the median time of the original and of the runtime's torch path at
``--size`` elements -- informational only (noisy on a shared machine, and which
path is faster is measured per machine by ``np2torch tune``).

    .venv/bin/python scripts/catalogue.py                 # markdown to stdout, ~4 min on 2 cores
    .venv/bin/python scripts/catalogue.py --only sin,cos --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

import mpmath
import numpy as np
import scipy.special as sc
import torch

mpmath.mp.prec = 200
_TS = torch.special


def _lu(rng: np.random.Generator, n: int, lo: float, hi: float, signed: bool = False) -> np.ndarray:
    """Log-uniform magnitudes in [10**lo, 10**hi], optionally with random signs."""
    x = 10.0 ** rng.uniform(lo, hi, n)
    return x * rng.choice([-1.0, 1.0], n) if signed else x


def _u(lo: float, hi: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    return lambda rng, n: rng.uniform(lo, hi, n)


@dataclass(frozen=True)
class Candidate:
    name: str
    qualname: str
    original: Callable[..., Any]
    torch_op: Callable[..., Any]
    """``torch_op(tensor) -> tensor`` (unary) or ``torch_op(a, b)``."""
    reference: Optional[Callable[..., Any]]
    """mpmath function of an mpf, or None."""
    domain: Callable[[np.random.Generator, int], np.ndarray]
    edges: Sequence[float] = ()
    """Function-specific special inputs: poles, domain edges."""
    kind: str = "unary"
    """``unary`` (a ufunc the generic dispatcher can serve), ``binary``, ``function`` (not a ufunc) or
    ``reduction`` (``torch_op(tensor, dim)``, judged slice by slice: :func:`judge_reduction`)."""
    extra: Dict[str, Any] = field(default_factory=dict)
    domain2: Optional[Callable[[np.random.Generator, int], np.ndarray]] = None
    """A binary candidate's draws of its second operand (``domain``'s when None)."""


def _mix(*parts: Callable[[np.random.Generator, int], np.ndarray]) -> Callable[[np.random.Generator, int], np.ndarray]:
    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        k = len(parts)
        return np.concatenate([p(rng, n // k + (1 if i < n % k else 0)) for i, p in enumerate(parts)])

    return draw


_TINY = lambda rng, n: _lu(rng, n, -300, -1, signed=True)  # noqa: E731
_SQ2 = mpmath.sqrt(2)


def _ndtri_ref(v: Any) -> Any:
    if not 0 <= v <= 1:
        return mpmath.nan
    # 2v - 1 must not round to -1 for tiny v: enough bits to hold it exactly
    with mpmath.workprec(200 + max(0, int(-mpmath.log(v, 2))) if v > 0 else 200):
        return _SQ2 * mpmath.erfinv(2 * v - 1)


def _xlogy_ref(x: Any, y: Any) -> Any:
    # SciPy: 0 where x == 0 and y is not NaN (xlogy(0, 0) == 0), else x * log(y)
    return mpmath.mpf(0) if x == 0 and not mpmath.isnan(y) else x * mpmath.log(y)


def _xlog1py_ref(x: Any, y: Any) -> Any:
    return mpmath.mpf(0) if x == 0 and not mpmath.isnan(y) else x * mpmath.log1p(y)


def _logaddexp_ref(a: Any, b: Any) -> Any:
    # max + log1p(exp(min - max)): log(exp(a) + exp(b)) at 200 bits rounds 1 + 1e-211 to 1
    top = max(a, b)
    return top + mpmath.log1p(mpmath.exp(min(a, b) - top))


def _logaddexp2_ref(a: Any, b: Any) -> Any:
    top = max(a, b)
    return top + mpmath.log1p(mpmath.power(2, min(a, b) - top)) / mpmath.log(2)


def _gammaln_ref(v: Any) -> Any:
    return mpmath.log(abs(mpmath.gamma(v)))


CANDIDATES: List[Candidate] = [
    Candidate("exp2", "numpy.exp2", np.exp2, torch.exp2, lambda v: mpmath.power(2, v), _mix(_u(-1100, 1030), _u(-1, 1), _TINY)),
    Candidate("expm1", "numpy.expm1", np.expm1, torch.expm1, mpmath.expm1, _mix(_u(-800, 710), _u(-1, 1), _TINY)),
    Candidate("log2", "numpy.log2", np.log2, torch.log2, lambda v: mpmath.log(v, 2), _mix(lambda r, n: _lu(r, n, -300, 300), _u(0.5, 2))),
    Candidate("log10", "numpy.log10", np.log10, torch.log10, mpmath.log10, _mix(lambda r, n: _lu(r, n, -300, 300), _u(0.5, 2))),
    Candidate("log1p", "numpy.log1p", np.log1p, torch.log1p, mpmath.log1p, _mix(_u(-1, 1), _TINY, lambda r, n: _lu(r, n, 0, 300)), edges=(-1.0,)),
    Candidate("sqrt", "numpy.sqrt", np.sqrt, torch.sqrt, mpmath.sqrt, _mix(lambda r, n: _lu(r, n, -300, 300), _u(0, 4))),
    Candidate("sin", "numpy.sin", np.sin, torch.sin, mpmath.sin, _mix(_u(-10, 10), lambda r, n: _lu(r, n, 1, 22, True), _TINY)),
    Candidate("cos", "numpy.cos", np.cos, torch.cos, mpmath.cos, _mix(_u(-10, 10), lambda r, n: _lu(r, n, 1, 22, True), _TINY)),
    Candidate("tan", "numpy.tan", np.tan, torch.tan, mpmath.tan, _mix(_u(-10, 10), lambda r, n: _lu(r, n, 1, 22, True), _TINY)),
    Candidate("arcsin", "numpy.arcsin", np.arcsin, torch.asin, mpmath.asin, _mix(_u(-1, 1), _TINY)),
    Candidate("arccos", "numpy.arccos", np.arccos, torch.acos, mpmath.acos, _mix(_u(-1, 1), _TINY)),
    Candidate("arctan", "numpy.arctan", np.arctan, torch.atan, mpmath.atan, _mix(lambda r, n: _lu(r, n, -300, 300, True), _u(-4, 4))),
    Candidate("sinh", "numpy.sinh", np.sinh, torch.sinh, mpmath.sinh, _mix(_u(-720, 720), _u(-2, 2), _TINY)),
    Candidate("cosh", "numpy.cosh", np.cosh, torch.cosh, mpmath.cosh, _mix(_u(-720, 720), _u(-2, 2), _TINY)),
    Candidate("tanh", "numpy.tanh", np.tanh, torch.tanh, mpmath.tanh, _mix(_u(-20, 20), _u(-1, 1), _TINY)),
    Candidate("arcsinh", "numpy.arcsinh", np.arcsinh, torch.asinh, mpmath.asinh, _mix(lambda r, n: _lu(r, n, -300, 300, True), _u(-4, 4))),
    Candidate("arccosh", "numpy.arccosh", np.arccosh, torch.acosh, mpmath.acosh, _mix(lambda r, n: 1 + _lu(r, n, -15, 300), _u(1, 4))),
    Candidate("arctanh", "numpy.arctanh", np.arctanh, torch.atanh, mpmath.atanh, _mix(_u(-1, 1), _TINY, lambda r, n: 1 - _lu(r, n, -15, -1)), edges=(1.0, -1.0)),
    Candidate("cbrt", "numpy.cbrt", np.cbrt, lambda t: t.sign() * t.abs().pow(1.0 / 3.0), lambda v: mpmath.sign(v) * mpmath.cbrt(abs(v)), _mix(lambda r, n: _lu(r, n, -300, 300, True), _u(-4, 4))),
    Candidate("erfc", "scipy.special.erfc", sc.erfc, torch.erfc, mpmath.erfc, _mix(_u(-6, 27), _u(-1, 1))),
    Candidate("erfcx", "scipy.special.erfcx", sc.erfcx, _TS.erfcx, lambda v: mpmath.exp(v * v) * mpmath.erfc(v), _mix(_u(-27, 1e5), _u(-3, 3), lambda r, n: _lu(r, n, 3, 300))),
    Candidate("erfinv", "scipy.special.erfinv", sc.erfinv, torch.erfinv, mpmath.erfinv, _mix(_u(-1, 1), _TINY, lambda r, n: 1 - _lu(r, n, -15, -1)), edges=(1.0, -1.0)),
    Candidate("expit", "scipy.special.expit", sc.expit, torch.sigmoid, lambda v: 1 / (1 + mpmath.exp(-v)), _mix(_u(-750, 750), _u(-40, 40), _TINY)),
    Candidate("logit", "scipy.special.logit", sc.logit, torch.logit, lambda v: mpmath.log(v / (1 - v)), _mix(_u(0, 1), _u(0.4, 0.6), lambda r, n: _lu(r, n, -300, -1)), edges=(1.0,)),
    Candidate("gammaln", "scipy.special.gammaln", sc.gammaln, torch.lgamma, _gammaln_ref, _mix(_u(-170, 170), _u(0, 5), lambda r, n: _lu(r, n, 2, 300)), edges=(-1.0, -2.0, 1.0, 2.0)),
    Candidate("digamma", "scipy.special.digamma", sc.digamma, torch.digamma, mpmath.digamma, _mix(_u(-100, 100), _u(0, 5), lambda r, n: _lu(r, n, 2, 300)), edges=(-1.0, -2.0, 1.0)),
    Candidate("ndtr", "scipy.special.ndtr", sc.ndtr, _TS.ndtr, mpmath.ncdf, _mix(_u(-40, 10), _u(-3, 3))),
    Candidate("log_ndtr", "scipy.special.log_ndtr", sc.log_ndtr, _TS.log_ndtr, lambda v: mpmath.log(mpmath.ncdf(v)), _mix(_u(-1e5, 40), _u(-5, 5))),
    Candidate("ndtri", "scipy.special.ndtri", sc.ndtri, _TS.ndtri, _ndtri_ref, _mix(_u(0, 1), lambda r, n: _lu(r, n, -300, -1)), edges=(1.0,)),
    Candidate("i0", "scipy.special.i0", sc.i0, torch.i0, lambda v: mpmath.besseli(0, v), _mix(_u(-700, 700), _u(-5, 5))),
    Candidate("i0e", "scipy.special.i0e", sc.i0e, _TS.i0e, lambda v: mpmath.besseli(0, v) * mpmath.exp(-abs(v)), _mix(_u(-1e4, 1e4), _u(-5, 5))),
    Candidate("i1", "scipy.special.i1", sc.i1, _TS.i1, lambda v: mpmath.besseli(1, v), _mix(_u(-700, 700), _u(-5, 5))),
    Candidate("i1e", "scipy.special.i1e", sc.i1e, _TS.i1e, lambda v: mpmath.besseli(1, v) * mpmath.exp(-abs(v)), _mix(_u(-1e4, 1e4), _u(-5, 5))),
    Candidate("xlogy", "scipy.special.xlogy", sc.xlogy, torch.xlogy, _xlogy_ref, _mix(_u(-10, 10), _TINY, lambda r, n: _lu(r, n, -300, 300, True)),
              kind="binary", domain2=_mix(_u(0, 10), lambda r, n: _lu(r, n, -300, 300))),
    Candidate("xlog1py", "scipy.special.xlog1py", sc.xlog1py, _TS.xlog1py, _xlog1py_ref, _mix(_u(-10, 10), _TINY, lambda r, n: _lu(r, n, -300, 300, True)),
              kind="binary", domain2=_mix(_u(-1, 10), _TINY, lambda r, n: _lu(r, n, -300, 300))),
    Candidate("logaddexp", "numpy.logaddexp", np.logaddexp, torch.logaddexp, _logaddexp_ref,
              _mix(_u(-800, 800), _u(-40, 40), _TINY), kind="binary"),
    Candidate("logaddexp2", "numpy.logaddexp2", np.logaddexp2, torch.logaddexp2, _logaddexp2_ref, _mix(_u(-1100, 1100), _u(-60, 60), _TINY), kind="binary"),
    Candidate("hypot", "numpy.hypot", np.hypot, torch.hypot, mpmath.hypot, _mix(lambda r, n: _lu(r, n, -300, 300, True), _u(-10, 10)), kind="binary"),
    Candidate("arctan2", "numpy.arctan2", np.arctan2, torch.atan2, mpmath.atan2, _mix(lambda r, n: _lu(r, n, -300, 300, True), _u(-10, 10), _TINY),
              kind="binary"),
    Candidate("sinc", "numpy.sinc", np.sinc, torch.sinc, lambda v: mpmath.sinc(mpmath.pi * v), _u(-10, 10), kind="function"),
    Candidate("softmax", "scipy.special.softmax", sc.softmax, torch.softmax, None, _u(-10, 10), kind="reduction"),
    Candidate("log_softmax", "scipy.special.log_softmax", sc.log_softmax, torch.log_softmax, None, _u(-10, 10), kind="reduction"),
]

INPUT_DTYPES = ["?", "b", "B", "h", "H", "i", "I", "l", "L", "e", "f", "d", "g", "F", "D"]


# --- helpers ---------------------------------------------------------------------

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
_INT = {2: np.int16, 4: np.int32, 8: np.int64}


def _ordered(a: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(a).view(_INT[a.itemsize]).astype(np.int64)
    low = np.int64(np.iinfo(_INT[a.itemsize]).min)
    return np.where(bits < 0, low - bits, bits)


def ulp_apart(a: np.ndarray, b: np.ndarray) -> int:
    """Largest ULP distance over the elements finite in both (0 if none)."""
    ok = np.isfinite(a) & np.isfinite(b)
    if not ok.any():
        return 0
    return int(np.max(np.abs(_ordered(a[ok]) - _ordered(b[ok]))))


def differences(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Mask of elements not bitwise identical, a NaN of either sign matching a NaN."""
    same = got.view(_UINT[got.itemsize]) == want.view(_UINT[want.itemsize])
    return ~(same | (np.isnan(got) & np.isnan(want)))


def nan_sign_only(got: np.ndarray, want: np.ndarray) -> int:
    both = np.isnan(got) & np.isnan(want)
    return int(np.count_nonzero(both & (np.signbit(got) != np.signbit(want))))


def torch_values(cand: Candidate, x: np.ndarray, wide: bool) -> np.ndarray:
    """torch's values in x's dtype, optionally computed in float64 and rounded once."""
    t = torch.from_numpy(np.ascontiguousarray(x))
    if wide:
        return cand.torch_op(t.double()).to(t.dtype).numpy()
    return cand.torch_op(t).numpy()


def special_inputs(cand: Candidate, dtype: np.dtype) -> np.ndarray:
    info = np.finfo(dtype)
    base = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 10.0, -10.0, 30.0, -30.0,
            float(info.smallest_subnormal), -float(info.smallest_subnormal), float(info.smallest_subnormal) * 1000,
            float(info.smallest_normal), -float(info.smallest_normal), float(info.max), -float(info.max),
            float(info.eps), 700.0, 710.0, -740.0, -750.0, 88.0, 89.0, -104.0, 1e10, -1e10, *cand.edges]
    with np.errstate(all="ignore"):
        return np.array(base, dtype=np.float64).astype(dtype)


class FlagRecorder:
    def __init__(self) -> None:
        self.flags: set = set()

    def __call__(self, errtext: str, status: int) -> None:
        self.flags.update(part.strip() for part in errtext.split(","))


def raised_flags(func: Callable[..., Any], x: np.ndarray, kinds: Sequence[str]) -> set:
    recorder = FlagRecorder()
    with np.errstate(call=recorder, **{k: ("call" if k in kinds else "ignore") for k in ("divide", "over", "under", "invalid")}):
        func(x)
    return recorder.flags


def suspects(x: np.ndarray, result: np.ndarray, under: bool) -> np.ndarray:
    """The dispatcher's rule (runtime/_ufunc.py, _suspects)."""
    with np.errstate(all="ignore"):
        mask = ~np.isfinite(result)
        if under:
            mask |= np.abs(result) < np.finfo(result.dtype).smallest_normal
            mask |= np.abs(x) < np.finfo(x.dtype).smallest_normal
    return mask


def median_seconds(func: Callable[[], Any], repeats: int) -> float:
    func()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def runtime_path(cand: Candidate, x: np.ndarray, wide: bool) -> Callable[[], np.ndarray]:
    """What the runtime's torch path does for one call under the default errstate."""
    src = torch.from_numpy(x)

    def call() -> np.ndarray:
        out = np.empty_like(x)
        dst = torch.from_numpy(out)
        if wide:
            dst.copy_(cand.torch_op(src.double()))
        else:
            cand.torch_op(src, out=dst)
        float(dst.sum()) if dst.dtype == torch.float64 else torch.aminmax(dst)
        return out

    return call


# --- measurements ------------------------------------------------------------------


def dtype_row(cand: Candidate) -> Dict[str, str]:
    """Input dtype -> 'numpy result / torch result' ('!' when torch rejects it)."""
    row = {}
    for code in INPUT_DTYPES:
        dt = np.dtype(code)
        x = np.array([1, 0, 1, 0], dtype=dt) if dt.kind in "biu" else np.array([0.25, 0.5, 0.75, 0.125], dtype=dt)
        try:
            with np.errstate(all="ignore"):
                want = np.asarray(cand.original(x, x) if cand.kind == "binary" else cand.original(x)).dtype.char
        except Exception:
            want = "-"
        try:
            if dt.char == "g" or dt.kind in "OU":
                raise TypeError
            t = torch.from_numpy(x)
            args = (t, t) if cand.kind == "binary" else (t, 0) if cand.kind == "reduction" else (t,)
            got = cand.torch_op(*args).numpy().dtype.char
        except Exception:
            got = "!"
        row[code] = f"{want}/{got}"
    return row


def value_rows(cand: Candidate, samples: int, ref_samples: int, rng: np.random.Generator) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for code in ("e", "f", "d"):
        dt = np.dtype(code)
        if cand.kind != "unary":
            break
        if code == "e":
            x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
        else:
            with np.errstate(all="ignore"):
                x = np.concatenate([cand.domain(rng, samples), special_inputs(cand, np.dtype("d"))]).astype(dt)
        with np.errstate(all="ignore"):
            want = cand.original(x)
        if want.dtype != dt:
            out[code] = {"result": want.dtype.name, "note": f"original returns {want.dtype.name}"}
            x = x.astype(want.dtype)
            dt = want.dtype
            if code == "e":
                continue
        best = None
        for wide in ((False, True) if dt == np.float32 else (False,)):
            try:
                got = torch_values(cand, x, wide)
            except RuntimeError as exc:
                best = {"rejects": str(exc).splitlines()[0][:80]}
                break
            diff = differences(got, want)
            score = (int(np.count_nonzero(diff)), ulp_apart(got, want))
            if best is None or score < (best["differ"], best["max ulp"]):
                best = {"differ": score[0], "max ulp": score[1], "of": int(x.size), "wide": wide, "got": got}
        out[code] = best
        if "rejects" in best:
            continue
        got = best.pop("got")
        best["nan sign only"] = nan_sign_only(got, want)
        spec = special_inputs(cand, dt)
        with np.errstate(all="ignore"):
            sw = cand.original(spec)
        sg = torch_values(cand, spec, best["wide"])
        bad = differences(sg, sw)
        best["special mismatches"] = [(repr(float(a)), repr(float(b)), repr(float(c))) for a, b, c in zip(spec[bad], sw[bad], sg[bad])]
        # the worst finite disagreement, as an example input
        ok = np.isfinite(got) & np.isfinite(want) & (got != want)
        if ok.any():
            d = np.abs(_ordered(got[ok]) - _ordered(want[ok]))
            best["worst input"] = repr(float(x[ok][d.argmax()]))
        # finite vs non-finite, zero vs nonzero disagreements (e.g. log1p of a subnormal)
        with np.errstate(all="ignore"):
            kind_diff = (np.isfinite(got) != np.isfinite(want)) | ((got == 0) != (want == 0))
        best["class mismatches"] = [repr(float(v)) for v in x[kind_diff][:4]]
        if code != "e" and cand.reference is not None:
            pick = slice(None, None, max(1, x.size // ref_samples))
            best.update(reference_errors(cand, x[pick], want[pick], got[pick]))
        best["errstate"] = errstate_check(cand, x, got, best["wide"])
    return out


def _ulp_err(y: float, exact: Any, dtype: np.dtype) -> float:
    info = np.finfo(dtype)
    if not mpmath.isfinite(exact) or exact == 0:
        return 0.0 if y == float(exact) or (y != y and exact != exact) else float("inf")
    top = mpmath.mpf(float(info.max)) + mpmath.ldexp(1, int(np.log2(float(info.max))) - info.nmant - 1)
    if not np.isfinite(y):
        return 0.0 if abs(exact) >= top and (y > 0) == (exact > 0) else float("inf")
    e = max(int(mpmath.floor(mpmath.log(abs(exact), 2))), int(np.log2(float(info.smallest_normal))))
    return float(abs(mpmath.mpf(y) - exact) / mpmath.ldexp(1, e - info.nmant))


def reference_errors(cand: Candidate, x: np.ndarray, want: np.ndarray, got: np.ndarray) -> Dict[str, float]:
    worst_o = worst_t = 0.0
    for v, w, g in zip(x.tolist(), want.tolist(), got.tolist()):
        if not np.isfinite(v):
            continue
        try:
            exact = cand.reference(mpmath.mpf(v))
            if isinstance(exact, mpmath.mpc):
                continue
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
        worst_o = max(worst_o, _ulp_err(w, exact, x.dtype))
        worst_t = max(worst_t, _ulp_err(g, exact, x.dtype))
    return {"original vs exact": round(worst_o, 3), "torch vs exact": round(worst_t, 3)}


def errstate_check(cand: Candidate, x: np.ndarray, got: np.ndarray, wide: bool) -> Dict[str, Any]:
    """Flags on the whole array vs on the dispatcher's recomputed elements, per mode."""
    result = {}
    for label, kinds, under in (("default", ("divide", "over", "invalid"), False), ("all", ("divide", "over", "under", "invalid"), True)):
        whole = raised_flags(cand.original, x, kinds)
        part = raised_flags(cand.original, x[suspects(x, got, under)], kinds)
        result[label] = "ok" if whole == part else f"whole {sorted(whole)} vs recomputed {sorted(part)}"
    # Elements that raise a flag on their own but are not suspects, even with under on.
    missed = []
    sample = np.concatenate([special_inputs(cand, x.dtype), x[:: max(1, x.size // 2000)]])
    with np.errstate(all="ignore"):
        gs = torch_values(cand, sample, wide)
    mask = suspects(sample, gs, True)
    for v in sample[~mask]:
        flags = raised_flags(cand.original, np.array([v]), ("divide", "over", "under", "invalid"))
        if flags:
            missed.append((repr(float(v)), sorted(flags)))
    result["unflagged elements"] = missed[:4]
    return result


def speed_row(cand: Candidate, size: int, repeats: int, rng: np.random.Generator, wide32: bool) -> Dict[str, Any]:
    row = {}
    for code in ("d", "f"):
        dt = np.dtype(code)
        with np.errstate(all="ignore"):
            x = cand.domain(rng, size).astype(dt)
            # values that raise no flag: the common case
            y = cand.original(x, x) if cand.kind == "binary" else cand.original(x)
            x = np.where(np.isfinite(y), x, dt.type(0.5))
        if cand.kind == "binary":
            y = np.abs(x) + dt.type(0.5)
            t_orig = median_seconds(lambda: cand.original(x, y), repeats)
            tx, ty = torch.from_numpy(x), torch.from_numpy(y)
            t_torch = median_seconds(lambda: cand.torch_op(tx, ty, out=torch.from_numpy(np.empty_like(x))), repeats)
        elif cand.kind in ("function", "reduction"):
            x2 = x.reshape(-1, 1000)
            t_orig = median_seconds(lambda: cand.original(x2, axis=-1) if cand.name != "sinc" else cand.original(x2), repeats)
            tx = torch.from_numpy(x2)
            t_torch = median_seconds(lambda: (cand.torch_op(tx, -1) if cand.kind == "reduction" else cand.torch_op(tx)).numpy(), repeats)
        else:
            wide = wide32 and code == "f"
            try:
                t_torch = median_seconds(runtime_path(cand, x, wide), repeats)
            except RuntimeError:
                row[code] = "torch rejects"
                continue
            t_orig = median_seconds(lambda: cand.original(x), repeats)
        row[code] = {"original ms": round(t_orig * 1e3, 1), "torch ms": round(t_torch * 1e3, 1), "speed-up": round(t_orig / t_torch, 2)}
    return row


# --- acceptance: the runtime contract, loop by loop ---------------------------------

_TORCH_DTYPES = {"float16": torch.float16, "float32": torch.float32, "float64": torch.float64}
_KINDS = ("divide", "over", "under", "invalid")


def sweep_inputs(dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Inputs spread over every exponent of ``dtype``, both signs, subnormals, inf and NaN included.

    float16: all 65,536 values; float32: every 1024th bit pattern (4,194,304 values);
    float64: 2,000,000 random bit patterns (log-uniform over the whole range).
    """
    if dtype == np.float16:
        return np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    if dtype == np.float32:
        return np.arange(0, 1 << 32, 1024, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return rng.integers(0, np.iinfo(np.uint64).max, 2_000_000, dtype=np.uint64).view(np.float64)


def torch_in(cand: Candidate, x: np.ndarray, compute: str) -> np.ndarray:
    """torch's values for ``x``, computed in ``compute`` and rounded once to ``x``'s dtype."""
    t = torch.from_numpy(np.ascontiguousarray(x))
    return cand.torch_op(t.to(_TORCH_DTYPES[compute])).to(t.dtype).numpy()


def class_mismatches(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """NaN where the original has NaN; inf and zero bitwise (sign included); finite where finite."""
    with np.errstate(all="ignore"):
        nan = np.isnan(got) != np.isnan(want)
        fin = np.isfinite(got) != np.isfinite(want)
        special = (np.isinf(want) | (want == 0)) & differences(got, want)
    return nan | fin | special


def flags_missed(cand: Candidate, x: np.ndarray, got: np.ndarray, under: bool) -> List[tuple]:
    """Inputs the dispatcher would not recompute on which the original raises a flag (per errstate)."""
    kinds = _KINDS if under else ("divide", "over", "invalid")
    rest = x[~suspects(x, got, under)]
    if not raised_flags(cand.original, rest, kinds):
        return []
    missed: List[tuple] = []
    for chunk in np.array_split(rest, max(1, rest.size // 4096)):
        if raised_flags(cand.original, chunk, kinds):
            for v in chunk:
                flags = raised_flags(cand.original, np.array([v]), kinds)
                if flags:
                    missed.append((repr(float(v)), sorted(flags)))
                    if len(missed) >= 4:
                        return missed
    return missed or [("(only on the whole array)", [])]


def judge_loop(cand: Candidate, dtype: np.dtype, compute: str, rng: np.random.Generator, samples: int, ref_samples: int) -> Dict[str, Any]:
    """One loop computed in ``compute``: the contract's checks, each with its measured evidence."""
    with np.errstate(all="ignore"):
        x = np.concatenate([cand.domain(rng, samples).astype(dtype), special_inputs(cand, dtype), sweep_inputs(dtype, rng)])
        want = cand.original(x)
    try:
        with np.errstate(all="ignore"):
            got = torch_in(cand, x, compute)
    except (RuntimeError, TypeError) as exc:
        return {"compute": compute, "pass": False, "reason": "torch rejects: " + str(exc).splitlines()[0][:70]}
    verdict: Dict[str, Any] = {"compute": compute, "of": int(x.size)}
    bad = class_mismatches(got, want)
    verdict["class mismatches"] = [(repr(float(a)), repr(float(b)), repr(float(c))) for a, b, c in zip(x[bad][:4], want[bad][:4], got[bad][:4])]
    verdict["class mismatch count"] = int(np.count_nonzero(bad))
    with np.errstate(all="ignore"):
        finite = np.isfinite(got) & np.isfinite(want) & (want != 0) & ~bad & (np.signbit(got) == np.signbit(want))
    dist = np.abs(_ordered(got[finite]) - _ordered(want[finite])) if finite.any() else np.zeros(1, np.int64)
    verdict["max ulp"] = int(dist.max())
    verdict["differ"] = int(np.count_nonzero(differences(got, want)))
    if verdict["max ulp"]:
        verdict["worst input"] = repr(float(x[finite][dist.argmax()]))
    if cand.reference is not None:
        # the domain draw and the special values, plus a slice of the sweep
        head = samples + len(special_inputs(cand, dtype))
        step = max(1, (x.size - head) // max(1, ref_samples // 2))
        pick = np.concatenate([np.arange(0, head, max(1, head // ref_samples)), np.arange(head, x.size, step)])
        verdict.update(reference_errors(cand, x[pick], want[pick], got[pick]))
    verdict["missed flags (default)"] = flags_missed(cand, x, got, under=False)
    verdict["missed flags (under)"] = flags_missed(cand, x, got, under=True)
    reasons = []
    if verdict["class mismatch count"]:
        a, b, c = verdict["class mismatches"][0]
        reasons.append(f"special value: {cand.name}({a}) original {b}, torch {c} ({verdict['class mismatch count']} inputs)")
    if verdict["max ulp"] > 4:
        reasons.append(f"ULP: {verdict['max ulp']} ULP from the original at x = {verdict['worst input']}")
    if verdict.get("torch vs exact", 0.0) > verdict.get("original vs exact", 0.0) + 0.01:
        reasons.append(f"less accurate: {verdict['torch vs exact']} ULP from exact where the original is {verdict['original vs exact']}")
    for label in ("default", "under"):
        missed = verdict[f"missed flags ({label})"]
        if missed:
            reasons.append(f"errstate ({label}): the original flags {missed[0][1]} at x = {missed[0][0]}, not recomputed")
    verdict["pass"] = not reasons
    verdict["reason"] = "; ".join(reasons)
    return verdict


def judge(cand: Candidate, samples: int, ref_samples: int) -> Dict[str, Any]:
    """Per real loop of the original: the first computation that passes (the loop's own dtype, then wider)."""
    if cand.kind == "reduction":
        return judge_reduction(cand, samples)
    if cand.kind == "binary":
        return judge_binary(cand, samples, ref_samples)
    if cand.kind != "unary":
        return {"note": f"not a unary ufunc ({cand.kind}): needs its own helper"}
    loops: Dict[str, Any] = {}
    for code in ("e", "f", "d"):
        dt = np.dtype(code)
        with np.errstate(all="ignore"):
            result = np.asarray(cand.original(np.ones(2, dt))).dtype
        if result != dt:
            continue  # no loop of its own: the input is cast into the loop that resolves (integers alike)
        tried = []
        for compute in [dt.name] + [w for w in ("float32", "float64") if np.dtype(w).itemsize > dt.itemsize]:
            verdict = judge_loop(cand, dt, compute, np.random.default_rng(0), samples, ref_samples)
            tried.append(verdict)
            if verdict["pass"]:
                break
        loops[dt.name] = {"accepted": tried[-1]["compute"] if tried[-1]["pass"] else None, "tried": tried}
    return {"loops": loops}


# --- two-argument ufuncs: pairs of inputs ------------------------------------------------


def binary_inputs(cand: Candidate, dtype: np.dtype, samples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """Pairs: the function's draws, every pair of special values, and the sweep paired with a shuffle of itself.

    Also returns how many pairs precede the sweep (the draws and the special pairs).
    """
    second = cand.domain2 or cand.domain
    spec = special_inputs(cand, dtype)
    with np.errstate(all="ignore"):
        x = np.concatenate([cand.domain(rng, samples).astype(dtype), np.repeat(spec, spec.size)])
        y = np.concatenate([second(rng, samples).astype(dtype), np.tile(spec, spec.size)])
    head = x.size
    sweep = sweep_inputs(dtype, rng)
    return np.concatenate([x, sweep]), np.concatenate([y, rng.permutation(sweep)]), head


def judge_binary_loop(cand: Candidate, dtype: np.dtype, compute: str, samples: int, ref_samples: int) -> Dict[str, Any]:
    """One loop of a two-argument ufunc computed in ``compute``, as a runtime helper would serve it: torch's
    values where finite, the original's (recomputed, raising its flags) where torch's are not."""
    rng = np.random.default_rng(0)
    x, y, head = binary_inputs(cand, dtype, samples, rng)
    with np.errstate(all="ignore"):
        want = cand.original(x, y)
        tx, ty = (torch.from_numpy(np.ascontiguousarray(v)).to(_TORCH_DTYPES[compute]) for v in (x, y))
        try:
            raw = cand.torch_op(tx, ty).to(_TORCH_DTYPES[dtype.name]).numpy()
        except (RuntimeError, TypeError) as exc:
            return {"compute": compute, "pass": False, "reason": "torch rejects: " + str(exc).splitlines()[0][:70]}
        recomputed = ~np.isfinite(raw)
        got = np.where(recomputed, want, raw)
    verdict: Dict[str, Any] = {"compute": compute, "of": int(x.size), "recomputed": int(np.count_nonzero(recomputed))}
    bad = class_mismatches(got, want)
    verdict["class mismatch count"] = int(np.count_nonzero(bad))
    verdict["class mismatches"] = [(repr(float(a)), repr(float(b)), repr(float(c)), repr(float(d)))
                                   for a, b, c, d in zip(x[bad][:4], y[bad][:4], want[bad][:4], got[bad][:4])]
    with np.errstate(all="ignore"):
        finite = np.isfinite(got) & np.isfinite(want) & (want != 0) & ~bad & (np.signbit(got) == np.signbit(want))
    dist = np.abs(_ordered(got[finite]) - _ordered(want[finite])) if finite.any() else np.zeros(1, np.int64)
    verdict["max ulp"] = int(dist.max())
    verdict["differ"] = int(np.count_nonzero(differences(got, want)))
    if verdict["max ulp"]:
        k = int(dist.argmax())
        verdict["worst input"] = f"({float(x[finite][k])!r}, {float(y[finite][k])!r})"
    if cand.reference is not None:
        step = max(1, (x.size - head) // max(1, ref_samples // 2))
        pick = np.concatenate([np.arange(0, head, max(1, head // ref_samples)), np.arange(head, x.size, step)])
        worst_o = worst_t = 0.0
        for a, b, w, g in zip(x[pick].tolist(), y[pick].tolist(), want[pick].tolist(), got[pick].tolist()):
            if not (np.isfinite(a) and np.isfinite(b)) or a == 0 or b == 0:
                continue  # mpmath has no signed zero (arctan2(-0.0, -1.0) is -pi); zeros are checked bitwise above
            try:
                exact = cand.reference(mpmath.mpf(a), mpmath.mpf(b))
            except (ValueError, ZeroDivisionError, OverflowError):
                continue
            if isinstance(exact, mpmath.mpc):
                continue
            worst_o, worst_t = max(worst_o, _ulp_err(w, exact, dtype)), max(worst_t, _ulp_err(g, exact, dtype))
        verdict["original vs exact"], verdict["torch vs exact"] = round(worst_o, 3), round(worst_t, 3)
    # Flags the original raises on pairs the helper would not recompute (under='ignore': the helper's
    # condition for the torch path, as softmax's; 'under' on sends the call to the original).
    kept = ~recomputed
    missed: List[tuple] = []
    if raised_flags(lambda a: cand.original(a, y[kept]), x[kept], ("divide", "over", "invalid")):
        for chunk in np.array_split(np.flatnonzero(kept), max(1, int(kept.sum()) // 4096)):
            if raised_flags(lambda a: cand.original(a, y[chunk]), x[chunk], ("divide", "over", "invalid")):
                for i in chunk:
                    flags = raised_flags(lambda a: cand.original(a, y[i:i + 1]), x[i:i + 1], ("divide", "over", "invalid"))
                    if flags:
                        missed.append((f"({float(x[i])!r}, {float(y[i])!r})", sorted(flags)))
                        break
            if missed:
                break
        missed = missed or [("(only on the whole array)", [])]
    verdict["missed flags"] = missed
    reasons = []
    if verdict["class mismatch count"]:
        a, b, c, d = verdict["class mismatches"][0]
        reasons.append(f"special value: {cand.name}({a}, {b}) original {c}, torch {d} ({verdict['class mismatch count']} pairs)")
    if verdict["max ulp"] > 4:
        reasons.append(f"ULP: {verdict['max ulp']} ULP from the original at {verdict['worst input']}")
    if verdict.get("torch vs exact", 0.0) > verdict.get("original vs exact", 0.0) + 0.01:
        reasons.append(f"less accurate: {verdict['torch vs exact']} ULP from exact where the original is {verdict['original vs exact']}")
    if missed:
        reasons.append(f"errstate: the original flags {missed[0][1]} at {missed[0][0]}, not recomputed")
    verdict["pass"] = not reasons
    verdict["reason"] = "; ".join(reasons)
    return verdict


def judge_binary(cand: Candidate, samples: int, ref_samples: int) -> Dict[str, Any]:
    """Per real loop of a two-argument ufunc: the first computation that passes (its own dtype, then wider)."""
    loops: Dict[str, Any] = {}
    for code in ("e", "f", "d"):
        dt = np.dtype(code)
        with np.errstate(all="ignore"):
            result = np.asarray(cand.original(np.ones(2, dt), np.ones(2, dt))).dtype
        if result != dt:
            continue
        tried = []
        for compute in [dt.name] + [w for w in ("float32", "float64") if np.dtype(w).itemsize > dt.itemsize]:
            verdict = judge_binary_loop(cand, dt, compute, samples, ref_samples)
            tried.append(verdict)
            if verdict["pass"]:
                break
        loops[dt.name] = {"accepted": tried[-1]["compute"] if tried[-1]["pass"] else None, "tried": tried}
    return {"loops": loops}


# --- reductions over an axis (softmax, log_softmax): slices, not single inputs ---------


def reduction_inputs(dtype: np.dtype, samples: int, rng: np.random.Generator) -> Dict[str, np.ndarray]:
    """Families of 2-d inputs (slices along either axis), about ``samples`` elements each; all maxima finite."""
    cols = 64
    rows = max(1, samples // cols)
    normal = rng.standard_normal((rows, cols))
    with np.errstate(divide="ignore"):
        families = {
            "normal": normal,
            "normal x 30": normal * 30,
            "wide (subnormal results)": rng.uniform(-760, 0, (rows, cols)),
            "log-probabilities": np.log(rng.dirichlet(np.ones(cols), size=rows)),
            "one dominates": np.concatenate([np.zeros((rows, 1)), rng.uniform(-60, -20, (rows, cols - 1))], axis=1),
            "ties": rng.integers(-3, 3, (rows, cols)).astype(np.float64),
            "some -inf": np.where(rng.random((rows, cols)) < 0.2, -np.inf, normal),
            "signed zeros": np.where(rng.random((rows, cols)) < 0.5, -0.0, 0.0),
            "long slices": rng.standard_normal((16, max(cols, samples // 16))) * 5,
        }
    return {name: x.astype(dtype) for name, x in families.items()}


def reduction_reference(name: str, x: np.ndarray, axis: Any, dtype: np.dtype) -> np.ndarray:
    """SciPy's formula in long double (64-bit mantissa) on the ``x - x_max`` both compute alike in ``dtype``."""
    with np.errstate(all="ignore"):
        d = (x - np.max(x, axis=axis, keepdims=True)).astype(dtype).astype(np.longdouble)
        s = np.sum(np.exp(d), axis=axis, keepdims=True)
        return np.exp(d) / s if name == "softmax" else d - np.log(s)


def _reduction_scale(name: str, want: np.ndarray) -> np.ndarray:
    """A result's ULP: of |result| for softmax; of max(|result|, 1) for log_softmax (its log(sum) is an absolute error)."""
    scale = np.abs(want) if name == "softmax" else np.maximum(np.abs(want), 1)
    return np.spacing(scale.astype(want.dtype)).astype(np.longdouble)


def judge_reduction_path(cand: Candidate, dtype: np.dtype, path: str, compute: Callable[[np.ndarray, Any], Optional[np.ndarray]],
                         samples: int) -> Dict[str, Any]:
    """One way of computing the loop, over every family and axis: the contract's checks with their evidence."""
    verdict: Dict[str, Any] = {"compute": path, "of": 0, "differ": 0, "max ulp": 0, "class mismatch count": 0, "declined": 0}
    worst_o = worst_t = 0.0
    flagged: List[str] = []
    for family, x in reduction_inputs(dtype, samples, np.random.default_rng(0)).items():
        for axis in (1, 0, None):
            with np.errstate(all="ignore"):
                want = cand.original(x, axis=axis)
            got = compute(x, axis)
            if got is None:
                verdict["declined"] += 1
                continue
            if raised_flags(lambda a: cand.original(a, axis=axis), x, ("divide", "over", "invalid")):
                flagged.append(f"{family}, axis={axis}")
            verdict["of"] += int(x.size)
            bad = class_mismatches(got, want)
            if bad.any() and not verdict["class mismatch count"]:
                verdict["class mismatch"] = f"{family}, axis={axis}: original {want[bad][0]!r}, torch {got[bad][0]!r}"
            verdict["class mismatch count"] += int(np.count_nonzero(bad))
            verdict["differ"] += int(np.count_nonzero(differences(got, want)))
            with np.errstate(all="ignore"):
                finite = np.isfinite(want) & (want != 0) & ~bad
                spacing = _reduction_scale(cand.name, want)
                apart = np.abs(got.astype(np.longdouble) - want) / spacing
                ref = reduction_reference(cand.name, x, axis, dtype)
                err_o, err_t = (np.abs(y - ref) / spacing for y in (want, got))
            if finite.any():
                if float(apart[finite].max()) > verdict["max ulp"]:
                    verdict["max ulp"] = float(apart[finite].max())
                    verdict["worst input"] = f"{family}, axis={axis}"
                worst_o, worst_t = max(worst_o, float(err_o[finite].max())), max(worst_t, float(err_t[finite].max()))
    verdict["original vs exact"], verdict["torch vs exact"] = round(worst_o, 3), round(worst_t, 3)
    verdict["max ulp"] = round(verdict["max ulp"], 2)
    reasons = []
    if verdict["class mismatch count"]:
        reasons.append(f"special value: {verdict['class mismatch']} ({verdict['class mismatch count']} elements)")
    if verdict["max ulp"] > 4 and worst_t > worst_o + 0.01:
        reasons.append(f"ULP: {verdict['max ulp']} ULP from the original ({verdict['worst input']}) and less accurate")
    elif worst_t > worst_o + 0.01:
        reasons.append(f"less accurate: {verdict['torch vs exact']} ULP from exact where the original is {verdict['original vs exact']}")
    if flagged:
        reasons.append(f"errstate: the original flags an input the torch path serves ({flagged[0]})")
    verdict["pass"] = not reasons
    verdict["reason"] = "; ".join(reasons)
    return verdict


def judge_reduction(cand: Candidate, samples: int) -> Dict[str, Any]:
    """softmax/log_softmax per loop: plain ``torch.<op>`` first, then the runtime's own torch path (runtime/_softmax.py)."""
    from np2torch.runtime import _softmax
    from np2torch.runtime._decision.route import Route

    helper = _softmax.HELPERS[cand.name]
    route = Route("cpu", "cpu", "forced")

    def plain(x: np.ndarray, axis: Any) -> Optional[np.ndarray]:
        if axis is None:
            return cand.torch_op(torch.from_numpy(x).flatten(), 0).reshape(x.shape).numpy()
        return cand.torch_op(torch.from_numpy(x), axis).numpy()

    loops: Dict[str, Any] = {}
    for dt in (np.dtype(np.float32), np.dtype(np.float64)):
        tried = []
        for path, compute in ((f"torch.{cand.torch_op.__name__}", plain), ("np2torch", lambda x, axis: helper.try_torch(x, axis, route))):
            verdict = judge_reduction_path(cand, dt, path, compute, samples)
            tried.append(verdict)
            if verdict["pass"]:
                break
        loops[dt.name] = {"accepted": tried[-1]["compute"] if tried[-1]["pass"] else None, "tried": tried}
    return {"loops": loops}


def acceptance_markdown(rows: List[dict]) -> str:
    lines = ["## Acceptance (the runtime contract per loop; the first computation that passes is kept)", ""]
    lines.append("| function | loop | verdict | computed in | differ / of | max ULP vs original | exact: original / torch | reason |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for r in rows:
        j = r.get("judge") or {}
        if "note" in j:
            lines.append(f"| {r['name']} | - | rejected | - | - | - | - | {j['note']} |")
            continue
        for loop, v in j.get("loops", {}).items():
            for t in v["tried"]:
                status = "**accepted**" if t["pass"] else "fails"
                exact = f"{t.get('original vs exact', '-')} / {t.get('torch vs exact', '-')}"
                lines.append(f"| {r['name']} | {loop} | {status} | {t['compute']} | {t.get('differ', '-')} / {t.get('of', '-')} | "
                             f"{t.get('max ulp', '-')} | {exact} | {t['reason'] or '-'} |")
    lines += ["", "Loops for the table (`loops=`):", ""]
    for r in rows:
        loops = (r.get("judge") or {}).get("loops")
        if loops is not None:
            ok = {k: v["accepted"] for k, v in loops.items() if v["accepted"]}
            lines.append(f"- {r['name']}: {ok or 'none'}")
    return "\n".join(lines)


def measure(names: Optional[List[str]], samples: int, ref_samples: int, size: int, repeats: int, speed: bool, details: bool) -> List[dict]:
    rows = []
    for cand in CANDIDATES:
        if names and cand.name not in names:
            continue
        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        row: Dict[str, Any] = {"name": cand.name, "qualname": cand.qualname, "kind": cand.kind, "dtypes": dtype_row(cand)}
        row["judge"] = judge(cand, samples, ref_samples)
        row["values"] = value_rows(cand, samples, ref_samples, rng) if details else {}
        if speed:
            wide32 = any(t["pass"] and t["compute"] == "float64" for t in row["judge"].get("loops", {}).get("float32", {}).get("tried", []))
            row["speed"] = speed_row(cand, size, repeats, rng, wide32)
        rows.append(row)
        print(f"{cand.name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return rows


# --- report ------------------------------------------------------------------------


def _cell_values(v: Dict[str, Any]) -> str:
    if v is None:
        return "-"
    if "rejects" in v:
        return "torch rejects"
    if "differ" not in v:
        return v.get("note", "-")
    text = f"{v['differ']}/{v['of']} differ, ≤{v['max ulp']} ULP"
    if v.get("wide"):
        text += " (in f64)"
    if v.get("original vs exact") is not None:
        text += f"; exact: orig {v['original vs exact']}, torch {v['torch vs exact']}"
    return text


def markdown(rows: List[dict]) -> str:
    lines = [acceptance_markdown(rows), "", "## Dtypes (input: original's result / torch's result; `!` torch rejects, `-` original rejects)", ""]
    lines.append("| function | " + " | ".join(INPUT_DTYPES) + " |")
    lines.append("|---|" + "---|" * len(INPUT_DTYPES))
    for r in rows:
        lines.append(f"| {r['name']} | " + " | ".join(r["dtypes"][c] for c in INPUT_DTYPES) + " |")
    if any(r["values"] for r in rows):
        lines += value_markdown(rows)
    if rows and "speed" in rows[0]:
        lines += speed_markdown(rows)
    return "\n".join(lines)


def value_markdown(rows: List[dict]) -> List[str]:
    lines = ["", "## Values (torch vs the original; float16: all 65,536 inputs)", ""]
    lines.append("| function | float16 | float32 | float64 | special-value mismatches (x, original, torch) | finite/zero class mismatches | errstate (default / all / unflagged) |")
    lines.append("|---|---|---|---|---|---|---|")
    for r in rows:
        v = r["values"]
        if not v:
            lines.append(f"| {r['name']} | not a unary ufunc | | | | | |")
            continue
        specials, classes, errs = [], [], []
        for code in ("e", "f", "d"):
            cell = v.get(code) or {}
            if cell.get("special mismatches"):
                specials.append(f"{code}: " + "; ".join(f"{a}→{b} vs {c}" for a, b, c in cell["special mismatches"][:3]))
            if cell.get("class mismatches"):
                classes.append(f"{code}: " + ", ".join(cell["class mismatches"]))
            if cell.get("errstate"):
                e = cell["errstate"]
                errs.append(f"{code}: {e['default']} / {e['all']} / {e['unflagged elements'] or 'none'}")
        lines.append(f"| {r['name']} | {_cell_values(v.get('e'))} | {_cell_values(v.get('f'))} | {_cell_values(v.get('d'))} | "
                     f"{'<br>'.join(specials) or 'none'} | {'<br>'.join(classes) or 'none'} | {'<br>'.join(errs) or '-'} |")
    return lines


def speed_markdown(rows: List[dict]) -> List[str]:
    lines = ["", "## Speed (informational: median ms per call, original / torch path, this machine, noisy)", ""]
    lines.append("| function | float64 | speed-up | float32 | speed-up |")
    lines.append("|---|---|---|---|---|")
    for r in rows:
        cells = []
        for code in ("d", "f"):
            s = r["speed"].get(code)
            if isinstance(s, dict):
                cells += [f"{s['original ms']} / {s['torch ms']}", f"{s['speed-up']}×"]
            else:
                cells += [str(s), "-"]
        lines.append(f"| {r['name']} | " + " | ".join(cells) + " |")
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated candidate names")
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--ref-samples", type=int, default=1000, help="inputs per dtype checked against mpmath")
    parser.add_argument("--size", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--speed", action="store_true", help="also time the original and the torch path (informational)")
    parser.add_argument("--details", action="store_true", help="also the per-dtype value table of the first catalogue")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's own)")
    parser.add_argument("--json", help="also write the raw results here")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    names = args.only.split(",") if args.only else None
    rows = measure(names, args.samples, args.ref_samples, args.size, args.repeats, args.speed, args.details)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=str)
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
