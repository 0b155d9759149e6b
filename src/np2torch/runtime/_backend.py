"""torch, loaded lazily and safely, and the NumPy <-> torch dtype and memory bridge.

``import torch`` costs seconds and ~170 MB, so it happens on the first call that
takes the torch path, never at import.  Loading also fixes three process-wide
hazards measured on the 2-core reference VM:

* libgomp's default spin-wait made every parallel op cost ~12 ms under CPU
  contention: ``OMP_WAIT_POLICY=PASSIVE`` is set *before* torch loads, unless
  the user set it (or torch was already imported, when it is too late);
* GNU OpenMP's thread pool does not survive ``fork``: :mod:`._fork` sets a
  child's torch to one thread (registered when the package is imported);
* ``torch.from_numpy`` warns once per process on a read-only array (a tensor
  cannot be marked read-only; we never write to inputs), so that one warning is
  consumed at load time instead of surfacing at a user's first read-only call.

Threads: a route runs on one thread (``cpu1``) or on torch's pool, shrunk to the
cores other processes left free over the last window (:func:`free_cores`, from
``/proc/stat``'s busy time less this process's own) only for the pairs the
profile measured thread-invariant, so the thread count never changes a value.
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

from ._fork import in_forked_child

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
    if in_forked_child():
        torch.set_num_threads(1)
    return torch


def _consume_readonly_warning(torch: Any) -> None:
    # torch/csrc/utils/tensor_numpy.cpp: TORCH_WARN_ONCE("The given NumPy array is
    # not writable ...").  Done once, while the import lock-step above runs.
    probe = np.zeros(1)
    probe.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.from_numpy(probe)


def _forget_cuda_in_child() -> None:
    _TorchState.cuda = None  # CUDA cannot be re-initialized in a forked child


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_cuda_in_child)


def free_cores(threads: int) -> int:
    """How many of ``threads`` pool threads can run now without waiting for a time slice.

    A parallel op finishes when its slowest thread does; a thread placed on a
    core another process keeps busy waits for a time slice (milliseconds),
    which on a shared machine made a 66 us call take 7 ms.  What other
    processes use is measured, not guessed from one instant: the machine's
    busy time over the last window (Linux's ``/proc/stat``) less this
    process's own CPU time (``os.times``), resampled at most every
    :data:`_LOAD_WINDOW` seconds; a transient task does not halve the pool, a
    process that keeps a core busy takes that core out of it.  Elsewhere, and
    before the first window, the pool is used whole.
    """
    now = time.monotonic()
    if now - _Load.when >= _LOAD_WINDOW:
        _sample_load(now)
    return max(1, min(threads, _Load.cores - _Load.busy))


class _Load:
    when = -1.0
    busy = 0
    """Cores of this process's affinity that other processes kept busy over the last window."""
    cores = 0
    stat: tuple[int, int] | None = None
    own = 0.0


_LOAD_WINDOW = 0.1
_NOISE_CORES = 0.3
"""Busy time of others below this many cores (kernel threads, short jobs) leaves the pool whole."""


def _sample_load(now: float) -> None:
    if not _Load.cores:
        try:
            _Load.cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            _Load.cores = os.cpu_count() or 1
    stat = _cpu_jiffies()
    own = sum(os.times()[:2])
    previous, before, then = _Load.stat, _Load.own, _Load.when
    _Load.stat, _Load.own, _Load.when = stat, own, now
    if stat is None or previous is None or stat[1] <= previous[1] or now <= then:
        return
    machine = os.cpu_count() or _Load.cores
    busy_cores = (stat[0] - previous[0]) / (stat[1] - previous[1]) * machine
    others = busy_cores - (own - before) / (now - then)
    # Others spread over the whole machine; the share that lands on this process's cores.
    others *= _Load.cores / machine
    _Load.busy = max(0, int(others - _NOISE_CORES + 0.5))


def _cpu_jiffies() -> tuple[int, int] | None:
    """``(busy, total)`` clock ticks of all CPUs since boot (``/proc/stat``'s first line), or None."""
    try:
        with open("/proc/stat", "rb") as handle:
            fields = [int(v) for v in handle.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    if len(fields) < 5:
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields)
    return total - idle, total


@contextlib.contextmanager
def threads(count: int, adapt: bool = True) -> Iterator[None]:
    """Run the body on ``count`` torch threads (0: the pool; with ``adapt``, shrunk to the free cores)."""
    torch = _TorchState.module
    before = torch.get_num_threads()
    if in_forked_child():
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
