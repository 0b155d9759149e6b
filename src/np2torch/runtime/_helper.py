"""What every helper of the table shares, whatever its kind: its row, its original, its size floors,
and :meth:`Helper.route`, the one place where the path of a call is decided.

A kind (:mod:`._ufunc` for the elementwise rows, a reduction's own module)
subclasses :class:`Helper`: it makes the public function, says where a call
would run without running it (:meth:`Helper.which`) and runs one path on a
scratch input (:meth:`Helper.run_path`), which is what ``np2torch tune`` and
``np2torch tune`` times.  ``make_helper(row)`` in the kind's module makes
one; :mod:`._api` calls it for the module each row names (``implementation``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict

import numpy as np

from ._decision import route as decision
from ._decision.model import REDUCTION_CLASSES
from ._decision.route import Route
from ._exact.errstate import NUMPY_SCALARS
from ._paths.original import find as find_original
from ._state import PROCESS, SCOPED

try:
    from ._front import Front

    FRONT: type[Front] | None = Front
except ImportError:  # not built: no compiler at install, a free-threaded interpreter, a copy made by `np2torch vendor`
    FRONT = None

if TYPE_CHECKING:
    from ._config import RuntimeSettings
    from .table import Function

# "np2torch.runtime" here; the vendored package's name in a copy made by `np2torch vendor`.
PUBLIC_MODULE = __name__.rsplit(".", 1)[0]

ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "<absent>"})()
"""The default of a ufunc helper's positional parameters: a call that leaves one out (``exp(x=a)``,
``hypot(a)``) goes to the original, which raises its own TypeError (Python's binding error for the
helper's signature reads differently)."""


@functools.lru_cache(maxsize=None)
def ufunc_signature(nin: int) -> inspect.Signature | None:
    """The signature NumPy gives every ufunc of ``nin`` inputs (``(x, /, out=None, *, where=True, ...)``),
    for a helper standing in for one; a SciPy original has it too, without importing SciPy for it.

    None where NumPy gives ufuncs none (before 2.x): ``inspect.signature`` then reads the helper's own.
    """
    template = np.exp if nin == 1 else np.hypot
    try:
        return inspect.signature(template)
    except (TypeError, ValueError):  # pragma: no cover - NumPy 1.x
        return None


_DTYPE_NAMES: Dict[np.dtype, str] = {}


def dtype_name(dtype: np.dtype) -> str:
    """``dtype.name``, which NumPy computes in Python at every read (~1.5 µs): kept per loop dtype."""
    try:
        return _DTYPE_NAMES[dtype]
    except KeyError:
        name = _DTYPE_NAMES[dtype] = dtype.name
        return name


class Unbound:
    """A public helper where the C front is not built (:func:`unbound`): its Python function, but no descriptor.

    Stored on a class and read off an instance (``B.f = np2t.exp`` then ``B().f(x)``), it is called without the
    instance, as the ufunc it stands in for (a Python function would bind as a method and get the instance as
    ``x``).  Name, signature, documentation and ``repr`` are the function's; it pickles and copies by reference."""

    __slots__ = ("__dict__",)
    __wrapped__: Callable[..., Any]
    __signature__: inspect.Signature
    __qualname__: str

    if TYPE_CHECKING:  # each one's class calls its function (:func:`unbound`)
        def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def __repr__(self) -> str:
        return repr(self.__wrapped__)

    def __reduce__(self) -> str:
        return self.__qualname__  # pickle: the module's attribute of that name (this object)


def unbound(python: Callable[..., Any]) -> Unbound:
    """``python`` as an :class:`Unbound`.  Its class's ``__call__`` is ``staticmethod(python)``: a call goes
    straight to ``python`` with the caller's arguments (a ``staticmethod`` found on the type is called without
    the instance), no frame of the runtime between the caller and the helper (tracebacks, warnings)."""
    kind = type("Unbound", (Unbound,), {"__call__": staticmethod(python), "__slots__": (), "__module__": __name__,
                                        "__qualname__": "Unbound"})
    function: Unbound = kind()
    for name in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(function, name, getattr(python, name))
    function.__wrapped__ = python
    function.__signature__ = getattr(python, "__signature__", None) or inspect.signature(python)
    return function


class Helper:
    """One helper of the table (a row): the parts every kind shares."""

    row: Function
    function: Callable[..., Any]
    """The public helper, what ``np2torch.runtime.<name>`` is (:meth:`publish`)."""
    front: Front | None = None
    """The C front of :meth:`publish`, where it is built (None: the public helper is the Python function)."""
    cores = False
    """Whether the kind has the path ``cores``, the original's own loop on every core (:mod:`._paths.cores`)."""

    def __init__(self, row: Function) -> None:
        self.row = row
        self.name = row.name
        self.floors: Dict[np.dtype, int] = PROCESS.floor_table()
        """Input dtype -> the size below which a call takes the original (from the profile; a dtype
        not seen yet has none, so its first call learns it)."""
        self.loaded: Callable[..., Any] | None = find_original(row, np) if row.module == "numpy" else None
        self.original: Callable[..., Any] = self.loaded if self.loaded is not None else self._load_and_call
        """The original function; until it is imported (and found: :mod:`._paths.original`), a stand-in that imports
        it and calls it."""

    def load(self) -> Callable[..., Any]:
        """The original, imported on first use (SciPy's only when a call needs it); never a patch in force then
        (:mod:`._paths.original`: when none is found, what the module holds now, not kept).

        Python's module locks order the import, as they order the original program's own ``import``; no lock of
        the runtime's is held over it.  A call made inside its own thread's import of the module (a signal
        handler's, a ``__del__``'s, a trace function's) gets the half-initialized module, as an ``import`` there
        does: the original once the module has bound it, else the original program's AttributeError.  (A lock held over
        the import hung such a call while another thread's first call imported the module: that thread held the
        lock and waited for this thread's import.)
        """
        loaded = self.loaded
        if loaded is not None:
            return loaded
        module = self.row.module
        if any(module == name or module.startswith(name + ".") for name in PROCESS.half_imported):
            raise ImportError(
                f"np2torch.runtime: {self.row.qualname} cannot be imported in this process: it was forked "
                f"while another thread was importing {module} (import it before forking)"
            )
        imported = importlib.import_module(module)
        found = find_original(self.row, imported)
        if found is None:
            current: Callable[..., Any] = getattr(imported, self.name)
            return current
        self.loaded = self.original = found  # the same object whichever thread finds it first
        if self.front is not None:
            self.front.original = found
        return found

    def publish(self, python: Callable[..., Any], loops: Dict[Any, Any] | None = None) -> Callable[..., Any]:
        """The public helper of the Python function ``python``: ``python`` itself, or its C front where the
        extension is built (:file:`_front.c`), which passes the calls ``python`` would give the original straight
        to it (a scalar; arrays below their floor, looked up in :attr:`floors`, through ``loops`` for two operands)
        and every other call to ``python``.  The front carries ``python``'s name, signature and documentation.
        Without the extension, ``python`` as an :class:`Unbound`: neither binds as a method, as a ufunc does not."""
        if FRONT is None:
            return unbound(python)
        front = FRONT(python, self.floors, loops, SCOPED, PROCESS, np.ndarray, NUMPY_SCALARS)
        for name in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(front, name, getattr(python, name))
        # (NumPy 1.x gives ufuncs no signature: then the Python function's own, as inspect reads it)
        front.__signature__ = getattr(python, "__signature__", None) or inspect.signature(python)
        front.original = self.loaded
        self.front = front
        return front

    def _load_and_call(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)

    def route(self, loop: str, n: int, settings: RuntimeSettings, cuda_ok: bool, dry_run: bool = False,
              klass: str = "", exact_only: bool = False) -> Route | None:
        """Where a call over ``n`` elements of loop ``loop`` (a reduction's shape class ``klass``) runs under
        ``settings`` (None: the original): :func:`._decision.route.route`, from the call and the profile alone.
        ``exact_only``: torch does not serve the loop, only the paths that give the original's bits may."""
        return decision.route(self.name, loop, n, settings.device, settings.min_size, cuda_ok, dry_run=dry_run,
                             klass=klass, exact=exact_only or settings.exact == "bits", cores=self.cores)

    def admits(self, dtype: np.dtype, n: int, settings: RuntimeSettings) -> bool:
        """Whether a call of ``n`` elements whose floor is kept under ``dtype`` may leave the original: the size floor.

        (The reductions and two-argument helpers; the elementwise dispatcher inlines it.)  Never while the
        interpreter finalizes: NumPy's Python parts (``dtype.name``) cannot be imported then, its ufuncs still run.
        """
        if sys.is_finalizing():
            return False
        if settings.gate is not None:
            return n >= settings.gate
        floor = self.floors.get(dtype)
        if floor is None or (PROCESS.provisional and n >= floor):
            return self.past_floor(dtype, n)
        return n >= floor

    def past_floor(self, dtype: np.dtype, n: int) -> bool:
        """Whether a call of ``n`` elements of ``dtype``, whose floor is not known yet, may leave the original.

        Learns the floor: while the profile is not read yet (:func:`._decision.route.deferring`)
        a provisional one that smaller calls stay under, else the profile's.
        """
        generation = PROCESS.generation
        if decision.deferring(n):
            PROCESS.remember(self.floors, dtype, decision.DEFER_FLOOR, generation)
            return False
        generation = PROCESS.generation  # the deferral may have just ended (every floor forgotten)
        loop = self.loop_of(dtype)
        classes = REDUCTION_CLASSES if self.row.kind == "reduction" else ("",)
        floor = sys.maxsize if loop is None else decision.torch_floor(self.name, (loop,), classes)
        PROCESS.remember(self.floors, dtype, floor, generation)
        return n >= floor

    def loop_of(self, dtype: np.dtype) -> str | None:
        """The loop a plain call on ``dtype`` input runs that a path other than the original's single call may serve
        (torch, or the original on every core: None where neither does)."""
        raise NotImplementedError

    def run_path(self, path: str, x: np.ndarray) -> object:
        """One call through ``path`` on the scratch input ``x``, as a user's call taking that path (``np2torch tune``).

        A reduction reduces ``x`` along axis 0 (tune lays the input out for the shape class it measures)."""
        raise NotImplementedError

    def which(self, *args: Any, **kwargs: Any) -> tuple[str, str]:
        """``(path, why)`` for a call with these arguments, without running it (nothing counted or measured)."""
        raise NotImplementedError
