#!/usr/bin/env python
"""Accuracy of np2torch.runtime's torch path and of NumPy/SciPy against a correctly rounded reference.

For each function and dtype: sample inputs (all finite float16 values; for float32
and float64 ``--samples`` inputs spread over the function's interesting range),
compute the exact value with mpmath (200 bits), and report the error of

* the original (NumPy's exp/log, SciPy's erf),
* np2torch.runtime forced onto the torch path (``min_size=0``, CPU),
* the plain torch op in that dtype (what a naive wrapper would return),

in ULPs of the correctly rounded result (0.5 = correctly rounded to nearest),
plus the largest distance in ULPs between np2torch and the original.

    python scripts/accuracy.py                  # 100000 samples, markdown table
    python scripts/accuracy.py --samples 20000 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Callable, Dict, List, Tuple

import mpmath
import numpy as np
import scipy.special
import torch

import np2torch.runtime as np2t

mpmath.mp.prec = 200

_FUNCS: Dict[str, Tuple[Callable, Callable, Callable]] = {
    # name: (original, runtime helper, mpmath reference)
    "exp": (np.exp, np2t.exp, mpmath.exp),
    "log": (np.log, np2t.log, mpmath.log),
    "erf": (scipy.special.erf, np2t.erf, mpmath.erf),
}
_TORCH = {"exp": torch.exp, "log": torch.log, "erf": torch.erf}


def _sample(name: str, dtype: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    info = np.finfo(dtype)
    if dtype == np.float16:
        every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
        return every[np.isfinite(every)]
    if name == "exp":
        lo, hi = float(np.log(info.smallest_subnormal)), float(np.log(info.max))
        parts = [rng.uniform(lo, hi, n // 2), rng.uniform(-1.0, 1.0, n // 4), rng.uniform(-20.0, 20.0, n - n // 2 - n // 4)]
    elif name == "log":
        # log-uniform over the positive finite range, and densely around 1 (cancellation)
        exps = rng.uniform(np.log2(float(info.smallest_normal)), np.log2(float(info.max)), n // 2)
        parts = [np.exp2(exps) * rng.uniform(1.0, 2.0, n // 2) / 2.0, rng.uniform(0.5, 2.0, n // 4), rng.uniform(0.0, 10.0, n - n // 2 - n // 4)]
    else:
        parts = [rng.uniform(-6.0, 6.0, n // 2), np.exp2(rng.uniform(-60.0, 0.0, n // 4)) * rng.choice([-1.0, 1.0], n // 4), rng.uniform(-1.0, 1.0, n - n // 2 - n // 4)]
    x = np.concatenate(parts).astype(dtype)
    return x[np.isfinite(x)]


def _reference(name: str, func: Callable, x: np.ndarray) -> List[object]:
    """The exact values; None where the real function is undefined (log of a negative number: NaN)."""
    values = []
    for v in x.tolist():
        if name == "log" and v < 0:
            values.append(None)
        elif name == "log" and v == 0:
            values.append(-mpmath.inf)
        else:
            values.append(func(mpmath.mpf(v)))
    return values


def _ulp_errors(y: np.ndarray, ref: List[mpmath.mpf], dtype: np.dtype) -> np.ndarray:
    """|y - exact| in ULPs of the exact value's binade (fractional)."""
    info = np.finfo(dtype)
    out = np.empty(len(ref))
    min_exp = int(np.log2(float(info.smallest_normal)))
    mant = info.nmant
    # Values at least this large round to infinity.
    overflow = mpmath.mpf(float(info.max)) + mpmath.ldexp(1, int(np.log2(float(info.max))) - mant - 1)
    for i, (got, exact) in enumerate(zip(y.tolist(), ref)):
        if exact is None:
            out[i] = 0.0 if got != got else np.inf
            continue
        if not mpmath.isfinite(exact) or exact == 0:
            out[i] = 0.0 if got == float(exact) else np.inf
            continue
        if not np.isfinite(got):
            rounds_to_inf = abs(exact) >= overflow and (got > 0) == (exact > 0)
            out[i] = 0.0 if rounds_to_inf else np.inf
            continue
        e = max(int(mpmath.floor(mpmath.log(abs(exact), 2))), min_exp)
        ulp = mpmath.ldexp(1, e - mant)
        out[i] = float(abs(mpmath.mpf(got) - exact) / ulp)
    return out


def _ulp_apart(a: np.ndarray, b: np.ndarray) -> int:
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[a.itemsize]

    def ordered(v: np.ndarray) -> np.ndarray:
        bits = v.view(ints).astype(object)
        low = int(np.iinfo(ints).min)
        return np.array([low - b if b < 0 else b for b in bits], dtype=object)

    ok = np.isfinite(a) & np.isfinite(b)
    if not ok.any():
        return 0
    return int(np.max(np.abs(ordered(a[ok]) - ordered(b[ok]))))


def measure(samples: int, seed: int = 0) -> List[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for name, (original, helper, reference) in _FUNCS.items():
        for dtype in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)):
            x = _sample(name, dtype, samples, rng)
            want = original(x)
            out_dtype = want.dtype  # SciPy's erf returns float64 for float16
            with np2t.using(device="cpu", min_size=0):
                ours = helper(x)
            plain = _TORCH[name](torch.from_numpy(x)).numpy()
            t0 = time.perf_counter()
            ref = _reference(name, reference, x)
            row = {
                "function": name,
                "dtype": dtype.name,
                "result dtype": out_dtype.name,
                "samples": int(x.size),
                "original max": float(np.max(_ulp_errors(want, ref, out_dtype))),
                "np2torch max": float(np.max(_ulp_errors(ours, ref, out_dtype))),
                "plain torch max": float(np.max(_ulp_errors(plain, ref, plain.dtype))),
                "np2torch vs original (ULP apart)": _ulp_apart(ours, want),
                # NaN counts as identical to NaN: its sign is not specified (see docs/runtime.md)
                "bitwise identical": int(np.sum((ours.view(f"u{ours.itemsize}") == want.view(f"u{want.itemsize}")) | (np.isnan(ours) & np.isnan(want)))),
                "seconds": round(time.perf_counter() - t0, 1),
            }
            rows.append(row)
            print(f"{name} {dtype.name}: done in {row['seconds']} s", file=sys.stderr)
    return rows


def _markdown(rows: List[dict]) -> str:
    head = ["function", "dtype", "samples", "original max", "np2torch max", "plain torch max", "np2torch vs original (ULP apart)", "bitwise identical"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = []
        for key in head:
            value = row[key]
            if key == "dtype" and row["result dtype"] != row["dtype"]:
                value = f"{value} (-> {row['result dtype']})"
            if isinstance(value, float):
                value = f"{value:.3f}"
            if key == "bitwise identical":
                value = f"{row[key]}/{row['samples']}"
            cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000, help="inputs per function and dtype (float16: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a markdown table")
    args = parser.parse_args(argv)
    np.seterr(all="ignore")
    rows = measure(args.samples, args.seed)
    print(json.dumps(rows, indent=2) if args.json else _markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
