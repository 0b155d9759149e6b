#!/usr/bin/env python
"""CPU seconds per call through an ``np2torch run`` site (``numpy.exp`` on 3 elements: the site's counting,
sampling, timing and folding, not a kernel), the median of 7 rounds of 100,000 calls.

CPU time (``time.process_time``), not wall time, so that a busy machine slows it less; compare two trees
run for run, interleaved:

    git archive <commit> src | tar -x -C /tmp/old
    for i in 1 2; do PYTHONPATH=/tmp/old/src .venv/bin/python benchmarks/run_site_cpu.py; \\
                     .venv/bin/python benchmarks/run_site_cpu.py; done
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import np2torch
from np2torch.runtime import sites

CALLS = 100_000


def main() -> None:
    call = sites.table("bench", "bench.py", [(1, 1, "exp", "numpy.exp", "NPT001", ())])[0]
    x = np.ones(3)
    rounds = []
    for _ in range(7):
        began = time.process_time()
        for _ in range(CALLS):
            call(x)
        rounds.append((time.process_time() - began) / CALLS)
    print(f"{np2torch.__file__}: {statistics.median(rounds) * 1e6:.2f} us a call (CPU), "
          f"rounds {[round(r * 1e6, 2) for r in rounds]}")


if __name__ == "__main__":
    main()
