"""How fast is `np2torch check` next to `ruff check --select NPY`, in CPU seconds?

Installs nothing.  Give it source trees, for example the installed scikit-learn
and scipy packages, and (optionally) a ruff executable:

    python -m venv /tmp/speed && /tmp/speed/bin/pip install scikit-learn scipy ruff
    SP=$(/tmp/speed/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    .venv/bin/python benchmarks/check_speed.py --ruff /tmp/speed/bin/ruff $SP/sklearn $SP/scipy

To compare two versions of np2torch (a change against main, say), name the other
one's command; its rows are timed run for run with this interpreter's:

    .venv/bin/python benchmarks/check_speed.py --ruff /tmp/speed/bin/ruff \
        --compare "env PYTHONPATH=$MAIN/src .venv/bin/python -m np2torch" $SP/sklearn $SP/scipy

The `.py` files of each tree are copied to a temporary folder first (so that no
pyproject.toml, .gitignore or "site-packages" exclusion of either tool changes
what is checked), and every tool runs there as a child process.  CPU seconds
are the children's user + system time (`resource.getrusage(RUSAGE_CHILDREN)`,
which includes np2torch's worker processes); wall seconds are shown beside.
Each cell is the median of --repeat runs.  The children run without
PYTHONDONTWRITEBYTECODE, and each np2torch command runs once untimed first, so
that they run from byte code as an installed np2torch does.

Rows: ruff (--no-cache); np2torch cold (an empty cache folder each run, so it
includes writing the cache; the concise output, whose lines give the findings
counted); cold with --jobs 1; warm (cache filled, nothing changed); with
--compare, the same three rows for a second np2torch (another checkout), run
for run with the first.  No row asks for JSON: `--output-format json` adds each
finding's fix edits, which fixes every file with a fixable finding through
LibCST (on SciPy about ten times the check itself); time it on its own.  Ratios are against ruff on the same scope.  The targets
(docs/benchmarks.md, issue 27): cold <= 5x ruff on scikit-learn and <= 6x on SciPy, warm <= 1x ruff.
Timings on a busy machine are noise: compare CPU seconds of rows from the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

# a concise finding: `path:line:column: CODE message`
_CONCISE_CODE = re.compile(r"^.+?:\d+:\d+: ([A-Z]+[0-9]+) ", re.MULTILINE)


Row = Callable[[list[str]], list[str]]
"""A row's command for the paths of a scope."""


@dataclass
class Timing:
    cpu: float
    wall: float


def timed(command: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[Timing, subprocess.CompletedProcess[bytes]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(list(command), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr.decode(errors='replace')[-2000:]}")
    return Timing(cpu, wall), done


def median(timings: list[Timing]) -> Timing:
    return Timing(statistics.median(t.cpu for t in timings), statistics.median(t.wall for t in timings))


def copy_python_files(tree: Path, into: Path) -> tuple[int, int]:
    """Copy ``tree``'s .py files under ``into``; returns (files, lines)."""
    files = lines = 0
    for path in sorted(tree.rglob("*.py")):
        if not path.is_file():
            continue
        target = into / path.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        target.write_bytes(data)
        files += 1
        lines += data.count(b"\n")
    return files, lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path, help="source trees (folders) to check")
    parser.add_argument("--ruff", default=shutil.which("ruff"), help="ruff executable (default: on PATH)")
    parser.add_argument("--np2torch", default=None,
                        help="np2torch command (default: this interpreter's `-m np2torch`)")
    parser.add_argument("--compare", default=None, metavar="COMMAND",
                        help="a second np2torch command to time beside the first, run for run (e.g. another "
                             "checkout: `env PYTHONPATH=../main/src python -m np2torch`)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell; the median is shown")
    parser.add_argument("--json", action="store_true", help="print the results as JSON as well")
    args = parser.parse_args(argv)

    np2torch = args.np2torch.split() if args.np2torch else [sys.executable, "-m", "np2torch"]
    # An installed np2torch runs from its byte code (pip compiles it): without it each run would compile
    # np2torch's own modules again (about 0.08 s CPU), which is the environment's cost, not the check's.
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "NO_COLOR": "1"}
    work = Path(tempfile.mkdtemp(prefix="np2torch-speed-"))
    try:
        scopes: dict[str, list[str]] = {}
        sizes: dict[str, tuple[int, int]] = {}
        for tree in args.trees:
            name = tree.resolve().name
            if name in scopes:
                sys.exit(f"two trees named {name!r}")
            sizes[name] = copy_python_files(tree, work / name)
            scopes[name] = [name]
        if len(scopes) > 1:
            scopes["all"] = [name for names in list(scopes.values()) for name in names]
            sizes["all"] = (sum(s[0] for s in sizes.values()), sum(s[1] for s in sizes.values()))

        rows: dict[str, Row] = {}
        if args.ruff:
            rows["ruff --select NPY --no-cache"] = lambda paths: [args.ruff, "check", "--select", "NPY",
                                                                      "--no-cache", "--exit-zero", "-q", *paths]
        commands = {"np2torch": np2torch}
        if args.compare:
            commands["compared"] = args.compare.split()
        for name, command in commands.items():
            rows[f"{name} cold"] = lambda paths, c=command: [*c, "check", "-q", "--output-format", "concise", *paths]
            rows[f"{name} cold --jobs 1"] = lambda paths, c=command: [*c, "check", "-q", "-j", "1", *paths]
            rows[f"{name} warm"] = lambda paths, c=command: [*c, "check", "-q", *paths]

        warm_up = work / "warm_up.py"  # each command once, untimed: its byte code written, as installed
        warm_up.write_text("import numpy as np\n\nnp.exp(1.0 + np.zeros(3))\n")
        for command in commands.values():
            timed([*command, "check", "-q", "--no-cache", warm_up.name], work, env)
        results: dict[str, dict[str, Timing]] = {}
        findings: dict[str, dict[str, int]] = {}
        for scope, paths in scopes.items():
            results[scope] = time_rows(rows, scope, paths, work, env, args.repeat, findings)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    report(results, sizes, findings, args.repeat, args.json)
    return 0

def time_rows(rows: dict[str, Row], scope: str, paths: list[str], work: Path, env: dict[str, str], repeat: int,
              findings: dict[str, dict[str, int]]) -> dict[str, Timing]:
    """Each row's median timing on one scope (``findings``: the first cold run's counts, by scope)."""
    timings: dict[str, list[Timing]] = {row: [] for row in rows}
    # Run for run rather than row by row, so that a change in the machine's load hits every row alike.
    for i in range(repeat):
        for row, make in rows.items():
            folder = str(work / f".cache-{scope}-{row}")
            # Checkouts before the lint cache had a variable of its own read NP2TORCH_CACHE_DIR for it.
            cache_env = {**env, "NP2TORCH_LINT_CACHE_DIR": folder, "NP2TORCH_CACHE_DIR": folder}
            if "cold" in row:
                shutil.rmtree(folder, ignore_errors=True)
            elif row.endswith("warm") and i == 0:
                timed(make(paths), work, cache_env)  # fill
            timing, done = timed(make(paths), work, cache_env)
            timings[row].append(timing)
            if row.endswith(" cold") and i == 0:
                counts: dict[str, int] = {}
                for code in _CONCISE_CODE.findall(done.stdout.decode(errors="replace")):
                    counts[code] = counts.get(code, 0) + 1
                if row == "np2torch cold":
                    findings[scope] = dict(sorted(counts.items()))
                elif dict(sorted(counts.items())) != findings.get(scope):
                    print(f"  {scope:>10}  the compared command finds {counts}", file=sys.stderr)
    medians = {row: median(found) for row, found in timings.items()}
    for row, timing in medians.items():
        print(f"  {scope:>10}  {row:<30} {timing.cpu:8.2f} s cpu", file=sys.stderr)
    return medians


def report(results: dict[str, dict[str, Timing]], sizes: dict[str, tuple[int, int]],
           findings: dict[str, dict[str, int]], repeat: int, as_json: bool) -> None:
    ruff_row = "ruff --select NPY --no-cache"
    print(f"\nmedian of {repeat} runs; cpu = user + sys of the child processes, in seconds")
    print(f"{'scope':<10} {'files':>6} {'lines':>8}  {'tool':<30} {'cpu s':>8} {'wall s':>8} {'x ruff':>7}")
    for scope, by_row in results.items():
        files, lines = sizes[scope]
        base = by_row.get(ruff_row)
        for row, timing in by_row.items():
            ratio = f"{timing.cpu / base.cpu:7.1f}" if base and base.cpu > 0 else f"{'-':>7}"
            print(f"{scope:<10} {files:>6} {lines:>8}  {row:<30} {timing.cpu:8.2f} {timing.wall:8.2f} {ratio}")
        print(f"{'':<10} findings: {findings.get(scope, {})}")
    if as_json:
        print(json.dumps({
            "repeat": repeat,
            "scopes": {scope: {"files": sizes[scope][0], "lines": sizes[scope][1], "findings": findings.get(scope),
                               "cpu_s": {row: t.cpu for row, t in by_row.items()},
                               "wall_s": {row: t.wall for row, t in by_row.items()}}
                       for scope, by_row in results.items()},
        }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
