"""Forked children and the parent's OpenMP pool (standard library only: registered when the package is imported).

GNU OpenMP's thread pool does not survive ``fork``: its worker threads do not
exist in the child, but the pool's state says they do, so the child's first
parallel region waits for them forever.  Whoever started the parent's pool --
the runtime or the user's own torch code, which the runtime cannot see -- a
child forked while torch is imported sets torch to one thread.  The hook is
registered when ``np2torch.runtime`` is imported, before any helper runs, so it
also covers torch imported before or without the runtime.  It also gives the
child fresh locks and forgets CUDA (:meth:`._state.Process.after_fork_in_child`).
"""

from __future__ import annotations

import os
import sys

from ._state import PROCESS


def install() -> None:
    """Register the after-fork hook once per process."""
    if hasattr(os, "register_at_fork") and not PROCESS.fork_hook:
        os.register_at_fork(after_in_child=_after_fork_in_child)
        PROCESS.fork_hook = True


def in_forked_child() -> bool:
    """Whether this process was forked from one with torch imported (its torch runs on one thread)."""
    return PROCESS.forked_child


def _after_fork_in_child() -> None:
    PROCESS.after_fork_in_child()
    torch = sys.modules.get("torch")
    if torch is None:
        return
    PROCESS.forked_child = True
    setter = getattr(torch, "set_num_threads", None)
    if setter is not None:
        setter(1)
