#!/usr/bin/env python
"""Calls past a helper's floor that take the original's single call: what the helper adds, as a program calls it.

    .venv/bin/python benchmarks/decided_calls.py                 # ~1 minute on 2 cores; a quiet machine
    .venv/bin/python benchmarks/decided_calls.py --ledger off    # every call decided in full (as before the ledger)
    .venv/bin/python benchmarks/decided_calls.py --cases erf:5000,sin:20000 --rounds 3001
    .venv/bin/python benchmarks/decided_calls.py --cases erf:120000,hypot:120000 --busy 1   # the load's calls

A call at or past its helper's floor (the smallest size any path of the profile beats the original at) is
decided in Python; where the decision is the original's single call -- torch's path is faster but torch is not
imported yet, and the ski rental counts the call -- that decision is all the helper adds.  Timed here with the
default settings and no torch, each call of the helper and of the original in random order, medians:

* ``back to back``: the calls one after the other;
* ``in a program``: 16 MB of other work through the caches before each call, as a program's own arithmetic
  between two calls moves it (the decision's Python then runs from cold caches).

``--ledger off`` decides every call in full (:mod:`np2torch.runtime._decision.ledger` turned off): the helper's cost
before the ledger.  The path each case takes is printed (``which``); a case that does not take the original here
measures something else and says so.  ``--busy N`` keeps N cores busy with other processes meanwhile: a call the
profile sends to the original on every core then takes the original's single call, the load deciding it
(:func:`np2torch.runtime._paths.blocks.load_leaves_one`), and is timed against it -- the cost of what is checked
after its route (``which`` does not weigh the load: it names ``cores``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_programs import busy_loops

CASES = "erf:5000,erf:20000,expit:20000,sin:20000,hypot:20000,arctan2:20000"
"""Past their floors on the built-in profile, before the original on every core pays: the rental's calls."""


def case_inputs(name: str, n: int) -> Tuple[object, ...]:
    from np2torch.runtime._api import HELPERS
    from np2torch.runtime.table import BINARY

    x = np.linspace(-3.0, 3.0, n)
    return (3.0, x) if HELPERS[name].row.kind == BINARY else (x,)


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=CASES, help="function:size,...")
    parser.add_argument("--rounds", type=int, default=2001)
    parser.add_argument("--ledger", choices=("on", "off"), default="on")
    parser.add_argument("--busy", type=int, default=0, help="cores to keep busy with other processes (niced loops)")
    args = parser.parse_args(argv)
    loops = busy_loops(args.busy)
    try:
        return measure(args)
    finally:
        for loop in loops:
            loop.kill()


def measure(args: argparse.Namespace) -> int:
    if args.ledger == "off":
        from np2torch.runtime._decision import ledger

        ledger.Ledger.count = lambda self, key, settings: False  # type: ignore[method-assign]
        ledger.Ledger.route = lambda self, key, settings: None  # type: ignore[method-assign]
    import np2torch.runtime as np2t
    from np2torch.runtime._api import HELPERS

    if args.ledger == "off":
        for helper in HELPERS.values():
            if helper.front is not None:
                helper.front.ledger = None  # the C front's reading of it too

    np2t.exp(np.zeros(1 << 21))  # the helpers' first 2M elements read no profile (a short script's deferral)
    junk = np.zeros(2_000_000)
    print(f"float64, default settings, torch not imported; ledger {args.ledger}; helper/original, medians of "
          f"{args.rounds} calls in random order")
    print(f"{'case':16} {'back to back':>13} {'in a program':>13}  path")
    for case in args.cases.split(","):
        name, size = case.split(":")
        inputs = case_inputs(name, int(size))
        helper, original = getattr(np2t, name), HELPERS[name].load()
        path, why = np2t.which(name, *inputs)
        for _ in range(50):  # the floor learned, the call decided once
            helper(*inputs)
        ratios = []
        for cold in (False, True):
            calls: Dict[str, Callable[..., object]] = {"helper": helper, "original": original}
            times: Dict[str, List[float]] = {"helper": [], "original": []}
            keys = list(calls)
            for _ in range(args.rounds):
                random.shuffle(keys)
                for key in keys:
                    if cold:
                        np.add(junk, 1.0, out=junk)
                    start = time.perf_counter()
                    calls[key](*inputs)
                    times[key].append(time.perf_counter() - start)
            ratios.append(statistics.median(times["helper"]) / statistics.median(times["original"]))
        note = "the original" if path == "numpy" else f"{path}: not the original here, another path is timed"
        print(f"{case:16} {ratios[0]:>12.2f}x {ratios[1]:>12.2f}x  {note}")
    if "torch" in sys.modules:
        print("(torch was imported meanwhile: the rental paid)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
