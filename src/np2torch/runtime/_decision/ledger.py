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
call goes to the original, as the full decision would have sent it (1.23x for
that ``erf``, 1.04x back to back).  Never for a call that would import torch
(the full decision imports it, at the same call as without the ledger), nor
once torch is imported, in another thread (whose calls never count), under
other settings (``configure``, ``using``) or after the profile changed
(:meth:`.._state.Process.forget_decisions` empties every ledger).  A call the
load sends to the original is not written: its path depends on the moment.
"""

from __future__ import annotations

import sys
import threading
from typing import Dict, Hashable

from .._config import RuntimeSettings
from .._state import PROCESS


class Ledger:
    """One helper's plain calls that take the original's single call: (input dtype, size) -> the saving counted."""

    __slots__ = ("entries", "settings", "threshold")

    def __init__(self) -> None:
        self.entries: Dict[Hashable, float] = PROCESS.decision_table()
        """Emptied with every other decision when the profile in force changes."""
        self.settings: RuntimeSettings | None = None
        """The settings the entries were decided under (another object: decided afresh)."""
        self.threshold = 0.0
        """The rental's threshold when the entries were written (:func:`.route.rental_threshold`)."""

    def count(self, key: Hashable, settings: RuntimeSettings) -> bool:
        """Whether the plain call ``key`` takes the original's single call as decided before: its saving is then
        counted towards the rental.  False: decide it in full (:meth:`learn` then)."""
        saving = self.entries.get(key)
        if saving is None or settings is not self.settings or not _counting_here():
            return False
        if saving:
            total = PROCESS.saved + saving
            if total >= self.threshold:
                return False  # this call imports torch: the full decision does, as it would have
            PROCESS.saved = total
        return True

    def learn(self, key: Hashable, settings: RuntimeSettings, saving: float) -> None:
        """The plain call ``key``, decided in full under ``settings``, took the original's single call and counted
        ``saving`` towards the rental (0.0: nothing)."""
        if not _counting_here():
            return
        from .route import rental_threshold

        generation = PROCESS.generation
        threshold = rental_threshold()
        with PROCESS.lock:
            if PROCESS.generation != generation:
                return
            if settings is not self.settings:
                self.entries.clear()
                self.settings = settings
            self.threshold = threshold
            self.entries[key] = saving


def _counting_here() -> bool:
    """Whether a call here decides as the ledger's entries were decided: the main thread's (the only one whose calls
    count towards the rental), torch neither imported by anyone nor being imported (then torch's paths are
    open, or about to be) unless it was found missing for good."""
    if threading.get_ident() != threading.main_thread().ident:
        return False
    if PROCESS.torch_tried:
        return not PROCESS.torch_found
    return "torch" not in sys.modules


def begin() -> None:
    """A call is about to be decided in full: what the rental counts for it is read from ``PROCESS.counted`` after
    (:func:`.route.route` writes it; main thread only)."""
    PROCESS.counted = 0.0
