"""Work split into aligned blocks, run on as many threads as are free: the same bits on any count.

torch's own parallelism splits an op between its threads at boundaries that
move with the thread count (``at::parallel_for`` cuts ``n`` elements into
``ceil(n / threads)``), and where a boundary falls decides which elements
torch's vectorized loop computes and which its scalar tail does, and in which
order a reduction adds its partial sums.  So torch's bits depend on
``OMP_NUM_THREADS``, ``torch.set_num_threads`` and, where the pool shrank for
the load, on the load.  NumPy's do not, and neither do numexpr's (it splits
work the same way) nor MKL's under Conditional Numerical Reproducibility.

Here the runtime splits the work itself, as numexpr does: a call is cut into
blocks whose boundaries are aligned, so every block but the last is a whole
number of any vector width -- a reduction's a function of the call's shape
alone (:func:`block_elements`), an elementwise op's cut for the threads it may
use (:func:`elementwise_bounds`: its elements' bits do not depend on where
aligned boundaries fall) --, each block is computed by torch on *one* thread
(a worker thread of this module's pool runs with ``torch.set_num_threads(1)``,
which OpenMP keeps per thread), and partial results are combined by the caller
in block order.  What the machine's load or the thread settings change is how
many blocks run at once, never which bits come out.  torch releases the GIL
inside each op, so the blocks of one call run in parallel.  An elementwise op
(:func:`elementwise`) that runs on one thread is one block: its results do not
depend on where aligned boundaries fall, only a reduction's do.

Where the backend's thread setting turns out to be process-wide (checked once,
in the first worker: a build whose ``set_num_threads`` is not per thread),
every block runs in the calling thread on one torch thread: the same bits,
without the parallelism.

The same workers run the original's own loops (:mod:`.cores`, ``torch=False``):
then nothing here imports or touches torch, and the limit is this process's
cores.  A call made while the same thread is already handing out or computing
blocks (a signal handler, a ``__del__``, a trace function that calls a helper)
runs its blocks serially in that thread: it never waits on a lock or a worker
the interrupted call holds.
"""

from __future__ import annotations

import _thread
import collections
import contextlib
import functools
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Hashable, Iterator, List, Sequence, TypeVar

from .._fork import in_forked_child
from .._load import free_cores, process_cores
from .._state import PROCESS

if TYPE_CHECKING:
    T = TypeVar("T")

ALIGN = 1 << 10
"""Block boundaries fall on multiples of this many elements: past twice the widest vector (AVX-512's 32 half floats)."""
MIN_BLOCK = 1 << 16
"""The smallest block: tens of microseconds of work (a float32 exp's ~20 us) against ~5 us of Python around it."""
MAX_BLOCK = 1 << 20
"""The largest block: a call of 1e8 elements is ~100 blocks, so threads finish together."""
BLOCKS_PER_CALL = 32
"""A call is cut into about this many blocks while they stay between the two sizes above."""
SHARED_BLOCK = 1 << 12
"""The smallest block of an elementwise call cut for its threads (:func:`elementwise_bounds`):
SciPy's float64 ``erf`` over this many elements is ~30 us of work on the 2-core reference VM, a ufunc call on a
slice of it ~1-2 us of Python."""


def block_elements(n: int, smallest: int = MIN_BLOCK, largest: int = MAX_BLOCK) -> int:
    """The block size for a call over ``n`` elements: a power of two between ``smallest`` and ``largest``
    (about :data:`BLOCKS_PER_CALL` blocks), from ``n`` alone."""
    size = smallest
    while size < largest and size * BLOCKS_PER_CALL < n:
        size *= 2
    return size


def call_blocks(n: int, smallest: int = MIN_BLOCK, largest: int = MAX_BLOCK) -> int:
    """How many blocks of :func:`block_elements` cover a call over ``n`` elements: at most this many threads
    work on it at once, however many the machine has."""
    return max(1, -(-n // block_elements(n, smallest, largest)))


def elementwise_bounds(n: int, threads: int) -> List[tuple[int, int]]:
    """The blocks of an elementwise call over ``n`` elements that may run on ``threads`` threads
    (:func:`elementwise`): as many as :func:`block_elements` cuts, or where those are fewer than the threads, as
    many as threads, none much below :data:`SHARED_BLOCK` elements; each a multiple of :data:`ALIGN` elements
    long and all alike but the last, which takes the rest.

    An elementwise loop's bits do not depend on where aligned boundaries fall (:func:`elementwise`), so a call
    may be cut for the threads at hand; its time is its largest block's.  Cut by :func:`block_elements` alone,
    120,000 elements on two threads were 65,536 and 54,464, a call of 65,536 or less was one block on any
    machine, and one of 262,144 four blocks on a 16-core one."""
    count = elementwise_blocks(n, threads)
    size = n // count // ALIGN * ALIGN
    return [(i * size, (i + 1) * size if i < count - 1 else n) for i in range(count)]


def elementwise_blocks(n: int, threads: int) -> int:
    """How many blocks :func:`elementwise_bounds` cuts a call over ``n`` elements on ``threads`` threads into."""
    count = -(-n // block_elements(n))
    if threads > 1 and n > SHARED_BLOCK and count < threads:
        count = min(threads, -(-n // SHARED_BLOCK))
    return max(1, min(count, n // ALIGN))


_CUTS: Dict[str, Callable[[int, str], int]] = {}


def register_cut(name: str, cut: Callable[[int, str], int]) -> None:
    """Say how torch's pool cuts a call of helper ``name`` over ``n`` elements of shape class ``klass`` into
    blocks (``cut(n, klass)``: how many), where that is not :func:`elementwise_blocks`: a reduction's module, as
    it is imported (before any of its calls is decided)."""
    _CUTS[name] = cut


def pool_blocks(name: str, n: int, threads: int, torch: bool, klass: str = "") -> int:
    """How many blocks a call of helper ``name`` over ``n`` elements (of shape class ``klass``) is cut into on
    ``threads`` threads by torch's pool (``torch``) or the original on every core: :func:`elementwise_blocks` for
    the elementwise and two-argument helpers, a reduction's own cut for its pool (:func:`register_cut`).  At most
    this many threads share its work: what scaling another machine's pool times to this one's cores may assume
    (:func:`.._decision.model.scaled_prior`), and past one block a call wakes a worker
    (:func:`.._decision.model.woken`)."""
    cut = _CUTS.get(name) if torch else None
    return elementwise_blocks(n, threads) if cut is None else cut(n, klass)


def bounds(n: int, size: int) -> List[tuple[int, int]]:
    """``[(start, stop), ...]`` of the blocks of ``size`` elements covering ``range(n)``."""
    return [(start, min(start + size, n)) for start in range(0, n, size)]


def thread_limit() -> int:
    """How many threads a torch call may use at most: torch's own setting (``OMP_NUM_THREADS``,
    ``torch.set_num_threads``), this process's cores, one in a forked child."""
    if in_forked_child():
        return 1
    import torch

    return max(1, min(torch.get_num_threads(), process_cores()))


def run(tasks: Sequence[Callable[[], T]], threads: int, kind: Hashable) -> List[T]:
    """Run ``tasks`` (each computes one block with torch) on up to ``threads`` threads (0: as many as
    :func:`thread_limit` allows); their results in order.  ``kind``: what the blocks compute (the torch ops and
    their dtype), whose first block in this process runs alone (:func:`_first_alone`).

    The caller's thread takes part; the others are this module's workers, each
    on one torch thread.  ``threads`` is capped by :func:`thread_limit` and by
    the cores other processes leave free (:func:`.._load.free_cores`): the load
    changes how many blocks run at once, never their results.  The first
    exception of a task is raised here once every task has stopped.
    """
    wanted = _threads_for(len(tasks), threads)
    if wanted <= 1:
        return _serially(tasks, kind)
    return _on_threads(tasks, wanted, kind)


def elementwise(n: int, work: Callable[[int, int], T], threads: int, kind: Hashable | None) -> List[T]:
    """``[work(start, stop), ...]`` over spans covering ``range(n)`` of an elementwise op, on up to ``threads``
    threads as :func:`run` runs tasks.

    Each element's result depends on nothing but the element and whether torch's vectorized loop or its
    scalar tail computes it, which the boundaries' alignment fixes (:data:`ALIGN`: every span but the last a
    whole number of vectors; the last one's tail is the array's own).  So where the spans would run on one
    thread, one span covers the array: the same bits, without an op and a finiteness check per block (~20 us
    each on a 65,536-element block); where they run on more, the spans are cut for those threads
    (:func:`elementwise_bounds`).
    ``kind``: what ``work`` computes with torch, as :func:`run` takes it; None: ``work`` runs no torch (the
    original's own loop): torch is neither imported nor set.
    """
    torch = kind is not None
    allowed = _asked(n, threads, torch)
    spans = elementwise_bounds(n, allowed)
    wanted = _on_free(min(allowed, len(spans)), torch)
    if wanted <= 1:
        whole: List[Callable[[], T]] = [functools.partial(work, 0, n)] if n else []
        return _serially(whole, kind) if torch else [task() for task in whole]
    return _on_threads([functools.partial(work, start, stop) for start, stop in spans], wanted, kind)


def original_limit() -> int:
    """How many threads the original's own loops may run on (:mod:`.cores`): this process's cores, one in a
    forked child (whose parent's workers are gone and whose pool would start anew per child)."""
    return 1 if in_forked_child() else process_cores()


LOOP_IDLE = 0.002
"""Seconds: a call the original on every core pays for in a program's loop only (not after a pause: its route's
``after_sleep``) runs on the workers where the previous call it was asked for ended at most this long ago
(:func:`single_call_serves`).  After a longer pause the workers sleep, and waking one (its core; on a virtual
machine its virtual CPU) costs more: on the 2-core reference VM (2026-11-30) 0-60 us after 1-2 ms, 120-160 us
after 5-10 ms, 250-320 us after 50 ms, where a 120,000-element ``erf`` on two threads saves ~300 us.  ``tune``
measures the wake after this long (:func:`.._decision.calibrate.measure_wake`), the cost the bands charge this
path, and after 10 ms, the cost ``after_sleep`` weighs."""


def single_call_serves(n: int, threads: int, after_sleep: bool) -> bool:
    """Whether the original's single call serves, now, a call over ``n`` elements that the profile sends to the
    original on every core (:func:`elementwise` with ``kind=None``), whose blocks would run on more than one thread:
    other processes leave it one thread, or (unless the path pays ``after_sleep`` too: the route's) its workers have
    slept for longer than :data:`LOOP_IDLE`.  The same bits in the same loop either way, without cutting the call
    into blocks or recording each block's flags; which one runs may depend on the moment (nothing else here does:
    torch's paths never change with it)."""
    allowed = _asked(n, threads, False)
    asked = min(allowed, elementwise_blocks(n, allowed))
    if asked <= 1:
        return False
    now = time.monotonic()
    if (not after_sleep and now - PROCESS.every_core_call > LOOP_IDLE) or free_cores(asked) <= 1:
        PROCESS.every_core_call = now  # (its start: a loop's next call finds it later than its end, never sooner)
        return True
    return False


def _asked(count: int, threads: int, torch: bool) -> int:
    """How many threads ``count`` blocks asked to run on ``threads`` (0: as many as allowed) may run on, the load
    aside; one when this thread is already inside a call's blocks (a re-entrant call: :data:`_INSIDE`)."""
    if count > 1 and threads != 1 and not getattr(_INSIDE, "depth", 0):
        limit = thread_limit() if torch else original_limit()
        return min(threads or limit, count, limit)
    return 1


def _threads_for(count: int, threads: int, torch: bool = True) -> int:
    """How many threads run ``count`` blocks asked to run on ``threads`` (:func:`_asked`), on the cores other
    processes leave free (:func:`_on_free`)."""
    return _on_free(_asked(count, threads, torch), torch)


def _on_free(wanted: int, torch: bool) -> int:
    """How many of ``wanted`` threads run now: those on the cores other processes leave free (all of them while
    this thread times the paths: :func:`whole_pool`), one where torch's thread setting is process-wide."""
    if wanted > 1 and not getattr(_TIMING, "on", False):
        wanted = free_cores(wanted)
    if wanted > 1 and torch and not _pool_per_thread():
        return 1
    return wanted


_TIMING = threading.local()
"""``on``: this thread times the paths (:func:`whole_pool`)."""


@contextlib.contextmanager
def whole_pool() -> Iterator[None]:
    """Within it, this thread's calls run their blocks on every thread they ask for, whatever the load: what ``tune``
    times is each path as the machine runs it when quiet.  A moment's load (a kernel thread, a subprocess that just
    ended) once left the original on every core timed on one thread, at the original's own speed, over a whole
    curve of ``erf`` on the 2-core reference VM (2026-11-30), in 2 of 7 runs of ``tune --functions erf``; ``tune``
    tells a busy machine by its own meter over each curve and measures that curve again."""
    before = getattr(_TIMING, "on", False)
    _TIMING.on = True
    try:
        yield
    finally:
        _TIMING.on = before


_INSIDE = threading.local()
"""``depth``: how many calls of this thread are handing out or computing blocks on the workers now."""


def _on_threads(tasks: Sequence[Callable[[], T]], wanted: int, kind: Hashable | None) -> List[T]:
    torch = kind is not None
    job = _Job(tasks, torch)
    _INSIDE.depth = getattr(_INSIDE, "depth", 0) + 1
    try:
        if torch and kind not in PROCESS.first_blocks:
            _first_alone(kind, functools.partial(_one_block, job))
        pool = _pool(wanted - 1)
        for worker in pool[: wanted - 1]:
            worker.give(job)
        if torch:
            with _one_torch_thread():
                job.work()
        else:
            job.work()
        job.done.acquire()
    finally:
        _INSIDE.depth -= 1
    results, error = job.finish()
    if not torch:
        PROCESS.every_core_call = time.monotonic()
    if error is not None:
        raise error
    return results  # type: ignore[return-value]


def _serially(tasks: Sequence[Callable[[], T]], kind: Hashable) -> List[T]:
    def compute() -> List[T]:
        with _one_torch_thread():
            return [task() for task in tasks]

    return compute() if kind in PROCESS.first_blocks else _first_alone(kind, compute)


def _one_block(job: _Job) -> None:
    with _one_torch_thread():
        job.work(1)


_FIRST = threading.RLock()
"""Held while the first block of a kind of torch work runs (:func:`_first_alone`); a forked child's is its own."""


def _after_fork_in_child() -> None:
    global _FIRST
    _FIRST = threading.RLock()  # a parent's thread holding it at the fork is not here to release it


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _first_alone(kind: Hashable, first: Callable[[], T]) -> T:
    """``first()``, the first block of torch work of ``kind`` in this process, computed while no other thread computes
    a first block of any kind; the kind's other blocks follow it, and a kind is one set of ops (logsumexp's passes
    are a kind each), so no op's first call meets another thread's.

    torch's float unary ops on x86 call Intel MKL's VML, which picks each function's kernel on its first call in the
    process; a thread whose first call ran meanwhile could get a low-accuracy kernel for its whole block of that
    call (pytorch/pytorch#188792, open; oneMKL 2024.2).  Here a float64 ``erf`` block came out ~12,500 ULP off (1
    run in 180 of two threads' first ``erf`` at once, the 2-core reference VM, torch 2.13; every later call gave
    the same bits).  Held
    once per kind and process, for one block; a call made inside it in the same thread (a signal handler's) runs
    on, the lock being re-entrant, and a forked child inherits what its parent computed."""
    with _FIRST:
        try:
            return first()
        finally:
            PROCESS.first_blocks.add(kind)


class _one_torch_thread:
    """The calling thread's torch on one thread for the body, and back (:func:`one_thread`)."""

    def __enter__(self) -> None:
        self.before = one_thread()

    def __exit__(self, *exc: object) -> None:
        if self.before != 1:
            set_threads(self.before)


def one_thread() -> int:
    """Set this thread's torch to one thread; returns how many it had.

    Through the OpenMP runtime torch loaded (``omp_set_num_threads``: a per-thread setting), never
    ``torch.set_num_threads``, which also writes the process-wide default that every thread copies at its
    first parallel op: a program thread whose first torch op fell while a helper ran would keep one thread for
    good.  (Without an OpenMP runtime found, ``torch.set_num_threads`` is all there is.)"""
    import torch

    before = torch.get_num_threads()  # (first use in this thread: torch's own lazy per-thread initialisation)
    if before != 1:
        set_threads(1)
    return before


def set_threads(count: int) -> None:
    """This thread's torch threads (:func:`one_thread`)."""
    omp = openmp()
    if omp is not None:
        omp.omp_set_num_threads(count)
    else:
        import torch

        torch.set_num_threads(count)


def openmp() -> Any:
    """The OpenMP runtime torch loaded (libgomp, libiomp, libomp: its ``omp_set_num_threads``), or None."""
    found = PROCESS.openmp
    if found is None:
        found = PROCESS.openmp = _find_openmp() or False
    return found or None


def _find_openmp() -> Any:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as handle:
            paths = {line.split(None, 5)[-1].strip() for line in handle if "omp" in line}
    except OSError:
        return None
    import ctypes

    for path in sorted(paths):
        name = os.path.basename(path)
        if name.startswith(("libgomp", "libiomp", "libomp")):
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    return None


class _Job:
    """One call's blocks: handed out one at a time (a thread that got a core late takes fewer).

    A worker never holds the last reference to what a call's blocks hold (its arrays, torch's views of them, their
    results): it drops its block and that block's result before counting it finished, and the caller empties the
    job once every block has finished (:meth:`finish`), while a worker that comes late may still hold the job.
    Freeing a tensor that views a NumPy array takes the GIL back inside torch's C++ (``tensor_from_numpy``'s
    deleter); a worker doing so while the interpreter finalizes is ended there by Python, and the unwinding
    through that ``noexcept`` destructor aborted the process after the program's last line had run ("terminate
    called without an active exception", status 134: 4 runs in 210 of a script that called ``erf`` on the pool and
    ended, on the 2-core reference VM).
    """

    def __init__(self, tasks: Sequence[Callable[[], object]], torch: bool) -> None:
        self.tasks = tasks
        self.torch = torch
        """The blocks run torch ops: a worker sets its own torch to one thread before its first such block."""
        self.results: List[object] = [None] * len(tasks)
        self.next = 0
        self.finished = 0
        self.lock = _thread.allocate_lock()
        self.done = _thread.allocate_lock()
        """Held until every block taken has finished and no more will be taken (a plain lock: the caller's wait and
        the last block's release are each one C call, where an ``Event`` is a Python ``Condition``)."""
        self.done.acquire()
        self.error: BaseException | None = None

    def work(self, most: int = -1) -> None:
        """Compute blocks in this thread until none is left (or ``most`` of them)."""
        while most:
            most -= 1
            with self.lock:
                if self.next >= len(self.tasks) or self.error is not None:
                    return
                index = self.next
                self.next += 1
                task = self.tasks[index]
            try:
                self.results[index] = task()  # (each block its own index)
            except BaseException as exc:
                with self.lock:
                    if self.error is None:
                        self.error = exc
            del task  # before the caller may go on: the caller's references are the last (the class's docstring)
            with self.lock:
                self.finished += 1
                # Every block taken has finished, and no more will be taken: the caller may go on.
                if self.finished == self.next and (self.next == len(self.tasks) or self.error is not None):
                    self.done.release()

    def finish(self) -> tuple[List[object], BaseException | None]:
        """The blocks' results and the first exception, taken by the caller once every block has finished; the job
        keeps nothing of them (a worker that comes late finds no block left)."""
        with self.lock:
            results, error = self.results, self.error
            self.tasks, self.results, self.error = (), [], None
        return results, error


class _Worker:
    """A daemon thread running jobs' blocks; torch's on one torch thread (set before its first torch job)."""

    def __init__(self) -> None:
        self.torch_set = False
        self.cpu = 0.0
        """CPU seconds this worker's thread has run, as of its last jobs' end (it runs nothing else): the load meter
        takes them off the machine's busy time, as this process's own work (:func:`.._load.sample`); the program's
        other threads count as load."""
        self.lock = _thread.allocate_lock()
        self.jobs: collections.deque[_Job] = collections.deque()
        self.wake = _thread.allocate_lock()
        """Released while jobs wait for this worker (``signalled``): the worker sleeps acquiring it."""
        self.wake.acquire()
        self.signalled = False
        self.thread = threading.Thread(target=self._loop, name="np2torch-block", daemon=True)
        self.thread.start()

    def give(self, job: _Job) -> None:
        with self.lock:
            self.jobs.append(job)
            if not self.signalled:
                self.signalled = True
                self.wake.release()

    def _loop(self) -> None:
        while True:
            self.wake.acquire()
            with self.lock:
                jobs = list(self.jobs)
                self.jobs.clear()
                self.signalled = False
            for job in jobs:
                if job.torch and not self.torch_set:
                    one_thread()
                    self.torch_set = True
                job.work()
            self.cpu = time.thread_time()  # (after the blocks: the clock's system call never delays one)


def _pool(count: int) -> List[_Worker]:
    """At least ``count`` workers of this process (a forked child starts with none: the parent's threads are not there)."""
    with PROCESS.lock:
        workers = PROCESS.workers
        if workers is None or workers[0] != os.getpid():
            workers = PROCESS.workers = (os.getpid(), [])
        pool = workers[1]
        while len(pool) < count:
            pool.append(_Worker())
        return pool


def _pool_per_thread() -> bool:
    """Whether a worker's one torch thread leaves the other threads' setting alone: the OpenMP runtime's per-thread
    setting where found; else ``torch.set_num_threads``, checked once."""
    if openmp() is not None:
        return True
    found = PROCESS.per_thread_torch
    if found is None:
        import torch

        before = torch.get_num_threads()
        if before == 1:
            return True  # nothing to tell apart; asked again once the caller has more threads
        probe = threading.Thread(target=torch.set_num_threads, args=(1,))
        probe.start()
        probe.join()
        found = torch.get_num_threads() == before
        if not found:
            torch.set_num_threads(before)
        PROCESS.per_thread_torch = found
    return found
