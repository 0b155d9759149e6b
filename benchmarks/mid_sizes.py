#!/usr/bin/env python
"""Never slower at mid sizes: the default path of ``exp``, ``log`` and ``erf`` against the original, as a program calls.

    .venv/bin/python benchmarks/mid_sizes.py                        # this machine's profile, else the built-in one
    .venv/bin/python benchmarks/mid_sizes.py --profile builtin      # the built-in profile, scaled to this machine
    .venv/bin/python benchmarks/mid_sizes.py --sizes 30000,1000000

Each call is over a ramp of float64 values in (0.1, 3) and is followed by a sum over its result (the program's next
operation reads it), the helper's and the original's calls interleaved, the first of each pair alternating;
medians.  torch is not imported unless the profile's rental would import it.  Prints the path ``which`` names and
helper/original: below 1.0 the helper is faster.  Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", help="a profile file, or builtin (NP2TORCH_PROFILE)")
    parser.add_argument("--sizes", default="30000,100000,300000,1000000,3000000")
    args = parser.parse_args(argv)
    if args.profile:
        os.environ["NP2TORCH_PROFILE"] = args.profile
    import numpy as np
    import scipy.special as sc

    import np2torch.runtime as np2t

    for name, original in (("exp", np.exp), ("log", np.log), ("erf", sc.erf)):
        helper = getattr(np2t, name)
        for size in (int(s) for s in args.sizes.split(",")):
            x = np.linspace(0.1, 3, size)
            times: dict[object, list[float]] = {helper: [], original: []}
            for i in range(max(20, min(400, int(3e7 // size)))):
                for f in (helper, original) if i % 2 else (original, helper):
                    start = time.perf_counter()
                    f(x).sum()
                    times[f].append(time.perf_counter() - start)
            mine, theirs = statistics.median(times[helper]), statistics.median(times[original])
            print(f"{name:4s} {size:>10,} {np2t.which(name, x)[0]:6s} helper/original {mine / theirs:.2f}  "
                  f"({mine * 1e6:.0f} / {theirs * 1e6:.0f} us)", flush=True)
    print(f"torch imported: {'torch' in sys.modules}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
