"""The cost model: measured curves, profiles and the size bands decided from them (standard library only).

Values and pure functions: a :class:`Curve` predicts the seconds of each path
of one (function, dtype) at any size; a :class:`Profile` holds a machine's
curves; :func:`bands_of` turns a curve into the fastest path per size, subject
to two margins:

* a torch path must be predicted at least :data:`MARGIN` faster than the
  original (measurement noise must not flip a call onto a slower path);
* a torch path is chosen only where torch on *one* thread is predicted within
  :data:`CONTENDED_LIMIT` of the original, with the same margin for noise
  (:data:`MARGIN`): when other processes hold the cores, the pool shrinks to
  the free cores (:func:`.._load.free_cores`) down to one thread, and the call
  must still be no slower than that bound (the *one-thread guard*, judged
  only on times measured on this machine).

Which paths there are, and what the profile says each costs, is :mod:`.._paths`'s
(one record per path: the decision reads only that); where profiles come from
and which one is in force is :mod:`.profile`; the decisions a call gets from
them, :mod:`.route`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Mapping, Sequence, Tuple

from .._paths import ALL_PATHS as ALL_PATHS
from .._paths import BY_NAME, EVERY_CORE, ONE_THREAD, ORIGINAL, SCALED_PATHS
from .._paths import CPU_PATHS as CPU_PATHS
from .._paths import EXACT_PATHS as EXACT_PATHS
from .._record import Record

FORMAT = 1

MARGIN = 1.1
"""A torch path is chosen only where predicted at least 10 % faster than the original."""
CONTENDED_LIMIT = 1.5
"""... and only where one torch thread is predicted within 1.5x of the original (robust under load), less
:data:`MARGIN` for noise: a prediction right at the bound is as likely over it as under."""


# Sizes at which the bands are evaluated: 12 per decade (21 % apart) from 1 to 1e12.
_GRID: Tuple[int, ...] = tuple(sorted({max(1, round(10 ** (k / 12))) for k in range(12 * 12 + 1)}))


BlocksAt = Callable[[str, int, int], int]
"""``blocks_at(path, n, threads)``: how many blocks a path that runs on every core cuts a call over ``n`` elements
on ``threads`` threads into (:func:`.._paths.blocks.pool_blocks`, for one helper and shape class)."""


class ProfileError(ValueError):
    """A profile file that cannot be used (unreadable, malformed, another format)."""


class Curve(Record):
    """Seconds per call of each measured path at each size, for one (function, dtype)."""

    __slots__ = ("sizes", "seconds", "thread_invariant")

    def __init__(self, sizes: tuple[int, ...], seconds: Mapping[str, tuple[float, ...]], thread_invariant: bool = False) -> None:
        self.sizes = sizes
        self.seconds = seconds
        self.thread_invariant = thread_invariant
        """torch gave the same bits on one thread and on the pool (measured): only then may the
        pool shrink under load without changing a value (torch's sigmoid and atanh, for one,
        round the element at a thread boundary differently)."""

    def predict(self, path: str, n: int) -> float | None:
        """Predicted seconds for one call of ``n`` elements (None: the path was not measured).

        Between measured sizes: linear in log-log.  Below the smallest: its time
        (per-call overheads dominate there).  Above the largest: proportional to
        the size, so every path keeps the ratios measured at the largest size
        (an affine fit through the two largest sizes let one noisy point swing
        the decision for every size beyond).
        """
        times = self.seconds.get(path)
        if times is None:
            return None
        sizes = self.sizes
        if n <= sizes[0]:
            return times[0]
        if n >= sizes[-1]:
            return times[-1] * n / sizes[-1]
        i = next(k for k in range(1, len(sizes)) if sizes[k] >= n)
        f = (math.log(n) - math.log(sizes[i - 1])) / (math.log(sizes[i]) - math.log(sizes[i - 1]))
        return math.exp(math.log(times[i - 1]) * (1 - f) + math.log(times[i]) * f)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"sizes": list(self.sizes), **{path: list(times) for path, times in self.seconds.items()}}
        if self.thread_invariant:
            data["thread_invariant"] = True
        return data

    @classmethod
    def from_json(cls, data: object, where: str) -> Curve:
        if not isinstance(data, dict) or not isinstance(data.get("sizes"), list) or not data["sizes"]:
            raise ProfileError(f"{where}: needs a non-empty 'sizes' list")
        sizes = data["sizes"]
        if not all(type(n) is int and n > 0 for n in sizes) or sorted(set(sizes)) != sizes:
            raise ProfileError(f"{where}: 'sizes' must be increasing positive whole numbers")
        seconds = {}
        for path in ALL_PATHS:
            times = data.get(path)
            if times is None:
                continue
            if not isinstance(times, list) or len(times) != len(sizes) or not all(_positive_number(t) for t in times):
                raise ProfileError(f"{where}: {path!r} must list one positive time per size")
            seconds[path] = tuple(float(t) for t in times)
        if ORIGINAL not in seconds:
            raise ProfileError(f"{where}: the original ('numpy') must be measured")
        unknown = set(data) - {"sizes", "thread_invariant", *ALL_PATHS}
        if unknown:
            raise ProfileError(f"{where}: unknown keys {sorted(unknown)}")
        invariant = data.get("thread_invariant", False)
        if type(invariant) is not bool:
            raise ProfileError(f"{where}: 'thread_invariant' must be true or false")
        return cls(tuple(sizes), seconds, invariant)


def _positive_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and value > 0


def curve_key(name: str, dtype: str, klass: str = "") -> str:
    """A profile's key for (function, loop dtype) and, for a reduction, its shape class (:data:`REDUCTION_CLASSES`)."""
    return f"{name}/{dtype}/{klass}" if klass else f"{name}/{dtype}"


REDUCED_LENGTHS = (("short", 16), ("medium", 1024), ("long", None))
"""A reduction's length class: the product of the reduced axes' lengths up to the bound (None: any)."""
REDUCED_LAYOUTS = ("inner", "outer")
"""``inner``: the reduced axes are the input's contiguous ones (``axis=-1`` of a C array); ``outer``: not."""
REDUCTION_CLASSES = tuple(f"{length}-{layout}" for length, _ in REDUCED_LENGTHS for layout in REDUCED_LAYOUTS)
"""The shape classes a reduction is decided by, each measured by ``np2torch tune`` as a curve of its own."""
CLASS_LENGTHS = {"short": 4, "medium": 128, "long": 8192}
"""The reduced length ``np2torch tune`` times each length class at (or the whole size, when smaller)."""


class Profile(Record):
    """A machine profile (or the built-in one).

    ``source``: ``builtin`` or the file it was read from; ``import_seconds``: what
    ``import torch`` costs in a fresh process on that machine; ``threads``:
    torch's CPU threads when the ``cpu`` path was measured; ``notes``: other
    measured facts, keyed by name.
    """

    __slots__ = ("source", "fingerprint", "import_seconds", "threads", "curves", "notes")

    def __init__(
        self,
        source: str,
        fingerprint: Mapping[str, Any],
        import_seconds: float,
        threads: int,
        curves: dict[str, Curve] | None = None,
        notes: dict[str, Any] | None = None,
    ) -> None:
        self.source = source
        self.fingerprint = fingerprint
        self.import_seconds = import_seconds
        self.threads = threads
        self.curves: dict[str, Curve] = {} if curves is None else curves
        self.notes: dict[str, Any] = {} if notes is None else notes

    def to_json(self) -> dict[str, object]:
        return {
            "np2torch_profile": FORMAT,
            "fingerprint": dict(self.fingerprint),
            "import_seconds": self.import_seconds,
            "threads": self.threads,
            "curves": {key: curve.to_json() for key, curve in sorted(self.curves.items())},
            "notes": self.notes,
        }

    @classmethod
    def trusted(cls, data: dict[str, Any], source: str) -> Profile:
        """The profile np2torch ships, read without validation (tests/runtime/test_runtime_profile.py validates it)."""
        curves = {
            key: Curve(tuple(value["sizes"]), {path: tuple(value[path]) for path in ALL_PATHS if path in value}, value.get("thread_invariant", False) is True)
            for key, value in data["curves"].items()
        }
        return cls(source, data["fingerprint"], float(data["import_seconds"]), data["threads"], curves, dict(data.get("notes", {})))

    @classmethod
    def from_json(cls, data: object, source: str) -> Profile:
        if not isinstance(data, dict) or data.get("np2torch_profile") != FORMAT:
            raise ProfileError(f"{source}: not an np2torch profile of format {FORMAT}")
        fingerprint = data.get("fingerprint")
        curves = data.get("curves")
        notes = data.get("notes", {})
        if not isinstance(fingerprint, dict) or not isinstance(curves, dict) or not isinstance(notes, dict):
            raise ProfileError(f"{source}: 'fingerprint', 'curves' and 'notes' must be objects")
        if not _positive_number(data.get("import_seconds")):
            raise ProfileError(f"{source}: 'import_seconds' must be a positive number")
        threads = data.get("threads")
        if type(threads) is not int or threads < 1:
            raise ProfileError(f"{source}: 'threads' must be a whole number >= 1")
        parsed = {key: Curve.from_json(value, f"{source}: curve {key!r}") for key, value in curves.items() if isinstance(key, str)}
        return cls(source, fingerprint, float(data["import_seconds"]), threads, parsed, dict(notes))


class Active(Record):
    """The profile the runtime decides from, resolved once per process (:func:`.profile.active`).

    ``machine``: this machine's measurements (None: none, ``np2torch tune`` has
    not run); ``write_to``: where this machine's profile is or would be (None:
    nowhere, e.g. ``NP2TORCH_PROFILE=builtin``, when the built-in profile is
    used unscaled).
    """

    __slots__ = ("machine", "builtin", "write_to", "print_")

    def __init__(self, machine: Profile | None, builtin: Profile, write_to: str | None, print_: Mapping[str, Any]) -> None:
        self.machine = machine
        self.builtin = builtin
        self.write_to = write_to
        self.print_ = print_


class Bands(Record):
    """``paths[i]`` from ``starts[i]`` elements on."""

    __slots__ = ("starts", "paths")

    def __init__(self, starts: Tuple[int, ...], paths: Tuple[str, ...]) -> None:
        self.starts = starts
        self.paths = paths

    def at(self, n: int) -> str:
        # A handful of bands: a scan from the top costs less than importing bisect.
        starts = self.starts
        i = len(starts) - 1
        while i and starts[i] > n:
            i -= 1
        return self.paths[i]

    def first_other(self) -> int | None:
        """The smallest size whose path is not the original's single call (None: every size is the original's)."""
        return next((start for start, path in zip(self.starts, self.paths) if path != ORIGINAL), None)


def bands_of(curve: Curve, allowed: Sequence[str], one_thread_guard: bool = True) -> Bands:
    """The fastest allowed path at every size of the grid and every measured size, as contiguous bands.

    A size between two of these takes the path of the one below it; the measured
    sizes are among them so that a call of a measured size gets the path measured
    fastest there (the grid alone put the smallest measured size, when it fell
    between two grid sizes, in the band below it: the original's).  Without
    ``one_thread_guard`` the pool may be chosen where one thread is slower than
    :data:`CONTENDED_LIMIT` allows: for a prior, whose one-thread times are
    another machine's.
    """
    starts: list[int] = []
    paths: list[str] = []
    for n in sorted(set(_GRID).union(curve.sizes)):
        path = best_path(curve, allowed, n, one_thread_guard)
        if not paths or paths[-1] != path:
            starts.append(1 if not starts else n)
            paths.append(path)
    return Bands(tuple(starts), tuple(paths))


def best_path(curve: Curve, allowed: Sequence[str], n: int, one_thread_guard: bool = True) -> str:
    """The fastest allowed path at ``n`` elements: a torch path only where predicted :data:`MARGIN` faster than the
    fastest exact path (:func:`exact_path`), and (``one_thread_guard``) only where one torch thread stays within
    :data:`CONTENDED_LIMIT` of the original."""
    if n < curve.sizes[0]:
        return ORIGINAL  # nothing was measured this small: the original, whose overhead is the smallest
    best = exact_path(curve, allowed, n)
    original = curve.predict(ORIGINAL, n)
    assert original is not None
    single = BY_NAME[ONE_THREAD].cost(curve, n)
    if one_thread_guard and single is not None and single * MARGIN > CONTENDED_LIMIT * original:
        return best
    best_time = (BY_NAME[best].cost(curve, n) or original) / MARGIN
    for name in allowed:
        path = BY_NAME[name]
        if path.exact:
            continue
        predicted = path.cost(curve, n)
        if predicted is not None and predicted < best_time:
            best, best_time = name, predicted
    if n > curve.sizes[-1] and not BY_NAME[best].exact and not BY_NAME[best].scaled:
        best = _pool_past_the_largest(curve, allowed, n, best, best_time)
    return best


def _pool_past_the_largest(curve: Curve, allowed: Sequence[str], n: int, best: str, best_time: float) -> str:
    """Past the largest size measured, a torch pool on the same device that was predicted within :data:`MARGIN` of
    the one thread chosen: the model keeps each path's ratios from that size on, but a pool's lead over one thread
    only grows with the size (its fixed costs amortize).  On the 2-core reference VM (2026-11-30) float64 ``erf``
    on the pool and on one torch thread timed alike at 16.7M elements in ``tune``, 1.17x apart timed again at
    16.7M, 1.8x at 5e7, and bench's 1e8 ran at half the pool's speed on one thread."""
    device = BY_NAME[best].device
    for name in allowed:
        path = BY_NAME[name]
        if path.torch and path.scaled and path.device == device:
            predicted = path.cost(curve, n)
            if predicted is not None and predicted <= best_time * MARGIN:
                return name
    return best


def exact_path(curve: Curve, allowed: Sequence[str], n: int) -> str:
    """The fastest allowed path at ``n`` elements that gives the original's bits without an import: one that runs
    the original's own loop (on every core) where predicted :data:`MARGIN` faster than the original's single call,
    else the original."""
    original = curve.predict(ORIGINAL, n)
    best, best_time = ORIGINAL, None
    for name in allowed:
        path = BY_NAME[name]
        if not path.exact or name == ORIGINAL:
            continue
        predicted = path.cost(curve, n)
        if original is not None and predicted is not None and predicted * MARGIN < original and (
                best_time is None or predicted < best_time):
            best, best_time = name, predicted
    return best


def scaled_prior(curve: Curve, built_threads: int, threads_here: int, blocks_at: BlocksAt) -> Curve:
    """The built-in curve with the pool paths' time (torch's pool, the original on every core) scaled to this
    machine's thread count.

    What decides where ``np2torch tune`` has not run.  A path cuts a call over ``n`` elements on ``threads``
    threads into ``blocks_at(path, n, threads)`` blocks (:func:`.._paths.blocks.pool_blocks`), so at most that
    many threads share its work: its time past the smallest size's (the fixed cost) is taken to shrink or grow
    by ``min(blocks there, built_threads) / min(blocks here, threads_here)``.  A call of one block keeps the
    reference machine's time, however many cores this one has: scaled by the threads alone, the 2-core
    reference profile predicted float64 ``erf`` over 4,096 elements (one block, the original's own call) 1.7x
    faster on every core of a 16-core machine than the original.  Its one-thread times stay the reference
    machine's, which say nothing about this one's (one torch thread was 2.3x slower than NumPy's float64 exp
    on the AVX2 reference VM and 1.7x faster on an AVX-512 host): the one-thread guard is applied to this
    machine's measurements only, not to the prior.
    """
    if threads_here == built_threads or not any(path in curve.seconds for path in SCALED_PATHS):
        return curve
    seconds = dict(curve.seconds)
    for path in SCALED_PATHS:
        pool = seconds.get(path)
        if pool is not None:
            first = pool[0]
            seconds[path] = tuple(
                first + (t - first) * min(blocks_at(path, n, built_threads), built_threads)
                / min(blocks_at(path, n, threads_here), threads_here) for n, t in zip(curve.sizes, pool))
    return Curve(curve.sizes, seconds)


WAKE_NOTE = "wake_seconds"
"""The profile's note of what a call running on more than one thread pays to wake a worker that idled since the
program's previous call (``np2torch tune`` measures it: :func:`.calibrate.measure_wake`)."""
LOOP_WAKE_NOTE = "loop_wake_seconds"
"""... and what a call on the original on every core pays to wake one that idled :data:`.._paths.blocks.LOOP_IDLE`:
after a longer idle it runs on its workers only where it pays even then (:func:`.._paths.blocks.single_call_serves`)."""


def wake_of(profile: Profile) -> float:
    """The profile's :data:`WAKE_NOTE` (none in a profile measured before ``tune`` measured it: nothing)."""
    return float(profile.notes.get(WAKE_NOTE, 0.0))


def loop_wake_of(profile: Profile) -> float:
    """The profile's :data:`LOOP_WAKE_NOTE` (none in a profile measured before ``tune`` measured it: its
    :data:`WAKE_NOTE`, as it decided then)."""
    return float(profile.notes.get(LOOP_WAKE_NOTE, wake_of(profile)))


def woken(curve: Curve, seconds: float, blocks_at: BlocksAt, threads: int, every_core: float | None = None) -> Curve:
    """``curve`` with ``seconds`` added to the time of each path that runs on every core, at every measured size it
    cuts into more than one block on ``threads`` threads (``blocks_at``, as :func:`scaled_prior` takes it: one block
    is computed by the calling thread alone); ``every_core`` (default ``seconds``) to the original on every core's.

    ``tune`` times a path's calls back to back, so its workers never sleep; a program's calls come between other
    work, and each wakes a worker that did (on the 2-core reference VM ~0.2-0.45 ms after 10-50 ms of idling,
    where its calls of a few hundred microseconds gain less than that).  The original on every core runs on its
    workers after a longer idle than :data:`.._paths.blocks.LOOP_IDLE` only where it pays even then (else the
    original's single call serves, the same bits: :func:`.._paths.blocks.single_call_serves`), so it is charged
    what waking one costs after that idle: ``every_core``."""
    every_core = seconds if every_core is None else every_core
    if max(seconds, every_core) <= 0 or not any(path in curve.seconds for path in SCALED_PATHS):
        return curve
    seconds_of = dict(curve.seconds)
    for path in SCALED_PATHS:
        times = seconds_of.get(path)
        added = every_core if path == EVERY_CORE else seconds
        if times is not None and added > 0:
            seconds_of[path] = tuple(t + added if blocks_at(path, n, threads) > 1 else t
                                     for n, t in zip(curve.sizes, times))
    return Curve(curve.sizes, seconds_of, curve.thread_invariant)


class Forecast(Record):
    """What the profile says about one (function, dtype, device), cached until :meth:`.._state.Process.forget_decisions`."""

    __slots__ = ("key", "curve", "origin", "allowed", "bands", "exact", "savings")

    def __init__(self, key: str, curve: Curve | None, origin: str, allowed: Tuple[str, ...], bands: Bands | None,
                 exact: Bands | None = None) -> None:
        self.key = key
        self.curve = curve
        self.origin = origin
        self.allowed = allowed
        self.bands = bands
        self.exact = exact if exact is not None else bands
        """The bands of the exact paths alone: where a call goes while torch is not imported."""
        self.savings: Dict[Tuple[str, int], float] = {}
        """(path, size) -> the seconds the curve predicts that path saves on a call of that size (the ski
        rental counts it at every call until torch is imported; a prediction costs µs)."""
