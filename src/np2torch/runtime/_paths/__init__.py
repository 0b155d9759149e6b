"""The ways a call can be computed, one module each, and the one record per path that the decision reads.

A *path* is one way to compute a helper's call, every one of them exactly
(the original's bits, or torch where that was verified to give the original's
result).  The decision (:mod:`.._decision`) knows of a path
only its :class:`Path` here: its name, whether it gives the original's own
bits, whether it needs torch, whether its per-element time scales with the
cores, its device, and what the profile says it costs (:meth:`Path.cost`).
Whether a path can serve a particular call, and computing it, is the business
of its module:

* ``numpy`` -- the original's single call (:mod:`.original` finds it, whatever
  patch is in force when it is first looked up); logsumexp serves it leaner
  where it can, with SciPy's own arithmetic (:mod:`.lean`);
* ``cores`` -- the original's own ufunc loop on aligned blocks, on every core
  (:mod:`.cores`);
* ``cpu1`` and ``cpu`` -- torch on the CPU, on one thread or on the workers of
  :mod:`.blocks` (the workers both every-core paths share: aligned blocks, a
  reduction's fixed by the shape, so the bits never depend on the thread count); a one-operand op's is
  :mod:`.torch_cpu`, a two-operand op's and a reduction's their helpers' own
  (:mod:`.._binary`, :mod:`.._logsumexp`, :mod:`.._softmax`);
* ``cuda`` -- host to device to host, streamed in chunks (:mod:`.cuda`).

Nothing here imports the modules that decide (:mod:`.._decision`): a path
does not know when it is chosen.
This module itself is standard library only (the cost model imports it).
"""

from __future__ import annotations

from typing import Protocol, Sequence

from .._record import Record


class Measured(Protocol):
    """What :meth:`Path.cost` reads of a profile's curve (:class:`.._decision.model.Curve`)."""

    @property
    def sizes(self) -> Sequence[int]: ...

    def predict(self, path: str, n: int) -> float | None: ...


class Path(Record):
    """The facts the decision reads of one path.

    ``name``: as profiles, bands and :func:`np2torch.runtime.which` spell it;
    ``exact``: it gives the original's own bits and needs no import (at equal
    speed it wins); ``torch``: it computes with torch; ``scaled``: it runs on
    every core, so its per-element time scales with their number
    (:func:`.._decision.model.scaled_prior`); ``device``: ``cpu`` or ``cuda``;
    ``threads``: the most threads a call's blocks run on (0: as many as the
    path may use); ``words``: how :func:`np2torch.runtime.which` names it
    (``{threads}``: the threads it may use here); ``below_smallest``: the
    profile predicts it below the smallest measured size (the smallest size's
    time), else it says nothing of it there.
    """

    __slots__ = ("name", "exact", "torch", "scaled", "device", "threads", "words", "below_smallest")

    def __init__(self, name: str, *, exact: bool, torch: bool, scaled: bool, device: str, words: str,
                 threads: int = 0, below_smallest: bool = True) -> None:
        self.name = name
        self.exact = exact
        self.torch = torch
        self.scaled = scaled
        self.device = device
        self.threads = threads
        self.words = words
        self.below_smallest = below_smallest

    def cost(self, curve: Measured, n: int) -> float | None:
        """The seconds the profile's ``curve`` predicts for a call of ``n`` elements (None: it says nothing)."""
        if not self.below_smallest and n < curve.sizes[0]:
            return None
        return curve.predict(self.name, n)


PATHS = (
    Path("numpy", exact=True, torch=False, scaled=False, device="cpu", words="the original"),
    # Below the smallest size measured the profile says nothing of it: the original, with the least overhead, serves.
    Path("cores", exact=True, torch=False, scaled=True, device="cpu", below_smallest=False,
         words="the original's own loop on up to {threads} CPU threads (in aligned blocks: the original's bits on "
               "any count)"),
    Path("cpu1", exact=False, torch=True, scaled=False, device="cpu", threads=1, words="torch on one CPU thread"),
    Path("cpu", exact=False, torch=True, scaled=True, device="cpu",
         words="torch on up to {threads} CPU threads (in blocks: the same bits on any count)"),
    Path("cuda", exact=False, torch=True, scaled=False, device="cuda", words="CUDA"),
)
"""Every path, in the order profiles list them and ties are broken (the original first)."""
BY_NAME = {path.name: path for path in PATHS}

ALL_PATHS = tuple(path.name for path in PATHS)
CPU_PATHS = tuple(path.name for path in PATHS if path.device == "cpu")
EXACT_PATHS = tuple(path.name for path in PATHS if path.exact)
"""The paths that give the original's own bits and need no import."""
SCALED_PATHS = tuple(path.name for path in PATHS if path.scaled)
"""The paths that run on every core: their per-element time scales with the cores."""
ORIGINAL = PATHS[0].name
"""The original's single call: where a call goes when nothing else is known to be faster."""
EVERY_CORE = next(path.name for path in PATHS if path.scaled and not path.torch)
"""The original on every core: the one path that a call may leave for the original's single call at any moment, its
bits the same (:func:`.blocks.single_call_serves`)."""
ONE_THREAD = next(path.name for path in PATHS if path.torch and path.threads == 1)
"""torch on one thread: what the one-thread guard compares with the original (:data:`.._decision.model.CONTENDED_LIMIT`)."""
