"""One thread that analyses documents, whose running analysis can be stopped once its version is stale.

An analysis of a long file takes seconds, and the edits that make it worthless
come meanwhile.  A thread cannot be killed, but CPython can raise an exception
in it (``PyThreadState_SetAsyncExc``, what debuggers and ``func_timeout`` use):
:meth:`Worker.interrupt` raises :class:`Superseded` inside the running job at its
next bytecode, so the newest version is analysed at once instead of after the
stale one.  The linter's own state is memo tables written in single statements
(``lru_cache``, ``dict`` stores), so an analysis stopped anywhere leaves nothing
half-written.  Each job is interrupted at most once, and only while it runs;
whatever happens, the worker's loop goes on.  Elsewhere than CPython (no
``ctypes.pythonapi``) jobs run to their end.
"""

from __future__ import annotations

import ctypes
import queue
import sys
import threading
from concurrent.futures import Future
from typing import Callable, Generic, Hashable, TypeVar

T = TypeVar("T")


class Superseded(Exception):
    """The job's input changed while it ran: its result would be thrown away."""


def _raise_in(thread: int, exception: type[BaseException] | None) -> None:
    """Raise ``exception`` in ``thread`` at its next bytecode (``None``: take back one not raised yet)."""
    set_async = ctypes.pythonapi.PyThreadState_SetAsyncExc
    set_async(ctypes.c_ulong(thread), ctypes.py_object(exception) if exception else None)


CAN_INTERRUPT = sys.implementation.name == "cpython"


class Worker(Generic[T]):
    """Runs jobs one at a time, in order, in its own thread; each job has a tag to interrupt it by."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[Hashable, Callable[[], T], Future[T]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running: Hashable | None = None
        self._interrupted = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()
        self.interruptions = 0

    def submit(self, tag: Hashable, job: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self._jobs.put((tag, job, future))
        return future

    def interrupt(self, wanted: Callable[[Hashable], bool]) -> bool:
        """Stop the running job if ``wanted(its tag)``: its future raises :class:`Superseded`."""
        with self._lock:
            if not CAN_INTERRUPT or self._running is None or self._interrupted or not wanted(self._running):
                return False
            assert self._thread.ident is not None
            _raise_in(self._thread.ident, Superseded)
            self._interrupted = True
            self.interruptions += 1
            return True

    def stop(self) -> None:
        self._jobs.put(None)

    def _loop(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            self._run(*item)

    def _run(self, tag: Hashable, job: Callable[[], T], future: Future[T]) -> None:
        if not future.set_running_or_notify_cancel():
            return
        result: tuple[T] | None = None
        error: BaseException | None = None
        try:
            try:
                with self._lock:
                    self._running, self._interrupted = tag, False
                result = (job(),)
            finally:
                self._done()
        except BaseException as exc:  # Superseded, raised in the job or as it ended; or the job's own error
            error = exc
        self._done()  # again, in case Superseded cut the first short: nothing is pending after this
        if result is not None and error is None:
            future.set_result(result[0])
        else:
            future.set_exception(error or Superseded())

    def _done(self) -> None:
        with self._lock:
            if self._running is not None and self._interrupted and CAN_INTERRUPT:
                assert self._thread.ident is not None
                _raise_in(self._thread.ident, None)  # raised at most once: take it back if not delivered
            self._running = None
