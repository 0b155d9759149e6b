"""torch, loaded lazily and safely, and the NumPy <-> torch dtype and memory bridge.

``import torch`` costs seconds and ~170 MB, so it happens on the first call that
takes the torch path, never at import.  Loading also fixes three process-wide
hazards measured on the issue's VM:

* libgomp's default spin-wait made every parallel op cost ~12 ms under CPU
  contention: ``OMP_WAIT_POLICY=PASSIVE`` is set *before* torch loads, unless
  the user set it (or torch was already imported, when it is too late);
* GNU OpenMP's thread pool does not survive ``fork``: a child's first parallel
  op hangs.  Whoever ran the parent's first parallel op (the runtime or the
  user's own torch code), a child forked while torch is imported sets torch
  to one thread (``os.register_at_fork``, registered when the runtime is
  imported, so it also covers torch imported before or without the runtime);
* ``torch.from_numpy`` warns once per process on a read-only array (a tensor
  cannot be marked read-only; we never write to inputs), so that one warning is
  consumed at load time instead of surfacing at a user's first read-only call.

Threads: a route runs on one thread (``cpu1``) or on torch's pool shrunk to the
cores no other process is using right now (:func:`free_cores`, from the
kernel's count of runnable tasks); the thread count never changes a value
(torch's elementwise kernels give the same bits on any number of threads).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import warnings
from typing import Any, Iterator, Mapping

import numpy as np

# NumPy dtype -> torch dtype attribute, for the dtypes where both sides use the
# same IEEE format (so a from_numpy view reinterprets nothing).  longdouble,
# object, strings and datetimes have no torch counterpart.
TORCH_DTYPE_NAMES: Mapping[np.dtype, str] = {
    np.dtype(np.float16): "float16",
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
    np.dtype(np.complex64): "complex64",
    np.dtype(np.complex128): "complex128",
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "int8",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
}


class _TorchState:
    lock = threading.Lock()
    tried = False
    module: Any = None
    cuda: bool | None = None
    parallel_used = False
    fork_hook = False
    forked_child = False
    """This process was forked from one where torch was imported: one thread only."""


def torch_if_loaded() -> Any:
    """torch if the runtime loaded it, else None (never imports)."""
    return _TorchState.module


def load_torch() -> Any:
    """torch, imported on first use; None when it is not installed (then NumPy serves everything)."""
    if _TorchState.tried:
        return _TorchState.module
    with _TorchState.lock:
        if not _TorchState.tried:
            _TorchState.module = _import_torch()
            _TorchState.tried = True
    return _TorchState.module


def _import_torch() -> Any:
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch
    except ImportError:
        return None
    _consume_readonly_warning(torch)
    if _TorchState.forked_child:
        torch.set_num_threads(1)
    return torch


def install_fork_hook() -> None:
    """Protect forked children from the parent's OpenMP pool (called when the runtime is imported)."""
    if hasattr(os, "register_at_fork") and not _TorchState.fork_hook:
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _TorchState.fork_hook = True


def _consume_readonly_warning(torch: Any) -> None:
    # torch/csrc/utils/tensor_numpy.cpp: TORCH_WARN_ONCE("The given NumPy array is
    # not writable ...").  Done once, while the import lock-step above runs.
    probe = np.zeros(1)
    probe.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.from_numpy(probe)


def note_parallel_use() -> None:
    """Record that this process ran a (possibly) multithreaded torch CPU op."""
    _TorchState.parallel_used = True


def _after_fork_in_child() -> None:
    # GNU OpenMP's worker threads do not exist in the child, but its pool state
    # says they do: the first parallel region would wait for them forever.  The
    # parent's pool may have been started by the user's own torch code, which
    # the runtime cannot see: any parent with torch imported counts.
    _TorchState.cuda = None  # CUDA cannot be re-initialized in a forked child
    torch = sys.modules.get("torch")
    if torch is None and _TorchState.module is None:
        return
    _TorchState.forked_child = True
    _TorchState.parallel_used = False
    setter = getattr(torch, "set_num_threads", None)
    if setter is not None:
        setter(1)


def free_cores(threads: int) -> int:
    """How many of ``threads`` pool threads can run now without waiting for a time slice.

    A parallel op finishes when its slowest thread does; a thread placed on a
    core another process keeps busy waits for a time slice (milliseconds),
    which on a shared machine made a 66 us call take 7 ms.  Linux's
    ``/proc/loadavg`` counts the runnable tasks (this thread among them);
    elsewhere the pool is used whole.  Cached for :data:`_LOAD_TTL` seconds.
    """
    now = time.monotonic()
    if now - _Load.when > _LOAD_TTL:
        _Load.busy = _busy_elsewhere()
        _Load.when = now
    return max(1, min(threads, _Load.cores - _Load.busy))


class _Load:
    when = -1.0
    busy = 0
    cores = 0


_LOAD_TTL = 0.05


def _busy_elsewhere() -> int:
    if not _Load.cores:
        try:
            _Load.cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            _Load.cores = os.cpu_count() or 1
    try:
        with open("/proc/loadavg", "rb") as handle:
            running = int(handle.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - 1)


@contextlib.contextmanager
def threads(count: int, adapt: bool = True) -> Iterator[None]:
    """Run the body on ``count`` torch threads (0: the pool; with ``adapt``, shrunk to the free cores)."""
    torch = _TorchState.module
    before = torch.get_num_threads()
    if _TorchState.forked_child:
        wanted = 1
    elif count:
        wanted = count
    else:
        wanted = free_cores(before) if adapt else before
    if wanted == before:
        yield
        return
    torch.set_num_threads(wanted)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def cuda_available() -> bool:
    """Whether torch (loading it if needed) can use a CUDA device in this process; cached."""
    cached = _TorchState.cuda
    if cached is None:
        torch = load_torch()
        cached = False
        if torch is not None:
            bad_fork = getattr(torch.cuda, "_is_in_bad_fork", lambda: False)
            cached = bool(torch.cuda.is_available()) and not bad_fork()
        _TorchState.cuda = cached
    return cached


def torch_dtype(dtype: np.dtype) -> Any:
    """The torch dtype with the same memory format as ``dtype`` (KeyError if none)."""
    return getattr(load_torch(), TORCH_DTYPE_NAMES[np.dtype(dtype)])


def can_view(a: np.ndarray) -> bool:
    """Whether ``torch.from_numpy(a)`` shares ``a``'s memory exactly.

    torch rejects negative strides and strides that are not a multiple of the
    item size, reads native byte order only, and its vectorized kernels assume
    aligned data.
    """
    if a.dtype not in TORCH_DTYPE_NAMES or not a.flags.aligned:
        return False
    itemsize = a.itemsize
    for stride in a.strides:
        if stride < 0 or stride % itemsize:
            return False
    return True


def tensor_view(a: np.ndarray) -> Any:
    """A CPU tensor sharing ``a``'s memory; requires :func:`can_view`."""
    return _TorchState.module.from_numpy(a)
