#!/usr/bin/env python
"""Which helper's ULP differences tip an ill-conditioned EM fit over (docs/runtime.md, "Chaotic computations").

A Gaussian-mixture EM fit with full covariances, written as scikit-learn wrote
it with NumPy and SciPy before its array-API rewrite (``np.exp``, ``np.log``,
``scipy.special.logsumexp``, a Cholesky factor per component), is run on data
whose covariance is singular (rank ``d - 1``, half the samples collapsed onto
one point) with a regularisation at the rounding level, so whether a
component's covariance is positive definite is decided by the last bits.  Each
fit runs with the originals, with every helper forced onto torch
(``min_size=0``), and with one helper at a time; a fit whose outcome (converged,
or ``ValueError``: ill-defined covariance) differs is printed with the helpers
that change it alone.

    python scripts/tipping_fit.py                 # seeds 0-299
    python scripts/tipping_fit.py --seeds 0 2000
"""

from __future__ import annotations

import argparse
import warnings
from typing import Callable, Dict, Sequence, Tuple

import numpy as np
import scipy.linalg
import scipy.special

import np2torch.runtime as np2t

ORIGINALS: Dict[str, Callable[..., np.ndarray]] = {"exp": np.exp, "log": np.log, "logsumexp": scipy.special.logsumexp}
HELPERS: Dict[str, Callable[..., np.ndarray]] = {"exp": np2t.exp, "log": np2t.log, "logsumexp": np2t.logsumexp}


def fit(X: np.ndarray, k: int, reg: float, seed: int, f: Dict[str, Callable[..., np.ndarray]]) -> str:
    """One EM fit; ``f`` holds the exp, log and logsumexp it calls.  Returns its outcome."""
    rng = np.random.RandomState(seed)
    resp = rng.uniform(size=(X.shape[0], k))
    resp /= resp.sum(axis=1)[:, None]
    lower = -np.inf
    for _ in range(100):
        weights, means, chol = _m_step(X, resp, reg)
        if chol is None:
            return "ValueError: ill-defined empirical covariance"
        log_det = np.sum(f["log"](chol.reshape(k, -1)[:, :: X.shape[1] + 1]), axis=1)
        square = np.stack([np.sum(np.square(X @ c - m @ c), axis=1) for m, c in zip(means, chol)], axis=1)
        weighted = -0.5 * (X.shape[1] * f["log"](2 * np.pi) + square) + log_det + f["log"](weights)
        norm = f["logsumexp"](weighted, axis=1)
        resp = f["exp"](weighted - norm[:, None])
        previous, lower = lower, float(np.mean(norm))
        if abs(lower - previous) < 1e-3:
            return "converged"
    return "not converged"


def _m_step(X: np.ndarray, resp: np.ndarray, reg: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    nk = resp.sum(axis=0) + 10 * np.finfo(resp.dtype).eps
    means = resp.T @ X / nk[:, None]
    chol = np.empty((len(nk), X.shape[1], X.shape[1]))
    for i, mean in enumerate(means):
        diff = X - mean
        covariance = (resp[:, i] * diff.T) @ diff / nk[i] + reg * np.eye(X.shape[1])
        try:
            factor = scipy.linalg.cholesky(covariance, lower=True)
        except np.linalg.LinAlgError:
            return nk / len(X), means, None
        chol[i] = scipy.linalg.solve_triangular(factor, np.eye(X.shape[1]), lower=True).T
    return nk / len(X), means, chol


def data(seed: int) -> Tuple[np.ndarray, int, float]:
    """Singular data (rank d - 1; half the samples on one point half the time), k components, a tiny reg."""
    rng = np.random.RandomState(seed)
    n, d = int(rng.choice([40, 200, 600])), int(rng.choice([2, 3, 5]))
    X = rng.normal(size=(n, d - 1)) @ rng.normal(size=(d - 1, d))
    if rng.rand() < 0.5:
        X[: n // 2] = 1.0
    return X, int(rng.choice([2, 3, 6])), float(rng.choice([1e-17, 1e-16, 3e-16, 1e-15, 3e-15, 1e-14]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs=2, type=int, default=(0, 300), metavar=("FIRST", "STOP"))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    np2t.configure(min_size=0)  # every helper on torch where it serves the loop
    tipped = {name: 0 for name in ORIGINALS}
    flips = 0
    for seed in range(*args.seeds):
        X, k, reg = data(seed)
        original = fit(X, k, reg, seed, ORIGINALS)
        forced = fit(X, k, reg, seed, HELPERS)
        if original == forced:
            continue
        flips += 1
        alone = [name for name in ORIGINALS if fit(X, k, reg, seed, {**ORIGINALS, name: HELPERS[name]}) != original]
        tipped.update({name: tipped[name] + 1 for name in alone})
        print(f"seed {seed}: {X.shape}, k={k}, reg={reg:g}: {original!r} -> {forced!r}; alone: {', '.join(alone) or '-'}")
    total = args.seeds[1] - args.seeds[0]
    print(f"{flips} of {total} fits changed outcome; changed by one helper alone: "
          + ", ".join(f"{name} {count}" for name, count in tipped.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
