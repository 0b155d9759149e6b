"""np2torch.runtime on a Dask cluster next to Dask's own NumPy per chunk, on the same array.

    .venv/bin/python benchmarks/dask_scaling.py                 # 2 workers x 1 thread, 4096 x 8192
    .venv/bin/python benchmarks/dask_scaling.py --workers 2 --rows 4096 --cols 8192 --chunk-rows 512 --repeat 5

Starts a ``distributed.LocalCluster`` (worker processes, loopback only, no
dashboard), makes a random array on the workers and keeps it there
(``persist``), then times, per function, from submitting the graph until every
result block is in worker memory (``persist`` + ``wait``: nothing travels back
to the client; each run waits until the scheduler has dropped the previous
run's results, which would otherwise be reused):

- ``dask``: the original on the Dask array -- ``np.exp(x)`` is Dask's
  ``elemwise``, NumPy per chunk;
- ``np2torch``: ``np2t.exp(x)`` with default settings -- each worker takes the
  path its own machine profile picks (``which`` says which, per worker);
- ``np2torch numpy``: the same graph built under ``using(device="numpy")``:
  NumPy per chunk through np2torch (the cost of the graph itself).

For ``logsumexp`` the original is SciPy, which on a Dask array without
``SCIPY_ARRAY_API=1`` gathers the whole array to the client and reduces it there
(SciPy's own behaviour there); that row is timed once, apart.  np2torch's
rows time its lazy reduction (``np2torch.runtime.dask.logsumexp``: the graph
``np2t.logsumexp`` computes before returning the ``ndarray`` SciPy returns).  Each cell is the
best and the median of ``--repeat`` runs after one warm-up (the warm-up imports
torch on the workers).  The load average is printed before and after: timings
on a busy machine are noise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np


def loadavg() -> str:
    with open("/proc/loadavg", encoding="ascii") as handle:
        return " ".join(handle.read().split()[:3])


def timed(client: Any, build: Callable[[], Any], repeat: int) -> Tuple[float, float]:
    from dask.core import flatten
    from distributed import wait

    runs: List[float] = []
    for i in range(repeat + 1):
        start = time.perf_counter()
        result = client.persist(build())
        wait(result)
        elapsed = time.perf_counter() - start
        keys = list(flatten(result.__dask_keys__()))
        del result
        released(client, keys)  # else the next run finds the same keys in memory and computes nothing
        if i:  # the first run is the warm-up
            runs.append(elapsed)
    return min(runs), statistics.median(runs)


def released(client: Any, keys: List[Any]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not client.run_on_scheduler(lambda dask_scheduler: [k for k in keys if k in dask_scheduler.tasks]):
            return
        time.sleep(0.005)
    raise RuntimeError("the scheduler kept the results of the previous run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=8192)
    parser.add_argument("--chunk-rows", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import dask.array as da
    import scipy.special as sc
    from distributed import Client, LocalCluster, wait

    import np2torch.runtime as np2t
    from np2torch.runtime.dask import logsumexp as lazy_logsumexp

    print(f"load average before: {loadavg()}  (cores: {os.cpu_count()})")
    cluster = LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None, worker_dashboard_address=None
    )
    client = Client(cluster)
    try:
        shape, chunks = (args.rows, args.cols), (args.chunk_rows, args.cols)
        x64 = client.persist(da.random.default_rng(0).uniform(0.5, 20.0, shape, chunks=chunks))
        x32 = client.persist(x64.astype(np.float32))
        wait([x64, x32])
        block = args.chunk_rows * args.cols
        print(f"array {shape}, chunks {chunks} ({block:,} elements), {args.workers} workers x 1 thread, best / median of {args.repeat}")
        cases: Dict[str, Tuple[Any, Callable[[Any], Any], Callable[[Any], Any]]] = {
            "exp float64": (x64, np.exp, np2t.exp),
            "exp float32": (x32, np.exp, np2t.exp),
            "log float64": (x64, np.log, np2t.log),
            "erf float64": (x64, sc.erf, np2t.erf),
            "erf float32": (x32, sc.erf, np2t.erf),
            # The lazy reduction (np2t.logsumexp computes it and returns the ndarray, as SciPy does).
            "logsumexp axis=1 float64": (x64, None, lambda a: lazy_logsumexp(a, axis=1)),
            "logsumexp axis=0 float64": (x64, None, lambda a: lazy_logsumexp(a, axis=0)),
            "logsumexp axis=1 float32": (x32, None, lambda a: lazy_logsumexp(a, axis=1)),
        }
        print(f"{'function':28} {'dask (NumPy)':>15} {'np2torch numpy':>15} {'np2torch':>15} {'speed-up':>9}  worker paths")
        for label, (x, original, helper) in cases.items():
            name = label.split()[0]
            ours = timed(client, lambda: helper(x), args.repeat)
            with np2t.using(device="numpy"):
                off_graph = helper(x)
            off = timed(client, lambda: off_graph, args.repeat)
            base = timed(client, lambda: original(x), args.repeat) if original is not None else None
            kwargs = {"axis": 1} if name == "logsumexp" else {}
            paths = client.run(lambda: np2t.which(name, np.empty((args.chunk_rows, args.cols), x.dtype), **kwargs)[0])
            reference = base if base is not None else off
            cell = lambda t: f"{t[0]:6.3f}/{t[1]:6.3f}s"  # noqa: E731
            print(
                f"{label:28} {cell(base) if base else '-':>15} {cell(off):>15} {cell(ours):>15} {reference[0] / ours[0]:8.2f}x  "
                + ", ".join(sorted(set(paths.values())))
            )
        start = time.perf_counter()
        sc.logsumexp(x64, axis=1)
        print(f"scipy.special.logsumexp(x64, axis=1), the original (gathers the array to the client): {time.perf_counter() - start:.3f}s")
    finally:
        client.close()
        cluster.close()
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
