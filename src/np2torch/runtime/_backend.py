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
:mod:`._paths.blocks`, each block on one torch thread, so the thread count never
changes a value.

Re-entrant calls: a helper called in the thread that is importing torch (from a
signal handler, a ``__del__``, a trace function, while the import runs there)
would re-enter :data:`._state.Process.loading` (an ``RLock``) and get the
half-initialized module (``AttributeError: partially initialized module
'torch'``).  Such a call takes the original, as does any call while the
program's own ``import torch`` is under way: :func:`load_torch` never hands out
a torch that has not finished importing.  Other threads' calls during the
runtime's own import wait for it, as before.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
import warnings
from typing import TYPE_CHECKING, Dict, Iterator, Mapping

import numpy as np

from ._fork import being_imported, in_forked_child
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


_importer: int | None = None
"""The thread running the runtime's ``import torch`` (:func:`load_torch`), while it runs."""


def torch_ready() -> bool:
    """Whether torch costs nothing more to use: the runtime loaded it, or someone else imported it
    (and the runtime has not found it unusable).  Not while its import is under way in this thread, or
    the program's own import of it is under way (the runtime's own, in another thread, is waited for)."""
    if PROCESS.torch_tried:
        return PROCESS.torch_found
    if "torch" not in sys.modules:
        return False
    importer = _importer
    if importer is not None:
        return importer != threading.get_ident()
    return not being_imported(sys.modules["torch"])


def torch_unavailable() -> bool:
    """Whether torch is known not to be usable here: not installed, or this process was forked while
    another thread was importing it (:mod:`._fork`)."""
    return PROCESS.torch_tried and not PROCESS.torch_found


def importing_here() -> bool:
    """Whether this thread is inside the runtime's ``import torch`` (a signal handler's, a ``__del__``'s or a trace
    function's call made there): torch is half initialized in ``sys.modules``."""
    importer = _importer
    return importer is not None and importer == threading.get_ident()


@contextlib.contextmanager
def torch_out_of_sight() -> Iterator[None]:
    """``sys.modules`` without the half-initialized torch while this thread's call inside the runtime's import runs
    the original (:func:`importing_here`); elsewhere nothing changes.

    SciPy's array-API dispatch reads ``sys.modules["torch"].Tensor`` (``array_api_compat``'s ``is_torch_array``),
    which a half-initialized torch does not have yet: SciPy's ``logsumexp`` called there raised AttributeError.
    Without the module it finds no torch, as before the runtime began importing it.  Another thread's ``import
    torch`` meanwhile waits for the import lock this thread holds, and finds the module put back.
    """
    if not importing_here():
        yield
        return
    module = sys.modules.pop("torch", None)
    try:
        yield
    finally:
        if module is not None:
            sys.modules["torch"] = module


class _Work:
    """The helpers' torch work in flight, and whether the interpreter is closing (see :func:`begin_torch_work`)."""

    def __init__(self) -> None:
        self.changed = threading.Condition(threading.Lock())
        self.in_flight: Dict[int, int] = {}
        """Thread -> its calls computing on torch (more than one: a call made inside another, a signal handler's)."""
        self.closing = False


_WORK = _Work()


def begin_torch_work() -> bool:
    """Whether a helper's call may compute on torch now; if so it is in flight until :func:`end_torch_work`.

    Not once the interpreter is closing (:func:`_close`, the ``atexit`` hook registered when the runtime loads
    torch).  A daemon thread still inside a torch op when the interpreter finalizes is ended by Python (before
    3.14, ``pthread_exit``) as the op takes the GIL back, and the unwinding crosses torch's C++ (pybind11's
    ``gil_scoped_release``, whose destructor is ``noexcept``): "terminate called without an active exception",
    SIGABRT.  NumPy's and SciPy's loops take the GIL back in C, which unwinds quietly, so the original exits 0.
    """
    work, me = _WORK, threading.get_ident()
    with work.changed:
        if work.closing:
            return False
        work.in_flight[me] = work.in_flight.get(me, 0) + 1
    return True


def end_torch_work() -> None:
    """The end of a call's torch work begun by :func:`begin_torch_work`."""
    work, me = _WORK, threading.get_ident()
    with work.changed:
        depth = work.in_flight.pop(me, 1) - 1
        if depth:
            work.in_flight[me] = depth
        work.changed.notify_all()


def _close() -> None:
    """At exit (``atexit``, before the interpreter finalizes): new calls take the original, and the calls already
    on torch finish (a daemon thread's among them: then none is inside a torch op when finalization ends it).

    Not this thread's own count: it runs no call now, and a signal's exception (KeyboardInterrupt), raised only
    in the main thread, may have left it one too high between :func:`begin_torch_work` and its ``try``."""
    work, me = _WORK, threading.get_ident()
    with work.changed:
        work.closing = True
        while any(thread != me for thread in work.in_flight):
            work.changed.wait()


def _after_fork_in_child() -> None:
    """A forked child: no call of the parent's threads is in flight here, and the lock starts free."""
    global _WORK
    closing = _WORK.closing
    _WORK = _Work()
    _WORK.closing = closing


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def load_torch() -> bool:
    """Import torch on first use, with the runtime's settings; whether it is usable now (else the original serves
    the call: torch is not installed, or its import is under way in this thread or by the program)."""
    global _importer
    if PROCESS.torch_tried:
        return PROCESS.torch_found
    if _WORK.closing:  # at exit (an atexit handler, a daemon thread): the original, torch or not
        return False
    if "torch" not in sys.modules:
        if not threading.main_thread().is_alive():
            # The interpreter is shutting down (an atexit handler, a __del__, a thread still running after
            # the main one ended): importing torch now fails ("can't register atexit after shutdown", from
            # its concurrent.futures import), where the original would just run.  NumPy serves the call.
            return False
    elif importing_here() or (_importer is None and being_imported(sys.modules["torch"])):
        # A call made inside the import in this thread (a signal handler, a __del__, a trace function) would
        # get the half-initialized module; so would one inside the program's own `import torch`.
        return False
    with PROCESS.loading:
        if not PROCESS.torch_tried and _importer is None:
            _importer = threading.get_ident()
            try:
                start = time.perf_counter()
                PROCESS.torch_found = _import_torch()
                PROCESS.torch_tried = True
                PROCESS.one_time.append((start, time.perf_counter() - start))
            finally:
                _importer = None
    return PROCESS.torch_tried and PROCESS.torch_found


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
    atexit.register(_close)  # after torch's own hooks: they run after it (last in, first out)
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
