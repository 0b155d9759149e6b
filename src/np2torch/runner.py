"""Runs ``check``/``fix`` over files: bytes in, findings and rewritten files out.

The CLI (``cli.py``) parses options and prints; this module reads each file,
hands its text to the engine and writes the result back.  Every per-file
failure becomes a one-line message in :attr:`FileResult.errors`; nothing here
lets an exception escape for a single bad file.
"""

from __future__ import annotations

import functools
import os
import traceback
from dataclasses import dataclass, field
from typing import Any, Sequence

from np2torch.config import RunSettings
from np2torch.files import FileError, Source, Stamp, Target, decode_source, read_bytes, write_atomic
from np2torch.output import sort_key, unified_diff
from np2torch.rules import RULES_BY_CODE, Rule

CHECK, FIX, DIFF = "check", "fix", "diff"


@dataclass
class FileResult:
    display: str
    findings: list[Any] = field(default_factory=list)
    """``check``: the findings; ``fix``: those left after fixing (positions in the fixed text)."""
    errors: list[str] = field(default_factory=list)
    fixed: int = 0
    changed: bool = False
    """``fix``: the file was rewritten; ``--diff``: it would be."""
    diff: str = ""


@dataclass(frozen=True)
class Job:
    """One file's work, small enough to send to a worker process."""

    display: str
    path: str
    source: Source
    stamp: Stamp
    settings: RunSettings
    mode: str


# ---------------------------------------------------------------- the engine, loaded lazily


@functools.lru_cache(maxsize=None)
def _rules(codes: tuple[str, ...]) -> tuple[Rule, ...]:
    return tuple(RULES_BY_CODE[code] for code in codes)


@functools.lru_cache(maxsize=None)
def engine_settings(settings: RunSettings) -> Any:
    from np2torch import engine

    kwargs: dict[str, Any] = {"rules": _rules(settings.codes)}
    if settings.runtime_module is not None:
        kwargs["runtime_module"] = settings.runtime_module
    if settings.alias is not None:
        kwargs["alias"] = settings.alias
    return engine.Settings(**kwargs)


def might_have_findings(text: str, settings: RunSettings) -> bool:
    """False only when no finding is possible; the engine's own prefilter, so the two cannot disagree."""
    from np2torch import engine

    return engine._may_contain(text, _rules(settings.codes))


# ---------------------------------------------------------------- one file


def _internal_error(display: str, exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    line = f"{display}: internal error: {type(exc).__name__}" + (f": {message}" if message else "")
    if os.environ.get("NP2TORCH_DEBUG"):
        line += "\n" + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
    return line


def _source_error(display: str, exc: Any) -> str:
    where = display
    if getattr(exc, "line", None) is not None:
        where += f":{exc.line}"
        if getattr(exc, "column", None) is not None:
            where += f":{exc.column}"
    return f"{where}: error: {exc}"


def run_job(job: Job) -> FileResult:
    """Check (and fix) one decoded file. Never raises for a problem with the file."""
    try:
        return _run_job(job)
    except FileError as exc:
        return FileResult(job.display, errors=[str(exc)])
    except Exception as exc:  # a bug in np2torch: name it, keep going with the other files
        return FileResult(job.display, errors=[_internal_error(job.display, exc)])


def _run_job(job: Job) -> FileResult:
    from np2torch import engine

    settings = engine_settings(job.settings)
    text = job.source.text
    try:
        findings = engine.check_source(text, job.display, settings=settings)
    except engine.SourceError as exc:
        return FileResult(job.display, errors=[_source_error(job.display, exc)])
    result = FileResult(job.display, findings=sorted(findings, key=sort_key))
    if job.mode == CHECK or not any(f.fixable for f in findings):
        return result
    try:
        fixed = engine.fix_source(text, job.display, settings=settings)
        remaining = engine.check_source(fixed, job.display, settings=settings) if fixed != text else findings
    except (engine.FixError, engine.SourceError) as exc:
        result.errors.append(f"{job.display}: error: fix not applied, file left untouched: {exc}")
        return result
    if fixed == text:
        return result
    result.findings = sorted(remaining, key=sort_key)
    result.fixed = max(0, sum(f.fixable for f in findings) - sum(f.fixable for f in remaining))
    result.changed = True
    if job.mode == DIFF:
        result.diff = unified_diff(job.display, text, fixed)
        result.findings = sorted(findings, key=sort_key)
        return result
    try:
        data = job.source.encode(fixed)
    except UnicodeEncodeError as exc:
        raise FileError(job.display, f"fix not applied: the fixed text cannot be encoded as {exc.encoding}") from None
    write_atomic(job.path, data, job.display, expect=job.stamp)
    return result


# ---------------------------------------------------------------- many files


def prepare(target: Target, settings: RunSettings, mode: str) -> Job | FileResult:
    """Read and decode one file: a :class:`Job` for the engine, or a finished :class:`FileResult`."""
    try:
        raw, stamp = read_bytes(target.path, target.display)
        source = decode_source(raw, target.display)
    except FileError as exc:
        return FileResult(target.display, errors=[str(exc)])
    if not settings.codes or not might_have_findings(source.text, settings):
        return FileResult(target.display)
    return Job(target.display, target.path, source, stamp, settings, mode)


def run_all(jobs: Sequence[Job]) -> list[FileResult]:
    return [run_job(job) for job in jobs]
