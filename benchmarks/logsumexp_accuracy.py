"""Accuracy of np2torch.runtime.logsumexp (torch path forced) and of SciPy against mpmath.

    python benchmarks/logsumexp_accuracy.py [--slices 2000] [--seed 0]

For float32 and float64 and several input families, reduces many random slices
along axis 0 and 1 and prints, in ULPs of the correctly rounded result:
max |ours - reference|, max |scipy - reference|, max |ours - scipy|, and the
same distances in ULPs of max(|result|, |max(slice)|) (the scale of the terms
that SciPy's formula adds, where cancellation makes both lose relative accuracy).
"""

from __future__ import annotations

import argparse

import mpmath
import numpy as np
from scipy.special import logsumexp as scipy_logsumexp

import np2torch.runtime as np2t

mpmath.mp.prec = 200


def reference(slices: np.ndarray) -> np.ndarray:
    """Correctly rounded logsumexp of each row (finite inputs)."""
    out = []
    for row in slices.astype(np.float64):
        total = mpmath.fsum(mpmath.exp(mpmath.mpf(float(x))) for x in row)
        out.append(float(mpmath.log(total)))
    return np.array(out)


def families(rng: np.random.Generator, n: int, length: int) -> dict:
    return {
        "normal": rng.standard_normal((n, length)),
        "normal*30": 30 * rng.standard_normal((n, length)),
        "log-probs": np.log(rng.dirichlet(np.ones(length), size=n)),
        "one dominates": np.concatenate([np.zeros((n, 1)), rng.uniform(-60, -20, (n, length - 1))], axis=1),
        "near zero": rng.uniform(-1e-3, 1e-3, (n, length)) - np.log(length),
        "ties": rng.integers(-3, 1, (n, length)).astype(np.float64),
    }


def ulps(x: np.ndarray, ref: np.ndarray, scale: np.ndarray, dtype: np.dtype) -> float:
    spacing = np.spacing(np.abs(scale).astype(dtype)).astype(np.float64)
    return float(np.max(np.abs(x.astype(np.float64) - ref) / spacing))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices", type=int, default=2000)
    parser.add_argument("--length", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{'dtype':8} {'family':14} {'axis':>4}  ours-ref  scipy-ref  ours-scipy | in ULP of max(|r|,|a_max|): ours-ref scipy-ref ours-scipy")
    worst = {}
    for dtype in (np.dtype(np.float64), np.dtype(np.float32)):
        for name, data in families(rng, args.slices, args.length).items():
            data = data.astype(dtype)
            ref64 = reference(data)
            for axis in (1, 0):
                x = data if axis == 1 else np.ascontiguousarray(data.T)
                with np2t.using(device="cpu", min_size=0):
                    ours = np2t.logsumexp(x, axis=axis)
                theirs = scipy_logsumexp(x, axis=axis)
                ref = ref64.astype(dtype).astype(np.float64)  # correctly rounded to dtype
                scale = np.maximum(np.abs(ref), np.abs(data.max(axis=1).astype(np.float64)))
                row = [
                    ulps(ours, ref, ref, dtype), ulps(theirs, ref, ref, dtype), ulps(ours, theirs.astype(np.float64), ref, dtype),
                    ulps(ours, ref, scale, dtype), ulps(theirs, ref, scale, dtype), ulps(ours, theirs.astype(np.float64), scale, dtype),
                ]
                for i, v in enumerate(row):
                    worst[dtype, i] = max(worst.get((dtype, i), 0.0), v)
                print(f"{dtype.name:8} {name:14} {axis:>4}  " + "  ".join(f"{v:8.2f}" for v in row[:3]) + "  | " + "  ".join(f"{v:8.2f}" for v in row[3:]))
    for dtype in (np.dtype(np.float64), np.dtype(np.float32)):
        print(f"worst {dtype.name}: " + " ".join(f"{worst[dtype, i]:.2f}" for i in range(6)))


if __name__ == "__main__":
    main()
