"""Which path a call takes: a deterministic function of the profile, the settings and the call.

For a (function, dtype) the profile (:mod:`._profile`) predicts the seconds of
each path at any size; the fastest path at each size, subject to two margins,
gives *bands* (sizes from which a path is chosen), computed once per profile
generation and looked up by bisection on every call:

* a torch path must be predicted at least :data:`MARGIN` faster than the
  original (measurement noise must not flip a call onto a slower path);
* a torch path is chosen only where torch on *one* thread is predicted within
  :data:`CONTENDED_LIMIT` of the original: when other processes hold the cores,
  the pool shrinks to the free cores (:func:`_backend.free_cores`) down to one
  thread, and the call must still be no slower than that bound.

Two rules make the first calls of a process cheap:

* **ski rental** -- while torch is not imported, a call the profile sends to
  torch goes to the original, and the time the torch path would have saved is
  added up; once the sum reaches the measured cost of ``import torch``, torch
  is loaded and used from then on (so a process spends at most twice what the
  best choice in hindsight would have).  If torch is already in
  ``sys.modules`` there is nothing to pay.
* **on-the-spot calibration** -- a (function, dtype) this machine's profile
  lacks is measured (a few ms, on scratch inputs) the first time a call could
  pay off on torch and torch is loaded, and recorded in the profile; until
  then the built-in profile, scaled to this machine's cores, is the prior.

An explicit ``min_size`` (``NP2TORCH_MIN_SIZE``, ``configure``, ``using``)
replaces all of this: from that size on, torch on the configured device.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, Sequence

import numpy as np

from . import _calibrate, _profile
from ._backend import cuda_available, load_torch, torch_if_loaded
from ._fork import in_forked_child
from ._profile import Curve, curve_key
from ._record import Record

MARGIN = 1.1
"""A torch path is chosen only where predicted at least 10 % faster than the original."""
CONTENDED_LIMIT = 1.5
"""... and only where one torch thread is predicted within 1.5x of the original (robust under load)."""
CALIBRATE_FROM = 1 << 12
"""Below this size no (function, dtype) is measured on the spot: per-call overheads decide there."""
CUDA_UNMEASURED_FROM = 1_000_000
"""With an explicit CUDA device and no CUDA measurement in the profile: CUDA from this size on."""

CPU_PATHS = ("numpy", "cpu1", "cpu")
ALL_PATHS = CPU_PATHS + ("cuda",)

# Sizes at which the bands are evaluated: 12 per decade (21 % apart) from 1 to 1e12.
_GRID: tuple[int, ...] = tuple(sorted({max(1, round(10 ** (k / 12))) for k in range(12 * 12 + 1)}))


class Route(Record):
    """Where one call runs: ``path`` (``numpy`` | ``cpu1`` | ``cpu`` | ``cuda``), ``device``
    (``cpu`` or the CUDA device, ``cuda:1``) and ``reason`` (a string, or ``(curve, n, origin)``
    formatted only when asked: :attr:`why`)."""

    __slots__ = ("path", "device", "reason")

    def __init__(self, path: str, device: str, reason: Any = "") -> None:
        self.path = path
        self.device = device
        self.reason = reason

    @property
    def why(self) -> str:
        """One line: what decided it."""
        if isinstance(self.reason, str):
            return self.reason
        curve, n, origin = self.reason
        return _reason(curve, self.path, n, origin)

    @property
    def threads(self) -> int:
        """1 for ``cpu1``; 0 (the pool) otherwise."""
        return 1 if self.path == "cpu1" else 0

    @property
    def adapt(self) -> bool:
        """Whether the pool may shrink to the free cores: only where the profile measured that the
        thread count changes no value (else the bits would depend on the machine's load)."""
        return not isinstance(self.reason, str) and self.reason[0].thread_invariant


class Bands(Record):
    """``paths[i]`` from ``starts[i]`` elements on."""

    __slots__ = ("starts", "paths")

    def __init__(self, starts: tuple[int, ...], paths: tuple[str, ...]) -> None:
        self.starts = starts
        self.paths = paths

    def at(self, n: int) -> str:
        # A handful of bands: a scan from the top costs less than importing bisect.
        starts = self.starts
        i = len(starts) - 1
        while i and starts[i] > n:
            i -= 1
        return self.paths[i]

    def first_torch(self) -> int | None:
        return next((start for start, path in zip(self.starts, self.paths) if path != "numpy"), None)


def bands_of(curve: Curve, allowed: Sequence[str]) -> Bands:
    """The fastest allowed path at every size of the grid, as contiguous bands."""
    starts: list[int] = []
    paths: list[str] = []
    for n in _GRID:
        path = best_path(curve, allowed, n)
        if not paths or paths[-1] != path:
            starts.append(1 if not starts else n)
            paths.append(path)
    return Bands(tuple(starts), tuple(paths))


def best_path(curve: Curve, allowed: Sequence[str], n: int) -> str:
    if n < curve.sizes[0]:
        return "numpy"  # nothing was measured this small: the original, whose overhead is the smallest
    original = curve.predict("numpy", n)
    assert original is not None
    single = curve.predict("cpu1", n)
    if single is not None and single > CONTENDED_LIMIT * original:
        return "numpy"
    best, best_time = "numpy", original / MARGIN
    for path in allowed:
        if path == "numpy":
            continue
        predicted = curve.predict(path, n)
        if predicted is not None and predicted < best_time:
            best, best_time = path, predicted
    return best


def scaled_prior(curve: Curve, built_threads: int, threads_here: int) -> Curve:
    """The built-in curve with the pool path's per-element time scaled to this machine's thread count.

    Only a prior: it decides whether measuring on the spot could pay off, and
    how much the ski rental counts before torch is loaded.
    """
    pool = curve.seconds.get("cpu")
    if pool is None or threads_here <= built_threads:
        return curve
    factor = built_threads / threads_here
    first = pool[0]
    scaled = tuple(first + (t - first) * factor for t in pool)
    return Curve(curve.sizes, {**curve.seconds, "cpu": scaled})


# ---------------------------------------------------------------- per-process state


class _State:
    lock = threading.RLock()
    saved = 0.0
    """Seconds the torch path would have saved so far, while torch was not imported (ski rental)."""
    deferred = 0
    """Elements the helpers saw before the profile was read (:func:`deferring`)."""
    bands: dict[tuple[str, tuple[str, ...], bool], tuple[int, Bands]] = {}
    entries: dict[tuple[str, str, str, bool], tuple[int, _Entry]] = {}
    calibrating: set[str] = set()
    declined: set[str] = set()
    """Keys whose on-the-spot measurement failed: never retried in this process."""


def reset() -> None:
    """Forget the ski-rental sum and cached bands (tests)."""
    with _State.lock:
        _State.saved = 0.0
        _State.deferred = 0
        _State.bands = {}
        _State.entries = {}
        _State.calibrating = set()
        _State.declined = set()


_LISTENERS: list[Callable[[], None]] = []


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener`` whenever the profile in force changes (helpers recompute their size floor)."""
    _LISTENERS.append(listener)


def changed() -> None:
    for listener in _LISTENERS:
        listener()


def reload() -> None:
    """Re-read the profile (``NP2TORCH_PROFILE`` may have changed) and start the process's accounting afresh."""
    _profile.reset()
    reset()
    changed()


def _torch_ready() -> bool:
    return torch_if_loaded() is not None or "torch" in sys.modules


def _curve(active: _profile.Active, key: str) -> tuple[Curve | None, str]:
    """The curve decisions use, and where it came from (``machine``, ``prior``, ``builtin``)."""
    if active.machine is not None and key in active.machine.curves:
        return active.machine.curves[key], "machine"
    builtin = active.builtin.curves.get(key)
    if builtin is None:
        return None, "none"
    if active.write_to is None:
        return builtin, "builtin"
    return scaled_prior(builtin, active.builtin.threads, active.print_["cores"]), "prior"


class _Entry(Record):
    """What :func:`route` needs for one (function, dtype, device), cached per profile generation."""

    __slots__ = ("key", "curve", "origin", "allowed", "bands")

    def __init__(self, key: str, curve: Curve | None, origin: str, allowed: tuple[str, ...], bands: Bands | None) -> None:
        self.key = key
        self.curve = curve
        self.origin = origin
        self.allowed = allowed
        self.bands = bands


def _entry(active: _profile.Active, name: str, dtype: str, device: str, cuda_ok: bool) -> _Entry:
    cache_key = (name, dtype, device, cuda_ok)
    cached = _State.entries.get(cache_key)
    if cached is not None and cached[0] == active.generation:
        return cached[1]
    key = curve_key(name, dtype)
    curve, origin = _curve(active, key)
    allowed = CPU_PATHS if curve is None else _allowed(curve, device, cuda_ok)
    bands = None if curve is None else _bands(active, key, curve, origin, allowed)
    entry = _Entry(key, curve, origin, allowed, bands)
    _State.entries[cache_key] = (active.generation, entry)
    return entry


def _bands(active: _profile.Active, key: str, curve: Curve, origin: str, allowed: tuple[str, ...]) -> Bands:
    cache_key = (key, allowed, origin == "machine")
    cached = _State.bands.get(cache_key)
    if cached is not None and cached[0] == active.generation:
        return cached[1]
    found = bands_of(curve, allowed)
    _State.bands[cache_key] = (active.generation, found)
    return found


DEFER_ELEMENTS = 1 << 21
"""While torch is not imported, the profile is read only once the helpers have seen this many
elements: before that, the time torch could save (a few ms) is far below what importing it costs
(seconds), so the ski rental could not switch anyway, and a short script pays nothing for reading
the profile (~5 ms: a tenth of a `python -c` that calls one helper once)."""
DEFER_FLOOR = 1 << 12
"""Calls below this size do not count towards :data:`DEFER_ELEMENTS` (nor pay for the count)."""


def deferring(n: int) -> bool:
    """Whether a call of ``n`` elements should go to the original without reading the profile yet."""
    if _profile.loaded() or _torch_ready():
        return False
    with _State.lock:
        _State.deferred += n
        if _State.deferred < DEFER_ELEMENTS:
            return True
    changed()  # the deferred calls' provisional floors give way to the profile's
    return False


def torch_floor(name: str, dtypes: Sequence[str]) -> int:
    """The smallest size at which any profile curve of ``name`` sends a call to torch (the helpers' cheap first test)."""
    active = _profile.active()
    floors = [CUDA_UNMEASURED_FROM]
    for dtype in dtypes:
        key = curve_key(name, dtype)
        curve, origin = _curve(active, key)
        if curve is None and active.write_to is not None:
            floors.append(CALIBRATE_FROM)  # unknown: calls from that size on may measure it
        elif curve is not None:
            first = _bands(active, key, curve, origin, ALL_PATHS).first_torch()
            if first is not None:
                floors.append(first)
    return min(floors)


def route(
    name: str,
    dtype: str,
    n: int,
    device: str,
    min_size: int | None,
    cuda_ok: bool,
    *,
    dry_run: bool = False,
) -> Route | None:
    """Where a call of ``name`` over ``n`` elements of loop ``dtype`` runs (None: the original).

    ``device``: the settings' device (``cpu``, ``auto``, ``cuda[:N]``); ``cuda_ok``:
    the loop is verified on CUDA.  ``dry_run`` (for :func:`which`) neither
    counts ski-rental savings, nor loads torch, nor measures anything.
    """
    if min_size is not None:
        return _explicit(device, n, min_size, cuda_ok, dry_run)
    if device.startswith("cuda"):
        forced = explicit_cuda_unmeasured(device, n, cuda_ok, name, dtype)
        if forced is not None:
            return forced
    active = _profile.active()
    entry = _entry(active, name, dtype, device, cuda_ok)
    key, curve, origin, allowed = entry.key, entry.curve, entry.origin, entry.allowed
    if curve is None or entry.bands is None:
        # Nothing known (a function newer than the built-in profile): measure it once torch is
        # here anyway; without torch there is no estimate to rent against.
        if dry_run or active.write_to is None or n < CALIBRATE_FROM or not _torch_ready():
            return None
        if _calibrate_now(name, dtype, key) is None:
            return None
        return route(name, dtype, n, device, None, cuda_ok)
    path = entry.bands.at(n)
    if path == "numpy":
        return None
    if not _torch_ready():
        if dry_run:
            return Route("numpy", "cpu", f"the original for now: torch is not imported yet, and is imported once the time it "
                         f"would have saved reaches its import cost ({_State.saved:.3g} of {_import_seconds(active):.3g} s); "
                         f"then {_reason(curve, path, n, origin)}")
        if not _rent(curve, path, n, active):
            return None
    if origin == "prior" and n >= CALIBRATE_FROM and not dry_run:
        if _calibrate_now(name, dtype, key) is not None:
            return route(name, dtype, n, device, None, cuda_ok)
    if path == "cuda" and not dry_run and not cuda_available():
        allowed = tuple(p for p in allowed if p != "cuda")
        path = _bands(active, key, curve, origin, allowed).at(n)
        if path == "numpy":
            return None
    return Route(path, _device_for(path, device), (curve, n, origin))


def _allowed(curve: Curve, device: str, cuda_ok: bool) -> tuple[str, ...]:
    if device == "cpu" or not cuda_ok:
        return CPU_PATHS
    if "cuda" in curve.seconds:
        return ALL_PATHS
    return CPU_PATHS


def _device_for(path: str, device: str) -> str:
    if path != "cuda":
        return "cpu"
    return device if device.startswith("cuda") else "cuda"


def _explicit(device: str, n: int, min_size: int, cuda_ok: bool, dry_run: bool) -> Route | None:
    if n < min_size:
        return None
    why = f"min_size={min_size} set explicitly: torch from that size on"
    if device.startswith("cuda") and cuda_ok:
        return Route("cuda", device, why)
    if device == "auto" and cuda_ok and not dry_run and cuda_available():
        return Route("cuda", "cuda", why + " (auto: a CUDA device is available)")
    return Route("cpu", "cpu", why)


def explicit_cuda_unmeasured(device: str, n: int, cuda_ok: bool, name: str, dtype: str) -> Route | None:
    """An explicit CUDA device whose profile has no CUDA measurement: CUDA for large arrays, as configured."""
    if not (device.startswith("cuda") and cuda_ok and n >= CUDA_UNMEASURED_FROM):
        return None
    active = _profile.active()
    curve, _ = _curve(active, curve_key(name, dtype))
    if curve is not None and "cuda" in curve.seconds:
        return None
    return Route("cuda", device, f"device={device!r} set explicitly; the profile has no CUDA measurement: CUDA from "
                 f"{CUDA_UNMEASURED_FROM:,} elements (run `np2torch tune` on this machine)")


def _import_seconds(active: _profile.Active) -> float:
    return (active.machine or active.builtin).import_seconds


def _rent(curve: Curve, path: str, n: int, active: _profile.Active) -> bool:
    """Ski rental: count this call's predicted saving; load torch once the savings pay for importing it."""
    with _State.lock:
        if _torch_ready():
            return True
        original = curve.predict("numpy", n) or 0.0
        chosen = curve.predict(path, n) or original
        _State.saved += max(0.0, original - chosen)
        if _State.saved < _import_seconds(active):
            return False
    return load_torch() is not None


def _calibrate_now(name: str, dtype: str, key: str) -> Curve | None:
    """Measure (name, dtype) on this machine's CPU paths and record it; None if that cannot be done now."""
    with _State.lock:
        if key in _State.calibrating or key in _State.declined:
            return None
        _State.calibrating.add(key)
    try:
        torch = load_torch()
        if torch is None:
            return None
        try:
            curve = _calibrate.measure(name, np.dtype(dtype), CPU_PATHS)
        except Exception:  # a measurement must never break the user's call: the prior stays
            _State.declined.add(key)
            return None
        threads = torch.get_num_threads()
        _profile.record({key: curve}, threads=threads, persist=_quiet_enough_to_keep(threads))
        changed()
        return curve
    finally:
        _State.calibrating.discard(key)


def _quiet_enough_to_keep(threads: int) -> bool:
    """Whether a measurement taken now may stand for this machine in later processes.

    Not in a child forked from a torch process (one thread only), and not while
    other programs keep the cores busy (the 1-minute load average above half the
    pool): the pool's times would be a busy machine's for good.  Such measurements
    still decide in this process; ``np2torch tune`` on a quiet machine records them.
    """
    if in_forked_child():
        return False
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return True
    return load <= 0.5 * threads


def _reason(curve: Curve, path: str, n: int, origin: str) -> str:
    source = {"machine": "this machine's profile", "prior": "the built-in profile scaled to this machine (not measured here yet)",
              "builtin": "the built-in profile"}[origin]
    original = curve.predict("numpy", n)
    chosen = curve.predict(path, n)
    label = {"numpy": "the original", "cpu1": "torch on one CPU thread", "cpu": "torch on the CPU thread pool", "cuda": "CUDA"}[path]
    if path == "numpy" or chosen is None or original is None:
        return f"{label}, from {source}"
    return f"{label}: predicted {_seconds(chosen)} against the original's {_seconds(original)} ({original / chosen:.2f}x), from {source}"


def _seconds(value: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value * 1e9:.3g} ns"


def original_reason(name: str, dtype: str, n: int, device: str, min_size: int | None) -> str:
    """Why a call stays with the original (for :func:`which`)."""
    if device == "numpy":
        return "device='numpy': every call goes to the original"
    if min_size is not None:
        return f"below min_size={min_size} set explicitly"
    active = _profile.active()
    curve, origin = _curve(active, curve_key(name, dtype))
    if curve is None:
        return f"{name} over {dtype} is not in the profile"
    return _reason(curve, "numpy", n, origin) + f": no torch path is predicted {MARGIN:.1f}x faster at {n:,} elements"


def describe_bands(name: str, dtype: str, device: str = "auto") -> list[tuple[int, str]]:
    """The bands in force for (name, dtype): ``[(from_size, path), ...]`` (``np2torch tune --show``)."""
    active = _profile.active()
    key = curve_key(name, dtype)
    curve, origin = _curve(active, key)
    if curve is None:
        return []
    bands = _bands(active, key, curve, origin, _allowed(curve, device, True))
    return list(zip(bands.starts, bands.paths))
