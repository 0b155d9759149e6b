#!/usr/bin/env python
"""A call as `np2torch tune` times it against the same call as a program makes it: the original on every core.

    .venv/bin/python benchmarks/program_calls.py                       # ~1 minute on 2 cores; a quiet machine
    .venv/bin/python benchmarks/program_calls.py --functions log,erf --sizes 400000,1600000

``tune`` times each path on the same input again and again, discarding the result: what a worker thread
computed stays in its core's caches for the next call.  A program's call is different: its input was just
written by the program's own thread (a temporary: ``1 + exp(-m)``), other work has moved through the caches
since the last call, and the program's thread reads the result next (``mean(log(...))``).  Both are timed
here for the original's single call and for the original on every core (forced with
``using(min_size=0, exact="bits")``), interleaved, medians of ``--runs``:

* ``tune's``: the same input, the result discarded;
* ``a program's``: 64 MB of other work through the caches, the input written by this thread, then the call and a
  sum of its result by this thread (the sum's time included: where the result lies is the path's doing).

Where the two protocols disagree, the profile's decision for that size is not what a program gets.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Callable, Dict, List

import numpy as np

import np2torch.runtime as np2t
from np2torch.runtime._api import HELPERS

DOMAINS = {"log": (0.5, 3.0), "exp": (-3.0, 3.0), "erf": (-3.0, 3.0), "logaddexp": (-3.0, 3.0)}


def timed(call: Callable[[], object], before: Callable[[], object], after: Callable[[object], object]) -> float:
    before()
    start = time.perf_counter()
    after(call())
    return time.perf_counter() - start


def measure(name: str, n: int, runs: int, junk: np.ndarray) -> Dict[str, float]:
    low, high = DOMAINS.get(name, (-3.0, 3.0))
    source = np.random.default_rng(0).uniform(low, high, n)
    x = source.copy()
    helper, original = getattr(np2t, name), HELPERS[name].load()
    args: Callable[[], tuple] = (lambda: (0.0, x)) if HELPERS[name].row.kind == "binary" else (lambda: (x,))
    with np2t.using(min_size=0, exact="bits"):
        path = np2t.which(name, *args())[0]
    if path != "cores":
        raise SystemExit(f"{name} over {n:,} float64 elements: the original on every core does not serve it here ({path})")

    def forced() -> object:
        with np2t.using(min_size=0, exact="bits"):
            return helper(*args())

    def refresh() -> None:
        np.add(junk, 1.0, out=junk)
        np.copyto(x, source)

    protocols = {
        "tune's": (lambda: None, lambda result: None),
        "a program's": (refresh, lambda result: result.sum()),  # type: ignore[attr-defined]
    }
    times: Dict[str, List[float]] = {f"{p}/{k}": [] for p in protocols for k in ("original", "cores")}
    for _ in range(runs):
        for protocol, (before, after) in protocols.items():
            times[f"{protocol}/original"].append(timed(lambda: original(*args()), before, after))
            times[f"{protocol}/cores"].append(timed(forced, before, after))
    return {key: statistics.median(values) for key, values in times.items()}


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", default="log,exp,erf,logaddexp")
    parser.add_argument("--sizes", default="120000,400000,1600000")
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args(argv)
    junk = np.zeros(8_000_000)  # 64 MB: more than the last-level cache of most machines
    print("float64; the original on every core's speed against the original's single call, medians of "
          f"{args.runs} interleaved runs")
    print(f"{'function':10} {'elements':>10}  {'tune-s protocol':>16}  {'a program-s call':>17}")
    for name in args.functions.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            m = measure(name.strip(), n, args.runs, junk)
            ratios = [m[f"{p}/original"] / m[f"{p}/cores"] for p in ("tune's", "a program's")]
            print(f"{name:10} {n:>10,}  {ratios[0]:>15.2f}x  {ratios[1]:>16.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
