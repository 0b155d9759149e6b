"""Forked children and the parent's OpenMP pool (standard library only: registered when the package is imported).

GNU OpenMP's thread pool does not survive ``fork``: its worker threads do not
exist in the child, but the pool's state says they do, so the child's first
parallel region waits for them forever.  Whoever started the parent's pool --
the runtime or the user's own torch code, which the runtime cannot see -- a
child forked while torch is imported sets torch to one thread.  The hook is
registered when ``np2torch.runtime`` is imported, before any helper runs, so it
also covers torch imported before or without the runtime.  It also gives the
child fresh locks and forgets CUDA (:meth:`._state.Process.after_fork_in_child`).

A fork while another thread is importing a module (the runtime's first large
call importing torch, say) leaves the child a half-initialized module whose
import lock belongs to a thread that does not exist there: importing it again
never returns.  Waiting for the import before forking is no cure: other
libraries' fork hooks run first and hold locks the import needs (``logging``'s,
which torch's import takes).  So the child notes what was half imported
(:attr:`._state.Process.half_imported`): a half-imported torch is never touched
(every call goes to NumPy/SciPy), and a half-imported original raises an
``ImportError`` that says why instead of hanging.
"""

from __future__ import annotations

import os
import sys
from typing import Iterator

from ._state import PROCESS
from .table import FUNCTIONS


def install() -> None:
    """Register the after-fork hook once per process."""
    if hasattr(os, "register_at_fork") and not PROCESS.fork_hook:
        os.register_at_fork(after_in_child=_after_fork_in_child)
        PROCESS.fork_hook = True


def in_forked_child() -> bool:
    """Whether this process was forked from one with torch imported (its torch runs on one thread)."""
    return PROCESS.forked_child


def _after_fork_in_child() -> None:
    PROCESS.after_fork_in_child(frozenset(name for name in _watched() if being_imported(sys.modules.get(name))))
    torch = sys.modules.get("torch")
    if torch is None or "torch" in PROCESS.half_imported:
        return
    PROCESS.forked_child = True
    setter = getattr(torch, "set_num_threads", None)
    if setter is not None:
        setter(1)


def being_imported(module: object) -> bool:
    """Whether ``module`` is still executing its import (importlib marks its spec ``_initializing``)."""
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


def _watched() -> Iterator[str]:
    """torch and the originals' modules, with their parent packages: what the runtime imports itself."""
    yield "torch"
    for module in {row.module for row in FUNCTIONS}:
        parts = module.split(".")
        for end in range(1, len(parts) + 1):
            yield ".".join(parts[:end])
