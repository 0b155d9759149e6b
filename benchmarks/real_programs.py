#!/usr/bin/env python
"""The real-program gate: whole programs, fixed against original, alternating, default settings, no ``tune`` needed.

    .venv/bin/pip install -c constraints.txt lmfit emcee     # the libraries the programs use
    .venv/bin/python benchmarks/real_programs.py              # ~15 minutes on 2 cores (5 pairs of each program)
    .venv/bin/python benchmarks/real_programs.py --only lmfit --pairs 7 --busy 1

Each program is run as written and after ``np2torch fix`` (the library it leans on fixed too, where the work
happens there: lmfit's models call ``erf``), each as a whole fresh process, in alternating pairs (the original first in
even pairs, the fixed program first in odd ones, so that neither always runs second on a warmer machine).  Printed per
program: the median of fixed/original wall time pair by pair (and its range), both programs' digests (a SHA-256
of their results: the same digest means the same bits) and whether the fixed program imported torch.  ``--busy N``
keeps N cores busy with other processes meanwhile (niced loops), as a shared machine does.  Nothing is tuned: the
profile in force is this machine's if ``np2torch tune`` ran, else the built-in one.

* ``lmfit``: a composite model as lmfit's documentation builds it (two Gaussians, a skewed Gaussian, an ``erf``
  step and an exponential background) fitted to 120,000 points with ``leastsq`` and then ``least_squares``, from
  three starting points (~12 s on 2 cores: about 1,100 ``erf`` calls on 120,000 points);
* ``emcee``: benchmarks/emcee_mixture.py's mixture log-probability, dominated by ``logsumexp(comp, axis=1)``;
* ``logistic``: a logistic model fitted by gradient descent over 400,000 points, dominated by ``exp`` and ``log``
  (``log(1 + exp(-y z))`` and its gradient) on arrays of 1e5-1e6 elements.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DIGEST = '''
import hashlib, json, sys
import numpy as np
def report(*arrays):
    digest = hashlib.sha256()
    for a in arrays:
        digest.update(np.ascontiguousarray(a).tobytes())
    print(json.dumps({"digest": digest.hexdigest()[:16], "torch": "torch" in sys.modules}))
'''

LMFIT = DIGEST + '''
import numpy as np
from lmfit.models import ExponentialModel, GaussianModel, SkewedGaussianModel, StepModel

rng = np.random.default_rng(3)
x = np.linspace(0, 250, 120_000)
truth = (12 * np.exp(-x / 80) + 60 * np.exp(-(x - 60) ** 2 / 50) + 40 * np.exp(-(x - 140) ** 2 / 120)
         + 30 / (1 + np.exp(-(x - 190) / 4)) + 25 * np.exp(-(x - 100) ** 2 / 30) * (1 + np.tanh((x - 100) / 5)))
y = truth + rng.normal(0, 1.5, x.size)
model = (ExponentialModel(prefix="bg_") + GaussianModel(prefix="g1_") + GaussianModel(prefix="g2_")
         + SkewedGaussianModel(prefix="sk_") + StepModel(form="erf", prefix="st_"))
fits = []
for shift in (0.0, 6.0, -6.0):  # a multi-start fit: three starting points, each leastsq then least_squares
    params = model.make_params(bg_amplitude=10, bg_decay=70, g1_center=50 + shift, g1_sigma=12, g1_amplitude=700,
                               g2_center=150 - shift, g2_sigma=20, g2_amplitude=900, sk_center=90 + shift,
                               sk_sigma=10, sk_amplitude=300, sk_gamma=1, st_center=175 - shift, st_sigma=10,
                               st_amplitude=30)
    first = model.fit(y, params, x=x, method="leastsq")
    second = model.fit(y, first.params, x=x, method="least_squares")
    fits += [first.best_fit, second.best_fit, np.array([p.value for p in second.params.values()])]
report(*fits)
'''

LOGISTIC = DIGEST + '''
import numpy as np

rng = np.random.default_rng(5)
n = 400_000
features = rng.normal(size=n)
labels = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-(1.5 * features - 0.3))), 1.0, -1.0)
a, b, losses = 0.0, 0.0, []
for step in range(150):
    z = a * features + b
    margin = labels * z
    loss = np.mean(np.log(1 + np.exp(-margin)))
    weight = -labels * np.exp(-np.logaddexp(0, margin))
    a -= 0.5 * np.mean(weight * features)
    b -= 0.5 * np.mean(weight)
    losses.append(loss)
report(np.array([a, b]), np.array(losses))
'''


def emcee_program(steps: int) -> str:
    from emcee_mixture import PROGRAM

    text = PROGRAM.format(points=5000, components=3, steps=steps, walkers=32)
    return DIGEST + text.replace("np.save(sys.argv[1], chain)", "report(chain)")


def prepare(name: str, folder: Path, steps: int) -> Tuple[List[str], List[str], Dict[str, str]]:
    """(original command, fixed command, the fixed program's extra environment) of program ``name`` in ``folder``."""
    text = {"lmfit": LMFIT, "logistic": LOGISTIC, "emcee": emcee_program(steps) if name == "emcee" else ""}[name]
    original, fixed = folder / f"{name}_program.py", folder / "fixed" / f"{name}_program.py"
    fixed.parent.mkdir(parents=True, exist_ok=True)
    original.write_text(text)
    fixed.write_text(text)
    targets = [str(fixed)]
    env: Dict[str, str] = {}
    if name == "lmfit":
        import lmfit

        library = folder / "fixed" / "site" / "lmfit"
        shutil.copytree(Path(lmfit.__file__).parent, library)
        targets.append(str(library))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(library.parent), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "np2torch", "fix", "--isolated", "--no-cache", *targets],
                          capture_output=True, text=True)
    if proc.returncode == 2:
        raise SystemExit(f"np2torch fix failed on {name}:\n{proc.stderr}")
    # The fixed library's bytecode, as the installed original has its own: without it (PYTHONDONTWRITEBYTECODE, or a
    # copied stale __pycache__) every fixed run compiles the rewritten modules again, ~0.16 s of lmfit's ~8 s here.
    # np2torch's own bytecode too, as an installed wheel has it: an editable checkout under PYTHONDONTWRITEBYTECODE
    # has none, and every fixed run compiled the runtime's modules again (~30 ms of a ~4 s lmfit run, on 2026-11-30).
    import np2torch

    package = Path(np2torch.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", *targets[1:], str(package)], check=True, capture_output=True)
    if "np2t." not in fixed.read_text() and name != "lmfit":
        raise SystemExit(f"np2torch fix rewrote nothing in {name}")
    return [sys.executable, str(original)], [sys.executable, str(fixed)], env


def run(command: List[str], env: Dict[str, str]) -> Tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env})
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{command[-1]} failed:\n{proc.stderr}")
    return elapsed, json.loads(proc.stdout.strip().splitlines()[-1])


def busy_loops(count: int) -> List[subprocess.Popen]:
    code = "import os\nos.nice(10)\nwhile True:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]


def measure(name: str, pairs: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        original, fixed, env = prepare(name, Path(tmp), steps)
        ratios, seen = [], {"original": set(), "fixed": set()}
        torch = set()
        for pair in range(pairs):
            if pair % 2:
                b, out_b = run(fixed, env)
                a, out_a = run(original, {})
            else:
                a, out_a = run(original, {})
                b, out_b = run(fixed, env)
            ratios.append(b / a)
            seen["original"].add(out_a["digest"])
            seen["fixed"].add(out_b["digest"])
            torch.add(out_b["torch"])
    return {"program": name, "pairs": pairs, "ratio": statistics.median(ratios), "low": min(ratios),
            "high": max(ratios), "original_digests": sorted(seen["original"]),
            "fixed_digests": sorted(seen["fixed"]), "torch_imported": sorted(torch)}


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="lmfit,emcee,logistic", help="comma-separated programs")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--busy", type=int, default=0, help="cores to keep busy with other processes")
    parser.add_argument("--emcee-steps", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    loops = busy_loops(args.busy)
    try:
        results = [measure(name.strip(), args.pairs, args.emcee_steps) for name in args.only.split(",")]
    finally:
        for loop in loops:
            loop.kill()
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    profile = os.environ.get("NP2TORCH_PROFILE", "this machine's (np2torch tune), else the built-in one")
    print(f"fixed/original wall time, median of {args.pairs} alternating pairs of whole processes; "
          f"{args.busy} core(s) kept busy by other processes; profile: {profile}")
    for r in results:
        same = "same digest" if r["fixed_digests"] == r["original_digests"] else "digests differ"
        print(f"  {r['program']:9} {r['ratio']:.3f}  ({r['low']:.3f}-{r['high']:.3f})  speed {1 / r['ratio']:.2f}x  "
              f"{same} (original {', '.join(r['original_digests'])}; fixed {', '.join(r['fixed_digests'])})  "
              f"torch imported: {'/'.join(map(str, r['torch_imported']))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
