"""``np2torch tune``: measure this machine's profile, the data np2torch.runtime decides from.

For every function of the table and every loop torch serves, the original,
the original on every core, torch on one thread, torch on its pool and (with a
GPU) CUDA are timed over a range of sizes, and for the float32/float64 loops
torch does not serve exactly, the original and the original on every core;
what waking an idle worker costs a call on two threads is timed once; ``import torch`` is timed in a fresh interpreter.  The profile
is written atomically to the user's cache directory under a fingerprint of
the machine and its software (:func:`np2torch.runtime.tuning.fingerprint`),
where every later process finds it.  ``--show`` prints the profile in force and the path
each function takes per size band.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import click
import numpy as np

from np2torch.runtime.tuning import LOOP_IDLE, MIN_BLOCK, SHARED_BLOCK
from np2torch.tools.originals import importable

if TYPE_CHECKING:
    from np2torch.runtime.tuning import Profile

SHARED_SPLIT = 2 * SHARED_BLOCK
"""The smallest call the paths on every core cut in two (:data:`np2torch.runtime.tuning.SHARED_BLOCK` elements each,
one a thread), where the power of 4 below it is one block on the calling thread, the original's or one torch
thread's time.  Measured, not interpolated: a line from the power of 4 below missed that two blocks already run at
two threads' speed."""
SPLIT = 2 * MIN_BLOCK
"""Where the blocks of a call stop being cut for the threads on every machine with fewer than three
(:data:`np2torch.runtime.tuning.MIN_BLOCK` elements each from here on): measured, as a curve's bend is."""
SIZES = tuple(sorted({4**k for k in range(5, 13)} | {SHARED_SPLIT, SPLIT}))
"""1,024 to 16,777,216 elements, a factor 4 apart, and :data:`SHARED_SPLIT` and :data:`SPLIT`."""
QUICK_SIZES = (1 << 12, 1 << 15, 1 << 18, 1 << 21)
REDUCTION_SIZES = tuple(4**k for k in range(5, 12, 2)) + (4**12,)
"""A reduction's shape classes, each a curve: 1,024 to 16,777,216 elements, a factor 16 apart (six classes
per loop dtype within tune's time)."""
QUICK_REDUCTION_SIZES = (1 << 12, 1 << 16, 1 << 20)
MAX_CALL = 0.05
QUICK_MAX_CALL = 0.004
"""A size is the last measured once the original's call takes longer than this (the model extrapolates)."""
BAND_SIZES = (10**3, 10**4, 10**5, 10**6, 10**7, 10**8)


def pairs(names: Sequence[str] | None = None, everything: bool = False) -> list[tuple[str, str]]:
    """(function, loop dtype) pairs of the table, in table order: ``names``, else every function
    (``everything``), else those whose rules are on by default (what fixed code calls unless the
    project opted into more; the built-in profile decides for the others)."""
    from np2torch.runtime.table import FUNCTIONS

    known = [row.name for row in FUNCTIONS]
    if names is not None:
        unknown = [name for name in names if name not in known]
        if unknown:
            raise click.BadParameter(f"unknown function(s) {', '.join(unknown)}; choose from {', '.join(known)}", param_hint="--functions")
    chosen = [row for row in FUNCTIONS if (row.name in names if names is not None else everything or row.default)]
    kept = importable([row.name for row in chosen], [row.qualname for row in chosen], named=names is not None, tool="tune")
    from np2torch.runtime import tuning

    return [(row.name, dtype) for row in chosen if row.name in kept
            for dtype in (*row.loops, *(tuning.cores_only_loops(row.name) if tuning.serves_cores(row.name) else ()))]


_IMPORT_CODE = """
import os, sys, time
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import numpy
try:
    import scipy.special
except ImportError:
    pass
if sys.argv[1] == "cold":
    # Out of the page cache, as after a reboot or a day of other work: torch's files are read from disk again.
    import importlib.util
    spec = importlib.util.find_spec("torch")
    for folder in spec.submodule_search_locations or ():
        for root, _, files in os.walk(folder):
            for name in files:
                if name.endswith((".so", ".py", ".pyc")) or ".so." in name:
                    try:
                        fd = os.open(os.path.join(root, name), os.O_RDONLY)
                    except OSError:
                        continue
                    try:
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    finally:
                        os.close(fd)
t = time.perf_counter()
import torch
print(time.perf_counter() - t)
"""


def measure_import_seconds(repeat: int = 3) -> dict[str, float]:
    """Seconds ``import torch`` takes in a fresh interpreter that has imported NumPy and SciPy, as a program pays it
    (median of ``repeat``): ``warm`` with torch's files in the page cache, ``cold`` after asking the kernel to drop
    them (``posix_fadvise``; where it cannot, ``cold`` is a warm import's time)."""
    found: dict[str, float] = {}
    for cache in ("warm", "cold"):
        runs = []
        for _ in range(repeat):
            proc = subprocess.run([sys.executable, "-c", _IMPORT_CODE, cache], capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                lines = proc.stderr.strip().splitlines()
                detail = lines[-1] if lines else f"exit status {proc.returncode}, nothing on stderr"
                raise click.ClickException(f"`import torch` failed in a fresh interpreter: {detail}")
            runs.append(float(proc.stdout.strip().splitlines()[-1]))
        found[cache] = sorted(runs)[len(runs) // 2]
    return found


def import_charge(seconds: Mapping[str, float]) -> float:
    """The import cost the ski rental charges (:attr:`Profile.import_seconds`): the cold import's, and at least
    :data:`IMPORT_BUSY_FACTOR` times the warm one's (a program's other threads and other processes slow it:
    1.3 s quiet, 2.2-3.0 s with other work running, where a fresh interpreter measured 0.84 s on the reference VM)."""
    return max(seconds["cold"], IMPORT_BUSY_FACTOR * seconds["warm"])


IMPORT_BUSY_FACTOR = 2.0
"""How much slower than a quiet, warm import the rental assumes a program's import of torch can be."""


def run_tune(names: Sequence[str] | None, quick: bool, cuda: bool, progress: Any = None, everything: bool = False,
             chosen: Sequence[tuple[str, str]] | None = None) -> Profile:
    """Measure and return a :class:`Profile` (not written); ``chosen``: the :func:`pairs` already computed."""
    from np2torch.runtime import tuning
    from np2torch.runtime.table import FUNCTIONS_BY_NAME

    if not tuning.torch_available():
        raise click.ClickException("torch is not installed: np2torch.runtime calls NumPy/SciPy for everything, there is nothing to tune")
    import torch

    use_cuda = cuda and tuning.cuda_available()
    # The pool is measured on every core this process may use, whatever OMP_NUM_THREADS says: a
    # program with fewer threads runs the same blocks, fewer at once (the same bits), and the
    # profile is this machine's, not one setting's.
    threads_before = torch.get_num_threads()
    torch.set_num_threads(tuning.usable_cores())
    curves = {}
    busy: dict[str, float] = {}
    try:
        for name, dtype, klass in measured_curves(pairs(names, everything) if chosen is None else chosen):
            sizes = sizes_for(klass, quick)
            if dtype not in FUNCTIONS_BY_NAME[name].loops:  # torch serves no exact loop: the original on every core
                paths = ["numpy", "cores"]
            else:
                paths = ["numpy"] + (["cores"] if tuning.serves_cores(name) else []) + ["cpu1", "cpu"]
            if use_cuda and dtype in FUNCTIONS_BY_NAME[name].cuda_loops:
                paths.append("cuda")
            key = tuning.curve_key(name, dtype, klass)
            curves[key], others = _quiet_curve(name, dtype, klass, paths, sizes, quick, progress)
            if others > BUSY_CORES:
                busy[key] = round(others, 2)
        threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(threads_before)
    wake = tuning.measure_wake()
    loop_wake = tuning.measure_wake(LOOP_IDLE)
    imports = measure_import_seconds(1 if quick else 3)
    if progress is not None:
        progress.update(1)
    notes = {"import_torch": imports, "busy": busy, tuning.WAKE_NOTE: wake, tuning.LOOP_WAKE_NOTE: loop_wake}
    return tuning.Profile("", tuning.fingerprint(), import_charge(imports), threads, curves, notes)


BUSY_CORES = 0.5
"""Other processes keeping more than this many cores busy (on average) while a curve was measured make it a busy
machine's curve: measured once more, and named in the profile's notes and tune's output if still busy."""


def _quiet_curve(name: str, dtype: str, klass: str, paths: Sequence[str], sizes: Sequence[int], quick: bool,
                 progress: Any) -> tuple[Any, float]:
    """A curve, measured once more when other processes kept the machine busy meanwhile; the cores they kept busy
    (on average) during the one kept."""
    from np2torch.runtime import tuning

    for attempt in range(2):
        others = tuning.others_meter()
        step = (lambda: progress.update(1)) if progress is not None and attempt == 0 else None
        curve = tuning.measure(name, np.dtype(dtype), paths, sizes, QUICK_MAX_CALL if quick else MAX_CALL, progress=step,
                               klass=klass)
        if progress is not None and attempt == 0:
            progress.update(len(sizes) - len(curve.sizes))
        busy = others()
        if busy <= BUSY_CORES:
            break
    return curve, busy


def measured_curves(chosen: Sequence[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(function, loop dtype, shape class) of every curve tune measures for the :func:`pairs` ``chosen``: a
    reduction's per shape class."""
    from np2torch.runtime.table import FUNCTIONS_BY_NAME

    return [(name, dtype, klass) for name, dtype in chosen
            for klass in (tuning_classes() if FUNCTIONS_BY_NAME[name].kind == "reduction" else ("",))]


def tuning_classes() -> tuple[str, ...]:
    from np2torch.runtime import tuning

    return tuning.REDUCTION_CLASSES


def sizes_for(klass: str, quick: bool) -> tuple[int, ...]:
    if klass:
        return QUICK_REDUCTION_SIZES if quick else REDUCTION_SIZES
    return QUICK_SIZES if quick else SIZES


def bands_report(profile: Profile, device: str = "auto") -> list[dict[str, Any]]:
    """Per (function, dtype): the chosen path per size band and the predicted speed-up at round sizes."""
    from np2torch.runtime import tuning

    rows = []
    for key, measured in sorted(profile.curves.items()):
        name, _, dtype = key.partition("/")
        curve = tuning.as_decided(profile, measured, key)
        allowed = tuning.ALL_PATHS if device != "cpu" and "cuda" in curve.seconds else tuning.CPU_PATHS
        bands = tuning.bands_of(curve, allowed)
        speedups = {}
        for n in BAND_SIZES:
            path = bands.at(n)
            original, chosen = curve.predict("numpy", n), curve.predict(path, n)
            speedups[str(n)] = {"path": path, "speedup": (original / chosen) if original and chosen else None}
        rows.append({"function": name, "dtype": dtype, "bands": [{"from": s, "path": p} for s, p in zip(bands.starts, bands.paths)], "at": speedups})
    return rows


_LABELS = {"numpy": "original", "cores": "original on every core", "cpu1": "torch 1 thread", "cpu": "torch pool",
           "cuda": "CUDA"}


def format_report(rows: Sequence[Mapping[str, Any]]) -> str:
    header = ["function", "dtype", "path by size"] + [f"{n:.0e}".replace("e+0", "e") for n in BAND_SIZES]
    body = []
    for row in rows:
        bands = ", ".join(f"{_LABELS[b['path']]} from {b['from']:,}" for b in row["bands"])
        cells = [row["function"], row["dtype"], bands]
        for n in BAND_SIZES:
            item = row["at"][str(n)]
            speedup = item["speedup"]
            cells.append("1.00x" if item["path"] == "numpy" else f"{speedup:.2f}x")
        body.append(cells)
    widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in [header] + body)


def _target(output: str | None) -> Path:
    from np2torch.runtime import tuning

    if output:
        return Path(output)
    named = os.environ.get(tuning.PROFILE_ENV, "").strip()
    if named and named != tuning.BUILTIN:
        return Path(named).expanduser()
    return Path(tuning.default_path())


def _show(as_json: bool) -> None:
    from np2torch.runtime import tuning

    active = tuning.profile_in_force()
    profile = active.machine or active.builtin
    rows = bands_report(profile)
    info = {
        "source": profile.source,
        "machine_profile": active.machine is not None,
        "fingerprint": dict(active.print_),
        "import_seconds": profile.import_seconds,
        "threads": profile.threads,
        "functions": rows,
    }
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    if active.machine is None:
        where = "none yet" if active.write_to is None else f"none yet (would be {active.write_to})"
        click.echo(f"machine profile: {where}; deciding from the built-in profile (the 2-core reference VM), "
                   "scaled to this machine's cores (run `np2torch tune`)")
    else:
        click.echo(f"machine profile: {profile.source}")
    click.echo(f"import torch: {profile.import_seconds:.2f} s; torch threads when measured: {profile.threads}; "
               f"margins: torch {tuning.MARGIN:.1f}x faster, one thread within "
               f"{tuning.CONTENDED_LIMIT / tuning.MARGIN:.2f}x of the original ({tuning.CONTENDED_LIMIT:.1f}x less the margin)")
    click.echo(format_report(rows))


@click.command("tune")
@click.option("--quick", is_flag=True, help="Fewer and smaller sizes (~15 s on 2 cores).")
@click.option("--functions", "function_text", metavar="NAMES", help="Comma-separated helpers (default: those whose rules are on by default).")
@click.option("--all", "everything", is_flag=True, help="Every helper of the table, opt-in rules' too.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the profile here (default: this machine's file in the cache directory, or NP2TORCH_PROFILE).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--show", is_flag=True, help="Print the profile in force and the path per size band; measure nothing.")
@click.option("--no-cuda", is_flag=True, help="Do not measure CUDA even when a GPU is present.")
def command(quick: bool, function_text: str | None, everything: bool, output: str | None, as_json: bool, show: bool, no_cuda: bool) -> None:
    """Measure which path is fastest on this machine and store it for np2torch.runtime.

    Run it once per machine (and after upgrading NumPy, SciPy or torch), on a
    quiet machine: the runtime reads the profile in every later process, and
    decides every call from it (nothing is measured while a program runs).
    Without it the built-in profile, scaled to this machine's cores, decides.
    """
    from np2torch.runtime import tuning

    if show:
        _show(as_json)
        return
    names = None if function_text is None else [n.strip() for n in function_text.split(",") if n.strip()]
    chosen = pairs(names, everything)
    steps = sum(len(sizes_for(klass, quick)) for _, _, klass in measured_curves(chosen))
    from np2torch.tools.bench import warn_if_busy

    warn_if_busy("the profile will be pessimistic about torch's thread pool: run it again on a quiet machine")
    started = time.perf_counter()
    with click.progressbar(length=steps + 1, label="np2torch tune", file=sys.stderr) as bar:
        profile = run_tune(names, quick, not no_cuda, bar, everything, chosen)
    target = _target(output)
    with tuning.locked(target):
        if names is not None or not everything:
            profile = _merged_with_existing(target, profile)
        tuning.write_profile(target, profile)
    rows = bands_report(profile)
    if as_json:
        click.echo(json.dumps({"written": str(target), "seconds": time.perf_counter() - started, "profile": profile.to_json(), "functions": rows}, indent=2))
        return
    click.echo(format_report(rows))
    imports = profile.notes.get("import_torch", {})
    click.echo(f"import torch: {imports.get('warm', profile.import_seconds):.2f} s warm, "
               f"{imports.get('cold', profile.import_seconds):.2f} s cold after NumPy and SciPy; the rental charges "
               f"{profile.import_seconds:.2f} s; torch threads: {profile.threads}")
    wake = profile.notes.get(tuning.WAKE_NOTE)
    if wake is not None:
        click.echo(f"waking an idle worker: {wake * 1e3:.2f} ms a call on more than one thread (added to those paths' "
                   "times where a call runs more than one block)")
    loop_wake = profile.notes.get(tuning.LOOP_WAKE_NOTE)
    if loop_wake is not None:
        click.echo(f"... after at most {LOOP_IDLE * 1e3:g} ms: {loop_wake * 1e3:.2f} ms (the original on every core's "
                   "charge; after a longer idle, where it would not pay then, its call is the original's single call)")
    busy = profile.notes.get("busy") or {}
    if busy:
        click.echo(f"warning: other programs kept this machine busy while {len(busy)} curve(s) were measured, twice "
                   f"each ({', '.join(f'{k}: {v} cores' for k, v in sorted(busy.items()))}); the profile keeps the "
                   "second measurement: run `np2torch tune` again on a quiet machine", err=True)
    click.echo(f"wrote {target} in {time.perf_counter() - started:.1f} s")


def _merged_with_existing(target: Path, profile: Profile) -> Profile:
    from np2torch.runtime import tuning

    try:
        existing = tuning.read_profile(target)
    except tuning.ProfileError:
        return profile
    if existing.fingerprint != profile.fingerprint:
        return profile
    existing.curves.update(profile.curves)
    existing.import_seconds, existing.threads = profile.import_seconds, profile.threads
    existing.notes.update(profile.notes)
    return existing
