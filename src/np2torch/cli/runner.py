"""Runs ``check``/``fix`` over files: bytes in, findings and rewritten files out.

The command line (:mod:`np2torch.cli.app`) parses options and prints; this module reads
each file, hands its text to the engine once (``check_source``, or ``fix_and_check``
for ``fix`` and ``--diff``) and writes the result back.  Every per-file
failure becomes a one-line message in :attr:`FileResult.errors`; nothing here
lets an exception escape for a single bad file.

Worker processes (``--jobs``) only compute: they return the fixed bytes and the
parent writes them, so killing a worker never leaves a temporary file, and the
files a dead worker took down with it are retried once in a fresh pool.  Workers
die with the parent (see :func:`_die_with_parent`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from np2torch.cli.cache import Cache, digest
from np2torch.cli.config import RunSettings
from np2torch.cli.discovery import Target
from np2torch.cli.files import (
    FileError,
    Source,
    Stamp,
    decode_notebook,
    decode_source,
    is_notebook,
    read_bytes,
    write_atomic,
)
from np2torch.cli.output import Progress, diff_bytes, longer_lines_note, notebook_diff, sort_key
from np2torch.lint.model import INVALID_SYNTAX, IO_ERROR, Finding, FixResult, SourceError
from np2torch.lint.rules import RULES_BY_CODE

if TYPE_CHECKING:
    from concurrent.futures import Future
    from multiprocessing.context import BaseContext

CHECK, FIX, DIFF, NOQA = "check", "fix", "diff", "add-noqa"


@dataclass
class FileResult:
    """What ``check`` or ``fix`` made of one file, for the report and the cache."""

    display: str
    findings: list[Finding] = field(default_factory=list)
    """``check``: the findings; ``fix``: those left after fixing (positions in the fixed text)."""
    errors: list[str] = field(default_factory=list)
    code: str | None = None
    """The code ruff reports :attr:`errors` under (:data:`~np2torch.lint.model.NOT_ANALYSED`): ``invalid-syntax``
    (the file does not parse, has a NUL byte in code or an unknown coding, or needs a newer Python than
    ``target-version``),
    ``E902`` (it cannot be read, is not a regular file, is over the size limit, or is not in its coding: UTF-8).
    They are findings then, in the report and for the exit status; ``None``: a failure (exit 2)."""
    fixed: int = 0
    changed: bool = False
    """``fix``: the file was rewritten; ``--diff``: it would be."""
    diff: bytes = b""
    """``--diff``: the patch, in the file's own encoding (see :func:`np2torch.cli.output.diff_bytes`)."""
    fixed_codes: dict[str, int] = field(default_factory=dict)
    """``fix``/``--diff``: how many findings of each code were (or would be) fixed."""
    digest: str | None = None
    """SHA-256 of the bytes :attr:`findings` describe (the cache key); ``None``: do not cache."""
    new_bytes: bytes | None = None
    """``fix``: the bytes to write, written by the parent process (:func:`write_back`): a worker never
    writes, so a worker killed mid-run (the OOM killer) cannot leave a half-done write behind."""
    runtime_import: str | None = None
    """``fix``/``--diff``: the runtime module the fix made this file import, when it did not before."""
    warnings: list[str] = field(default_factory=list)
    """One-line warnings that do not fail the run (a file in a newer Python's syntax, skipped; a fixed file whose
    forked children's torch runs on one thread)."""


@dataclass(frozen=True)
class Job:
    """One file's work, small enough to send to a worker process."""

    display: str
    path: str
    source: Source
    stamp: Stamp | None
    """The file's stamp when it was read (``None``: stdin, never written back)."""
    settings: RunSettings
    mode: str
    digest: str
    only: frozenset[tuple[int, int, str]] | None = None
    """``fix --from-run``: rewrite only the findings at these ``(line, column, code)``."""


# ---------------------------------------------------------------- the engine, loaded lazily


def might_have_findings(text: str, settings: RunSettings) -> bool:
    """False only when no finding is possible; the engine's own prefilter, so the two cannot disagree."""
    from np2torch.lint import engine

    return engine.may_contain(text, settings.lint.rules)


# ---------------------------------------------------------------- one file


def internal_error(display: str, exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    line = f"{display}: internal error: {type(exc).__name__}" + (f": {message}" if message else "")
    if os.environ.get("NP2TORCH_DEBUG"):
        line += "\n" + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
    return line


def _source_error(display: str, exc: SourceError) -> str:
    where = display
    if exc.line is not None:
        where += f":{exc.line}"
        if exc.column is not None:
            where += f":{exc.column}"
    return f"{where}: error: {exc}"


def newer_syntax_result(display: str, needed: tuple[int, int], target: tuple[int, int] | None) -> FileResult:
    """Code valid for a newer Python than this one: skipped with a warning, or an error when the project's
    ``target-version`` says the code must run on a Python that lacks the syntax."""
    version = f"{needed[0]}.{needed[1]}"
    if target is not None and target < needed:
        return FileResult(display, errors=[f"{display}: error: uses Python {version} syntax, but target-version "
                                           f"is py{target[0]}{target[1]}"], code=INVALID_SYNTAX)
    return FileResult(display, warnings=[f"{display}: warning: needs Python >= {version} to analyse; skipped "
                                         f"(this is Python {sys.version_info[0]}.{sys.version_info[1]})"])


def failed(display: str, exc: FileError) -> FileResult:
    """A file that could not be read or decoded (a finding of the code ruff gives it), or written (a failure)."""
    return FileResult(display, errors=[str(exc)], code=exc.code)


def run_job(job: Job) -> FileResult:
    """Check (and fix) one decoded file. Never raises for a problem with the file."""
    try:
        return _run_job(job)
    except FileError as exc:
        return failed(job.display, exc)
    except Exception as exc:  # a bug in np2torch: name it, keep going with the other files
        return FileResult(job.display, errors=[internal_error(job.display, exc)])


def _check(job: Job) -> list[Finding]:
    if is_notebook(job.path):
        from np2torch.lint import notebook

        return list(notebook.check_notebook(job.source.text, job.display, settings=job.settings.lint))
    from np2torch.lint import engine

    return engine.check_source(job.source.text, job.display, settings=job.settings.lint)


def _fix(job: Job) -> FixResult:
    if is_notebook(job.path):
        from np2torch.lint import notebook

        return notebook.fix_and_check_notebook(job.source.text, job.display, settings=job.settings.lint)
    from np2torch.lint import engine

    return engine.fix_and_check(job.source.text, job.display, settings=job.settings.lint, only=job.only)


def _run_job(job: Job) -> FileResult:
    """One analysis of the file: ``check`` reports its findings, ``fix`` and ``--diff`` rewrite them."""
    from np2torch.lint import engine

    try:
        if job.mode == CHECK:
            return FileResult(job.display, findings=sorted(_check(job), key=sort_key), digest=job.digest or None)
        if job.mode == NOQA:
            return _add_noqa(job, _check(job))
        outcome = _fix(job)
    except engine.NewerSyntaxError as exc:
        return newer_syntax_result(job.display, exc.needed, job.settings.target_version)
    except engine.SourceError as exc:
        return FileResult(job.display, errors=[_source_error(job.display, exc)], code=INVALID_SYNTAX)
    except engine.FixError as exc:
        # A bug in np2torch's rewrite: the file stays as it was, and what check finds in it is still true.
        return FileResult(job.display, findings=sorted(_check(job), key=sort_key),
                          errors=[f"{job.display}: error: fix not applied, file left untouched: {exc}"])
    return _fixed(job, outcome)


def _add_noqa(job: Job, findings: Sequence[Finding]) -> FileResult:
    """``check --add-noqa``: the file with a ``# noqa`` for each finding's codes on its line; ``findings`` of the
    result are those left (no comment can go on their line), ``fixed`` the lines that got one."""
    result = FileResult(job.display, digest=job.digest or None)
    findings = _baseline(findings)
    if not findings:
        return result
    lines: dict[tuple[int, int], list[str]] = {}
    for finding in findings:
        codes = lines.setdefault((getattr(finding, "cell", 0), finding.line), [])
        if finding.code not in codes:
            codes.append(finding.code)
    text = job.source.text
    if is_notebook(job.path):
        from np2torch.lint import notebook

        new_text = notebook.add_noqa_notebook(text, lines)
    else:
        from np2torch.lint.suppress import add_noqa_lines

        try:
            new_text, _refused = add_noqa_lines(text, {line: codes for (_cell, line), codes in lines.items()})
        except ValueError:  # it parsed but does not tokenize: no comment is placed; the findings stay
            new_text = text
    left = sorted(_baseline(_check(dataclasses.replace(job, source=dataclasses.replace(job.source, text=new_text)))),
                  key=sort_key) if new_text != text else sorted(findings, key=sort_key)
    result.findings = left
    result.fixed = len(lines) - len({(getattr(f, "cell", 0), f.line) for f in left})
    if new_text != text:
        result.changed = True
        result.new_bytes = job.source.encode(new_text)
    return result


def _baseline(findings: Sequence[Finding]) -> list[Finding]:
    """The findings a baseline accepts: not NPT801's (a noqa for an unused noqa code would only hide it), as
    ruff's ``--add-noqa`` leaves RUF100 alone."""
    return [f for f in findings if not (f.code in RULES_BY_CODE and RULES_BY_CODE[f.code].is_meta)]


def _fixed(job: Job, outcome: FixResult) -> FileResult:
    text, fixed = job.source.text, outcome.text
    result = FileResult(job.display, findings=sorted(outcome.findings, key=sort_key), digest=job.digest or None)
    if fixed == text:
        return result
    result.findings = sorted(outcome.remaining, key=sort_key)
    result.fixed = len(outcome.fixed)
    result.fixed_codes = count_by_code(outcome.fixed)
    result.changed = True
    note = longer_lines_note(job.display, text, fixed, job.settings.lint.import_order.line_length)
    if note is not None:
        result.warnings.append(note)
    runtime_module = job.settings.lint.runtime_module
    statement = f"import {runtime_module}"
    if fixed.count(statement) > text.count(statement):
        result.runtime_import = runtime_module
        _notice_forks(result, text)
    try:
        new_bytes = job.source.encode(fixed)
    except UnicodeEncodeError as exc:
        raise FileError(job.display, f"fix not applied: the fixed text cannot be encoded as {exc.encoding}") from None
    if job.mode == DIFF:
        result.diff = _diff(job, fixed, new_bytes)
        result.findings = sorted(outcome.findings, key=sort_key)
        return result
    result.new_bytes = new_bytes
    return result


def _diff(job: Job, fixed: str, new_bytes: bytes) -> bytes:
    """``--diff``'s patch of the file: a notebook's is one per code cell, from the cells' sources, as ruff's."""
    name = diff_name(job.display)
    if not is_notebook(job.path):
        return diff_bytes(name, job.source.encode(job.source.text), new_bytes)
    from np2torch.lint.notebook import cell_sources

    before, after = cell_sources(job.source.text), cell_sources(fixed)
    return notebook_diff(name, [(number, source, after[number]) for number, source in before.items()])


def diff_name(display: str) -> str | None:
    """The name ruff's ``--diff`` heads a file's patch with (its ``relativize_path``): the path relative to the
    working directory when the file is below it, else absolute; none for stdin without ``--stdin-filename``."""
    if display == "-":
        return None
    absolute = os.path.abspath(display)
    relative = os.path.relpath(absolute)
    return absolute if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def _notice_forks(result: FileResult, text: str) -> None:
    """The file now imports the runtime: when it imports torch and starts processes, its forked children's torch
    runs on one thread; one line says so."""
    from np2torch.lint.forks import NOTICE, forks_with_torch

    how = forks_with_torch(text)
    if how is not None:
        result.warnings.append(f"{result.display}: note: {NOTICE.format(how=how)}")


def write_back(job: Job, result: FileResult) -> FileResult:
    """Write a fix's bytes (in the parent process); a failed write is the file's error."""
    data, result.new_bytes = result.new_bytes, None
    if data is None:
        return result
    try:
        write_atomic(job.path, data, job.display, expect=job.stamp)
    except FileError as exc:
        return failed(job.display, exc)
    except Exception as exc:  # a bug in np2torch: name it, keep going with the other files
        return FileResult(job.display, errors=[internal_error(job.display, exc)])
    result.digest = digest(data) if job.digest else None
    return result


def count_by_code(findings: Sequence[Finding]) -> dict[str, int]:
    """How many of ``findings`` each code has, codes in order."""
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.code] = counts.get(finding.code, 0) + 1
    return dict(sorted(counts.items()))


# ---------------------------------------------------------------- many files


def prepare(target: Target, settings: RunSettings, mode: str,
            only: frozenset[tuple[int, int, str]] | None = None,
            indexed: Callable[[str, RunSettings], RunSettings] | None = None) -> Job | FileResult:
    """Read and decode one file: a :class:`Job` for the engine, or a finished :class:`FileResult`
    (``indexed``: the settings with the project index's answer for a file that may have a finding,
    :meth:`np2torch.cli.index.ProjectIndex.settings`)."""
    try:
        raw, stamp = read_bytes(target.path, target.display)
    except FileError as exc:
        return failed(target.display, exc)
    try:
        source = (decode_notebook if is_notebook(target.path) else decode_source)(raw, target.display)
    except FileError as exc:
        return _undecoded(target, exc, mode)
    if not settings.codes:
        return FileResult(target.display)
    if is_notebook(target.path):
        # Names inside the JSON may be escaped, so the text prefilter runs on the cells (in the engine).
        # No cache key: the cache stores plain findings, a notebook's carry their cell.
        settings = settings if indexed is None else indexed(target.path, settings)
        return Job(target.display, target.path, source, stamp, settings, mode, "", only)
    if not might_have_findings(source.text, settings):
        return FileResult(target.display)
    if indexed is not None:
        settings = indexed(target.path, settings)
    return Job(target.display, target.path, source, stamp, settings, mode, digest(raw), only)


def _undecoded(target: Target, exc: FileError, mode: str) -> FileResult:
    """A file read but not decoded; ``--add-noqa`` names one that is not UTF-8 on stderr as ruff's does (its
    add-noqa reads the file apart from the check, and logs the failure where the check reports none)."""
    result = failed(target.display, exc)
    if mode == NOQA and exc.code == IO_ERROR:
        result.warnings.append(f"error: Failed to extract source from {os.path.abspath(target.path)}: {exc.message}")
    return result


def _from_cache(cache: Cache, job: Job) -> FileResult | None:
    """The cached result when it answers the job whole: ``check`` always, ``fix`` when nothing is fixable,
    ``--add-noqa`` when there is nothing."""
    if not job.digest:
        return None
    entries = cache.get(job.path, job.settings, job.digest, job.only)
    findings = None if entries is None else cached_findings(entries, job.display)
    if findings is None or (job.mode != CHECK and any(f.fixable for f in findings)):
        return None
    if job.mode == NOQA and findings:
        return None
    return FileResult(job.display, findings=sorted(findings, key=sort_key), digest=job.digest)


def cached_findings(entries: Sequence[object], display: str) -> list[Finding] | None:
    """The findings a cache entry describes, or ``None`` (a miss) unless every field has its type.

    The cache may only ever cost speed: an entry written by another tool, edited, or torn on a
    disk that lies about fsync must not reach the output as a wrong position or a crash.
    """
    hints = _finding_fields()
    findings = []
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) != set(hints):
            return None
        if not all(_has_type(entry[name], hint) for name, hint in hints.items()):
            return None
        findings.append(Finding(path=display, **entry))
    return findings


@functools.lru_cache(maxsize=None)
def _finding_fields() -> dict[str, object]:
    """The cached fields of a finding (all but ``path``) and their types."""
    import typing

    hints = typing.get_type_hints(Finding)
    return {f.name: hints[f.name] for f in dataclasses.fields(Finding) if f.name != "path"}


def _has_type(value: object, hint: object) -> bool:
    import typing

    if hint is bool or hint is int:  # True is an int to isinstance, and never a line number
        return type(value) is hint and (hint is bool or value >= 0)
    if hint is str:
        return isinstance(value, str)
    options = typing.get_args(hint)
    if type(None) in options:
        return value is None or any(_has_type(value, option) for option in options if option is not type(None))
    return False  # a field type this check does not know: rather a miss than a guess


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# A worker pays for itself once it has a few files to analyse (fork is cheap, the engine is already
# imported); rough, noisy estimate on a shared 2-core machine: ~4 files of typical size.
MIN_FILES_PER_WORKER = 4


def workers_for(jobs: int, files: int) -> int:
    """How many worker processes to start for ``files`` files needing the engine; 0 or 1: none."""
    return min(jobs, files // MIN_FILES_PER_WORKER)


def _pool_context() -> BaseContext:
    """fork where it is safe (Linux, no torch loaded: the CLI never imports it, so there are no native
    threads), which lets workers inherit the imported engine; spawn everywhere else (macOS, or a
    caller of this API that has torch and its thread pools loaded)."""
    import multiprocessing

    if sys.platform.startswith("linux") and "torch" not in sys.modules:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


# prctl(2) option: the signal a process gets when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1
# How often a worker without PR_SET_PDEATHSIG checks that its parent is still alive.
WATCHDOG_INTERVAL_S = 0.5


def _die_with_parent(parent: int) -> None:
    """Worker initializer: a worker never outlives the process that started it.

    A killed parent (SIGKILL, or SIGTERM from a supervisor or ``subprocess.run(timeout=)``)
    runs no cleanup, and forked workers hold their own copy of the call queue's write end, so they
    would wait on it for ever, keeping stdout open (``np2torch fix . | cat`` never ends).
    """
    if not _parent_death_signal():
        _start_watchdog(parent)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def _parent_death_signal() -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _start_watchdog(parent: int) -> None:
    import threading

    def watch() -> None:
        while os.getppid() == parent:  # an orphan is adopted: its parent pid changes
            time.sleep(WATCHDOG_INTERVAL_S)
        os._exit(1)

    threading.Thread(target=watch, name="np2torch-parent-watchdog", daemon=True).start()


def _run_pool(jobs: Sequence[Job], workers: int, progress: Progress | None) -> list[FileResult]:
    """Every job's result. A dead worker (the OOM killer, a crash in native code) breaks its whole pool,
    failing every job the pool had not finished: those are retried in a fresh pool, and what that loses
    too is run one job per pool, so that only a file that kills its worker on its own is an error."""
    results, lost = _pool_round(jobs, workers, progress)
    if lost:
        retried, lost = _pool_round(lost, min(workers, len(lost)), progress)
        results += retried
    for job in lost:
        alone, still_lost = _pool_round([job], 1, progress)
        results += alone
        if still_lost:
            results.append(FileResult(job.display, errors=[
                f"{job.display}: internal error: a worker process died checking it, 3 times (the last on its own)"]))
            if progress is not None:
                progress.advance()
    return results


def _pool_round(jobs: Sequence[Job], workers: int, progress: Progress | None) -> tuple[list[FileResult], list[Job]]:
    """The results of one pool, and the jobs it lost when a worker died."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    if any(job.mode != CHECK for job in jobs):
        import libcst  # noqa: F401  imported once here rather than once per worker

    results: list[FileResult] = []
    lost: list[Job] = []
    # Longest files first so that no worker is left with a big one at the end.
    ordered = sorted(jobs, key=lambda job: len(job.source.text), reverse=True)
    with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context(),
                             initializer=_die_with_parent, initargs=(os.getpid(),)) as pool:
        futures: dict[Future[FileResult], Job] = {}
        for submitted, job in enumerate(ordered):
            try:
                futures[pool.submit(run_job, job)] = job
            except BrokenProcessPool:  # a worker died while the rest were still being handed out
                lost += ordered[submitted:]
                break
        try:
            for future in as_completed(futures):
                try:
                    results.append(write_back(futures[future], future.result()))
                except BrokenProcessPool:
                    lost.append(futures[future])
                    continue
                if progress is not None:
                    progress.advance()
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return results, lost


def _run_jobs(pending: Sequence[Job], jobs: int, progress: Progress | None) -> list[FileResult]:
    workers = workers_for(jobs, len(pending))
    if workers >= 2:
        return _run_pool(pending, workers, progress)
    done = []
    for job in pending:
        done.append(write_back(job, run_job(job)))
        if progress is not None:
            progress.advance()
    return done


# Objects allocated between two collections of the youngest generation while files are analysed.
GC_THRESHOLD = 100_000


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect cycles less often while files are analysed (the worker processes fork inside and inherit it).

    A parsed module is a tree of many small objects and no cycles; with the default threshold (700) the
    collector runs over and over while ``ast.parse`` builds one, for nothing (about 15 % of a cold check's
    parse in CPU seconds; mypy raises its threshold for the same reason).  What exists before is frozen
    (never scanned again, unless the caller froze objects of its own), and both are restored after."""
    before = gc.get_threshold()
    frozen = gc.get_freeze_count() > 0  # the caller's freeze: left as it is
    if not frozen:
        gc.freeze()
    gc.set_threshold(max(before[0], GC_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if not frozen:
            gc.unfreeze()


def run(
    targets: Sequence[Target],
    settings_for: Callable[[Target], RunSettings],
    mode: str,
    *,
    jobs: int | None = None,
    cache: Cache | None = None,
    progress_factory: Callable[[int], Progress | None] | None = None,
    only_for: Callable[[Target], frozenset[tuple[int, int, str]] | None] | None = None,
    indexed: Callable[[str, RunSettings], RunSettings] | None = None,
) -> list[FileResult]:
    """Every target's result, sorted by path (``only_for``: the findings ``fix`` may rewrite in a target;
    ``indexed``: as for :func:`prepare`)."""
    results: list[FileResult] = []
    pending: list[Job] = []
    for target in targets:
        prepared = prepare(target, settings_for(target), mode, only_for(target) if only_for else None, indexed)
        if isinstance(prepared, FileResult):
            results.append(prepared)
            continue
        cached = _from_cache(cache, prepared) if cache is not None else None
        if cached is not None:
            results.append(cached)
        else:
            pending.append(prepared)

    progress = progress_factory(len(pending)) if progress_factory and pending else None
    try:
        with fewer_collections():
            done = _run_jobs(pending, jobs or default_jobs(), progress)
    finally:
        if progress is not None:
            progress.close()

    if cache is not None:
        by_display = {job.display: job for job in pending}
        for result in done:
            if result.digest is not None and not result.errors:
                job = by_display[result.display]
                cache.put(job.path, job.settings, result.digest, result.findings, job.only)
    results.extend(done)
    results.sort(key=lambda r: r.display)
    return results
