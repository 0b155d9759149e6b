"""Call sites that count: what ``np2torch run`` puts where ``np2torch fix`` would put ``np2t.<helper>``.

A :class:`Site` stands for one rewritten call site of a program (file, line,
column, helper).  Calling it calls the helper -- or, for a share of the calls,
the original -- and records the call: elements, time, and the path the helper
took (the original, torch on the CPU, CUDA).  The share is an A/B sample taken
per size band (powers of two of the element count): the first
:data:`SAMPLE_EVERY` calls of a band alternate between the original and the
helper (the original first), and after them one call in :data:`SAMPLE_EVERY`
runs the original: which calls do is a function of the count of calls per site
and band in the calling thread (counted from a place the thread's name fixes,
:class:`_Counts`), never of a clock, chance or the order in which threads reach
a site, so every run samples the same calls.
Each arm's clock wraps the call alone, as the program pays it: the original's
warning redirect is set up before the clock starts (:func:`_make_call`).  Each
arm's first call in a band is kept apart from its other timings: it may import
torch, measure the machine, or be the first to touch memory of that size; the
others are summed and kept as a histogram of their times (:func:`time_bin`),
whose medians the report reads.  Both arms are timed on this machine and this
program's data, so the saving a report states is measured, not predicted.  A
sampled call returns the original's own result (bits and all): sampling never
gives the program a value the original would not have.

Two things turn sampling off, the calls still counted (and timed as the
helper's): a site made with ``table(..., sample=False)`` never samples (code
that is timed itself, as the statement of IPython's ``%timeit``), and while
:func:`paused` holds no site samples (a timing that calls functions whose sites
do, as ``%timeit f(x)``, times the helpers only).

Warnings the original issues on a sampled call point at the program's line, as
the helper's do (this module lives in the runtime's folder, whose frames
:mod:`._exact.errstate` skips).  An exception leaves a site without the runtime's
frames in its traceback (Python 3.11 and later; before, the site's own frame
stays): the program, its ``traceback.print_exc()``, pytest and the interpreter
show what the original call shows.

A program's sites are registered per file (:func:`register`, which leaves
making them -- :func:`table` -- to the first time the program reaches one: this
module imports neither NumPy nor the helpers); a file executed again
(``__main__`` and ``__mp_main__``, ``importlib.reload``) gets the same sites, so
its counts add up.  :func:`snapshot` reads every site's record;
:func:`after_fork_in_child` starts a forked child's counts from zero, and
:func:`clear` every site's.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import itertools
import math
import operator
import os
import sys
import threading
import time
import types
import zlib
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, TypedDict, TypeVar

from ._config import cache_dir
from ._state import PROCESS, TAKEN

__all__ = ["BINS_PER_OCTAVE", "BUILTIN", "SAMPLE_EVERY", "Band", "Site", "after_fork_in_child", "bin_seconds",
           "cache_dir", "calls_since_mark", "clear", "mark", "paused", "register", "snapshot", "table", "time_bin"]

SAMPLE_EVERY = 8
"""A size band's first this many calls alternate between the arms; after them one in this many runs the original."""

_DISTINCT_SIZES = 256
"""Exact sizes kept per site for the median; past that, the median is read from the size bands."""


class Band:
    """One site's calls whose element count has the same bit length (``2**(k-1) <= n < 2**k``)."""

    __slots__ = ("calls", "elements", "helper_n", "helper_s", "first_helper_s", "helper_times", "original_n",
                 "original_s", "first_original_s", "original_times", "one_time_s")

    def __init__(self) -> None:
        self.calls = 0
        self.elements = 0
        self.helper_n = 0
        """Timed helper calls after the band's first (which may import torch, measure the machine, or meet
        memory the program has not touched yet: kept apart, in ``first_helper_s``)."""
        self.helper_s = 0.0
        self.first_helper_s: float | None = None
        self.helper_times: Dict[int, int] = {}
        """The timed helper calls after the first, as a histogram: :func:`time_bin` -> calls (the report's
        medians and their intervals come from it; it adds up across processes and stays small)."""
        self.original_n = 0
        """Timed original calls after the band's first (kept apart as the helper's, in ``first_original_s``)."""
        self.original_s = 0.0
        self.first_original_s: float | None = None
        self.original_times: Dict[int, int] = {}
        """The timed original calls after the first, as :attr:`helper_times`."""
        self.one_time_s = 0.0
        """One-time work the process did inside this band's helper calls (``import torch``, a
        measurement: :attr:`._state.Process.one_time`), taken out of their timings."""

    def as_dict(self) -> BandRecord:
        return {
            "calls": self.calls, "elements": self.elements, "helper_n": self.helper_n, "helper_s": self.helper_s,
            "first_helper_s": self.first_helper_s, "helper_times": _histogram(self.helper_times),
            "original_n": self.original_n, "original_s": self.original_s,
            "first_original_s": self.first_original_s, "original_times": _histogram(self.original_times),
            "one_time_s": self.one_time_s,
        }


def _histogram(times: Dict[int, int]) -> Dict[str, int]:
    """A histogram as JSON keeps it: bins in ascending order, as strings."""
    return {str(k): count for k, count in sorted(times.items())}


class BandRecord(TypedDict):
    """A band's counts as plain data (:meth:`Band.as_dict`): its slots, the histograms' bins as strings."""

    calls: int
    elements: int
    helper_n: int
    helper_s: float
    first_helper_s: Optional[float]
    helper_times: Dict[str, int]
    original_n: int
    original_s: float
    first_original_s: Optional[float]
    original_times: Dict[str, int]
    one_time_s: float


class SiteRecord(TypedDict):
    """A site's counts as plain data (:meth:`Site.record`, JSON-ready): what the run report reads."""

    path: str
    line: int
    col: int
    function: str
    code: str
    sampling: bool
    errors: int
    paths: Dict[str, int]
    sizes: Optional[Dict[str, int]]
    bands: Dict[str, BandRecord]


BINS_PER_OCTAVE = 16
"""Histogram bins per doubling of a call's time: a bin is 4.4 % wide, so a median read as its bin's middle is
within 2.2 % of the median call."""
_SHORTEST = 1e-9
"""Times below this (a call the one-time work inside it took whole) fall in its bin."""


def time_bin(seconds: float) -> int:
    """The histogram bin of a call that took ``seconds``: ``floor(log2(seconds) * BINS_PER_OCTAVE)``."""
    return math.floor(math.log2(seconds if seconds > _SHORTEST else _SHORTEST) * BINS_PER_OCTAVE)


def _bin_all(histogram: Dict[int, int], seconds: List[float]) -> None:
    """Add calls of ``seconds`` to ``histogram`` (a long log at once, in NumPy: the same bins as :func:`time_bin`)."""
    if len(seconds) < 64:
        _count(histogram, map(time_bin, seconds))
        return
    import numpy as np  # the report's side, once the program has run (np2torch run imports nothing before it)

    bins, counts = np.unique(np.floor(np.log2(np.maximum(seconds, _SHORTEST)) * BINS_PER_OCTAVE), return_counts=True)
    for index, count in zip(bins.tolist(), counts.tolist()):
        histogram[int(index)] = histogram.get(int(index), 0) + count


def bin_seconds(index: int) -> float:
    """The middle (geometric) of bin ``index``: the time the report takes for the calls in it."""
    return float(2.0 ** ((index + 0.5) / BINS_PER_OCTAVE))


class Site:
    """One rewritten call site and its record.

    A call takes its place in its band from its thread's counter of the band (:class:`_Counts`: a thread's
    own calls fix its count, whatever the other threads do) and appends one entry to the band's
    log of its arm (``list.append`` needs no lock); the logs are folded into the
    bands under :attr:`lock` when a helper log grows long and whenever the record is
    read, so the hot path takes no lock.  A log holds one band's calls of one arm,
    so a fold sums its columns with built-ins rather than stepping through entries.
    """

    __slots__ = ("path", "line", "column", "function", "code", "helper", "original", "sampling", "spelled", "bands",
                 "paths", "sizes", "errors", "lock", "lanes", "call")

    def __init__(self, path: str, line: int, column: int, function: str, code: str,
                 helper: Callable[..., object], original: Callable[..., object], name: str, sampling: bool = True,
                 spelled: bool = False) -> None:
        self.path = path
        self.line = line
        self.column = column
        self.function = function
        """The original's qualified name (``numpy.exp``)."""
        self.code = code
        self.helper = helper
        self.original = original
        self.sampling = sampling
        """False: the site never runs the original (code that is itself being timed)."""
        self.spelled = spelled
        """The original is a pattern's expression (:func:`_spelled`), which reports its pieces' errors itself."""
        self.bands: Dict[int, Band] = {}
        self.paths: Dict[str, int] = {}
        """Helper calls by the path they took: ``numpy`` (the original inside the helper), ``cpu``, ``cuda``."""
        self.sizes: Dict[int, int] | None = {}
        """Element count -> calls, while there are few distinct counts (None past :data:`_DISTINCT_SIZES`)."""
        self.errors = 0
        """Calls that raised (counted, not timed)."""
        self.lock = threading.Lock()
        self.lanes: Dict[int, List[Any]] = {}
        """Bit length -> the band's hot-path state, ``[counts, helper log, original log]``: each thread's count of
        its calls (:class:`_Counts`); the calls not folded yet, ``(elements, path, start, seconds)`` each, of the
        helper and of the original (path ``""``) in the order they ended.  A band's first call of each arm is its
        ``first_*_s``."""
        self.call = _make_call(self, name)

    def lane(self, bits: int) -> List[Any]:
        """The state of the band of ``bits`` (made once, whichever thread asks first)."""
        return self.lanes.setdefault(bits, [_Counts(), [], []])

    def pending(self) -> int:
        """Calls logged and not folded yet (no lock: a count that may be a call behind)."""
        return sum(len(lane[1]) + len(lane[2]) for lane in list(self.lanes.values()))

    @property
    def key(self) -> Tuple[str, int, int, str]:
        return self.path, self.line, self.column, self.code

    def fold(self) -> None:
        """Move the logged calls into the bands (under :attr:`lock`)."""
        with self.lock:
            self._fold()

    def _fold(self) -> None:
        events = PROCESS.one_time
        window = (min(began for began, _ in events), max(began + took for began, took in events)) if events else None
        for bits, lane in list(self.lanes.items()):
            for log, helper in ((lane[1], True), (lane[2], False)):
                if log:
                    entries = log[:]
                    del log[: len(entries)]  # calls appended meanwhile stay for the next fold
                    self._fold_arm(bits, entries, helper, events if helper else [], window)

    def _fold_arm(self, bits: int, entries: List[Tuple[int, str, float, float]], helper: bool,
                  events: List[Tuple[float, float]], window: Tuple[float, float] | None) -> None:
        band = self.bands.get(bits)
        if band is None:
            band = self.bands[bits] = Band()
        band.calls += len(entries)
        band.elements += sum(map(_ELEMENTS, entries))
        if self.sizes is not None:
            _count(self.sizes, map(_ELEMENTS, entries))
            if len(self.sizes) > _DISTINCT_SIZES:
                self.sizes = None
        if helper:
            _count(self.paths, map(_PATH, entries))
        seconds = list(map(_SECONDS, entries))
        if window is not None and events and min(map(_START, entries)) < window[1]:
            for i, (_n, _path, start, elapsed) in enumerate(entries):  # one-time work out of the calls it was in
                inside = sum(max(0.0, min(start + elapsed, began + took) - max(start, began)) for began, took in events)
                if inside:
                    band.one_time_s += inside
                    seconds[i] = max(0.0, elapsed - inside)
        if helper:
            if band.first_helper_s is None:
                band.first_helper_s = seconds.pop(0)
            band.helper_n += len(seconds)
            band.helper_s += sum(seconds)
            _bin_all(band.helper_times, seconds)
        else:
            if band.first_original_s is None:
                band.first_original_s = seconds.pop(0)
            band.original_n += len(seconds)
            band.original_s += sum(seconds)
            _bin_all(band.original_times, seconds)

    def record(self) -> SiteRecord:
        """The site's counts as plain data (JSON-ready)."""
        with self.lock:
            self._fold()
            return {
                "path": self.path, "line": self.line, "col": self.column, "function": self.function,
                "code": self.code, "sampling": self.sampling, "errors": self.errors, "paths": dict(self.paths),
                "sizes": None if self.sizes is None else {str(n): k for n, k in self.sizes.items()},
                "bands": {str(bits): band.as_dict() for bits, band in list(self.bands.items())},
            }

    def clear(self) -> None:
        """Forget every call (a forked child): its locks start free."""
        self.lock = threading.Lock()
        self.lanes.clear()
        self.bands = {}
        self.paths = {}
        self.sizes = {}
        self.errors = 0


class _Counts(threading.local):
    """One band's calls as each thread counts them: which of a thread's calls sample the original is then fixed by
    that thread's own calls, never by the order in which threads reach the site (``next`` on an
    :func:`itertools.count` is atomic: a signal handler's call in the same thread takes the next place).

    The main thread counts from the band's first place; another thread from a place its name fixes (``Thread-3
    (work)``, given in the order threads are made, or the program's own name for it), so that a program starting a
    thread per call samples some of them, not every one (each thread's first call would run the original)."""

    def __init__(self) -> None:
        thread = threading.current_thread()
        start = 0 if thread is threading.main_thread() else zlib.crc32(thread.name.encode()) % SAMPLE_EVERY
        self.count = itertools.count(start)
        self.sampled = start != 0
        """Whether this thread's original has run once in the band, or its count starts past the band's first place
        (until then its call of the band samples it, also after a :func:`paused` block)."""


_FOLD_AT = 4096
"""Logged helper calls of one band that make the next call fold the logs into the bands."""

_Key = TypeVar("_Key")

_ELEMENTS, _PATH, _START, _SECONDS = (operator.itemgetter(i) for i in range(4))
"""The columns of a log entry."""

try:
    from collections import _count_elements as _count  # type: ignore[attr-defined]  # Counter.update's C loop
except ImportError:  # pragma: no cover - an interpreter without it

    def _count(mapping: Dict[_Key, int], iterable: Iterable[_Key]) -> None:
        for item in iterable:
            mapping[item] = mapping.get(item, 0) + 1


_NATIVE_ATTRIBUTES = (types.GetSetDescriptorType, types.MemberDescriptorType)


def _size(x: object) -> int:
    """Elements of a call's first argument, read without running any of the program's code (a ``size``
    property or ``__len__`` of its own would run once more than under ``python``, and might print or raise):
    a list's or tuple's length, the ``size`` a type implements natively (NumPy's arrays and scalars, their
    subclasses that leave it alone, CuPy's), else 1."""
    if type(x) is list or type(x) is tuple:
        return len(x)
    if isinstance(getattr(type(x), "size", None), _NATIVE_ATTRIBUTES):
        size = getattr(x, "size")  # noqa: B009 - x is an object: its type's native attribute, read as x.size
        if type(size) is int:
            return size
    return 1


_RUNTIME_FOLDER = os.path.dirname(__file__) + os.sep
"""The runtime's files (:data:`._exact.errstate.RUNTIME_FOLDER`, without importing NumPy for it)."""


def _without_runtime_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` from its first frame outside the runtime's files: without the site's, the helper's and the errstate
    redirect's frames, with every frame the original's own call added (SciPy's, a duck array's method, and
    whatever they call, np2torch's too)."""
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_RUNTIME_FOLDER):
        tb = tb.tb_next
    return tb


def _failed(site: Site, exc: BaseException) -> None:
    """Count a call that raised, and take the runtime's frames out of what the program will see."""
    site.errors += 1
    _without_site(exc)


def _without_site(exc: BaseException) -> None:
    """Take the runtime's frames out of ``exc``'s traceback, as a site re-raises it.  A bare ``raise``
    re-raises with the exception's ``__traceback__`` from 3.11 on; before, with the one the handler caught,
    whose head (the site's frame) can only be given a new tail."""
    tb = exc.__traceback__
    if sys.version_info >= (3, 11):
        exc.__traceback__ = _without_runtime_frames(tb)
    elif tb is not None:
        tb.tb_next = _without_runtime_frames(tb.tb_next)


def _make_call(site: Site, name: str) -> Callable[..., object]:
    """The callable the program calls at ``site``: the helper's signature, the record kept on the side."""
    import numpy as np

    from ._exact import errstate

    helper, original = site.helper, site.original
    clock = time.perf_counter
    taken = TAKEN
    every = SAMPLE_EVERY
    # The original's floating-point warnings name it and point at the program's line: the error state that
    # does so is set up before the clock starts and reset after it stops, so the original is timed as the
    # program calls it under `python`.  A spelled expression's pieces do that each under its own name, and
    # the time they spend on it is taken out of the expression's (:func:`_redirected`).
    redirect_for = None if site.spelled else errstate.redirect_for
    extobj = errstate.EXTOBJ_VAR
    overhead = _OVERHEAD
    ndarray = np.ndarray
    lanes = site.lanes
    hold = _PAUSED if site.sampling else _NEVER
    fold_at = _FOLD_AT
    first = every - 1

    def call(*args: object, **kwargs: object) -> object:
        try:
            x = args[0] if args else next(iter(kwargs.values()), None)
            n = x.size if type(x) is ndarray else _size(x)
            lane = lanes.get(n.bit_length())
            if lane is None:
                lane = site.lane(n.bit_length())
            counts = lane[0]
            index = next(counts.count)
            if not hold[0] and (not counts.sampled or (not index & 1 if index < every else index % every == first)):
                counts.sampled = True
                try:
                    if redirect_for is None:
                        overhead.seconds = 0.0
                        start = clock()
                        result = original(*args, **kwargs)
                        elapsed = clock() - start - overhead.seconds
                    else:
                        redirect = redirect_for(original, name, args, kwargs)
                        token = None if redirect is None else extobj.set(redirect)
                        try:
                            start = clock()
                            result = original(*args, **kwargs)
                            elapsed = clock() - start
                        finally:
                            if token is not None:
                                extobj.reset(token)
                except BaseException as exc:
                    _failed(site, exc)
                    raise
                lane[2].append((n, "", start, elapsed))
                return result
            taken.device = None
            try:
                start = clock()
                result = helper(*args, **kwargs) if kwargs else helper(*args)
                elapsed = clock() - start
            except BaseException as exc:
                _failed(site, exc)
                raise
            log = lane[1]
            log.append((n, taken.device or "numpy", start, elapsed))
            if len(log) >= fold_at:
                site.fold()
            return result
        except BaseException as exc:  # raised in the site's own bookkeeping: a signal handler's, Ctrl-C's
            _without_site(exc)
            raise

    call.__name__ = call.__qualname__ = name
    call.__doc__ = getattr(helper, "__doc__", None)
    return call


Spec = Tuple[int, int, str, str, str, Tuple[str, ...]]
"""A site as :func:`table` takes it: ``(line, column, helper, function, code, pattern)``."""

_SITES: Dict[Tuple[str, int, int, str], Site] = {}
_LOCK = threading.Lock()


_PAUSED = [0]
"""How many :func:`paused` blocks are open: no site samples while it is not zero."""
_NEVER = [1]
"""What a site made with ``sample=False`` reads instead of :data:`_PAUSED`."""


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No site runs the original while this holds (in any thread); calls are counted as the helper's."""
    with _LOCK:
        _PAUSED[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _PAUSED[0] -= 1


BUILTIN = "@np2torch_sites"
"""The name, in :mod:`builtins`, of the dict from each instrumented file's key to its sites' callables (code
that ``np2torch run`` compiled reads its sites from there: the program's own namespaces stay untouched)."""


def table(key: str, path: str, specs: Sequence[Spec], *,
          sample: bool = True) -> List[Callable[..., object]]:
    """Register the callables of one file's sites under ``key``, in the order of ``specs``: ``(line, column,
    helper, function, code, pattern)`` each (1-based line and column, as the linter reports them;
    ``pattern``: a pattern rule's names, ``(outer, reduction, inner)``, ``(inner, reduction)`` or ``(reduction,)``,
    whose original is the hand-written expression (:func:`_spelled`), else empty), and return them.  A site seen before keeps its record.  ``sample=False``: the sites count their
    calls but never run the original (code that is itself being timed)."""
    from . import _api  # the helpers and NumPy load with the first instrumented module, not before

    calls = []
    entries: List[Callable[..., object] | Pick] = []
    with _LOCK:
        _WAITING.pop(key, None)
        for line, column, name, function, code, pattern in specs:
            site = _SITES.get((path, line, column, code))
            helper = _api.HELPERS[name]
            if site is None:
                original = _spelled(*pattern) if pattern else helper.original
                site = Site(path, line, column, function, code, helper.function, original, name, sample,
                            spelled=bool(pattern))
                _SITES[site.key] = site
            calls.append(site.call)
            entries.append(site.call if pattern else Pick(helper.load, site.call))
        vars(builtins).setdefault(BUILTIN, {})[key] = entries
    return calls


def register(key: str, path: str, specs: Sequence[Spec], *,
             sample: bool = True) -> None:
    """What an instrumented module runs before its first statement: :func:`table` for its sites, made when the
    program first reaches one of them.  Until then nothing is imported -- not the helpers, not NumPy: everything
    the program does before its own ``import numpy`` (``OPENBLAS_NUM_THREADS``, ``warnings`` filters) acts as
    it does under ``python``."""
    waiting = _Waiting(key, path, tuple(specs), sample)
    with _LOCK:
        _WAITING[key] = waiting
        vars(builtins).setdefault(BUILTIN, {})[key] = waiting


_WAITING: Dict[str, _Waiting] = {}
"""Key -> a file registered whose sites are not made yet (:func:`snapshot` reports them, uncalled)."""


class _Waiting:
    """A file's entry in :data:`BUILTIN` until the program reaches one of its sites (``<sites>[key][i]``): then
    :func:`table` makes them, puts the real entries in its place, and the subscript gets the real entry."""

    __slots__ = ("key", "path", "specs", "sample")

    def __init__(self, key: str, path: str, specs: Tuple[Spec, ...], sample: bool) -> None:
        self.key, self.path, self.specs, self.sample = key, path, specs, sample

    def __getitem__(self, index: int) -> object:
        table(self.key, self.path, self.specs, sample=self.sample)
        return vars(builtins)[BUILTIN][self.key][index]


class Pick(Dict[object, object]):
    """A reference site's entry in :data:`BUILTIN`: the program's code subscripts it with what its own reference
    evaluates to when the call runs (``<sites>[key][i][np.exp](x)``), and gets the site's call when that is the
    original, else that object itself, which the program's line then calls as ``python`` would: a test's
    ``mock.patch("numpy.exp")``, a program's own ``np.exp = ...`` (neither counted nor timed).  The original is
    the one the runtime computes (:meth:`Helper.load`); once it has been seen, a hit is a dict lookup."""

    __slots__ = ("load", "call")

    def __init__(self, load: Callable[[], object], call: Callable[..., object]) -> None:
        super().__init__()
        self.load = load
        self.call = call

    def __missing__(self, reference: object) -> object:
        try:
            original = self.load()
        except Exception:
            return reference  # the original cannot be imported here: the program's object is not it
        if reference is not original:
            return reference
        self[reference] = self.call
        return self.call


def _spelled(*pattern: str) -> Callable[..., object]:
    """The expression a pattern rule replaces, told by how many names it has (the linter's rule table gives each
    form its own count): ``outer(reduction(inner(x), *rest, **keywords))``; ``inner(x) / reduction(inner(x),
    *rest, keepdims=True, **keywords)``; ``x - reduction(x, *rest, keepdims=True, **keywords)`` (the helper's
    call drops ``keepdims``; with no axis it changes nothing but the shape broadcast back to ``x``'s).

    Each ufunc and operator of it reports its floating-point errors under its own name at the program's line
    ("overflow encountered in exp", "... in divide"), as the expression does there; a reduction runs as it is
    (NumPy's ``sum`` and SciPy's ``logsumexp`` warn from their own lines, as they do under ``python``)."""

    functions = [_piece(_load(name)) for name in pattern]
    divide, subtract = _redirected(operator.truediv, "divide"), _redirected(operator.sub, "subtract")
    if len(functions) == 3:
        outer, reduction, inner = functions

        def nested(x: object, *rest: object, **keywords: object) -> object:
            return outer(reduction(inner(x), *rest, **keywords))

        return nested
    if len(functions) == 2:
        inner, reduction = functions

        def ratio(x: object, *rest: object, **keywords: object) -> object:
            return divide(inner(x), reduction(inner(x), *rest, keepdims=True, **keywords))

        return ratio
    (reduction,) = functions

    def difference(x: object, *rest: object, **keywords: object) -> object:
        return subtract(x, reduction(x, *rest, keepdims=True, **keywords))

    return difference


def _piece(function: Callable[..., object]) -> Callable[..., object]:
    """A pattern's piece: a ufunc reports under its own name (see :func:`_spelled`), anything else runs as it is."""
    import numpy as np


    if isinstance(function, np.ufunc):
        return _redirected(function, function.__name__)
    return function


class _Overhead(threading.local):
    """Seconds a spelled expression's pieces spent, in this thread, setting up and resetting the error state
    their warnings are issued from (the program does not pay it): the site takes it out of the call's time."""

    seconds = 0.0


_OVERHEAD = _Overhead()


def _redirected(function: Callable[..., object], name: str) -> Callable[..., object]:
    """``function`` reporting its floating-point errors under ``name`` at the program's line, as
    :func:`._exact.errstate.numpy_call` does, adding the time that takes it to :data:`_OVERHEAD`."""
    from ._exact import errstate

    clock = time.perf_counter
    extobj = errstate.EXTOBJ_VAR
    redirect_for = errstate.redirect_for

    def piece(*args: object, **kwargs: object) -> object:
        began = clock()
        redirect = redirect_for(function, name, args, kwargs)
        token = None if redirect is None else extobj.set(redirect)
        start = clock()
        try:
            return function(*args, **kwargs)
        finally:
            end = clock()
            if token is not None:
                extobj.reset(token)
            _OVERHEAD.seconds += start - began + clock() - end

    return piece



def _load(qualname: str) -> Callable[..., object]:
    module, _, name = qualname.rpartition(".")
    function: Callable[..., object] = getattr(importlib.import_module(module), name)
    return function


def snapshot() -> List[SiteRecord]:
    """Every site's record, in the order the sites were made, then those of files whose sites were registered and
    never reached (no call: :func:`register` had not made them)."""
    records = [site.record() for site in list(_SITES.values())]
    for waiting in list(_WAITING.values()):
        records += [_unreached(waiting.path, spec, waiting.sample) for spec in waiting.specs
                    if (waiting.path, spec[0], spec[1], spec[4]) not in _SITES]
    return records


def _unreached(path: str, spec: Spec, sample: bool) -> SiteRecord:
    """The record of a site the program never reached: :meth:`Site.record`'s, with no call."""
    line, column, _helper, function, code, _pattern = spec
    return {"path": path, "line": line, "col": column, "function": function, "code": code, "sampling": sample,
            "errors": 0, "paths": {}, "sizes": {}, "bands": {}}


_MARK = [0]
"""Calls counted by :func:`calls_since_mark` since the last :func:`mark`."""


def mark() -> None:
    """Start counting :func:`calls_since_mark` afresh (a child process wrote its counts)."""
    _MARK[0] = sum(site.pending() + sum(band.calls for band in site.bands.values()) for site in list(_SITES.values()))


def calls_since_mark() -> bool:
    """Whether any site was called since the last :func:`mark` (cheap: no lock, no fold)."""
    total = 0
    for site in list(_SITES.values()):
        total += site.pending() + sum(band.calls for band in site.bands.values())
    return total != _MARK[0]


def clear() -> None:
    """Every site counts from zero (``%load_ext np2torch`` again: a fresh report)."""
    with _LOCK:
        for site in list(_SITES.values()):
            site.clear()
        _MARK[0] = 0


def after_fork_in_child() -> None:
    """A forked child counts its own calls from zero; its locks start free (a thread of the parent may have
    held one when it forked, and that thread does not exist here)."""
    global _LOCK
    _LOCK = threading.Lock()
    for site in list(_SITES.values()):
        site.clear()
    _MARK[0] = 0
