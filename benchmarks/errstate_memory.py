#!/usr/bin/env python
"""Peak memory of one helper call against its original's, under every error state, each in a fresh process.

    .venv/bin/python benchmarks/errstate_memory.py                # ~1 minute on 2 cores
    .venv/bin/python benchmarks/errstate_memory.py --elements 30000000

A program that validates with ``np.seterr(all="raise")`` near its memory limit must not run out of memory after
``np2torch fix``.  Each case runs in a fresh process: the input is made and touched, torch is imported and the
helper warmed up on a small call first (their memory is not the call's), the peak resident set is reset
(Linux's ``/proc/self/clear_refs``), then one call runs on the torch path (forced: ``using(min_size=0)``) or the
original, and the peak's growth over the resident set before the call is printed.  The result itself counts on
both sides (one array of the input's size).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import List

CASE = """
import json, sys
import numpy as np, scipy.special
import np2torch.runtime as np2t

name, state, side, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
x = np.linspace(0.5, 2.0, n)
y = np.linspace(2.0, 0.5, n)
calls = {"exp": (np2t.exp, np.exp, (x,), {}), "erf": (np2t.erf, scipy.special.erf, (x,), {}),
         "hypot": (np2t.hypot, np.hypot, (x, y), {}),
         "logsumexp": (np2t.logsumexp, scipy.special.logsumexp, (x.reshape(-1, 1000),), {"axis": 0})}
helper, original, args, kwargs = calls[name]
states = {"ignore": {"all": "ignore"}, "default": {}, "raise": {"all": "raise"}, "under-warn": {"under": "warn"}}
with np2t.using(device="cpu", min_size=0):
    helper(*(a[:70_000] for a in args), **kwargs)  # torch imported, the helper warmed up
    func = helper if side == "helper" else original

    def field(name):
        with open("/proc/self/status") as handle:
            return next(int(line.split()[1]) for line in handle if line.startswith(name))

    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # the peak (VmHWM) starts again from the resident set now
    before = field("VmRSS:")
    with np.errstate(**states[state]):
        result = func(*args, **kwargs)
    print(json.dumps({"kb": field("VmHWM:") - before}))
"""


def peak_kb(name: str, state: str, side: str, n: int) -> int:
    done = subprocess.run([sys.executable, "-c", CASE, name, state, side, str(n)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name} {state} {side}: {done.stderr.strip().splitlines()[-1]}")
    return int(json.loads(done.stdout.strip().splitlines()[-1])["kb"])


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=10_000_000)
    args = parser.parse_args(argv)
    n = args.elements
    result_mb = n * 8 / 2**20
    print(f"peak memory of one call over {n:,} float64 elements (the result: {result_mb:.0f} MB), torch path forced; "
          "growth of the peak resident set over the call, MB")
    print(f"{'helper':10} {'state':11} {'original':>9} {'helper':>9} {'extra':>9}")
    for name in ("exp", "erf", "hypot", "logsumexp"):
        for state in ("ignore", "default", "raise", "under-warn"):
            a, b = peak_kb(name, state, "original", n), peak_kb(name, state, "helper", n)
            print(f"{name:10} {state:11} {a / 1024:9.1f} {b / 1024:9.1f} {(b - a) / 1024:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
