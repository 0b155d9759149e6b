#!/usr/bin/env python
"""logsumexp over a few components per point (the emcee shape): SciPy, raw torch, and the helper.

    .venv/bin/python benchmarks/short_reductions.py                    # (5000, 3) along axis 1, ~20 s
    .venv/bin/python benchmarks/short_reductions.py --shape 5000 10 --repeat 2000

Per call, medians of interleaved rounds, in one process with torch imported:

* ``scipy``: ``scipy.special.logsumexp(a, axis=1)``;
* ``raw torch``: ``torch.logsumexp(torch.from_numpy(a), 1).numpy()`` on one thread
  (not SciPy's result: it sums the maxima into the exponentials; the floor the
  helper's own checking is measured against);
* ``helper forced``: ``np2t.logsumexp(a, axis=1)`` with ``min_size=0`` (the torch
  path, every exactness check included);
* ``helper``: the default dispatch (the machine profile in force), the path it took, and whether
  its result is SciPy's bit for bit (along a short contiguous axis the original path computes SciPy's
  own arithmetic without its overhead: docs/logsumexp.md).

The issue's target: the forced helper within 1.5x of raw torch. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Callable, Dict, List


def per_call(call: Callable[[], object], repeat: int) -> float:
    call()
    start = time.perf_counter()
    for _ in range(repeat):
        call()
    return (time.perf_counter() - start) / repeat


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs=2, default=(5000, 3))
    parser.add_argument("--repeat", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    import numpy as np
    import scipy.special
    import torch

    import np2torch.runtime as np2t

    a = np.random.default_rng(0).normal(size=tuple(args.shape))
    one = torch.get_num_threads()

    def raw() -> object:
        torch.set_num_threads(1)
        try:
            return torch.logsumexp(torch.from_numpy(a), 1).numpy()
        finally:
            torch.set_num_threads(one)

    def forced() -> object:
        with np2t.using(min_size=0):
            return np2t.logsumexp(a, axis=1)

    calls: Dict[str, Callable[[], object]] = {
        "scipy": lambda: scipy.special.logsumexp(a, axis=1),
        "raw torch": raw,
        "helper forced": forced,
        "helper": lambda: np2t.logsumexp(a, axis=1),
    }
    times: Dict[str, List[float]] = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, call in calls.items():
            times[name].append(per_call(call, args.repeat))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"logsumexp over {args.shape[0]} x {args.shape[1]} along axis 1 ({a.size:,} elements); per call, "
          f"medians of {args.rounds} rounds x {args.repeat} calls")
    for name, value in medians.items():
        print(f"  {name:14} {value * 1e6:8.1f} us   {medians['scipy'] / value:5.2f}x SciPy")
    print(f"  helper forced / raw torch: {medians['helper forced'] / medians['raw torch']:.2f}x (target <= 1.5x)")
    print(f"  default path: {np2t.which('logsumexp', a, axis=1)}")
    same = np2t.logsumexp(a, axis=1).tobytes() == scipy.special.logsumexp(a, axis=1).tobytes()
    print(f"  default result is SciPy's, bit for bit: {'yes' if same else 'no (within a few ULP)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
