#!/usr/bin/env python
"""Measure the dispatch thresholds of np2torch.runtime: where torch starts beating NumPy/SciPy.

For every helper (exp, log, erf, logsumexp), every dtype it serves with torch,
and every device (the CPU; CUDA when available), time the original and the
helper forced onto that device (``using(device=..., min_size=0)``) over a
geometric range of sizes, with a fresh result each call and the default
``np.errstate`` (so the cost of the error check is included), and report the
crossover: the smallest size from which the helper is faster at that size and
at every larger size measured.  For CUDA the crossover is against the better of
the original and the CPU torch path, which is what ``auto`` chooses between.

Prints the medians and a ready-to-paste ``DEFAULT_MIN_SIZE`` for
``src/np2torch/runtime/_config.py``.  Run it on a quiet machine:

    .venv/bin/python benchmarks/runtime_thresholds.py            # ~10-20 min
    .venv/bin/python benchmarks/runtime_thresholds.py --quick    # rough, ~2 min
    .venv/bin/python benchmarks/runtime_thresholds.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

import np2torch.runtime as np2t
from np2torch.runtime._config import DEFAULT_MIN_SIZE

_DTYPES = {
    "exp": ["float64", "float32", "float16", "complex128", "complex64"],
    "log": ["float64", "float32", "float16", "complex128", "complex64"],
    "erf": ["float64", "float32"],
    "logsumexp": ["float64", "float32"],
    "sin": ["float64"],
    "cos": ["float64"],
    "erfinv": ["float64", "float32"],
}


def _originals() -> Dict[str, Callable]:
    import scipy.special

    return {"exp": np.exp, "log": np.log, "erf": scipy.special.erf, "logsumexp": scipy.special.logsumexp,
            "sin": np.sin, "cos": np.cos, "erfinv": scipy.special.erfinv}


def _inputs(name: str, dtype: str, n: int, rng: np.random.Generator) -> np.ndarray:
    # Values that raise no floating-point flag: the common case being timed.
    low, high = {"exp": (-5.0, 5.0), "log": (0.1, 10.0), "erf": (-3.0, 3.0), "logsumexp": (-5.0, 5.0),
                 "sin": (-10.0, 10.0), "cos": (-10.0, 10.0), "erfinv": (-0.99, 0.99)}[name]
    x = rng.uniform(low, high, n)
    if dtype.startswith("complex"):
        x = x + 1j * rng.uniform(-3.0, 3.0, n)
    return x.astype(dtype)


def _median_seconds(func: Callable[[], object], budget: float) -> float:
    """Median per-call time; calls batched so one timing lasts >= ~2 ms."""
    func()  # warm up (and, the first time, load torch)
    start = time.perf_counter()
    func()
    once = max(time.perf_counter() - start, 1e-7)
    number = max(1, int(2e-3 / once))
    repeats = max(5, min(25, int(budget / (once * number))))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            func()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def _crossover(sizes: List[int], base: List[float], candidate: List[float]) -> Optional[int]:
    """Smallest size from which ``candidate`` is faster at every measured size; None if never."""
    found = None
    for size, b, c in zip(reversed(sizes), reversed(base), reversed(candidate)):
        if c < b:
            found = size
        else:
            break
    return found


def _nice(n: Optional[int], never: int) -> int:
    if n is None:
        return never
    mantissa = 10 ** math.floor(math.log10(n))
    return int(math.ceil(n / mantissa) * mantissa)


def measure(sizes: List[int], budget: float, devices: List[str]) -> Tuple[List[dict], Dict[str, Dict[str, Dict[str, int]]]]:
    rng = np.random.default_rng(0)
    originals = _originals()
    rows: List[dict] = []
    table: Dict[str, Dict[str, Dict[str, int]]] = {}
    never = sizes[-1] * 10
    for name, dtypes in _DTYPES.items():
        helper = getattr(np2t, name)
        original = originals[name]
        for dtype in dtypes:
            times: Dict[str, List[float]] = {"original": []}
            for device in devices:
                times[device] = []
            for n in sizes:
                x = _inputs(name, dtype, n, rng)
                times["original"].append(_median_seconds(lambda: original(x), budget))
                for device in devices:
                    with np2t.using(device=device, min_size=0):
                        times[device].append(_median_seconds(lambda: helper(x), budget))
            cpu_cross = _crossover(sizes, times["original"], times["cpu"])
            table.setdefault(name, {}).setdefault("cpu", {})[dtype] = _nice(cpu_cross, never)
            row = {"function": name, "dtype": dtype, "sizes": sizes, "seconds": times, "cpu crossover": cpu_cross}
            if "cuda" in devices:
                best_host = [min(a, b) for a, b in zip(times["original"], times["cpu"])]
                cuda_cross = _crossover(sizes, best_host, times["cuda"])
                table[name].setdefault("cuda", {})[dtype] = _nice(cuda_cross, never)
                row["cuda crossover"] = cuda_cross
            rows.append(row)
            print(f"{name} {dtype}: cpu crossover {cpu_cross}" + (f", cuda {row.get('cuda crossover')}" if "cuda" in devices else ""), file=sys.stderr)
    return rows, table


def _print_rows(rows: List[dict]) -> None:
    for row in rows:
        print(f"\n{row['function']} {row['dtype']}  (median microseconds per call)")
        header = "size".rjust(10) + "".join(key.rjust(12) for key in row["seconds"])
        print(header)
        for i, size in enumerate(row["sizes"]):
            print(str(size).rjust(10) + "".join(f"{row['seconds'][key][i] * 1e6:12.1f}" for key in row["seconds"]))


def _print_table(table: Dict[str, Dict[str, Dict[str, int]]]) -> None:
    print("\n# Paste into src/np2torch/runtime/_config.py (keep the '*' entries):")
    print("DEFAULT_MIN_SIZE = {")
    for name, kinds in table.items():
        print(f"    {name!r}: {{")
        for kind in ("cpu", "cuda"):
            row = dict(kinds.get(kind, {}))
            if not row:
                row = dict(DEFAULT_MIN_SIZE.get(name, {}).get(kind, {}))
            row.setdefault("*", max(row.values()) if row else 10_000)
            body = ", ".join(f"{k!r}: {v:_}" for k, v in row.items())
            print(f"        {kind!r}: {{{body}}},")
        print("    },")
    print("}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats (rough)")
    parser.add_argument("--max-size", type=float, default=1e7, help="largest size measured (default 1e7)")
    parser.add_argument("--json", metavar="PATH", help="also write the raw medians as JSON")
    args = parser.parse_args(argv)
    step = 4 if args.quick else 2
    sizes = [2**k for k in range(4, int(math.log2(args.max_size)) + 1, step)]
    budget = 0.05 if args.quick else 0.3
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    with np2t.using(device="cpu", min_size=0):
        np2t.exp(np.ones(4))  # load torch before timing anything
    devices = ["cpu"]
    from np2torch.runtime._backend import cuda_available, load_torch

    torch = load_torch()
    if torch is None:
        print("torch is not installed: nothing to measure", file=sys.stderr)
        return 1
    if cuda_available():
        devices.append("cuda")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, devices: {', '.join(devices)}", file=sys.stderr)
    rows, table = measure(sizes, budget, devices)
    _print_rows(rows)
    _print_table(table)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"rows": rows, "table": table}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
