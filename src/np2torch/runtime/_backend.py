"""torch, loaded lazily and safely, and the NumPy <-> torch dtype and memory bridge.

``import torch`` costs seconds and ~170 MB, so it happens on the first call that
takes the torch path (:func:`load_torch`), never at import; the runtime's other
modules import torch inside functions that run only after :func:`load_torch`
said it is there, and name its types through ``TYPE_CHECKING`` imports.  Loading
also fixes three process-wide hazards measured on the 2-core reference VM:

* libgomp's default spin-wait made every parallel op cost ~12 ms under CPU
  contention: ``OMP_WAIT_POLICY=PASSIVE`` is set *before* torch loads, unless
  the user set it (or torch was already imported, when it is too late);
* GNU OpenMP's thread pool does not survive ``fork``: :mod:`._fork` sets a
  child's torch to one thread (registered when the package is imported);
* ``torch.from_numpy`` warns once per process on a read-only array (a tensor
  cannot be marked read-only; we never write to inputs), so that one warning is
  consumed at load time instead of surfacing at a user's first read-only call.

Threads: a route's work is cut into blocks fixed by the shape and run by
:mod:`._parallel`, each block on one torch thread, so the thread count never
changes a value.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from typing import TYPE_CHECKING, Mapping

import numpy as np

from ._fork import in_forked_child
from ._state import PROCESS

if TYPE_CHECKING:
    import torch

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


def torch_ready() -> bool:
    """Whether torch costs nothing more to use: the runtime loaded it, or someone else imported it
    (and the runtime has not found it unusable)."""
    if PROCESS.torch_tried:
        return PROCESS.torch_found
    return "torch" in sys.modules


def torch_unavailable() -> bool:
    """Whether torch is known not to be usable here: not installed, or this process was forked while
    another thread was importing it (:mod:`._fork`)."""
    return PROCESS.torch_tried and not PROCESS.torch_found


def load_torch() -> bool:
    """Import torch on first use, with the runtime's settings; whether it is installed (else NumPy serves everything)."""
    if PROCESS.torch_tried:
        return PROCESS.torch_found
    if "torch" not in sys.modules and not threading.main_thread().is_alive():
        # The interpreter is shutting down (an atexit handler, a __del__, a thread still running after
        # the main one ended): importing torch now fails ("can't register atexit after shutdown", from
        # its concurrent.futures import), where the original would just run.  NumPy serves the call.
        return False
    with PROCESS.loading:
        if not PROCESS.torch_tried:
            start = time.perf_counter()
            PROCESS.torch_found = _import_torch()
            PROCESS.torch_tried = True
            PROCESS.one_time.append((start, time.perf_counter() - start))
    return PROCESS.torch_found


def _import_torch() -> bool:
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch
    except ImportError:
        return False
    except RuntimeError:  # after threading's shutdown (an atexit handler): "can't register atexit after shutdown"
        return False
    _consume_readonly_warning()
    if in_forked_child():
        torch.set_num_threads(1)
    return True


def _consume_readonly_warning() -> None:
    # torch/csrc/utils/tensor_numpy.cpp: TORCH_WARN_ONCE("The given NumPy array is
    # not writable ...").  Done once, while the import lock above is held.
    import torch

    probe = np.zeros(1)
    probe.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.from_numpy(probe)


def cuda_available() -> bool:
    """Whether torch (loading it if needed) can use a CUDA device in this process; cached."""
    cached = PROCESS.cuda
    if cached is None:
        cached = False
        if load_torch():
            import torch

            bad_fork = getattr(torch.cuda, "_is_in_bad_fork", lambda: False)
            cached = bool(torch.cuda.is_available()) and not bad_fork()
        PROCESS.cuda = cached
    return cached


def torch_dtype(dtype: np.dtype) -> torch.dtype:
    """The torch dtype with the same memory format as ``dtype`` (KeyError if none); torch must be loaded."""
    import torch

    found: torch.dtype = getattr(torch, TORCH_DTYPE_NAMES[np.dtype(dtype)])
    return found


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


def tensor_view(a: np.ndarray) -> torch.Tensor:
    """A CPU tensor sharing ``a``'s memory; requires :func:`can_view` and torch loaded."""
    import torch

    return torch.from_numpy(a)
