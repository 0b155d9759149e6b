#!/usr/bin/env python
"""The dispatch targets of docs/benchmarks.md, measured on this machine (run it on a quiet machine).

    .venv/bin/python benchmarks/dispatch_targets.py                 # all three, ~2 min on 2 cores
    .venv/bin/python benchmarks/dispatch_targets.py --only contention

1. ``one-call``: the wall time of ``python -c`` running a script that makes one
   1e5-element ``np2t.exp`` call, against the same script with ``np.exp``
   (medians of fresh interpreters), and whether torch was imported.
2. ``overhead``: the per-call cost the helper adds where the profile keeps the
   original (best of 7 x 20,000 calls), against the budget of 1 us + 10 %.
3. ``contention``: with one busy process per core, the default path against
   the original at sizes 1e3..1e7 (exp/log/erf float32 and float64),
   as a program's loop sees it: the total time of calls interleaved turn by turn
   with the original's (:func:`_interleaved`); the ratio must stay within 1.5x.
4. ``program-threads``: the program's own threads, as many as cores, each calling ``erf`` in a loop, the main
   thread calling it beside a thread of the program that runs NumPy, and after a matrix product each time (whose
   BLAS threads spin on the other cores a while) (:func:`program_threads`): fixed / original, with torch not
   imported (run before ``contention``).

Default settings throughout (the machine profile in force, ``np2torch tune
--show`` prints it); torch is imported up front for 2 and 3, so the ski rental
is not what is measured there.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
import timeit
from typing import Callable, Dict, List

import numpy as np

SCRIPT = "import numpy as np{extra}\nx = np.linspace(-3, 3, 100_000)\ny = {call}(x)\n"


def one_call(runs: int = 15) -> Dict[str, float]:
    def wall(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - start

    # np2torch's bytecode, as an installed wheel has it (an editable checkout under PYTHONDONTWRITEBYTECODE has none
    # of its own, and each run would compile the runtime's modules again: ~10 ms here on 2026-11-30).
    import np2torch

    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(np2torch.__file__)], check=True,
                   capture_output=True)
    plain = SCRIPT.format(extra="", call="np.exp")
    helper = SCRIPT.format(extra="\nimport np2torch.runtime as np2t", call="np2t.exp")
    probe = helper + "import sys\nprint('torch' in sys.modules)\n"
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    times: Dict[str, List[float]] = {"np.exp": [], "np2t.exp": []}
    for _ in range(runs):  # interleaved, so drift hits both
        times["np.exp"].append(wall(plain))
        times["np2t.exp"].append(wall(helper))
    numpy_s, helper_s = statistics.median(times["np.exp"]), statistics.median(times["np2t.exp"])
    print(f"one-call: python -c with np.exp {numpy_s * 1e3:.1f} ms, with np2t.exp {helper_s * 1e3:.1f} ms "
          f"({(helper_s / numpy_s - 1) * 100:+.1f} %), torch imported: {imported}")
    return {"numpy": numpy_s, "np2torch": helper_s}


def overhead() -> None:
    import scipy.special

    import np2torch.runtime as np2t

    originals: Dict[str, Callable] = {"exp": np.exp, "log": np.log, "erf": scipy.special.erf, "sin": np.sin}
    print("overhead: elements, function, original -> np2torch (added), path, within 1 us + 10 %")
    for n in (1, 10, 1000):
        x = np.linspace(0.1, 0.9, n)
        for name, original in originals.items():
            helper = getattr(np2t, name)
            helper(x)
            base = min(timeit.repeat(lambda: original(x), number=20_000, repeat=7)) / 20_000
            mine = min(timeit.repeat(lambda: helper(x), number=20_000, repeat=7)) / 20_000
            path = np2t.which(name, x)[0]
            ok = mine <= 1.1 * base + 1e-6
            print(f"  {n:>5} {name:<4} {base * 1e6:6.2f} -> {mine * 1e6:6.2f} us ({(mine - base) * 1e6:+.2f}) {path:<5} {'yes' if ok else 'NO'}")


def _spin(stop: "mp.synchronize.Event") -> None:
    while not stop.is_set():
        for _ in range(10_000):
            pass


def _interleaved(helper: Callable, original: Callable, x: np.ndarray, repeat: int) -> float:
    """The helper's total time over the original's, their calls interleaved.

    What a program loses is the sum of its calls' times.  Under contention a
    call's time is decided by where the scheduler's time slices fall (a 1e7
    element ``np.exp`` alone took 23 or 48 ms by turns), so each arm gets the
    same slices only if the arms alternate, in an order that does not line up
    with the slices (shuffled pairs), over enough calls: ``repeat`` runs of
    about 20 ms of the original's time, at least.  A turn is one call, or as
    many as last ~0.2 ms where a call is shorter (the clock's own cost stays
    out of a 2 us call).
    """
    helper(x), original(x)
    start = time.perf_counter()
    for _ in range(10):
        original(x)
    once = (time.perf_counter() - start) / 10
    loops = max(1, int(2e-4 / max(once, 1e-7)))
    turns = max(repeat, int(repeat * 0.02 / (loops * max(once, 1e-7))))
    order = np.random.default_rng(1).integers(0, 2, turns)
    totals = [0.0, 0.0]
    for first in order:
        for f, arm in ((helper, 0), (original, 1)) if first else ((original, 1), (helper, 0)):
            start = time.perf_counter()
            for _ in range(loops):
                f(x)
            totals[arm] += time.perf_counter() - start
    return totals[0] / totals[1]


def contention(repeat: int = 25) -> None:
    import scipy.special

    import np2torch.runtime as np2t
    from np2torch.runtime import tuning

    tuning.torch_available()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    stop = mp.Event()
    spinners = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(cores)]
    for proc in spinners:
        proc.start()
    time.sleep(0.5)
    print(f"contention: {cores} busy processes on {cores} cores; total time of interleaved calls (>= {repeat} x 20 ms); default path / original")
    worst = 0.0
    try:
        cases = [("exp", np.exp, "float32"), ("exp", np.exp, "float64"), ("log", np.log, "float32"),
                 ("log", np.log, "float64"), ("erf", scipy.special.erf, "float32"), ("erf", scipy.special.erf, "float64")]
        for name, original, dtype in cases:
            cells = []
            for n in (10**3, 10**4, 10**5, 10**6, 10**7):
                x = np.random.default_rng(0).uniform(0.1, 3.0, n).astype(dtype)
                helper = getattr(np2t, name)

                ratio = _interleaved(helper, original, x, repeat)
                worst = max(worst, ratio)
                cells.append(f"{n:.0e}: {ratio:.2f}x {np2t.which(name, x)[0]}")
            print(f"  {name} {dtype}: " + ", ".join(cells))
    finally:
        stop.set()
        for proc in spinners:
            proc.join(5)
    print(f"contention: worst ratio {worst:.2f}x (target <= 1.5x)")


def program_threads(rounds: int = 7) -> None:
    """A program's own threads: as many threads of a pool (``concurrent.futures``) as there are cores, each calling
    ``erf`` in a loop; and the main thread calling it while one thread of the program runs NumPy beside it.
    Fixed over original per round, rounds alternating; the median."""
    import concurrent.futures
    import threading

    import scipy.special

    import np2torch.runtime as np2t

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"program-threads: {cores} threads of one program; fixed / original, median of {rounds} alternating rounds")
    with concurrent.futures.ThreadPoolExecutor(cores) as pool:
        for n in (120_000, 1_000_000):
            x = np.linspace(-3.0, 3.0, n)
            calls = max(20, int(3e7 // n))

            def loop(f: Callable, x: np.ndarray = x, calls: int = calls) -> None:
                for _ in range(calls):
                    f(x)

            def pooled(f: Callable) -> float:
                start = time.perf_counter()
                list(pool.map(loop, [f] * cores))
                return time.perf_counter() - start

            print(f"  {cores} threads calling erf over {n:,}: {_rounds(pooled, np2t.erf, scipy.special.erf, rounds):.3f}")
    stop = threading.Event()

    def beside() -> None:
        y = np.linspace(0.0, 1.0, 1_000_000)
        while not stop.is_set():
            np.exp(y)

    other = threading.Thread(target=beside)
    other.start()
    try:
        for n in (120_000, 1_000_000):
            x = np.linspace(-3.0, 3.0, n)
            calls = max(20, int(3e7 // n))

            def alone(f: Callable, x: np.ndarray = x, calls: int = calls) -> float:
                start = time.perf_counter()
                for _ in range(calls):
                    f(x)
                return time.perf_counter() - start

            print(f"  erf over {n:,} beside a thread running np.exp: {_rounds(alone, np2t.erf, scipy.special.erf, rounds):.3f}")
    finally:
        stop.set()
        other.join()
    # A library's own threads: after a matrix product, OpenBLAS's spin for a while on the other cores.
    x = np.linspace(-3.0, 3.0, 120_000)
    for size in (300, 2000):
        a = np.random.default_rng(0).normal(size=(size, size))
        operand = a if size <= 300 else np.ones(size)

        def after_blas(f: Callable, a: np.ndarray = a, operand: np.ndarray = operand) -> float:
            start = time.perf_counter()
            for _ in range(150):
                a @ operand
                f(x)
            return time.perf_counter() - start

        what = f"a {size}x{size} matrix product" if size <= 300 else f"a {size}x{size} matrix times a vector"
        print(f"  erf over 120,000 after {what}: {_rounds(after_blas, np2t.erf, scipy.special.erf, rounds):.3f}")


def _rounds(timed: Callable[[Callable], float], helper: Callable, original: Callable, rounds: int) -> float:
    """The median over ``rounds`` of ``timed(helper) / timed(original)``, which goes first alternating."""
    timed(helper), timed(original)
    ratios = []
    for turn in range(rounds):
        if turn % 2:
            base = timed(original)
            mine = timed(helper)
        else:
            mine = timed(helper)
            base = timed(original)
        ratios.append(mine / base)
    return statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("one-call", "overhead", "contention", "program-threads"))
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, NP2TORCH_PROFILE={os.environ.get('NP2TORCH_PROFILE', '(this machine)')}")
    if args.only in (None, "one-call"):
        one_call()
    if args.only in (None, "overhead"):
        overhead()
    if args.only in (None, "program-threads"):
        program_threads()  # (before contention, which imports torch)
    if args.only in (None, "contention"):
        contention()


if __name__ == "__main__":
    main()
