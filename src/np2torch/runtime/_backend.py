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

Threads: a route's work is cut into aligned blocks (a reduction's fixed by the shape) and run by
:mod:`._paths.blocks`, each block on one torch thread, so the thread count never
changes a value.

While torch is imported: :func:`load_torch` never hands out a torch that has not
finished importing, and never waits for an import.  A call made while the
runtime's ``import torch`` runs, in the importing thread (a signal handler's, a
``__del__``'s, a trace function's: it would get the half-initialized module,
``AttributeError: partially initialized module 'torch'``) or in any other, takes
the original, as does any call while the program's own ``import torch`` is under
way.  No lock of the runtime's is held over the import: a thread inside its own
import of a module torch's import needs (``typing_extensions``) that waited for
one hung both threads.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
import warnings
from typing import TYPE_CHECKING, Callable, Dict, Iterator, Mapping, TypeVar

import numpy as np

from ._fork import being_imported, in_forked_child
from ._state import PROCESS

if TYPE_CHECKING:
    import torch

T = TypeVar("T")

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


_importing = threading.Lock()
"""Held by the thread running the runtime's ``import torch`` (:func:`load_torch`) and only ever taken without waiting:
a call that finds it held takes the original."""
_importer: int | None = None
"""The thread running the runtime's ``import torch`` (:func:`load_torch`), while it runs."""


def torch_ready() -> bool:
    """Whether torch costs nothing more to use: the runtime loaded it, or someone else imported it
    (and the runtime has not found it unusable).  Not while an import of it is under way: the runtime's,
    in any thread, or the program's own."""
    if PROCESS.torch_tried:
        return PROCESS.torch_found
    if "torch" not in sys.modules or _importer is not None:
        return False
    return not being_imported(sys.modules["torch"])


def settled(check: Callable[[], T]) -> T | None:
    """``check()``, or None where an import of torch was under way when it began or began since: the answer of a
    check of the installed original is then not one about the original.

    SciPy's logsumexp reads ``sys.modules["torch"].Tensor`` (``array_api_compat``'s ``is_torch_array``), which a
    half-initialized torch lacks: it raises there, in every thread, and a check would find it wrong for good."""
    before = sys.modules.get("torch")
    if before is not None and being_imported(before):
        return None
    found = check()
    return found if sys.modules.get("torch") is before else None


def torch_unavailable(asking: bool = False) -> bool:
    """Whether torch is known not to be usable here: not installed, or this process was forked while
    another thread was importing it (:mod:`._fork`).  ``asking`` (:func:`which`, which imports nothing): also where
    it was not tried yet and is not installed (:func:`torch_installed`), as the call that tries it will find."""
    if PROCESS.torch_tried:
        return not PROCESS.torch_found
    return asking and not torch_installed()


_INSTALLED: list[bool] = []
""":func:`torch_installed`'s answer, once asked."""


def torch_installed() -> bool:
    """Whether ``import torch`` can find torch (``importlib.util.find_spec``: nothing is imported), asked once."""
    if not _INSTALLED:
        import importlib.util

        try:
            _INSTALLED.append("torch" in sys.modules or importlib.util.find_spec("torch") is not None)
        except (ImportError, ValueError):
            _INSTALLED.append(False)
    return _INSTALLED[0]


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
    """A forked child: no call of the parent's threads is in flight here, and the locks start free; an import of
    torch a parent's thread had begun is not under way here (:mod:`._fork` says whether it left torch unusable)."""
    global _WORK, _importing, _importer
    closing = _WORK.closing
    _WORK = _Work()
    _WORK.closing = closing
    _importing = threading.Lock()
    _importer = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def load_torch() -> bool:
    """Import torch on first use, with the runtime's settings; whether it is usable now (else the original serves
    the call: torch is not installed, or an import of it is under way, the runtime's or the program's).

    The first call imports it; a call made while that import runs, in any thread, takes the original instead of
    waiting for it (see the module's docstring), and the import is counted once in :attr:`._state.Process.one_time`.
    """
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
    elif _importer is None and being_imported(sys.modules["torch"]):
        return False  # inside the program's own `import torch`: the half-initialized module
    if not _importing.acquire(blocking=False):
        return False  # the runtime's import is under way, in this thread (a signal handler's call) or another
    try:
        if PROCESS.torch_tried:  # loaded since this call looked
            return PROCESS.torch_found
        _importer = threading.get_ident()
        start = time.perf_counter()
        PROCESS.torch_found = _import_torch()
        PROCESS.torch_tried = True
        PROCESS.one_time.append((start, time.perf_counter() - start))
        return PROCESS.torch_found
    finally:
        _importer = None
        _importing.release()


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
        if not load_torch():
            return False  # not kept: torch may load once an import of it under way ends
        import torch

        bad_fork = getattr(torch.cuda, "_is_in_bad_fork", lambda: False)
        cached = PROCESS.cuda = bool(torch.cuda.is_available()) and not bad_fork()
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
