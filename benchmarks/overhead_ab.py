#!/usr/bin/env python
"""Per-call overhead of this checkout's runtime against another commit's, interleaved in one process.

    .venv/bin/python benchmarks/overhead_ab.py              # against main
    .venv/bin/python benchmarks/overhead_ab.py --base HEAD~3 --rounds 21

The runtime imports itself relatively (it is vendored as a copy), so the other
commit's ``src/np2torch/runtime`` is extracted with ``git archive`` into a
temporary folder as the package ``base_runtime`` and imported beside
``np2torch.runtime``.  Both read the same environment (``NP2TORCH_PROFILE``
and friends).  For every function and size the two helpers are timed in turn,
round after round in alternating order (``--rounds``, best of each), so drift on a shared machine
hits both; the original is timed in the same rounds for reference.  First
without torch imported (the short-script path: the profile is not even read),
then with torch imported first (the profile's size floors decide), each in a
fresh interpreter.  Sizes stay below
every torch floor: what is measured is the wrapper, not a torch kernel.

Run it on a quiet machine; differences of a few ns are noise.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import timeit
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CASES = (("exp", None), ("log", None), ("erf", None), ("exp", 1), ("exp", 10), ("exp", 1000), ("exp", 10_000),
         ("log", 10), ("sin", 10), ("erf", 10), ("logsumexp", 10))
"""(function, size): None is a Python float scalar (0.5), as in ``np.log(rng.random())``.  10,000 is above the
provisional floor the helpers keep until they read the profile (4,096) and below the profile's float64 ``exp``
floor on the reference VM; where a machine's profile sends it to torch, that row times torch, not the wrapper."""
NUMBER = 20_000


def extract_base(ref: str, into: Path) -> str:
    """``src/np2torch/runtime`` of ``ref`` as the package ``base_runtime`` in ``into``; returns its name."""
    archive = subprocess.run(["git", "archive", ref, "src/np2torch/runtime"], cwd=ROOT, capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data") if sys.version_info >= (3, 12) else tar.extractall(into)
    (into / "src" / "np2torch" / "runtime").rename(into / "base_runtime")
    sys.path.insert(0, str(into))
    return "base_runtime"


def originals() -> Dict[str, Callable[..., object]]:
    import scipy.special

    return {"exp": np.exp, "log": np.log, "sin": np.sin, "erf": scipy.special.erf, "logsumexp": scipy.special.logsumexp}


def best(call: Callable[[], object]) -> float:
    return min(timeit.repeat(call, number=NUMBER, repeat=3)) / NUMBER


def compare(base: object, new: object, rounds: int) -> List[Tuple[str, int | None, float, float, float]]:
    rows = []
    for name, n in CASES:
        x = 0.5 if n is None else np.linspace(0.1, 0.9, n)
        calls = {"original": originals()[name], "base": getattr(base, name), "new": getattr(new, name)}
        for call in calls.values():
            call(x)
        seen: Dict[str, List[float]] = {key: [] for key in calls}
        order = list(calls)
        for _ in range(rounds):
            for key in order:
                call = calls[key]
                seen[key].append(best(lambda: call(x)))
            order.reverse()  # neither helper always runs first
        rows.append((name, n, min(seen["original"]), min(seen["base"]), min(seen["new"])))
    return rows


def report(title: str, rows: List[Tuple[str, int | None, float, float, float]]) -> None:
    print(title)
    print(f"  {'function':<10}{'n':>6}  {'original':>9}  {'base +':>8}  {'new +':>8}  {'new - base':>10}")
    for name, n, original, base, new in rows:
        print(f"  {name:<10}{'float' if n is None else n:>6}  {original * 1e6:7.3f}us  {(base - original) * 1e6:6.3f}us  "
              f"{(new - original) * 1e6:6.3f}us  {(new - base) * 1e9:+8.1f}ns")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="the commit to compare with (default: main)")
    parser.add_argument("--rounds", type=int, default=11, help="interleaved rounds per case (default: 11)")
    parser.add_argument("--phase", choices=("no-torch", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase is None:
        print(f"load average {os.getloadavg()[0]:.2f}, NP2TORCH_PROFILE={os.environ.get('NP2TORCH_PROFILE', '(this machine)')}, "
              f"base {args.base}, {args.rounds} rounds of best-of-3 x {NUMBER} calls", flush=True)
        for phase in ("no-torch", "torch"):
            subprocess.run([sys.executable, __file__, "--base", args.base, "--rounds", str(args.rounds), "--phase", phase],
                           check=True)
        return
    if args.phase == "torch":
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the runtime sets it: no spinning pool threads
        import torch  # noqa: F401  (before either runtime: nothing to rent, the profile's floors decide)
    with tempfile.TemporaryDirectory() as folder:
        base = importlib.import_module(extract_base(args.base, Path(folder)))
        new = importlib.import_module("np2torch.runtime")
        title = "without torch imported:" if args.phase == "no-torch" else "with torch imported first:"
        report(title, compare(base, new, args.rounds))


if __name__ == "__main__":
    main()
