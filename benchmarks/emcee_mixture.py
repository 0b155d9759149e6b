#!/usr/bin/env python
"""An emcee run dominated by ``logsumexp(comp, axis=1)``: the original against ``np2torch fix``'s output.

    .venv/bin/pip install -c constraints.txt emcee     # the sampler (pure Python)
    .venv/bin/np2torch tune                            # once per machine: the profile the fixed program decides from
    .venv/bin/python benchmarks/emcee_mixture.py       # ~4 minutes on 2 cores (32,000 log-probabilities a run)
    .venv/bin/python benchmarks/emcee_mixture.py --points 5000 --components 3 --steps 200 --rounds 5

The program samples the posterior of a Gaussian mixture's weights and means
over a few thousand points, written as emcee's and SciPy's documentation show
(the log-likelihood sums ``logsumexp`` of a (points, components) array along
axis 1).  It is run as written and after ``np2torch fix``, each as a whole
fresh process (``import torch`` and every one-time cost included), alternating
over ``--rounds``; the median wall times and their ratio are printed, and both
programs' chains must agree to 1e-9 (the helpers are within a few ULP).

Without emcee the same log-probability is driven by a plain random-walk
Metropolis loop (one call per walker and step, as emcee's stretch move makes).
Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List

PROGRAM = """\
import sys

import numpy as np
from scipy.special import logsumexp

POINTS, COMPONENTS, STEPS, WALKERS = {points}, {components}, {steps}, {walkers}
rng = np.random.default_rng(42)
true_means = np.linspace(-4, 4, COMPONENTS)
x = rng.normal(true_means[rng.integers(0, COMPONENTS, POINTS)], 1.0)


def log_prob(theta):
    means, logits = theta[:COMPONENTS], theta[COMPONENTS:]
    if np.any(np.abs(means) > 10) or np.any(np.abs(logits) > 10):
        return -np.inf
    log_w = logits - logsumexp(logits)
    comp = log_w - 0.5 * (x[:, None] - means) ** 2 - 0.5 * np.log(2 * np.pi)
    return np.sum(logsumexp(comp, axis=1))


start = np.concatenate([true_means, np.zeros(COMPONENTS)]) + 1e-3 * rng.normal(size=(WALKERS, 2 * COMPONENTS))
try:
    import emcee
except ImportError:
    emcee = None
if emcee is not None:
    sampler = emcee.EnsembleSampler(WALKERS, 2 * COMPONENTS, log_prob)
    sampler.random_state = np.random.RandomState(7).get_state()  # the same chain on every run
    sampler.run_mcmc(start, STEPS)
    chain = sampler.get_chain()
else:
    walkers = start.copy()
    current = np.array([log_prob(w) for w in walkers])
    chain = []
    for _ in range(STEPS):
        for i in range(WALKERS):
            proposal = walkers[i] + 0.05 * rng.normal(size=walkers.shape[1])
            value = log_prob(proposal)
            if np.log(rng.uniform()) < value - current[i]:
                walkers[i], current[i] = proposal, value
        chain.append(walkers.copy())
    chain = np.array(chain)
np.save(sys.argv[1], chain)
"""


def run(path: Path, out: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(path), str(out)], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{path} failed:\n{proc.stderr}")
    return elapsed


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=5000)
    parser.add_argument("--components", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--walkers", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    import numpy as np

    with tempfile.TemporaryDirectory() as folder:
        original, fixed = Path(folder) / "mixture.py", Path(folder) / "fixed" / "mixture.py"
        text = PROGRAM.format(points=args.points, components=args.components, steps=args.steps, walkers=args.walkers)
        original.write_text(text)
        fixed.parent.mkdir()
        fixed.write_text(text)
        subprocess.run([sys.executable, "-m", "np2torch", "fix", "--isolated", "--no-cache", str(fixed)], capture_output=True)
        if "np2t.logsumexp(comp, axis=1)" not in fixed.read_text():
            raise SystemExit("np2torch fix did not rewrite logsumexp(comp, axis=1)")
        times = {"original": [], "fixed": []}
        for _ in range(args.rounds):
            for label, path in (("original", original), ("fixed", fixed)):
                times[label].append(run(path, Path(folder) / f"{label}.npy"))
        a, b = np.load(Path(folder) / "original.npy"), np.load(Path(folder) / "fixed.npy")
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9)
    profile = os.environ.get("NP2TORCH_PROFILE", "this machine's (np2torch tune), else the built-in one")
    print(f"{args.points} points x {args.components} components, {args.walkers} walkers x {args.steps} steps; "
          f"profile: {profile}; medians of {args.rounds} alternating rounds, whole processes")
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, value in medians.items():
        print(f"  {label:8} {value:7.2f} s   (min {min(times[label]):.2f}, max {max(times[label]):.2f})")
    print(f"  speed-up {medians['original'] / medians['fixed']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
