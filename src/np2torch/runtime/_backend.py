"""torch, loaded lazily and safely, and the NumPy <-> torch dtype and memory bridge.

``import torch`` costs seconds and ~170 MB, so it happens on the first call that
takes the torch path, never at import.  Loading also fixes three process-wide
hazards measured on the issue's VM:

* libgomp's default spin-wait made every parallel op cost ~12 ms under CPU
  contention: ``OMP_WAIT_POLICY=PASSIVE`` is set *before* torch loads, unless
  the user set it (or torch was already imported, when it is too late);
* GNU OpenMP's thread pool does not survive ``fork``: a child's first parallel
  op hangs.  After our first parallel op, a forked child sets torch to one
  thread (``os.register_at_fork``);
* ``torch.from_numpy`` warns once per process on a read-only array (a tensor
  cannot be marked read-only; we never write to inputs), so that one warning is
  consumed at load time instead of surfacing at a user's first read-only call.

Internal API used by sibling modules (keep names stable): ``load_torch``,
``torch_if_loaded``, ``cuda_available``, ``note_parallel_use``,
``TORCH_DTYPE_NAMES``, ``torch_dtype``, ``can_view``, ``tensor_view``.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from typing import Any, Mapping, Optional

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
    cuda: Optional[bool] = None
    parallel_used = False
    fork_hook = False


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
    if hasattr(os, "register_at_fork") and not _TorchState.fork_hook:
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _TorchState.fork_hook = True
    return torch


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
    # says they do: the first parallel region would wait for them forever.
    torch = _TorchState.module
    _TorchState.cuda = None  # CUDA cannot be re-initialized in a forked child
    if torch is not None and _TorchState.parallel_used:
        torch.set_num_threads(1)
        _TorchState.parallel_used = False


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
