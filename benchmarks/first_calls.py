#!/usr/bin/env python
"""A process's first call on torch gives the bits of every later call: many fresh processes, counted.

    .venv/bin/python benchmarks/first_calls.py                 # 300 processes, 3 at a time (~6 min on 2 cores)
    .venv/bin/python benchmarks/first_calls.py --runs 900 --bare

Each process is a fixed program's start: ``np2t.erf`` over 300,000 float64
elements with the torch path forced (``NP2TORCH_MIN_SIZE=0``, the built-in
profile), so its first call imports torch and computes on the block workers,
then the same call again; it prints how many results the two calls disagree on,
and its exit status is checked (an abort at exit counts as a failure).

Intel MKL, under torch's float unary ops on x86, picks each function's kernel on
its first call in the process, and a thread whose first call runs meanwhile can
get a low-accuracy kernel for that call (pytorch/pytorch#188792).  The runtime
computes the first block of each kind of torch work alone
(``runtime/_paths/blocks.py``, ``_first_alone``); this counts what is left.
``--bare`` also runs, without np2torch, two threads' first ``torch.special.erf``
at once on two halves, against a later call: the race itself, on this machine's
torch.  Rare either way (~1 process in 190 and in 180 on the 2-core reference VM
before the rule, torch 2.13): a few hundred processes say little below that.
Exits 1 when a process disagreed or failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Tuple

FIXED = """\
import numpy as np
import np2torch.runtime as np2t

x = np.random.default_rng(1).standard_normal(300_000)
first = np2t.erf(x)
later = np2t.erf(x)
print(int((first != later).sum()))
"""

BARE = """\
import threading
import numpy as np
import torch

torch.set_num_threads(1)
x = torch.from_numpy(np.random.default_rng(1).standard_normal(2 * 65_536))
out = torch.empty_like(x)
meet = threading.Barrier(2)

def half(i):
    torch.set_num_threads(1)
    meet.wait()
    torch.special.erf(x[i * 65_536:(i + 1) * 65_536], out=out[i * 65_536:(i + 1) * 65_536])

other = threading.Thread(target=half, args=(1,))
other.start()
half(0)
other.join()
print(int((out != torch.special.erf(x)).sum()))
"""


def one(program: str, env: Dict[str, str]) -> Tuple[int, str]:
    """``(elements that differ, or -1 where the process failed, what it printed on failure)``."""
    proc = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return -1, f"exit status {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"
    return int(proc.stdout.split()[-1]), ""


def count(title: str, program: str, env: Dict[str, str], runs: int, at_once: int) -> bool:
    """Run ``program`` in ``runs`` fresh processes; print what disagreed; whether anything did."""
    with ThreadPoolExecutor(at_once) as pool:
        found = list(pool.map(lambda _: one(program, env), range(runs)))
    wrong = [(n, why) for n, why in found if n != 0]
    print(f"{title}: {runs} processes, {len(wrong)} disagreed or failed")
    for n, why in wrong:
        print(f"  {why}" if n < 0 else f"  {n:,} elements differ between the first call and a later one")
    return bool(wrong)


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="fresh processes per program")
    parser.add_argument("--at-once", type=int, default=3, help="processes running at a time")
    parser.add_argument("--bare", action="store_true", help="also two bare torch threads' first erf, without np2torch")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_") and k != "OMP_NUM_THREADS"}
    env.update(NP2TORCH_MIN_SIZE="0", NP2TORCH_PROFILE="builtin")
    failed = count("np2t.erf, torch forced: the first call against the next", FIXED, env, args.runs, args.at_once)
    if args.bare:
        failed |= count("bare torch: two threads' first erf at once against a later call", BARE, env, args.runs,
                        args.at_once)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
