#!/usr/bin/env python
"""What ``np2torch run`` costs a program: start-up, per call, the first run against the second, a real package.

    .venv/bin/python benchmarks/run_cost.py                 # all four parts, about 2 minutes
    .venv/bin/python benchmarks/run_cost.py --parts calls --rounds 9

Parts (each prints medians over interleaved rounds, so drift hits both sides):

``startup``  a program with no finding (imports NumPy and SciPy, computes ~0.3 s) as ``python prog.py`` and
             as ``python -m np2torch run --report none prog.py``; np2torch's own import (what ``run`` loads
             before the program starts) timed alone beside them.
``calls``    per-call cost of a site (counting, A/B sampling, timing) against calling the helper directly,
             in one process, on arrays below every torch floor (the wrapper, not a kernel); also without
             sampling (the accounting alone), and again once the runtime has imported torch.
``cache``    the first run of a program importing a package with many findings (``--include sklearn``: every
             module analysed and compiled) against a second run (compiled code read from np2torch's cache).
``package``  scikit-learn's GaussianMixture on 200,000 x 8 points, plain against ``--include sklearn``,
             with the report's estimated saving.

Needs scikit-learn for ``cache`` and ``package`` (``.venv/bin/pip install -c constraints.txt scikit-learn``).
Run it on a quiet machine: nothing else timing or compiling.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Sequence

NO_FINDINGS = """\
import numpy as np
import scipy.special
rng = np.random.default_rng(0)
x = rng.standard_normal((400, 400))
for _ in range(8):
    x = np.tanh(x @ x.T / 400)
print(float(scipy.special.logit(0.25)), x.shape)
"""

GMM = """\
import numpy as np
from sklearn.mixture import GaussianMixture
rng = np.random.default_rng(0)
x = np.concatenate([rng.normal(c, 1.0, size=(50_000, 8)) for c in (-4, -1, 2, 5)])
model = GaussianMixture(n_components=4, random_state=0, max_iter=60, tol=1e-6).fit(x)
print(round(float(model.score(x)), 6))
"""


def _time(argv: Sequence[str], cwd: Path, env: Dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _pairs(a: Sequence[str], b: Sequence[str], cwd: Path, env: Dict[str, str], rounds: int,
           before_b: Callable[[], None] = lambda: None) -> tuple[list[float], list[float]]:
    first, second = [], []
    _time(a, cwd, env)  # warm-up: the page cache, NumPy's and SciPy's bytecode
    before_b()
    _time(b, cwd, env)
    for index in range(rounds):
        order = [(a, first), (b, second)] if index % 2 == 0 else [(b, second), (a, first)]
        for argv, into in order:
            if into is second:
                before_b()
            into.append(_time(argv, cwd, env))
    return first, second


def _line(label: str, plain: List[float], other: List[float]) -> str:
    ratios = [o / p for p, o in zip(plain, other)]
    return (f"{label}: plain median {statistics.median(plain):.3f} s, np2torch run median "
            f"{statistics.median(other):.3f} s, ratio median {statistics.median(ratios):.3f} "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} pairs)")


def startup(folder: Path, env: Dict[str, str], rounds: int) -> None:
    (folder / "prog.py").write_text(NO_FINDINGS)
    python = [sys.executable, "prog.py"]
    run = [sys.executable, "-m", "np2torch", "run", "--report", "none", "prog.py"]
    plain, under = _pairs(python, run, folder, env, rounds)
    print(_line("startup (a program with no finding)", plain, under))
    imports = [_time([sys.executable, "-c", "import np2torch.cli.app, np2torch.run.command, np2torch.run.children, "
                      "np2torch.run.program"], folder, env) for _ in range(rounds)]
    empty = [_time([sys.executable, "-c", "pass"], folder, env) for _ in range(rounds)]
    print(f"  np2torch's own import for run: median {statistics.median(imports) - statistics.median(empty):.3f} s "
          "(over an empty interpreter)")


def calls(rounds: int) -> None:
    import numpy as np

    from np2torch.runtime import _backend

    cases = (("exp", 1), ("exp", 100), ("sin", 1000), ("logsumexp", 100))
    for line, (name, size) in enumerate(cases, start=1):
        _calls(rounds, name, size, line, "")
    # Once the runtime has imported torch, the import is a one-time event every fold looks at.
    _backend.load_torch()
    np.exp(np.ones(3))
    for line, (name, size) in enumerate(cases[:2], start=len(cases) + 1):
        _calls(rounds, name, size, line, ", torch imported by the runtime")


def _calls(rounds: int, name: str, size: int, line: int, when: str) -> None:
    import timeit

    import numpy as np

    import np2torch.runtime as np2t
    from np2torch.runtime import sites

    number = 20_000
    helper = getattr(np2t, name)
    site = sites.table(f"bench-{line}", "bench.py", [(line, 1, name, name, "NPT000", ())])[0]
    counted_only = sites.table(f"bench-{line}-unsampled", "bench.py", [(line, 2, name, name, "NPT000", ())],
                               sample=False)[0]
    x = np.linspace(0.1, 1.0, size)
    direct, counted, unsampled = [], [], []
    for _ in range(rounds):
        direct.append(min(timeit.repeat(lambda: helper(x), number=number, repeat=3)) / number)
        counted.append(min(timeit.repeat(lambda: site(x), number=number, repeat=3)) / number)
        unsampled.append(min(timeit.repeat(lambda: counted_only(x), number=number, repeat=3)) / number)
    extra = statistics.median(c - d for c, d in zip(counted, direct))
    accounting = statistics.median(u - d for u, d in zip(unsampled, direct))
    print(f"calls: {name} over {size} elements{when}: helper {statistics.median(direct) * 1e6:.2f} us, "
          f"through a site {statistics.median(counted) * 1e6:.2f} us: +{extra * 1e6:.2f} us per call "
          f"(1 in 8 calls of a band times the original instead); the accounting alone (no sampling) "
          f"+{accounting * 1e6:.2f} us")


def cache(folder: Path, env: Dict[str, str], rounds: int) -> None:
    (folder / "prog.py").write_text("import sklearn.mixture, sklearn.metrics, sklearn.linear_model\nprint('ok')\n")
    cache_dir = folder / "cache"
    env = {**env, "NP2TORCH_CACHE_DIR": str(cache_dir)}
    run = [sys.executable, "-m", "np2torch", "run", "--report", "none", "--include", "sklearn", "prog.py"]

    def cold() -> None:
        subprocess.run(["rm", "-rf", str(cache_dir / "run")], check=True)

    first, second = [], []
    for _ in range(rounds):
        cold()
        first.append(_time(run, folder, env))
        second.append(_time(run, folder, env))
    print(_line("cache: importing sklearn's mixture/metrics/linear_model, first run (cold) vs second",
                first, second).replace("plain", "first").replace("np2torch run median", "second median"))


def package(folder: Path, env: Dict[str, str], rounds: int) -> None:
    (folder / "prog.py").write_text(GMM)
    report = folder / "report.json"
    python = [sys.executable, "prog.py"]
    run = [sys.executable, "-m", "np2torch", "run", "--report", "none", "--report-file", str(report),
           "--include", "sklearn", "prog.py"]
    plain, under = _pairs(python, run, folder, env, rounds)
    print(_line("package (GaussianMixture, 200,000 x 8, --include sklearn)", plain, under))
    import json

    data = json.loads(report.read_text())
    top = sorted(data["sites"], key=lambda site: -site["original_s"])[:5]
    print(f"  report: estimated saving {data['saved_s']:.3f} s of {data['wall_s']:.3f} s; busiest sites:")
    for site in top:
        print(f"    {Path(site['path']).name}:{site['line']} {site['function']} calls {site['calls']} "
              f"median {site['median_elements']} elements, original {site['original_s']:.4f} s, "
              f"saved {site['saved_s']:.4f} s, paths {site['paths']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="startup,calls,cache,package")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    parts = args.parts.split(",")
    env = {**os.environ}
    env.pop("NP2TORCH_MIN_SIZE", None)
    with tempfile.TemporaryDirectory(prefix="np2torch-run-cost-") as tmp:
        folder = Path(tmp)
        (folder / ".git").mkdir()
        if "startup" in parts:
            startup(folder, env, args.rounds)
        if "calls" in parts:
            calls(args.rounds)
        if "cache" in parts:
            cache(folder, env, max(3, args.rounds // 2))
        if "package" in parts:
            package(folder, env, max(3, args.rounds // 2))


if __name__ == "__main__":
    main()
