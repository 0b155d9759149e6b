#!/usr/bin/env python
"""Replay another machine's recorded timings through np2torch.runtime's decisions.

A machine the runtime has never run on (the 16-core/H100 host of 2026-11-22)
left recordings of what each path costs there (tests/data/replay/<host>/, raw
files copied from the measurement run).  This turns them into the machine
profile ``np2torch tune`` would have written on that host, asks the runtime
itself which path it takes at every recorded size, and compares that path's
recorded time with the best recorded one:

* **tuned**: the profile in force is the converted one (device ``auto``);
* **no tune**: no machine profile -- the built-in one, scaled to the host's
  cores, is the prior, and where the runtime measures a pair on the spot the
  measurement is replaced by the recorded numbers (cut where on-the-spot
  measurement stops).

The decisions come from the runtime's own code (its floors, bands, margins and
on-the-spot calibration), with torch loaded: the steady state of a process,
after the ski rental has paid for importing torch.  Nothing is timed here, so
the result is the same on every machine (tests/runtime/test_runtime_replay.py).

Recordings -> paths (a recording stands for a path only where it timed what
that path computes):

* ``threads.jsonl``: NumPy/SciPy against torch on 1..16 threads, into a
  preallocated output, at 1e4..1e7 elements: the original, ``cpu1`` (1 thread)
  and ``cpu`` (the pool: the host's torch thread count);
* ``simd.jsonl``: the same, in ns per element, at 3e4..3e6 (its ``native``
  rows; the ``avx2`` ones ran with ``ATEN_CPU_CAPABILITY=avx2``, another
  fingerprint, which the other files did not record);
* ``gpu_bench.jsonl``: end to end at 1e8 elements (10000x10000; fresh results):
  the original, the runtime forced onto the pool and onto CUDA; and a size
  sweep of ``exp`` through the runtime of that day, whose paths follow from its
  thresholds (:data:`SWEEP_THRESHOLDS`).

A torch timing of a loop the runtime computes in a wider dtype (float32 ``erf``
is computed in float64) timed another computation and is left out, as are the
logsumexp rows (the runtime declined to SciPy on SciPy 1.18 then: its times are
SciPy's).  Where a path lacks a time at a size another recording has, the
profile takes the runtime's own prediction from that path's recorded sizes
(log-log between them, the smallest's time below, proportional above): the
predictions are the same as from that path's points alone.

    .venv/bin/python scripts/replay.py            # the tables of docs/benchmarks.md ("Replayed")
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from np2torch.runtime import _backend, _calibrate, _decide, _profile
from np2torch.runtime._api import HELPERS
from np2torch.runtime._config import RuntimeSettings
from np2torch.runtime._model import ALL_PATHS, CPU_PATHS, Active, Curve, Profile, curve_key
from np2torch.runtime._state import PROCESS
from np2torch.runtime.table import FUNCTIONS_BY_NAME

ROOT = Path(__file__).resolve().parents[1]
HOST = ROOT / "tests" / "data" / "replay" / "2026-11-22-16core-h100"

BOUND_SECONDS = 1e-6
BOUND_FACTOR = 1.1
"""A decision is right where its path's recorded time is within 1 us + 10 % of the recorded best."""

GPU_BENCH_ELEMENTS = 10_000 * 10_000
"""``gpu_bench.jsonl``'s end-to-end rows are of 10000x10000 arrays (the summary beside the raw files)."""
SWEEP_THRESHOLDS: Mapping[Tuple[str, str], Mapping[str, Optional[int]]] = {
    ("exp", "float64"): {"cpu": None, "cuda": 1_000_000},
    ("exp", "float32"): {"cpu": 50_000, "cuda": 1_000_000},
}
"""The sweep timed the runtime at commit 48b59c4, before the machine profile: fixed thresholds
(``DEFAULT_MIN_SIZE`` in its runtime/_config.py; None: never).  ``np2t_cpu_default_us`` took the pool
from the ``cpu`` threshold on, ``np2t_auto_us`` CUDA from the ``cuda`` one (the host had a GPU); below
them both ran the original through the wrapper, which is no path's time and is left out."""
_PATH_OF_ORIGINAL = {"exp": "numpy_exp_us", "log": "numpy_log_us", "erf": "scipy_erf_us"}


class ReplayError(ValueError):
    """A recording the converter cannot read (names the file and line)."""


class Recording(NamedTuple):
    """What one recorded row timed: ``seconds`` per path for ``name`` over ``n`` elements of ``dtype``."""

    source: str
    name: str
    dtype: str
    n: int
    seconds: Mapping[str, float]

    @property
    def best(self) -> float:
        return min(self.seconds.values())

    def within_bound(self, path: str) -> Optional[bool]:
        """Whether ``path``'s recorded time is within 1 us + 10 % of the best (None: not recorded here)."""
        taken = self.seconds.get(path)
        return None if taken is None else taken <= self.best * BOUND_FACTOR + BOUND_SECONDS


class Host(NamedTuple):
    """A recorded machine: what decides (``fingerprint``), its torch ``threads``, its recordings and
    what was left out (``skipped``: ``(where, why)``)."""

    fingerprint: Mapping[str, Any]
    threads: int
    recordings: Tuple[Recording, ...]
    skipped: Tuple[Tuple[str, str], ...]


# ---------------------------------------------------------------- reading the raw files


def _lines(path: Path) -> Iterator[Tuple[str, Dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReplayError(f"{path}: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise ReplayError(f"{path}:{number}: not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ReplayError(f"{path}:{number}: expected a JSON object")
        yield where, data


def _field(data: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise ReplayError(f"{where}: no {key!r}")
    return data[key]


def _seconds(data: Mapping[str, Any], key: str, where: str, scale: float) -> float:
    value = _field(data, key, where)
    if type(value) not in (int, float) or not value > 0:
        raise ReplayError(f"{where}: {key!r} must be a positive number, not {value!r}")
    return float(value) * scale


def _computes_in_own_dtype(name: str, dtype: str) -> bool:
    """Whether the runtime computes ``name`` over ``dtype`` in ``dtype`` (a raw torch timing in that dtype is then its path's)."""
    return FUNCTIONS_BY_NAME[name].loops.get(dtype) == dtype


def _cpu_rows(where: str, name: str, dtype: str, n: int, original: float, one: Optional[float], pool: Optional[float],
              skipped: List[Tuple[str, str]]) -> Optional[Recording]:
    if one is None or pool is None:
        skipped.append((f"{where} {name}", "the original only: no path to choose between"))
        return None
    if not _computes_in_own_dtype(name, dtype):
        skipped.append((f"{where} {name}", f"torch timed {dtype}, the runtime computes {name} over {dtype} in "
                        f"{FUNCTIONS_BY_NAME[name].loops[dtype]}"))
        return None
    return Recording(where, name, dtype, n, {"numpy": original, "cpu1": one, "cpu": pool})


def read_host(folder: Path = HOST) -> Host:
    """The recordings in ``folder`` (``gpu_bench.jsonl``, ``threads.jsonl``, ``simd.jsonl``) as paths' times."""
    skipped: List[Tuple[str, str]] = []
    recordings: List[Recording] = []
    env: Optional[Dict[str, Any]] = None
    for where, data in _lines(folder / "gpu_bench.jsonl"):
        if "env" in data:
            env = data["env"]
        elif "fn" in data:
            recordings.extend(_gpu_bench_row(where, data, skipped))
        elif "sweep" in data:
            recordings.extend(_sweep_row(where, data))
    if not isinstance(env, dict):
        raise ReplayError(f"{folder / 'gpu_bench.jsonl'}: no 'env' line (the host's description)")
    threads = _field(env, "torch_threads", "gpu_bench.jsonl env")
    if type(threads) is not int or threads < 1:
        raise ReplayError(f"{folder / 'gpu_bench.jsonl'}: env 'torch_threads' must be a whole number >= 1")
    for where, data in _lines(folder / "threads.jsonl"):
        dtype, n = _field(data, "dtype", where), _field(data, "n", where)
        for name, key in _PATH_OF_ORIGINAL.items():
            one, pool = (f"torch_{name}_t{k}_us" for k in (1, threads))
            timed = one in data and pool in data  # threads.jsonl has no torch log
            found = _cpu_rows(where, name, dtype, n, _seconds(data, key, where, 1e-6),
                              _seconds(data, one, where, 1e-6) if timed else None,
                              _seconds(data, pool, where, 1e-6) if timed else None, skipped)
            if found is not None:
                recordings.append(found)
    for where, data in _lines(folder / "simd.jsonl"):
        if data.get("tag") != "native" or "dtype" not in data:
            continue
        dtype, n = data["dtype"], _field(data, "n", where)
        for name in _PATH_OF_ORIGINAL:
            per = 1e-9 * n
            found = _cpu_rows(where, name, dtype, n, _seconds(data, f"np_{name}", where, per),
                              _seconds(data, f"t1_{name}", where, per), _seconds(data, f"t{threads}_{name}", where, per), skipped)
            if found is not None:
                recordings.append(found)
    for recording in recordings:
        if recording.name not in HELPERS or recording.dtype not in FUNCTIONS_BY_NAME[recording.name].loops:
            raise ReplayError(f"{recording.source}: no loop {recording.name}/{recording.dtype} in the function table")
    return Host(_fingerprint(env), threads, tuple(recordings), tuple(skipped))


def _gpu_bench_row(where: str, data: Mapping[str, Any], skipped: List[Tuple[str, str]]) -> List[Recording]:
    name, dtype = data["fn"], _field(data, "dtype", where)
    if name not in _PATH_OF_ORIGINAL:
        skipped.append((f"{where} {name}", "the runtime declined to the original on that host's SciPy: its times are the original's"))
        return []
    seconds = {"numpy": _seconds(data, "orig_s", where, 1.0), "cpu": _seconds(data, "np2t_cpu_forced_s", where, 1.0)}
    if "np2t_cuda_s" in data:
        seconds["cuda"] = _seconds(data, "np2t_cuda_s", where, 1.0)
    return [Recording(where, name, dtype, GPU_BENCH_ELEMENTS, seconds)]


def _sweep_row(where: str, data: Mapping[str, Any]) -> List[Recording]:
    name, dtype, n = data["sweep"], _field(data, "dtype", where), _field(data, "n", where)
    thresholds = SWEEP_THRESHOLDS.get((name, dtype))
    if thresholds is None:
        raise ReplayError(f"{where}: a sweep of {name}/{dtype}, whose thresholds at the recording's commit are not known")
    seconds = {"numpy": _seconds(data, "numpy_us", where, 1e-6)}
    cpu_from, cuda_from = thresholds["cpu"], thresholds["cuda"]
    if cpu_from is not None and n >= cpu_from:
        seconds["cpu"] = _seconds(data, "np2t_cpu_default_us", where, 1e-6)
    if cuda_from is not None and n >= cuda_from:
        seconds["cuda"] = _seconds(data, "np2t_auto_us", where, 1e-6)
    return [Recording(where, name, dtype, n, seconds)] if len(seconds) > 1 else []


def _fingerprint(env: Mapping[str, Any]) -> Dict[str, Any]:
    """The host's fingerprint as far as it was recorded (what decides which path is fastest)."""
    return {
        "cpu": f"recorded host ({', '.join(env.get('simd', []))})",
        "cores": env.get("cpus"),
        "threads_env": {},
        "python": ".".join(str(env.get("python", "")).split(".")[:2]),
        "numpy": env.get("numpy"),
        "torch": env.get("torch"),
        "gpus": [env["cuda"]] if env.get("cuda") else [],
    }


# ---------------------------------------------------------------- the profiles


def points(host: Host, key: str, paths: Sequence[str] = ALL_PATHS) -> Dict[str, Dict[int, float]]:
    """``{path: {size: seconds}}`` of one (function, dtype); where two recordings timed a path at one
    size, the one that timed more paths there (a comparison within one run) counts."""
    chosen: Dict[str, Dict[int, Tuple[int, float]]] = {}
    for recording in host.recordings:
        if curve_key(recording.name, recording.dtype) != key:
            continue
        for path, seconds in recording.seconds.items():
            if path not in paths:
                continue
            known = chosen.setdefault(path, {}).get(recording.n)
            if known is None or len(recording.seconds) > known[0]:
                chosen[path][recording.n] = (len(recording.seconds), seconds)
    return {path: {n: seconds for n, (_, seconds) in sorted(found.items())} for path, found in chosen.items()}


def curve_from(found: Mapping[str, Mapping[int, float]]) -> Optional[Curve]:
    """A curve over every size some path was timed at; a path's missing sizes are its own prediction."""
    if "numpy" not in found:
        return None
    sizes = tuple(sorted({n for times in found.values() for n in times}))
    seconds = {}
    for path, times in found.items():
        own = Curve(tuple(times), {path: tuple(times.values())})
        seconds[path] = tuple(times[n] if n in times else own.predict(path, n) or 0.0 for n in sizes)
    return Curve(sizes, seconds)


def keys(host: Host) -> List[str]:
    """The recorded (function, dtype) pairs, in table order."""
    found = {curve_key(r.name, r.dtype) for r in host.recordings}
    ordered = [curve_key(name, dtype) for name, row in FUNCTIONS_BY_NAME.items() for dtype in row.loops]
    return [key for key in ordered if key in found]


def tuned_profile(host: Host) -> Profile:
    """The profile ``np2torch tune`` would have written on the host, from its recordings.

    ``import_seconds`` was not recorded (the built-in profile's stands in: it
    only paces the ski rental, which the replay leaves behind by loading torch);
    thread invariance was not recorded either (False: it only decides whether
    the pool may shrink under load, never a path).
    """
    curves = {}
    for key in keys(host):
        curve = curve_from(points(host, key))
        if curve is not None:
            curves[key] = curve
    return Profile("replayed", host.fingerprint, _profile.load_builtin().import_seconds, host.threads, curves)


def on_the_spot_curve(host: Host, key: str) -> Optional[Curve]:
    """What measuring ``key`` on the spot would have found there: the recorded CPU paths over the sizes
    on-the-spot calibration measures (stopping after the first whose original took longer than it allows)."""
    found = points(host, key, CPU_PATHS)
    low, high = _calibrate.ON_THE_SPOT_SIZES[0], _calibrate.ON_THE_SPOT_SIZES[-1]
    kept: List[int] = []
    for n in sorted(found.get("numpy", {})):
        if low <= n <= high:
            kept.append(n)
            if len(kept) >= 2 and found["numpy"][n] > _calibrate.ON_THE_SPOT_MAX_CALL:
                break
    if len(kept) < 2 or len(found) < 2:
        return None
    return curve_from({path: {n: t for n, t in times.items() if n in kept} for path, times in found.items()})


# ---------------------------------------------------------------- the runtime's decisions


@contextlib.contextmanager
def profile_in_force(active: Active) -> Iterator[None]:
    """Decide from ``active`` (torch loaded: the steady state); the profile read before comes back after."""
    if not _backend.load_torch():
        raise ReplayError("torch is not installed: the runtime decides nothing without it")
    before = PROCESS.profile
    PROCESS.reload_profile()
    PROCESS.profile = active
    try:
        yield
    finally:
        PROCESS.reload_profile()
        PROCESS.profile = before


def decide(name: str, dtype: str, n: int, device: str = "auto", measure: bool = False) -> str:
    """The path a call of ``name`` over ``n`` elements of ``dtype`` takes under the profile in force:
    the helper's floor, then its route (``measure``: as a call, asking for on-the-spot measurement;
    else as :func:`np2torch.runtime.which`, which predicts CUDA without a GPU here)."""
    cuda_ok = dtype in FUNCTIONS_BY_NAME[name].cuda_loops
    if n < _decide.torch_floor(name, (dtype,)):
        return "numpy"
    route = HELPERS[name].route(dtype, n, RuntimeSettings(device), cuda_ok, dry_run=not measure)
    return "numpy" if route is None else route.path


class Untuned(NamedTuple):
    """Without tune: the path a process's repeated calls of one size settle on, and whether the pair was
    measured on the spot (``measured``: True; False: it was not asked for; None: it was, but nothing was
    recorded in the on-the-spot range to stand in for the measurement, so the prior decided)."""

    path: str
    measured: Optional[bool]


class Replayed(NamedTuple):
    """One recorded row and the path the runtime takes at its size: tuned, and without tune in a
    program that imports torch itself and in one that does not."""

    recording: Recording
    tuned: str
    torch_imported: Untuned
    torch_not_imported: Untuned


def replay(host: Host) -> List[Replayed]:
    """Every recorded row with the runtime's decisions at its size."""
    tuned = tuned_profile(host)
    builtin = _profile.load_builtin()
    order = keys(host)
    decided: Dict[Tuple[str, int], Tuple[str, Untuned, Untuned]] = {}
    for recording in host.recordings:
        name, dtype, n = recording.name, recording.dtype, recording.n
        if (curve_key(name, dtype), n) not in decided:
            with profile_in_force(Active(tuned, builtin, None, tuned.fingerprint)):
                with_tune = decide(name, dtype, n)
            decided[(curve_key(name, dtype), n)] = (with_tune, untuned(host, builtin, name, dtype, n, True),
                                                    untuned(host, builtin, name, dtype, n, False))
    rows = sorted(host.recordings, key=lambda r: (order.index(curve_key(r.name, r.dtype)), r.n, r.source))
    return [Replayed(r, *decided[(curve_key(r.name, r.dtype), r.n)]) for r in rows]


def untuned(host: Host, builtin: Profile, name: str, dtype: str, n: int, torch_imported: bool) -> Untuned:
    """Where a process on the host without a profile file settles when it calls ``name`` over ``n``
    elements of ``dtype`` again and again (its first calls of the pair).

    ``torch_imported``: the program imported torch itself; else torch is imported
    by the ski rental once the savings the prior predicts pay for it (with a
    saving predicted, that is a matter of enough calls: the replay takes them).
    """
    key = curve_key(name, dtype)
    active = Active(None, builtin, str(ROOT / "replay-never-written.json"), host.fingerprint)
    with profile_in_force(active), _on_the_spot_from(host) as measured, _torch_import(torch_imported):
        path = decide(name, dtype, n, measure=True)
        if not torch_imported and PROCESS.saved > 0:  # the rental counted a saving: later calls import torch
            path = decide(name, dtype, n, measure=True)
    return Untuned(path, measured.get(key, False))


@contextlib.contextmanager
def _torch_import(imported: bool) -> Iterator[None]:
    """torch in ``sys.modules`` before the first call, or not until the runtime's ski rental imports it."""
    if imported:
        yield
        return
    state = {"imported": False}
    saved = _decide.torch_ready, _decide.load_torch, _decide._import_seconds
    _decide.torch_ready = lambda: state["imported"]
    _decide.load_torch = lambda: state.update(imported=True) or True
    _decide._import_seconds = lambda: 0.0 if PROCESS.saved > 0 else float("inf")  # paid after enough calls
    try:
        yield
    finally:
        _decide.torch_ready, _decide.load_torch, _decide._import_seconds = saved


@contextlib.contextmanager
def _on_the_spot_from(host: Host) -> Iterator[Dict[str, Optional[bool]]]:
    """On-the-spot calibration times nothing: the recorded numbers stand in, kept in this process only."""
    measured: Dict[str, Optional[bool]] = {}

    def recorded(run: object, name: str, dtype: np.dtype, paths: Sequence[str], *args: object, **kwargs: object) -> Curve:
        key = curve_key(name, np.dtype(dtype).name)
        curve = on_the_spot_curve(host, key)
        measured[key] = True if curve is not None else None
        if curve is None:
            raise LookupError(f"nothing recorded for {key} in the on-the-spot range")
        return curve

    saved = _calibrate.measure, _calibrate.worth_keeping
    _calibrate.measure, _calibrate.worth_keeping = recorded, lambda: False
    try:
        yield measured
    finally:
        _calibrate.measure, _calibrate.worth_keeping = saved


# ---------------------------------------------------------------- the tables


_LABELS = {"numpy": "original", "cpu1": "torch, 1 thread", "cpu": "torch pool", "cuda": "CUDA"}


def _time(seconds: Optional[float]) -> str:
    if seconds is None:
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def _verdict(recording: Recording, path: str) -> str:
    ok = recording.within_bound(path)
    if ok is None:
        return f"{_LABELS[path]} (not timed in this row)"
    if ok:
        return _LABELS[path]
    return f"**{_LABELS[path]}: {recording.seconds[path] / recording.best:.2f}x the best**"


def _untuned_cell(recording: Recording, found: Untuned) -> str:
    note = {None: " (prior: nothing recorded to measure)", True: "", False: ""}[found.measured]
    if found.measured is False and recording.n >= _decide.CALIBRATE_FROM:
        note = " (not measured)"
    return _verdict(recording, found.path) + note


def markdown(host: Host, rows: Sequence[Replayed]) -> str:
    """The per-size tables of docs/benchmarks.md."""
    out = []
    current = None
    for row in rows:
        r = row.recording
        key = curve_key(r.name, r.dtype)
        if key != current:
            current = key
            out += ["", f"**{r.name} {r.dtype}**", "",
                    "| elements | recorded in | original | torch, 1 thread | torch pool | CUDA | tuned | "
                    "no tune, torch imported | no tune, torch not imported |",
                    "|---|---|---|---|---|---|---|---|---|"]
        cells = [_time(r.seconds.get(p)) for p in ALL_PATHS]
        best = ALL_PATHS.index(min(r.seconds, key=lambda p: r.seconds[p]))
        cells[best] = f"**{cells[best]}**"
        decisions = [_verdict(r, row.tuned), _untuned_cell(r, row.torch_imported), _untuned_cell(r, row.torch_not_imported)]
        out.append(f"| {r.n:,} | {r.source} | " + " | ".join(cells + decisions) + " |")
    return "\n".join(out).lstrip("\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=HOST, help="the raw recordings (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        host = read_host(args.folder)
    except ReplayError as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    print(markdown(host, replay(host)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
