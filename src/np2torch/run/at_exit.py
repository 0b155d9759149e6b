"""What the run's own process does at its exit: the children's counts gathered from the spool folder, the
report written (``--report-file``) and printed (``--report``) -- after the program's ``atexit`` handlers,
whether the process is the one ``np2torch run`` started or the image a program that exec'd itself became."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import stat
import sys
import time
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Protocol, Sequence, TypedDict

from np2torch.cli.files import replace_file
from np2torch.run import report as _report

if TYPE_CHECKING:
    from np2torch.run.hook import Rewriter


class ReportPlan(TypedDict):
    """What the run's own process reports and where (``Run.report``)."""

    mode: str
    file: Optional[str]
    command: List[str]
    started: float


class Run(Protocol):
    """What the exit reads of the run (:class:`np2torch.run.children.Run`)."""

    owner: int
    spool: str | None
    report: ReportPlan | None
    rewriter: Rewriter


def after_exec(run: Run, outcome: Dict[str, Optional[int]], flush: Callable[[], None]) -> Callable[[], None]:
    """The ``before`` of the run's own process once the program replaced it (``os.execv`` of itself, as a
    reloader does): it reports at exit as ``np2torch run`` would have, from the run's description (the counts
    of the image it replaced are gone with it); a child it forks ``flush``es its counts instead."""
    described = run.report
    assert described is not None  # the caller's condition

    def report_at_exit() -> None:
        if os.getpid() != run.owner:
            flush()
            return
        report(run, described["mode"], described["file"], described["command"], time.time() - described["started"],
               outcome["status"])

    def before() -> None:  # as main's: after the program's atexit handlers, it reports
        atexit.register(report_at_exit)

    return before


def report(run: Run, mode: str, path: str | None, command: Sequence[str], wall: float, status: int | None) -> None:
    """Gather the children's counts from the spool (and remove it), then write the report to ``path`` (if any)
    and print it on stderr as ``mode`` says (``text``, ``json`` or ``none``)."""
    from np2torch.runtime import sites  # NumPy loads with the program, not before

    records = sites.snapshot()
    skipped = [item.as_dict() for item in run.rewriter.skipped]
    files = dict(run.rewriter.digests)
    rewrite = {"compiled": run.rewriter.compiled, "cached": run.rewriter.cache_hits}
    if run.spool:
        for name in sorted(os.listdir(run.spool)) if os.path.isdir(run.spool) else ():
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(run.spool, name), encoding="utf-8") as file:
                    data = json.load(file)
            except (OSError, ValueError):
                continue
            records += data.get("sites", [])
            skipped += data.get("skipped", [])
            files.update(data.get("files", {}))
            for name, count in data.get("rewrite", {}).items():
                rewrite[name] = rewrite.get(name, 0) + int(count)
        shutil.rmtree(run.spool, ignore_errors=True)
    built = _report.build(["np2torch", "run", *command], wall, records, skipped, files, status, rewrite,
                         torch_imported="torch" in sys.modules)
    if path:
        try:
            _write(path, _report.dump(built) + "\n")
        except OSError as exc:
            _say(f"np2torch run: cannot write {path}: {exc.strerror or exc}")
    if mode != "none":
        _say(_report.text(built) if mode == "text" else _report.dump(built))


def _say(text: str) -> None:
    """``text`` on the process's own stderr, after what the program wrote: never into a stream the program put
    in ``sys.stderr`` (its log file), nor an error of the program's when it closed it."""
    _flush_program()
    stream = sys.__stderr__
    try:
        if stream is not None:
            print(text, file=stream, flush=True)
    except (OSError, ValueError):
        pass


def _flush_program() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


def _write(path: str, text: str) -> None:
    """The report at ``path``: after the program's output when it is the program's stdout or stderr
    (``/dev/stdout``, redirected to a file or not); written through a FIFO or a device, which is never replaced;
    else atomically (a temporary file beside it, then ``os.replace``), the file a symbolic link names (the link
    stays)."""
    try:
        st = os.stat(path)
    except OSError:
        st = None  # a new file; anything else fails below with its own error
    ours = st is not None and any(_same_file(st, fd) for fd in (1, 2))
    if ours or (st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)):
        _flush_program()
        with open(path, "a" if ours else "w", encoding="utf-8") as file:
            file.write(text)
        return
    replace_file(os.path.realpath(path), text.encode("utf-8"))


def _same_file(st: os.stat_result, fd: int) -> bool:
    try:
        return os.path.samestat(st, os.fstat(fd))
    except OSError:
        return False
