"""Which path a call takes: a deterministic function of the profile, the settings and the call.

For a (function, dtype) the profile in force (:mod:`.profile`) gives a curve,
and the curve the fastest path per size (:func:`.model.bands_of`, with its
margins); those *bands* are computed once per profile and looked up on every
call that passes the helper's size floor.

What decides is the call and the profile loaded at start-up, never the
moment: not the machine's load, not a clock, not a measurement taken while the
program runs.  So a program gives the same bits on every run of the same
machine (the load and the thread settings change only how many of a call's
blocks run at once: :mod:`.._paths.blocks`).  Reductions are decided by their
*shape class* (:func:`.._exact.slices.shape_class`: the reduced length and whether
the reduced axes are the contiguous ones), elementwise calls by their size.

One rule makes the first calls of a process cheap, the **ski rental**: while
torch is not imported, a call the profile sends to torch goes to the original,
and the time the profile predicts the torch path would have saved on it is
added up; once the sum reaches the profile's cost of ``import torch``, torch is
loaded and used from then on (so a process spends at most twice what the best
choice in hindsight would have).  The sum counts predictions for the call's
shape, never measured seconds, so the call that imports torch is the same one
on every run.  If torch is already in ``sys.modules`` there is nothing to pay.

Without ``np2torch tune`` the built-in profile (the reference machine's),
with its pool times scaled to this machine's cores (as far as a call's blocks let them share its work),
decides.  Nothing is
measured on the spot: a measurement would decide by the moment it was taken.

An explicit ``min_size`` (``NP2TORCH_MIN_SIZE``, ``configure``, ``using``)
replaces all of this: from that size on, torch on the configured device.
Decisions derived from the profile are cached in :data:`.._state.PROCESS` until
:meth:`.._state.Process.forget_decisions`.
"""

from __future__ import annotations

import threading
from typing import Sequence, Tuple

from .._backend import cuda_available, load_torch, torch_ready, torch_unavailable
from .._paths import ALL_PATHS, BY_NAME, CPU_PATHS, EXACT_PATHS, ORIGINAL, Path, blocks
from .._record import Record
from .._state import PROCESS
from . import profile
from .model import (
    MARGIN,
    Active,
    Bands,
    BlocksAt,
    Curve,
    Forecast,
    Profile,
    bands_of,
    curve_key,
    loop_wake_of,
    scaled_prior,
    wake_of,
    woken,
)

PRIOR = "prior"
"""The origin of a curve from the built-in profile scaled to this machine's cores (no ``np2torch tune`` here yet)."""
CUDA_UNMEASURED_FROM = 1_000_000
"""With an explicit CUDA device and no CUDA measurement in the profile: CUDA from this size on."""

class Basis(Record):
    """What a route was predicted from: the ``curve``, the call's size ``n``, where the curve came
    from (``origin``: ``machine``, ``prior`` or ``builtin``) and the call's shape class (``klass``,
    reductions; empty for elementwise calls)."""

    __slots__ = ("curve", "n", "origin", "klass")

    def __init__(self, curve: Curve, n: int, origin: str, klass: str = "") -> None:
        self.curve = curve
        self.n = n
        self.origin = origin
        self.klass = klass


class Route(Record):
    """Where one call runs: ``path`` (``numpy`` | ``cpu1`` | ``cpu`` | ``cuda``), ``device`` (``cpu``
    or the CUDA device, ``cuda:1``) and why: ``reason``, or the profile's prediction (``basis``),
    put in words only when asked (:attr:`why`)."""

    __slots__ = ("path", "device", "reason", "basis", "after_sleep")

    def __init__(self, path: str, device: str, reason: str = "", basis: Basis | None = None,
                 after_sleep: bool = True) -> None:
        self.path = path
        self.device = device
        self.reason = reason
        self.basis = basis
        self.after_sleep = after_sleep
        """The path pays even when its call wakes a worker that slept (the profile's wake after a program's pause);
        else the original on every core runs on its workers only in a loop of its calls, and the original's single
        call serves one after a longer idle (:func:`.._paths.blocks.single_call_serves`)."""

    @property
    def why(self) -> str:
        """One line: what decided it."""
        basis = self.basis
        if basis is None:
            return self.reason
        why = _reason(basis.curve, self.path, basis.n, basis.origin, basis.klass)
        if not self.after_sleep:
            why += (f"; in a loop of such calls (after an idle of more than {blocks.LOOP_IDLE * 1e3:g} ms waking a "
                    "worker costs more than it saves: the original's single call, the same bits)")
        return why

    @property
    def threads(self) -> int:
        """The most threads the call's blocks run on: 1 for ``cpu1``; 0 (as many as torch may use) otherwise."""
        return BY_NAME[self.path].threads


# ---------------------------------------------------------------- decisions cached per profile


def _curve(active: Active, key: str) -> Tuple[Curve | None, str]:
    """The curve decisions use, and where it came from (``machine``, ``prior``, ``builtin``).

    A shape class the profile lacks (a profile written before classes) falls back to the function's
    class-less curve in the same profile."""
    for candidate in (key, key.rsplit("/", 1)[0]) if key.count("/") > 1 else (key,):
        found, origin = _curve_of(active, candidate)
        if found is not None:
            return found, origin
    return None, "none"


def _curve_of(active: Active, key: str) -> Tuple[Curve | None, str]:
    curve, origin = _measured_curve(active, key)
    if curve is None:
        return None, origin
    return as_decided(wake_profile(active, origin), curve, key), origin


def as_decided(profile: Profile, curve: Curve, key: str) -> Curve:
    """The curve ``key`` of ``profile`` as the decision reads it: the paths on every core with ``profile``'s wake of
    an idle worker added past one block (:func:`.model.woken`; ``np2torch tune --show`` reads a curve so too)."""
    return woken(curve, wake_of(profile), _blocks_of(key), profile.threads, loop_wake_of(profile))


def _blocks_of(key: str) -> BlocksAt:
    """How the paths on every core cut a call of curve ``key``'s helper and shape class (:func:`.model.scaled_prior`)."""
    name, _, klass = (key.split("/") + [""])[:3]

    def blocks_at(path: str, n: int, threads: int) -> int:
        return blocks.pool_blocks(name, n, threads, BY_NAME[path].torch, klass)

    return blocks_at


def _measured_curve(active: Active, key: str) -> Tuple[Curve | None, str]:
    if active.machine is not None and key in active.machine.curves:
        return active.machine.curves[key], "machine"
    builtin = active.builtin.curves.get(key)
    if builtin is None:
        return None, "none"
    if active.write_to is None:
        return builtin, "builtin"
    return scaled_prior(builtin, active.builtin.threads, active.print_["cores"], _blocks_of(key)), PRIOR


def wake_profile(active: Active, origin: str) -> Profile:
    """The profile whose wake of an idle worker a curve of ``origin`` pays: this machine's (none in a profile
    measured before ``tune`` measured it: nothing, as it decided then), else the built-in one."""
    return active.machine if origin == "machine" and active.machine is not None else active.builtin


def _forecast(name: str, dtype: str, device: str, cuda_ok: bool, klass: str = "", exact: bool = False,
              cores: bool = True) -> Forecast:
    cache_key = (name, dtype, device, cuda_ok, klass, exact)  # (``cores`` is the helper's: fixed by ``name``)
    cached = PROCESS.forecasts.get(cache_key)
    if cached is not None:
        return cached
    generation = PROCESS.generation
    active = profile.active()
    key = curve_key(name, dtype, klass)
    curve, origin = _curve(active, key)
    allowed = CPU_PATHS if curve is None else _allowed(curve, device, cuda_ok)
    if exact:
        allowed = tuple(path for path in allowed if path in EXACT_PATHS)
    if not cores:
        allowed = tuple(path for path in allowed if path != "cores")
    bands = None if curve is None else _bands(active, key, curve, origin, allowed)
    exact_bands = None if curve is None else _bands(active, key, curve, origin, tuple(p for p in allowed if p in EXACT_PATHS))
    found = Forecast(key, curve, origin, allowed, bands, exact_bands)
    PROCESS.remember(PROCESS.forecasts, cache_key, found, generation)
    return found


def _bands(active: Active, key: str, curve: Curve, origin: str, allowed: Tuple[str, ...]) -> Bands:
    """The bands of ``curve``; with the one-thread guard except for a prior (whose one-thread times are the
    reference machine's, which say nothing about this one's)."""
    guard = origin != PRIOR
    cache_key = (key, allowed, origin, guard)
    cached = PROCESS.bands.get(cache_key)
    if cached is not None:
        return cached
    generation = PROCESS.generation
    found = bands_of(curve, allowed, guard)
    PROCESS.remember(PROCESS.bands, cache_key, found, generation)
    return found


DEFER_ELEMENTS = 1 << 21
"""While torch is not imported, the profile is read only once the helpers have seen this many
elements: before that, the time torch could save (a few ms) is far below what importing it costs
(seconds), so the ski rental could not switch anyway, and a short script pays nothing for reading
the profile (~5 ms: a tenth of a `python -c` that calls one helper once)."""
DEFER_FLOOR = 1 << 12
"""Calls below this size do not count towards :data:`DEFER_ELEMENTS` (nor pay for the count)."""


def deferring(n: int) -> bool:
    """Whether a call of ``n`` elements should go to the original without reading the profile yet
    (its helper then keeps the provisional floor :data:`DEFER_FLOOR` for its dtype).

    The deferral ends when the calls at or above that floor have counted :data:`DEFER_ELEMENTS`, or torch was
    imported meanwhile (by the program: then it costs nothing); then every provisional floor gives way to the
    profile's.  Reading the profile for another reason (:func:`which`, ``np2torch tune --show``) does not end it:
    asking changes no later call's path.
    """
    if PROCESS.deferred >= DEFER_ELEMENTS or torch_ready():
        if PROCESS.provisional:
            PROCESS.forget_decisions()
        return False
    with PROCESS.lock:
        PROCESS.deferred += n
        if PROCESS.deferred < DEFER_ELEMENTS:
            PROCESS.provisional = True
            return True
    PROCESS.forget_decisions()  # the deferred calls' provisional floors give way to the profile's
    return False


def torch_floor(name: str, dtypes: Sequence[str], classes: Sequence[str] = ("",)) -> int:
    """The smallest size at which any profile curve of ``name`` (over ``dtypes`` and the shape ``classes``)
    sends a call off the original's single call, to torch or to the original on every core (the helpers' cheap
    first test)."""
    active = profile.active()
    floors = [CUDA_UNMEASURED_FROM]
    for dtype in dtypes:
        for klass in classes:
            key = curve_key(name, dtype, klass)
            curve, origin = _curve(active, key)
            if curve is not None:
                first = _bands(active, key, curve, origin, ALL_PATHS).first_other()
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
    klass: str = "",
    exact: bool = False,
    cores: bool = False,
) -> Route | None:
    """Where a call of ``name`` over ``n`` elements of loop ``dtype`` (shape class ``klass``) runs (None: the original).

    ``device``: the settings' device (``cpu``, ``auto``, ``cuda[:N]``); ``cuda_ok``:
    the loop is verified on CUDA; ``exact``: only the paths that give the original's bits (``exact="bits"``);
    ``cores``: the helper has the path ``cores`` (the original's own loop on every core).
    ``dry_run`` (for :func:`which`) neither counts ski-rental savings nor loads torch.
    """
    PROCESS.routed += 1  # (a call decided inside another's, a signal handler's: ._decision.ledger.learn)
    # Without torch (not installed, or known unusable: which() asks whether it is installed, as the call that tries it
    # will find) only the exact paths serve -- but for a loop verified on a CUDA device set explicitly, whose calls
    # raise (no usable CUDA device: the caller's route_call), every one of them and which() alike.
    explicit_cuda = device.startswith("cuda") and cuda_ok
    unavailable = not explicit_cuda and torch_unavailable(asking=dry_run)
    if min_size is not None:
        if exact:  # from min_size on, the exact path that uses the cores
            return Route("cores", "cpu", f"min_size={min_size} set explicitly, and only a path that gives the original's "
                         "bits may serve the call (exact='bits', or a loop torch does not compute exactly): the "
                         "original's own loop on every core from that size on") if cores and n >= min_size else None
        return None if unavailable else _explicit(device, n, min_size, cuda_ok, dry_run)
    exact = exact or unavailable
    if device.startswith("cuda") and not exact:
        forced = explicit_cuda_unmeasured(device, n, cuda_ok, name, dtype, klass)
        if forced is not None:
            return forced
    forecast = _forecast(name, dtype, device, cuda_ok, klass, exact, cores)
    curve, bands = forecast.curve, forecast.bands
    if curve is None or bands is None:
        return None  # nothing known (a function newer than the profile): the original
    path = bands.at(n)
    if path in EXACT_PATHS:
        return _exact_route(path, forecast, n, klass)
    main = threading.current_thread() is threading.main_thread()
    if not torch_ready() or (not main and PROCESS.rented):
        # Only the main thread's calls count towards the import and take torch once the rental imported it:
        # another thread's path never depends on how the program's threads were scheduled.
        fallback = forecast.exact.at(n) if forecast.exact is not None else ORIGINAL
        if dry_run:
            return _rental_route(fallback, path, forecast, n, klass, main)
        if not main or not _rent(forecast, path, fallback, n):
            return _exact_route(fallback, forecast, n, klass)
    if BY_NAME[path].device == "cuda" and not dry_run and not cuda_available():
        allowed = tuple(p for p in forecast.allowed if p in CPU_PATHS)
        path = _bands(profile.active(), forecast.key, curve, forecast.origin, allowed).at(n)
        if path in EXACT_PATHS:
            return _exact_route(path, forecast, n, klass)
    return Route(path, _device_for(path, device), basis=Basis(curve, n, forecast.origin, klass))


def _exact_route(path: str, forecast: Forecast, n: int, klass: str) -> Route | None:
    """The route of an exact path: None for the original's single call, else the original on every core."""
    if path == ORIGINAL:
        return None
    assert forecast.curve is not None
    return Route(path, "cpu", basis=Basis(forecast.curve, n, forecast.origin, klass),
                 after_sleep=_pays_after_sleep(path, forecast, n))


def _pays_after_sleep(path: str, forecast: Forecast, n: int) -> bool:
    """Whether ``path`` is still predicted :data:`.model.MARGIN` faster than the original's single call at ``n``
    elements when its call wakes a worker that slept: charged the profile's wake after a program's pause
    (:data:`.model.WAKE_NOTE`) rather than after a loop's idle (:data:`.model.LOOP_WAKE_NOTE`, in the curve)."""
    curve = forecast.curve
    assert curve is not None
    wakes = wake_profile(profile.active(), forecast.origin)
    extra = wake_of(wakes) - loop_wake_of(wakes)
    original, cost = curve.predict(ORIGINAL, n), BY_NAME[path].cost(curve, n)
    return extra <= 0 or original is None or cost is None or (cost + extra) * MARGIN < original


def _rental_route(fallback: str, path: str, forecast: Forecast, n: int, klass: str, main: bool) -> Route:
    """What :func:`which` says of a call the profile sends to torch while torch is not imported (or not this
    thread's to use): the exact path it takes now, and why."""
    assert forecast.curve is not None
    now = _reason(forecast.curve, fallback, n, forecast.origin, klass)
    if not main:
        why = (f"{now}: this thread is not the main one, whose calls alone pay for torch's import (a call's path never "
               f"depends on how other threads were scheduled); the profile's {_reason(forecast.curve, path, n, forecast.origin, klass)}")
    else:
        why = (f"{now}, for now: torch is not imported yet, and is imported once the time the profile predicts it would "
               f"have saved reaches {1 / IMPORT_SHARE:g} times its import cost ({PROCESS.saved:.3g} of {rental_threshold():.3g} s); then "
               f"{_reason(forecast.curve, path, n, forecast.origin, klass)}")
    return Route(fallback, "cpu", why)


def _allowed(curve: Curve, device: str, cuda_ok: bool) -> Tuple[str, ...]:
    if device == "cpu" or not cuda_ok:
        return CPU_PATHS
    if "cuda" in curve.seconds:
        return ALL_PATHS
    return CPU_PATHS


def _device_for(path: str, device: str) -> str:
    if BY_NAME[path].device == "cpu":
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


def explicit_cuda_unmeasured(device: str, n: int, cuda_ok: bool, name: str, dtype: str, klass: str = "") -> Route | None:
    """An explicit CUDA device whose profile has no CUDA measurement: CUDA for large arrays, as configured."""
    if not (device.startswith("cuda") and cuda_ok and n >= CUDA_UNMEASURED_FROM):
        return None
    curve, _ = _curve(profile.active(), curve_key(name, dtype, klass))
    if curve is not None and "cuda" in curve.seconds:
        return None
    return Route("cuda", device, f"device={device!r} set explicitly; the profile has no CUDA measurement: CUDA from "
                 f"{CUDA_UNMEASURED_FROM:,} elements (run `np2torch tune` on this machine)")


IMPORT_SHARE = 0.1
"""The most torch's import may cost a program, as a share of the time it spent in the calls that paid for it.

The rental imports torch once the savings it predicts reach the import's charge divided by this share
(:func:`_rent`).  Each counted call's predicted saving is less than that call's own predicted time on the
exact path it took, so a program that switches has spent at least the threshold in those calls, and one that
ends right after the switch pays at most this share of that time for an import it never earns back.  With
a threshold of one charge such a program could take up to twice as long: an lmfit fit of 11.6 s on the
reference VM imported torch at its 1,223rd and nearly last ``erf`` call (docs/benchmarks.md, 2026-11-29).
The price: torch comes later, after ~40 s of predicted savings there instead of ~4 s."""


def rental_threshold() -> float:
    """The predicted savings (seconds) at which the rental imports torch: the import's charge over
    :data:`IMPORT_SHARE`."""
    active = profile.active()
    return (active.machine or active.builtin).import_seconds / IMPORT_SHARE


_SAVINGS_KEPT = 1024
"""Predicted savings kept per forecast (a program's distinct call sizes; more are predicted afresh)."""


def _rent(forecast: Forecast, path: str, fallback: str, n: int) -> bool:
    """Ski rental: count this call's predicted saving over the exact path it takes now (``fallback``); load torch
    once the savings reach :func:`rental_threshold` (ten times the import's charge: :data:`IMPORT_SHARE`).

    Predictions only (the profile's time of each path for the call's size and shape class), never
    a measured time: the call that imports torch is the same one on every run of the program.  Only the main
    thread's calls count (:func:`route`).
    """
    saving = forecast.savings.get((path, n))
    if saving is None:
        curve = forecast.curve
        assert curve is not None
        now = curve.predict(fallback, n) or curve.predict(ORIGINAL, n) or 0.0
        chosen = curve.predict(path, n) or now
        saving = max(0.0, now - chosen)
        if len(forecast.savings) < _SAVINGS_KEPT:
            forecast.savings[(path, n)] = saving
    threshold = rental_threshold()  # not under the lock: it reads the profile where none is in force
    with PROCESS.lock:
        if torch_ready():
            return True
        PROCESS.saved += saving
        PROCESS.counted = saving  # (what the ledger writes for this call: ._decision.ledger)
        if PROCESS.saved < threshold:
            return False
    PROCESS.rented = True
    return load_torch()


def _reason(curve: Curve, path: str, n: int, origin: str, klass: str = "") -> str:
    source = {"machine": "this machine's profile", "prior": "the built-in profile scaled to this machine (run `np2torch tune`)",
              "builtin": "the built-in profile"}[origin]
    if klass:
        source += f", shape class {klass!r} ({_CLASS_WORDS.get(klass, klass)})"
    original = curve.predict(ORIGINAL, n)
    chosen = curve.predict(path, n)
    label = _label(BY_NAME[path])
    if path == ORIGINAL or chosen is None or original is None:
        return f"{label}, from {source}"
    return f"{label}: predicted {_seconds(chosen)} against the original's {_seconds(original)} ({original / chosen:.2f}x), from {source}"


def _label(path: Path) -> str:
    """How :func:`which` names ``path``, with the threads it may use here."""
    if "{threads}" not in path.words:
        return path.words
    return path.words.format(threads=_pool_threads() if path.torch else _original_threads())


def _original_threads() -> int:
    from .._paths.blocks import original_limit

    return original_limit()


def _pool_threads() -> int:
    """The threads a pool route may use here (without importing torch for it)."""
    if torch_ready():
        from .._paths.blocks import thread_limit

        return thread_limit()
    from .._load import usable_cores

    return usable_cores()


_CLASS_WORDS = {f"{length}-{layout}": f"a reduced length {words}, {where}" for length, words in (
    ("short", "of at most 16"), ("medium", "of 17 to 1,024"), ("long", "over 1,024")) for layout, where in (
    ("inner", "the reduced axes contiguous"), ("outer", "the reduced axes strided"))}


def _seconds(value: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value * 1e9:.3g} ns"


def original_reason(name: str, dtype: str, n: int, device: str, min_size: int | None, klass: str = "") -> str:
    """Why a call stays with the original (for :func:`which`)."""
    if device == "numpy":
        return "device='numpy': every call goes to the original"
    if torch_unavailable(asking=True):
        return "torch cannot be used in this process (not installed, or forked while another thread imported it)"
    if min_size is not None:
        return f"below min_size={min_size} set explicitly"
    curve, origin = _curve(profile.active(), curve_key(name, dtype, klass))
    if curve is None:
        return f"{name} over {dtype} is not in the profile"
    return _reason(curve, ORIGINAL, n, origin, klass) + f": no other path is predicted {MARGIN:.1f}x faster at {n:,} elements"


def describe_bands(name: str, dtype: str, device: str = "auto", klass: str = "") -> list[tuple[int, str]]:
    """The bands in force for (name, dtype, shape class): ``[(from_size, path), ...]`` (``np2torch tune --show``)."""
    active = profile.active()
    key = curve_key(name, dtype, klass)
    curve, origin = _curve(active, key)
    if curve is None:
        return []
    bands = _bands(active, key, curve, origin, _allowed(curve, device, True))
    return list(zip(bands.starts, bands.paths))
