"""Run a script or a module as ``python`` would, in this process, as ``__main__``.

``sys.argv``, ``sys.path[0]``, ``__main__``'s attributes (``__file__``,
``__spec__``, ``__loader__``, ``__package__``, ``__cached__``), uncaught
exceptions (printed by ``sys.excepthook`` with a traceback that starts at the
program, exit status 1), ``SystemExit`` (passed on as it is, so Python prints
and exits as it would) and ``KeyboardInterrupt`` (the process then dies of
SIGINT, as Python's does) are what plain ``python SCRIPT`` / ``python -m
MODULE`` give.  ``atexit`` handlers and non-daemon threads are the
interpreter's own: the program's run before np2torch's report is written.
"""

from __future__ import annotations

import atexit
import builtins
import importlib.machinery
import os
import runpy
import signal
import sys
import types
from dataclasses import dataclass
from typing import Callable

from np2torch.run.hook import Rewriter


class ProgramError(Exception):
    """The script cannot be read; ``code`` is the exit status Python gives."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Program:
    """``python SCRIPT ARGS`` (``module`` None) or ``python -m MODULE ARGS`` (``script`` None)."""

    script: str | None
    module: str | None
    args: tuple[str, ...]

    @property
    def command(self) -> list[str]:
        return (["-m", self.module] if self.module else [self.script or ""]) + list(self.args)

    def folder(self) -> str:
        """The folder the program belongs to: the script's, or the working directory for a module."""
        return os.path.dirname(os.path.abspath(self.script)) if self.script else os.getcwd()


_INTERRUPTED: list[bool] = []


def _die_of_sigint() -> None:
    if _INTERRUPTED:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)


def execute(program: Program, rewriter: Rewriter, before: Callable[[], None] = lambda: None,
            starting: bool = False) -> int:
    """Run ``program`` with ``rewriter`` (its hook already installed); returns its exit status.

    A ``SystemExit`` from the program propagates (the caller lets it reach the
    interpreter).  ``before`` is called once the program's ``__main__`` is in
    place, right before its first line runs.  ``starting``: the interpreter is
    still starting up (a child's ``sitecustomize``), so the program's folder is
    put in front of ``sys.path`` rather than in place of np2torch's.
    """
    atexit.register(_die_of_sigint)  # registered first, so it runs last: after the report
    main = types.ModuleType("__main__")
    namespace = main.__dict__
    namespace["__annotations__"] = {}
    namespace["__builtins__"] = builtins
    if program.script is not None:
        code = _script(program.script, rewriter, namespace)
        sys.argv[:] = [program.script, *program.args]
        _first_path(os.path.dirname(os.path.realpath(program.script)), starting)
    else:
        assert program.module is not None
        _first_path(os.getcwd(), starting)
        sys.argv[:] = ["-m", *program.args]
    if not starting and hasattr(sys, "orig_argv"):  # a child's is its own already
        sys.orig_argv[:] = python_orig_argv(program, sys.orig_argv)
    previous_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    before()
    try:
        if program.module is None:
            exec(code, namespace)
        else:
            # What `python -m` itself calls (its frames are in the traceback of an uncaught exception): it
            # finds the module through the import system, so through np2torch's hook, and runs it in
            # sys.modules["__main__"]; a module it cannot find is its one line on stderr and exit status 1.
            runpy._run_module_as_main(program.module, alter_argv=True)  # type: ignore[attr-defined]
    except SystemExit:
        raise
    except BaseException as exc:
        _print_uncaught(exc)
        if isinstance(exc, KeyboardInterrupt):
            _INTERRUPTED.append(True)
        return 1
    finally:
        _REPLACED.append(previous_main)  # np2torch's entry module stays alive until the interpreter ends
    return 0


_REPLACED: list[types.ModuleType | None] = []

_OPTIONS_WITH_VALUE = ("-W", "-X", "--check-hash-based-pycs")
"""The interpreter's options that take the next word as their value."""


def python_orig_argv(program: Program, original: list[str]) -> list[str]:
    """``sys.orig_argv`` of ``python [OPTIONS] SCRIPT|-m MODULE ARGS``: the interpreter and its options from
    ``original`` (this process's), then the program's command line; np2torch's entry point and options left out."""
    index = 1
    while index < len(original):
        word = original[index]
        if word.startswith("-m") or not word.startswith("-") or word == "-":
            break
        index += 2 if word in _OPTIONS_WITH_VALUE else 1
    return original[:index] + program.command


def _first_path(folder: str, starting: bool) -> None:
    """The program's folder first on ``sys.path``, in place of np2torch's own entry, as ``python`` puts it
    there; nowhere under ``-P``/``PYTHONSAFEPATH``, which tells python to put it nowhere (nor np2torch's)."""
    if sys.flags.safe_path:
        return
    if starting:
        sys.path.insert(0, folder)
    else:
        sys.path[0] = folder


def _script(path: str, rewriter: Rewriter, namespace: dict[str, object]) -> types.CodeType:
    absolute = os.path.abspath(path)
    if os.path.isdir(absolute):
        raise ProgramError(f"{path}: a folder; run a package with -m", 2)
    try:
        with open(absolute, "rb") as file:
            source = file.read()
    except OSError as exc:
        raise ProgramError(f"can't open file {absolute!r}: [Errno {exc.errno}] {exc.strerror}", 2) from None
    namespace.update(__file__=absolute, __cached__=None, __package__=None, __spec__=None,
                     __loader__=importlib.machinery.SourceFileLoader("__main__", absolute))
    included = rewriter.scope.covers(absolute)
    code = None if included is None else rewriter.code_for(absolute, source, included)
    if code is None:
        try:
            code = compile(source, absolute, "exec", dont_inherit=True)
        except SyntaxError as exc:
            _print_uncaught(exc)
            raise SystemExit(1) from None
    return code


def _print_uncaught(exc: BaseException) -> None:
    """What the interpreter prints for an uncaught exception: the traceback from the program's first frame."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)

