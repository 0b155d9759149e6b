"""What the runtime keeps between calls: one object per process, :data:`PROCESS`, and the settings of the context.

Everything the helpers remember lives in :class:`Process`: the process-wide
settings, torch once loaded, the machine load, the profile in force and every
decision derived from it, the ski-rental account, CUDA's staging slots, the
checks of the installed originals and NumPy error-state caches.  So there is
one place to read the state, one to reset it (:meth:`Process.reload_profile`,
:meth:`Process.after_fork_in_child`), and one way to say that the decisions
must be made afresh: :meth:`Process.forget_decisions`, which empties every cache
derived from the profile.

The settings of a call are, in this order:

1. the innermost active :func:`using` block of the *current context* (a
   :class:`contextvars.ContextVar`, so threads and asyncio tasks do not see each
   other's blocks; before Python 3.14 a new thread starts with an empty context
   and therefore sees only the process-wide settings);
2. the process-wide settings, read from ``NP2TORCH_DEVICE`` /
   ``NP2TORCH_MIN_SIZE`` when this module is imported (a bad value fails the
   import, naming it) and changed by :func:`configure`.

Standard library only: ``import np2torch.runtime`` imports this module.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Dict, Hashable, Iterator, List, Set, Tuple, TypeVar

from ._config import KEEP, RuntimeSettings, parse_device, parse_exact, parse_min_size, settings_from_env

if TYPE_CHECKING:
    import numpy as np
    import torch

    from ._decision.model import Active, Bands, Forecast

    K = TypeVar("K")
    V = TypeVar("V")


class LoadWindow:
    """The last sample of the machine's CPU time (:mod:`._load`): when (``time.monotonic``), the
    machine's ``(busy, total)`` clock ticks, the CPU seconds of each thread that has sampled (``clocks``:
    native thread id -> seconds) and of the block workers together (``workers``), and the
    machine's CPU stall (microseconds some task waited for a CPU, None where unknown); over the window that ended
    there, the cores other work kept busy (``others``: other processes' and this one's other threads') and those
    taken out of the pool for it (``busy``); ``cores``: this process's usable cores."""

    __slots__ = ("when", "ticks", "clocks", "workers", "stall", "others", "busy", "cores")

    def __init__(self) -> None:
        self.when = -1.0
        self.ticks: Tuple[int, int] | None = None
        self.clocks: Dict[int, float] = {}
        self.workers = 0.0
        self.stall: int | None = None
        self.others = 0.0
        self.busy = 0
        self.cores = 0


class SlotsLock:
    """:attr:`Process.cuda_lock`: a lock that also knows whether *this* thread is inside it (:meth:`held_here`).

    A call made inside a call that holds it, in the same thread (a signal handler's, a ``__del__``'s, a trace
    function's), must keep off what it guards (the CUDA staging slots, in use by the interrupted call): waiting
    for the lock would never return, as ``threading.Lock`` is not re-entrant.  The thread counts itself in before
    it waits for the lock, so a call made while it waits keeps off too.
    """

    __slots__ = ("lock", "inside")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = threading.local()

    def __enter__(self) -> None:
        inside = self.inside
        inside.depth = getattr(inside, "depth", 0) + 1
        try:
            self.lock.acquire()
        except BaseException:  # a signal handler's exception while waiting
            inside.depth -= 1
            raise

    def __exit__(self, *exc: object) -> None:
        self.lock.release()
        self.inside.depth -= 1

    def held_here(self) -> bool:
        """Whether this thread holds the lock, or waits for it, in a call its current call interrupted."""
        return getattr(self.inside, "depth", 0) > 0


class Process:
    """The runtime's state in this process (one instance: :data:`PROCESS`).

    Caches derived from the profile (``forecasts``, ``bands`` and every helper's
    ``floors`` table) are emptied together by :meth:`forget_decisions`, the one
    way to invalidate a decision; ``generation`` counts those calls so that a
    decision computed from the profile before one is not stored after it.
    """

    __slots__ = (
        "settings", "lock", "cuda_lock",
        "torch_tried", "torch_found", "cuda", "forked_child", "fork_hook", "half_imported",
        "load", "every_core_call",
        "profile", "profile_warned", "generation", "forecasts", "bands", "floor_tables",
        "saved", "counted", "routed", "deferred", "provisional", "rented",
        "cuda_slots", "verdicts", "error_checks", "redirects", "underflow_unwarned", "one_time", "workers", "per_thread_torch",
        "openmp", "first_blocks",
    )

    settings: RuntimeSettings
    """The process-wide settings; replaced whole, so readers never see half an update."""
    profile: Active | None
    """The profile in force, read on first use (:func:`._decision.profile.active`)."""

    def __init__(self, settings: RuntimeSettings) -> None:
        self.settings = settings
        self.lock = threading.RLock()
        """Short critical sections: settings, the profile in force, decisions, the ski rental.  Never held over an
        import or a call into the original's or the program's code (a warning's handler): a thread waiting for it
        there could be one that work waits for.  The one-time loads hold no lock: ``import torch``
        (:func:`._backend.load_torch`), the import of an original's module (:meth:`._helper.Helper.load`), reading
        the profile and the checks of the installed originals (kept once, whichever thread finds them first)."""
        self.cuda_lock = SlotsLock()
        """Held while a call uses the CUDA staging slots; a call made inside one in the same thread keeps off them."""
        self.torch_tried = False
        self.torch_found = False
        self.cuda: bool | None = None
        """Whether torch can use a CUDA device here (None: not asked yet)."""
        self.forked_child = False
        """This process was forked from one where torch was imported: its torch runs on one thread."""
        self.fork_hook = False
        self.half_imported: frozenset[str] = frozenset()
        """Modules the runtime uses that another thread was importing when this process was forked
        from its parent: their import can never finish here (:mod:`._fork`)."""
        self.load = LoadWindow()
        self.every_core_call = -math.inf
        """``time.monotonic()`` when the last call the profile sent to the original on every core ended (ran on its
        workers) or began (the original's single call served it): :func:`._paths.blocks.single_call_serves`."""
        self.profile = None
        self.profile_warned = False
        self.generation = 0
        self.forecasts: Dict[Tuple[str, str, str, bool, str, bool], Forecast] = {}
        """(function, loop dtype, device, CUDA verified, shape class, exact paths only) -> what the profile says."""
        self.bands: Dict[Tuple[str, Tuple[str, ...], str, bool], Bands] = {}
        """(curve key, allowed paths, where the curve came from, one-thread guard) -> the fastest path per size."""
        self.floor_tables: List[Dict[Any, Any]] = []
        """Each helper's decisions kept between calls: its floors (input dtype -> the size below which its calls take
        the original), its ledger (:mod:`._decision.ledger`)."""
        self.saved = 0.0
        """Seconds the profile predicts the torch path would have saved so far, while torch was not imported
        (the ski rental: predictions only, so the same on every run)."""
        self.counted = 0.0
        """What the rental counted for the main thread's call being decided now (:mod:`._decision.ledger` keeps it)."""
        self.routed = 0
        """How many calls were decided (:func:`._decision.route.route`): a decision the ledger keeps must be the only
        one between its start and its end (not a signal handler's call made inside it, which counted its own)."""
        self.rented = False
        """The runtime's rental imported torch (the main thread's calls paid for it), not the program: other threads'
        calls keep the exact paths (:func:`._decision.route.route`)."""
        self.deferred = 0
        """Elements the helpers saw before the profile was read (:func:`._decision.route.deferring`)."""
        self.provisional = False
        """Some helper's floor is the provisional :data:`._decision.route.DEFER_FLOOR`: a call at or above it still
        counts towards the deferral, and the first call after the profile is read empties the floors."""
        self.cuda_slots: Dict[Tuple[str, torch.dtype], object] = {}
        """(device, dtype) -> the CUDA staging slots (:mod:`._paths.cuda`)."""
        self.verdicts: Dict[str, object] = {}
        """Helper name -> what the check of the installed original found (logsumexp: :mod:`._exact.logsumexp_check`)."""
        self.error_checks: Dict[Any, Any] = {}
        """NumPy error-state object -> the checks a torch result needs under it (:mod:`._exact.errstate`)."""
        self.one_time: List[Tuple[float, float]] = []
        """``(time.perf_counter() at the start, seconds)`` of each one-time piece of work a call did for the
        process (``import torch``): :mod:`.sites` keeps it out of a call's timing."""
        self.redirects: Dict[str, Dict[object, object]] = {}
        """Helper name -> {NumPy error-state object -> the state its warnings are issued from}."""
        self.underflow_unwarned: Set[object] = set()
        """The NumPy error-state objects with a redirect (some mode is ``warn``) whose ``under`` is not ``warn``:
        there a call raising no other flag behaves alike with and without the redirect (:mod:`._ufunc`)."""
        self.workers: Tuple[int, List[Any]] | None = None
        """(pid, the block workers started in that process) (:mod:`._paths.blocks`); a forked child starts its own."""
        self.per_thread_torch: bool | None = None
        """Whether torch's thread setting is per thread here (:mod:`._paths.blocks`; None: not checked yet)."""
        self.openmp: Any = None
        """The OpenMP runtime torch loaded, whose per-thread setting gives a block one torch thread (:mod:`._paths.blocks`;
        None: not looked for yet, False: none found)."""
        self.first_blocks: Set[Hashable] = set()
        """The kinds of torch work (an op and its dtype) whose first block this process has computed, alone
        (:mod:`._paths.blocks`)."""

    def floor_table(self) -> Dict[np.dtype, int]:
        """A new helper's size floors, emptied with every other decision by :meth:`forget_decisions`."""
        table: Dict[np.dtype, int] = {}
        self.floor_tables.append(table)
        return table

    def decision_table(self) -> Dict[Any, Any]:
        """A new table of a helper's decisions (:mod:`._decision.ledger`), emptied with every other decision by
        :meth:`forget_decisions`."""
        table: Dict[Any, Any] = {}
        self.floor_tables.append(table)
        return table

    def remember(self, table: Dict[K, V], key: K, value: V, generation: int) -> None:
        """Store in ``table`` a decision computed from the profile as it was at ``generation`` (read
        before computing it), unless :meth:`forget_decisions` ran since."""
        with self.lock:
            if self.generation == generation:
                table[key] = value

    def forget_decisions(self) -> None:
        """The profile in force changed (or the provisional floors of a short script give way to it):
        every decision derived from it is made afresh."""
        with self.lock:
            self.generation += 1
            self.provisional = False
            self.forecasts.clear()
            self.bands.clear()
            for table in self.floor_tables:
                table.clear()

    def reload_profile(self) -> None:
        """Read the profile again on next use (``NP2TORCH_PROFILE`` may have changed) and start the
        process's accounting afresh."""
        with self.lock:
            self.profile = None
            self.profile_warned = False
            self.saved = 0.0
            self.deferred = 0
            self.rented = False
            self.forget_decisions()

    def after_fork_in_child(self, half_imported: frozenset[str]) -> None:
        """A forked child: no thread of the parent runs here, so its locks start free; CUDA cannot be
        re-initialized, so whether it is usable is asked again (torch says no in a forked child).  The
        parent's CUDA slots stay referenced: freeing device memory is not allowed here either.
        ``half_imported``: the modules another thread was importing; torch among them is unusable."""
        self.lock = threading.RLock()
        self.cuda_lock = SlotsLock()
        self.cuda = None
        self.half_imported = half_imported
        if "torch" in half_imported:
            self.torch_tried = True
            self.torch_found = False


PROCESS = Process(settings_from_env(os.environ))

TAKEN = threading.local()
"""``TAKEN.device``: the device (``"cpu"``/``"cuda"``) of this thread's last call computed on torch, or ``"lean"``
for one computed with the original's own arithmetic without its overhead (logsumexp's short axes); a caller that
wants to know which path one call took sets it to None before the call (:mod:`.sites`)."""

SCOPED: ContextVar[RuntimeSettings | None] = ContextVar("np2torch_runtime_settings", default=None)
"""The settings of the innermost :func:`using` block of this context (None: none)."""


def current_settings() -> RuntimeSettings:
    """The settings in force here: the innermost :func:`using` block, else the process-wide ones."""
    scoped = SCOPED.get()
    return PROCESS.settings if scoped is None else scoped


def _updated(base: RuntimeSettings, device: str, min_size: int | None, exact: str) -> RuntimeSettings:
    return base.replace(device=KEEP if device is KEEP else parse_device(device),
                        min_size=KEEP if min_size is KEEP else parse_min_size(min_size),
                        exact=KEEP if exact is KEEP else parse_exact(exact))


def configure(device: str = KEEP, min_size: int | None = KEEP, exact: str = KEEP) -> RuntimeSettings:
    """Change the process-wide settings; arguments left out keep their value.

    ``device``: ``"auto"`` (the default: the path the machine profile measured
    fastest, CUDA included where ``np2torch tune`` measured it), ``"cpu"`` (torch
    on the host), ``"cuda"``/``"cuda:N"`` or ``"numpy"`` (off: every call goes to
    NumPy/SciPy).
    ``min_size``: the dispatch threshold in elements for every helper (0 forces
    the torch path); ``None`` restores the measured per-function defaults.
    ``exact``: ``"ulp"`` (the default: values within the measured few ULP of the original's, torch where
    faster) or ``"bits"`` (only paths that give the original's own bits: the original, its own loop on every
    core, logsumexp's lean path).
    Returns the previous settings.  Active :func:`using` blocks still win.
    """
    with PROCESS.lock:
        previous = PROCESS.settings
        PROCESS.settings = _updated(previous, device, min_size, exact)
    return previous


@contextlib.contextmanager
def using(device: str = KEEP, min_size: int | None = KEEP, exact: str = KEEP) -> Iterator[RuntimeSettings]:
    """Override the settings inside a ``with`` block, in this thread/task only.

    Same arguments as :func:`configure`; yields the settings in force inside.
    """
    settings = _updated(current_settings(), device, min_size, exact)
    token = SCOPED.set(settings)
    try:
        yield settings
    finally:
        SCOPED.reset(token)
