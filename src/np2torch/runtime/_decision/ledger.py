"""The rental's ledger: plain calls known to take the original's single call, counted without being decided again.

A plain call (one array, or two operands; no keyword) at or past its helper's
floor is decided by :func:`.route.route`: some eighty Python calls -- its
forecast, its band, the rental's count.  Back to back that is ~7 µs; in a
program, between calls that stream megabytes through the caches, it was 40-70
µs, and ``erf`` over 5,000 elements, which the profile sends to torch once
imported and which takes the original until then, ran at 1.69x the original's
time on the 2-core reference VM (``benchmarks/decided_calls.py``).

The outcome of such a call is a function of the settings, the profile in
force, the call's loop and size, and (for torch's paths) of whether torch is
imported; while it is not, the call adds to the rental's sum a saving fixed by
the same (neither error state matters: the rental counts a call before the
paths' checks of NumPy's and SciPy's error states).  So the first call of each
(loop, size) that takes the original's single call is written here with the
saving it counted (0.0 where the profile keeps the original anyway), and the
next ones are counted from here: :meth:`Ledger.count` adds the saving and the
call goes to the original, as the full decision would have sent it -- from the
helper's C front where it is built (``_front.c``, which reads the entries and
the same conditions): 1.12x for that ``erf``, 1.02x back to back.  Never for a call that would import torch
(the full decision imports it, at the same call as without the ledger), nor
once torch is imported, under other settings (``configure``, ``using``) or
after the profile changed (:meth:`.._state.Process.forget_decisions` empties
every ledger).  Another thread's calls never count: theirs are held apart
(:attr:`Ledger.others`), by route alone.  Two threads of a program calling
``erf`` over 120,000 elements in a loop, which the load sends to the original's
single call, took 1.05-1.07x the original's time decided in full on every call
(2-core reference VM, 2026-11-30).

A call the profile sends to the original on every core (:mod:`.._paths.cores`) is written too, with its route
(:meth:`Ledger.route`): what follows the route -- SciPy's error state, the load
(:func:`.._paths.blocks.single_call_serves`), the layout, NumPy's error state -- is checked on every call as before,
and only the route is not computed again.  With one core busy, ``erf`` over 120,000 elements, which the load sends
to the original's single call, cost 1.03-1.06x the original's time decided in full on every call, 1.00-1.01x from
the ledger.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING, Dict, Hashable, List, Tuple

from .._config import RuntimeSettings
from .._state import PROCESS

if TYPE_CHECKING:
    from .route import Route


class Ledger:
    """One helper's plain calls decided before to take an exact path: the original's single call (input dtype or loop,
    size) -> the saving counted, and the original on every core -> (the saving counted, its route)."""

    __slots__ = ("entries", "routes", "settings", "threshold", "main", "others", "others_settings")

    def __init__(self) -> None:
        self.entries: Dict[Hashable, float] = PROCESS.decision_table()
        """The original's single call.  Emptied with every other decision when the profile in force changes."""
        self.routes: Dict[Hashable, Tuple[float, Route]] = PROCESS.decision_table()
        """The original on every core (the C front reads only :attr:`entries`)."""
        self.settings: RuntimeSettings | None = None
        """The settings the entries were decided under (another object: decided afresh)."""
        self.threshold = 0.0
        """The rental's threshold when the entries were written (:func:`.route.rental_threshold`)."""
        self.main: int | None = None
        """The main thread's ident when the entries were written (None: in a forked child, not yet): only its calls
        are counted from here."""
        self.others: Dict[Hashable, Route | None] = PROCESS.decision_table()
        """Another thread's plain calls decided before to take an exact path: the key -> its route (None: the
        original's single call).  Such a call counts nothing towards the rental, so its exact path, while torch is
        not imported, is a function of the settings, the profile, the loop and the size alone
        (:func:`.route.route`): any thread but the main one writes and reads them."""
        self.others_settings: RuntimeSettings | None = None
        """The settings :attr:`others` were decided under."""
        _LEDGERS.append(self)

    def count(self, key: Hashable, settings: RuntimeSettings) -> bool:
        """Whether the plain call ``key`` takes the original's single call as decided before: its saving is then
        counted towards the rental (the main thread's).  False: decide it in full (:meth:`learn` then)."""
        saving = self.entries.get(key)
        if saving is not None and threading.get_ident() == self.main:
            return self._counted(saving, settings)
        return self._elsewhere(key, settings) is None

    def route(self, key: Hashable, settings: RuntimeSettings) -> Route | None:
        """The route to the original on every core of the plain call ``key``, as decided before: its saving is then
        counted towards the rental (the main thread's).  None: decide it in full (:meth:`learn` then)."""
        found = self.routes.get(key)
        if found is not None and threading.get_ident() == self.main:
            return found[1] if self._counted(found[0], settings) else None
        held = self._elsewhere(key, settings)
        return None if held is _MISSING else held  # type: ignore[return-value]

    def _elsewhere(self, key: Hashable, settings: RuntimeSettings) -> Route | None | object:
        """Another thread's plain call ``key`` as decided before (:attr:`others`): its route, or :data:`_MISSING`
        (decide it in full: this is the main thread, torch is open, the settings or the call are new)."""
        if (settings is not self.others_settings or threading.current_thread() is threading.main_thread()
                or not _torch_closed()):
            return _MISSING
        return self.others.get(key, _MISSING)

    def _counted(self, saving: float, settings: RuntimeSettings) -> bool:
        """Whether the conditions the entries were written under hold (asked in the thread that wrote them: the
        callers' test), and ``saving`` keeps the rental's sum under its threshold: then it is added."""
        if settings is not self.settings or not _torch_closed():
            return False
        if saving:
            total = PROCESS.saved + saving
            if total >= self.threshold:
                return False  # this call imports torch: the full decision does, as it would have
            PROCESS.saved = total
        return True

    def learn(self, key: Hashable, settings: RuntimeSettings, begun: int, route: Route | None = None) -> None:
        """The plain call ``key``, decided in full under ``settings`` since :func:`begin` returned ``begun``, took
        ``route`` (None: the original's single call; else the original on every core) and counted what
        ``PROCESS.counted`` holds towards the rental (0.0: nothing).  Not written where another call was decided
        meanwhile (a signal handler's, made inside this one's decision): ``PROCESS.counted`` may be that call's."""
        saving = PROCESS.counted
        if threading.current_thread() is not threading.main_thread():
            self._learn_elsewhere(key, settings, route)
            return
        if PROCESS.routed != begun + 1 or not _torch_closed():
            return
        from .route import rental_threshold

        generation = PROCESS.generation
        threshold = rental_threshold()
        with PROCESS.lock:
            if PROCESS.generation != generation:
                return
            if settings is not self.settings:
                self.entries.clear()
                self.routes.clear()
                self.settings = settings
            self.threshold = threshold
            self.main = threading.get_ident()
            if route is None:
                self.entries[key] = saving
            else:
                self.routes[key] = (saving, route)

    def _learn_elsewhere(self, key: Hashable, settings: RuntimeSettings, route: Route | None) -> None:
        """Another thread's plain call ``key`` took ``route`` (:attr:`others`; counted nothing, so whatever was
        decided meanwhile in another thread or inside this call leaves it as it is)."""
        generation = PROCESS.generation
        if not _torch_closed():
            return
        with PROCESS.lock:
            if PROCESS.generation != generation:
                return
            if settings is not self.others_settings:
                self.others.clear()
                self.others_settings = settings
            self.others[key] = route


_MISSING = object()
"""Not in :attr:`Ledger.others`."""

_LEDGERS: List[Ledger] = []
"""Every helper's ledger (helpers live as long as the process)."""


def _torch_closed() -> bool:
    """Whether torch's paths are closed, as when the entries were written: torch neither imported by anyone nor being
    imported (then they are open, or about to be), unless it was found missing for good.  (The C front reads the
    same, and the thread, from the ledger and ``PROCESS``: ``_front.c``'s ``ledger_open``.)"""
    if PROCESS.torch_tried:
        return not PROCESS.torch_found
    return "torch" not in sys.modules


def begin() -> int:
    """A call is about to be decided in full: what the rental counts for it is read from ``PROCESS.counted`` after
    (:func:`.route.route` writes it; main thread only).  Returns the decisions made so far, for :meth:`Ledger.learn`."""
    PROCESS.counted = 0.0
    return PROCESS.routed


def _forked() -> None:
    for ledger in _LEDGERS:
        ledger.main = None  # the child's main thread is the one that forked: its calls write the entries again


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
