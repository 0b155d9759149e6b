"""``np2torch run`` in every process of the program: the hook carried to children, their counts brought back.

The parent puts its run's description in ``NP2TORCH_RUN`` and a folder holding
only a ``sitecustomize.py`` first on ``PYTHONPATH`` (as tracers that follow a
program into its subprocesses do); a child interpreter started from it --
``multiprocessing``'s spawn and forkserver processes, ``subprocess`` running
``sys.executable`` -- imports it at start-up, and it installs the same hook and
then imports the ``sitecustomize`` the child would have imported otherwise.
Forked children inherit the hook.  ``multiprocessing`` re-runs a script as
``__mp_main__`` through :func:`runpy.run_path`, which compiles the file without
the import system, so :func:`activate` has it run the instrumented code.

Every process that is not the run's own writes its sites' counts to the run's
spool folder when it ends (``atexit``; a ``multiprocessing`` child through
its finalizers, since it ends with ``os._exit``), a pool worker also before it
sends each result (:func:`patch_pool`: a terminated pool kills its workers), and
the parent reads them into its report.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import types
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from np2torch.cli.config import Overrides
from np2torch.run.hook import Rewriter, Scope, install
from np2torch.runtime import sites

if TYPE_CHECKING:
    import importlib.machinery

    from np2torch.run.at_exit import ReportPlan
    from np2torch.run.program import Program

ENV = "NP2TORCH_RUN"
BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap")


class Run:
    """What one ``np2torch run`` is, the same in every process of the program."""

    def __init__(self, scope: Scope, overrides: Overrides, config_path: str | None, spool: str | None,
                 owner: int, cache: bool = True) -> None:
        self.scope = scope
        self.overrides = overrides
        self.config_path = config_path
        self.spool = spool
        """Where processes other than the owner leave their counts (None: children are not followed)."""
        self.owner = owner
        """The pid of the ``np2torch run`` process, which writes the report."""
        self.cache = cache
        self.rewriter = Rewriter(scope, overrides, config_path, cache=cache)
        self.rewriter.notify = os.getpid() == owner  # a child's files were the parent's to say
        self.report: ReportPlan | None = None
        """What the owner reports and where (``mode``, ``file``, ``command``, ``started``): the owner's process
        reports from it when the program replaced it with ``os.exec*``."""

    def as_environment(self) -> str:
        overrides = self.overrides
        return json.dumps({
            "scope": self.scope.as_dict(), "config": self.config_path, "spool": self.spool, "owner": self.owner,
            "cache": self.cache, "report": self.report,
            "overrides": {"select": overrides.select, "ignore": list(overrides.ignore),
                          "extend_select": list(overrides.extend_select), "unsafe_fixes": overrides.unsafe_fixes},
        })

    @classmethod
    def from_environment(cls, text: str) -> Run:
        data = json.loads(text)
        raw = data["overrides"]
        select = tuple(raw["select"]) if raw["select"] is not None else None
        unsafe = raw["unsafe_fixes"]
        overrides = Overrides(select=select, ignore=tuple(raw["ignore"]), extend_select=tuple(raw["extend_select"]),
                              unsafe_fixes=None if unsafe is None else bool(unsafe))
        run = cls(Scope.from_dict(data["scope"]), overrides, data["config"], data["spool"], int(data["owner"]),
                  bool(data.get("cache", True)))
        run.report = data.get("report")
        return run


_CURRENT: List[Run] = []


def current() -> Run | None:
    return _CURRENT[0] if _CURRENT else None


def activate(run: Run) -> None:
    """Install ``run``'s hook in this process (once), and what follows the program into its children."""
    if _CURRENT:
        return
    _CURRENT.append(run)
    finder = install(run.rewriter)
    _rewrite_run_path(run)
    pool = sys.modules.get("multiprocessing.pool")
    if pool is not None:
        patch_pool(pool)
    else:
        finder.after_import["multiprocessing.pool"] = patch_pool
    if run.spool is not None:
        os.register_at_fork(after_in_child=_forked)
        if os.getpid() != run.owner:
            import atexit

            atexit.register(flush)
            if "--multiprocessing-fork" in sys.argv:
                # A spawned multiprocessing child (its after-fork hooks do not run: SpawnProcess._after_fork does
                # nothing): flush from its finalizers, before the interpreter ends.
                _multiprocessing_child(None)


def follow_children(run: Run) -> None:
    """Start every Python child of this process under ``run`` (environment inherited by ``subprocess`` and
    ``multiprocessing``)."""
    os.environ[ENV] = run.as_environment()
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = BOOTSTRAP if not path else BOOTSTRAP + os.pathsep + path


def activate_from_environment() -> None:
    """A child's start-up (the bootstrap ``sitecustomize``): the run its parent described, if any; a child
    that runs a script or ``-m`` module of the program runs it from here, rewritten, and ends here."""
    text = os.environ.get(ENV)
    if not text:
        return
    try:
        run = Run.from_environment(text)
    except (ValueError, KeyError, TypeError) as exc:
        print(f"np2torch run: {ENV} is not a run description ({exc}); this process runs unchanged", file=sys.stderr)
        return
    activate(run)
    program = _main_program(run)
    if program is not None:
        _run_and_exit(program, run)


def _main_program(run: Run) -> Program | None:
    """The script or module this interpreter is about to run, when it is the program's and runs as a file
    would (not ``-c``, stdin, a folder or zip, nor interactively); None otherwise."""
    from np2torch.run.program import Program

    argv, original = list(sys.argv), list(getattr(sys, "orig_argv", ()))
    if sys.flags.interactive or sys.flags.inspect or not argv or not original:
        return None
    tail = argv[1:]
    if len(original) < len(tail) + 2 or (tail and original[-len(tail):] != tail):
        return None
    before = original[: len(original) - len(tail)]
    if argv[0] == "-m":
        module = before[-1][2:] if before[-1].startswith("-m") and len(before[-1]) > 2 else before[-1]
        if before[-1] == module and (len(before) < 3 or before[-2] != "-m"):
            return None
        spec = _spec(module)
        if spec is None or spec.origin is None or run.scope.covers(spec.origin) is None:
            return None
        return Program(None, module, tuple(tail))
    script = argv[0]
    if before[-1] != script or not script.endswith(".py") or not os.path.isfile(script):
        return None
    if run.scope.covers(os.path.abspath(script)) is None:
        return None
    return Program(script, None, tuple(tail))


def _spec(module: str) -> importlib.machinery.ModuleSpec | None:
    import importlib.util

    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None


def _run_and_exit(program: Program, run: Run) -> None:
    """Run the child's program now, then end the interpreter as it would have ended after it: non-daemon
    threads joined, ``atexit`` handlers run, streams flushed, the same exit status."""
    import atexit
    import threading

    from np2torch.run.program import execute

    outcome: Dict[str, Optional[int]] = {"status": None}
    before: Callable[[], None] = _nothing
    if os.getpid() == run.owner and run.report is not None:  # the run's own process, the program exec'd itself
        from np2torch.run.at_exit import after_exec

        before = after_exec(run, outcome, flush)
    try:
        status = execute(program, run.rewriter, before=before, starting=True)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    outcome["status"] = status
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(status)


def _nothing() -> None:
    pass


def _exit_status(code: object) -> int:
    """What the interpreter makes of ``SystemExit(code)``, printing a non-integer code as it does."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF  # as the process exit status keeps it
    try:
        print(code, file=sys.stderr)
    except (OSError, ValueError):
        pass
    return 1


# -- counts from children --------------------------------------------------------------------------------


_FLUSHING = [threading.Lock()]
"""Held while this process writes its counts (threads of a worker may flush at once)."""


def flush() -> None:
    """Write this process's counts to the run's spool folder (the whole record, so writing twice is harmless)."""
    run = current()
    if run is None or run.spool is None or os.getpid() == run.owner:
        return
    with _FLUSHING[0]:
        sites.mark()
        _write_counts(run)


def _write_counts(run: Run) -> None:
    assert run.spool is not None
    records = sites.snapshot()
    if not any(record["bands"] for record in records) and not run.rewriter.skipped:
        return
    rewriter = run.rewriter
    payload = {"sites": records, "skipped": [item.as_dict() for item in rewriter.skipped], "files": rewriter.digests,
               "rewrite": {"compiled": rewriter.compiled, "cached": rewriter.cache_hits}}
    try:
        os.makedirs(run.spool, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=run.spool, prefix=".tmp-")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(payload, file)
        os.replace(temporary, os.path.join(run.spool, f"{os.getpid()}.json"))
    except OSError:
        pass  # the report then lacks this child's counts; the program is not to fail for it


def _forked() -> None:
    """A forked child counts its own calls from zero, and leaves them in the spool when it ends."""
    _FLUSHING[0] = threading.Lock()
    sites.after_fork_in_child()
    run = current()
    if run is not None:
        run.rewriter.after_fork_in_child()
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.register_after_fork(_AFTER_FORK_KEY, _multiprocessing_child)


class _Key:
    """multiprocessing keeps its after-fork callbacks in a weak dictionary: this object keeps ours alive."""


_AFTER_FORK_KEY = _Key()


def _multiprocessing_child(_key: object) -> None:
    import multiprocessing.util

    multiprocessing.util.Finalize(None, flush, exitpriority=100)


def patch_pool(module: types.ModuleType) -> None:
    """``multiprocessing.pool``, as it is imported: its workers flush their counts before they send each result.

    A pool ends its workers with SIGTERM when it is terminated (the end of
    ``with Pool()``), right after the last result arrives; a worker killed so
    runs no finalizer, and a SIGTERM handler would not even run in a worker
    waiting for a task (the wait is not interrupted: ``terminate`` would hang).
    Flushing before each result is sent means the counts of every call whose
    result the parent has are written.  Only when the worker made calls since
    its last flush; ``Pool`` takes its worker function from the module when it
    starts a worker, and a spawned child unpickles it from there.
    """
    original = getattr(module, "worker", None)
    if original is None or getattr(original, "__np2torch__", False):
        return

    def worker(inqueue: Any, outqueue: Any, *args: Any, **kwargs: Any) -> Any:
        put = outqueue.put

        def put_after_flush(obj: object) -> None:
            if sites.calls_since_mark():
                flush()
            put(obj)

        outqueue.put = put_after_flush
        return original(inqueue, outqueue, *args, **kwargs)

    worker.__np2torch__ = True  # type: ignore[attr-defined]
    worker.__wrapped__ = original  # type: ignore[attr-defined]
    worker.__name__, worker.__qualname__, worker.__module__ = original.__name__, original.__qualname__, module.__name__
    module.worker = worker  # type: ignore[attr-defined]


# -- runpy.run_path -------------------------------------------------------------------------------------


def _rewrite_run_path(run: Run) -> None:
    """``runpy.run_path`` of one of the program's ``.py`` files runs its instrumented code (multiprocessing
    runs a script's ``__mp_main__`` so in its spawned children): the code is what ``runpy._get_code_from_file``
    returns, so everything else -- the module's attributes, ``sys.argv[0]``, the ``<frozen runpy>`` frames of a
    traceback, the file named as the caller spelled it -- is ``run_path``'s own."""
    import runpy

    original: Callable[..., object] | None = getattr(runpy, "_get_code_from_file", None)
    if original is None or getattr(original, "__np2torch__", False):
        return

    def get_code_from_file(*args: object) -> object:
        # (run_name, fname) -> (code, fname) before Python 3.12; (fname) -> code from 3.12 on
        fname = args[-1]
        code = _code_of(run, fname)
        if code is None:
            return original(*args)
        return (code, fname) if len(args) == 2 else code

    get_code_from_file.__np2torch__ = True  # type: ignore[attr-defined]
    get_code_from_file.__wrapped__ = original  # type: ignore[attr-defined]
    runpy._get_code_from_file = get_code_from_file  # type: ignore[attr-defined]


def _code_of(run: Run, path_name: object) -> types.CodeType | None:
    """The instrumented code of one of the program's ``.py`` files, compiled under the name it was given as."""
    if not isinstance(path_name, (str, os.PathLike)):
        return None  # os.fspath's TypeError, before it is called
    try:
        path = os.fspath(path_name)
    except TypeError:
        return None
    if not isinstance(path, str) or not path.endswith(".py") or not os.path.isfile(path):
        return None
    included = run.scope.covers(path)
    if included is None:
        return None
    try:
        with open(path, "rb") as file:
            source = file.read()
    except OSError:
        return None
    return run.rewriter.code_for(os.path.abspath(path), source, included, filename=path)
