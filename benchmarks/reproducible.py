#!/usr/bin/env python
"""Same machine, same program, same bits: a fixed program's digest under every condition a rerun may meet.

    .venv/bin/python benchmarks/reproducible.py               # about a minute on 2 cores
    .venv/bin/python benchmarks/reproducible.py --runs 3      # each condition three times

The program is what ``np2torch fix`` makes of a small analysis (``erf``, float32
``exp``, ``log1p`` and ``logsumexp`` over 1e5-2e6 elements, ``logsumexp`` over
(5000, 3) along axis 1, a SciPy ``special`` call on a strided view), printing a
SHA-256 digest of every result.  It runs in fresh processes:

* with the default dispatch (the profile in force on this machine: ``np2torch
  tune``'s, else the built-in one), the same with the program importing torch
  itself (so the profile sends calls to torch from the first one), and with the
  torch path forced (``NP2TORCH_MIN_SIZE=0``);
* each on a quiet machine, with every core kept busy by other processes, with
  ``OMP_NUM_THREADS=1`` and with it unset;
* and the original program under ``np2torch run`` (its sampled calls run the
  original), twice: the two runs must agree with each other.

Within each dispatch every condition must print the same digest; the script
exits 1 when one differed.  (The default and the forced
dispatch differ from each other where the default keeps a call on NumPy: that
is another program's bits, not a rerun's.)
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

PROGRAM = """\
import hashlib

import numpy as np
from scipy.special import erf, logsumexp

rng = np.random.default_rng(2026)
h = hashlib.sha256()
x = rng.normal(size=2_000_003)
for _ in range(3):
    h.update(erf(x).tobytes())
    h.update(np.exp(x.astype(np.float32)).tobytes())
    h.update(np.log1p(np.abs(x[:100_003])).tobytes())
    h.update(logsumexp(x[:1_200_000].reshape(-1, 400), axis=0).tobytes())
    h.update(logsumexp(x[:15_000].reshape(5000, 3), axis=1).tobytes())
    h.update(erf(x[::3]).tobytes())
    x = x * 0.999 + 0.001
print(h.hexdigest())
"""


def _busy() -> None:
    while True:
        pass


def run(program: Path, env: Dict[str, str], under_run: bool = False) -> str:
    command = [sys.executable, "-m", "np2torch", "run", "--select", "ALL", "--report", "none", str(program)] \
        if under_run else [sys.executable, str(program)]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr}")
    return proc.stdout.strip().splitlines()[-1]


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="runs per condition")
    args = parser.parse_args(argv)
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "NP2TORCH_MIN_SIZE")}
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        original, fixed = Path(folder) / "analysis.py", Path(folder) / "fixed" / "analysis.py"
        with_torch = Path(folder) / "fixed" / "analysis_with_torch.py"
        original.write_text(PROGRAM)
        fixed.parent.mkdir()
        fixed.write_text(PROGRAM)
        subprocess.run([sys.executable, "-m", "np2torch", "fix", "--isolated", "--select", "ALL", "--no-cache", str(fixed)],
                       check=False, capture_output=True)
        if "np2t." not in fixed.read_text():
            raise SystemExit("np2torch fix rewrote nothing")
        # A program that imports torch itself (an ML user's): nothing to rent, the profile sends calls to torch at once.
        with_torch.write_text("import torch  # noqa: F401\n" + fixed.read_text())
        for dispatch, program, extra in (("default", fixed, {}), ("default, the program imports torch", with_torch, {}),
                                         ("torch forced", fixed, {"NP2TORCH_MIN_SIZE": "0"})):
            seen: Dict[str, str] = {}
            conditions = [("quiet", {}, False), ("OMP_NUM_THREADS=1", {"OMP_NUM_THREADS": "1"}, False),
                          ("every core busy", {}, False)]
            for label, env_extra, under_run in conditions:
                hogs = []
                if label == "every core busy":
                    hogs = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(os.cpu_count() or 1)]
                    for hog in hogs:
                        hog.start()
                try:
                    for i in range(args.runs):
                        seen[f"{label} #{i + 1}"] = run(program, {**base, **extra, **env_extra}, under_run)
                finally:
                    for hog in hogs:
                        hog.kill()
            failed |= report(f"the fixed program, {dispatch}", seen)
        # np2torch run on the original program: its sampled calls run the original, the others the helper
        failed |= report("np2torch run (default dispatch)", {f"run #{i + 1}": run(original, base, True) for i in range(2)})
    return 1 if failed else 0


def report(title: str, seen: Dict[str, str]) -> bool:
    """Print the digests; whether they differ."""
    digests = set(seen.values())
    print(f"{title}: {len(seen)} runs, {len(digests)} digest(s)")
    for label, digest in seen.items():
        print(f"  {label:24} {digest[:16]}")
    return len(digests) != 1


if __name__ == "__main__":
    sys.exit(main())
