"""``np2torch fix --from-run REPORT.json``: rewrite only the call sites whose measured saving cleared a margin.

The report is what ``np2torch run --report-file`` wrote: per call site its
position, rule code, the seconds the helper saved against the original (the
medians of both arms' calls, on the user's data), the interval of that saving
and its verdict (``saves``, ``costs``, ``unsure``); per file the SHA-256 of the
bytes the run analysed.  A report may come from elsewhere, so it is read as
untrusted input: every number must be finite and of its type, every site's
file must have its digest, and without PATHS only files of the working
directory's project are fixed.  A file whose bytes changed since the run is
refused (its positions may name other code now).

A site is rewritten only when the report says it ``saves`` and its saving,
net of its warm-up, clears ``--min-saving`` (default: 10 % of the site's
original time and 1 ms over the run).  Its warm-up is its own (what its first
calls took beyond their median) plus its share of the process's one-time
work (``import torch``): a fixed program pays that once
whichever rewritten site calls first, so the sites kept share it in
proportion to their savings (:func:`decide`).  Every other finding is left as
it is, with one line saying why.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Mapping, Sequence, Tuple, TypedDict

from np2torch.cli.config import ConfigError, display_path
from np2torch.lint.rules import RULES_BY_CODE

if TYPE_CHECKING:
    from np2torch.lint.model import Finding

FORMAT = 2
"""The version of the report ``np2torch run`` writes (np2torch.run.report) and this reads."""

VERDICTS = ("saves", "costs", "unsure")
"""A site's verdict in a report: the interval of its saving is above zero, below zero, or holds zero."""

TORCH_PATHS = ("cpu", "cuda")
"""The paths of a report's site on which torch computed a helper call."""
COMPUTING_PATHS = (*TORCH_PATHS, "lean", "cores")
"""The paths of a report's site on which the helper computed a call itself: on torch, (``lean``) with
the original's own arithmetic without its overhead, or (``cores``) with the original's own loop on every core
(``numpy``: the helper ran the original's single call)."""

LEFT_OUT = "left out by the report"
"""What ``fix --from-run`` says of a site it does not rewrite (one line each, then a count)."""

NOT_CALLED = "not called in the run"
NOT_A_SITE = "it rewrites the run's call sites only"

Key = Tuple[int, int, str]
"""A site as the engine's findings place it: 1-based line and column, rule code."""

Site = Tuple[str, int, int, str]
"""A site of a report: absolute path, line, column, rule code."""


@dataclass(frozen=True)
class Margin:
    """The saving a site must show: at least ``fraction`` of its original time and ``seconds`` in all."""

    fraction: float = 0.10
    seconds: float = 1e-3

    def admits(self, saved: float, original: float) -> bool:
        return saved >= self.seconds and saved >= self.fraction * original

    def __str__(self) -> str:
        return f">= {self.fraction:.0%} of the original's time and >= {format_seconds(self.seconds)}"


_PART = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(%|s|ms|us)\s*\Z")
_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


def parse_margin(text: str) -> Margin:
    """``10%``, ``1ms``, ``10%,1ms`` (a part left out keeps its default); ``ValueError`` with one line."""
    margin = Margin()
    for part in text.split(","):
        match = _PART.match(part)
        if match is None:
            raise ValueError(f"--min-saving takes a percentage and/or a time, e.g. 10%,1ms; got {text!r}")
        number, unit = float(match.group(1)), match.group(2)
        if unit == "%":
            margin = Margin(number / 100, margin.seconds)
        else:
            margin = Margin(margin.fraction, number * _UNITS[unit])
    return margin


def computed_by_helper(paths: Mapping[str, int]) -> bool:
    """Whether the helper computed any of a site's calls itself (``paths``: calls per path): a helper that ran
    the original on every call saved nothing, whatever the timings say (their difference is noise)."""
    return any(paths.get(path) for path in COMPUTING_PATHS)


def format_seconds(value: float) -> str:
    """``1.23 s``, ``4.5 ms`` or ``67 us``: a report's figures."""
    if abs(value) >= 1:
        return f"{value:.2f} s"
    if abs(value) >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} us"


class _Malformed(ValueError):
    """One entry of a report is not what ``np2torch run`` writes (``str()``: what, in a few words)."""


_LARGEST = 2**63 - 1
_DIGEST = re.compile(r"[0-9a-f]{64}\Z")


def _whole(value: object, what: str, least: int = 0) -> int:
    if type(value) is not int or not least <= value <= _LARGEST:
        raise _Malformed(f"{what} is {_short(value)}, not a whole number >= {least}")
    return value


def _seconds(value: object, what: str, least: float = -math.inf) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and least <= value < math.inf:
        return float(value)
    raise _Malformed(f"{what} is {_short(value)}, not a finite number of seconds")


def _text(value: object, what: str) -> str:
    if type(value) is not str:
        raise _Malformed(f"{what} is {_short(value)}, not a string")
    return value


def _short(value: object) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 40 else text[:37] + "..."


def _finite(text: str) -> float:
    """A JSON number as a float; ``ValueError`` when it overflows (``1e400``)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of range")
    return value


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number")


class CheckedSite(TypedDict):
    """A report's site entry as ``fix`` reads it (:func:`_site`: checked)."""

    line: int
    col: int
    code: str
    function: str
    calls: int
    verdict: str
    paths: Dict[str, int]
    saved_s: float
    saved_low_s: float
    saved_high_s: float
    original_s: float
    warmup_s: float
    one_time_s: float


def _site(entry: object) -> Tuple[str, CheckedSite]:
    """A report's site entry, checked: its absolute path and the fields ``fix`` reads."""
    if not isinstance(entry, dict):
        raise _Malformed(f"a site is {_short(entry)}")
    where = f"site {_short(entry.get('path'))}:{_short(entry.get('line'))}"
    paths = entry.get("paths")
    if not isinstance(paths, dict):
        raise _Malformed(f"{where}: paths is {_short(paths)}")
    verdict = _text(entry.get("verdict"), f"{where}: verdict")
    if verdict not in VERDICTS:
        raise _Malformed(f"{where}: verdict is {_short(verdict)}, not one of {', '.join(VERDICTS)}")
    site: CheckedSite = {
        "line": _whole(entry.get("line"), f"{where}: line", 1), "col": _whole(entry.get("col"), f"{where}: col", 1),
        "code": _text(entry.get("code"), f"{where}: code"), "function": _text(entry.get("function"), f"{where}: function"),
        "calls": _whole(entry.get("calls"), f"{where}: calls"), "verdict": verdict,
        "paths": {_text(path, f"{where}: a path"): _whole(count, f"{where}: paths[{_short(path)}]")
                  for path, count in paths.items()},
        "saved_s": _seconds(entry.get("saved_s"), f"{where}: saved_s"),
        "saved_low_s": _seconds(entry.get("saved_low_s"), f"{where}: saved_low_s"),
        "saved_high_s": _seconds(entry.get("saved_high_s"), f"{where}: saved_high_s"),
        "original_s": _seconds(entry.get("original_s"), f"{where}: original_s", 0.0),
        "warmup_s": _seconds(entry.get("warmup_s"), f"{where}: warmup_s", 0.0),
        "one_time_s": _seconds(entry.get("one_time_s"), f"{where}: one_time_s", 0.0),
    }
    return os.path.abspath(_text(entry.get("path"), f"{where}: path")), site


@dataclass
class RunReport:
    """A report of ``np2torch run``, read for ``fix``: sites and file digests by absolute path."""

    source: str
    sites: Dict[str, List[CheckedSite]] = field(default_factory=dict)
    files: Dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str) -> RunReport:
        """Read ``path``; :class:`ConfigError` with one line when it is not a report this version reads."""
        try:
            with open(path, encoding="utf-8") as file:
                data = json.loads(file.read(), parse_float=_finite, parse_constant=_no_constant)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the run report ({exc.strerror or exc})") from None
        except (ValueError, RecursionError) as exc:
            raise ConfigError(f"{path}: not a run report (invalid JSON: {' '.join(str(exc).split())})") from None
        version = data.get("version") if isinstance(data, dict) else None
        if type(version) is int and 0 < version < FORMAT:
            raise ConfigError(f"{path}: a report of an older np2torch (version {version}, this one reads {FORMAT}): "
                              "run `np2torch run --report-file` again")
        if type(version) is not int or version != FORMAT or not isinstance(data.get("sites"), list):
            raise ConfigError(f"{path}: not a report of `np2torch run --report-file` (version {FORMAT})")
        report = cls(path)
        try:
            files = data.get("files")
            if not isinstance(files, dict):
                raise _Malformed(f"files is {_short(files)}")
            for name, digest in files.items():
                if type(digest) is not str or not _DIGEST.match(digest):
                    raise _Malformed(f"the digest of {_short(name)} is {_short(digest)}, not a SHA-256")
                report.files[os.path.abspath(name)] = digest
            for entry in data["sites"]:
                where, site = _site(entry)
                if where not in report.files:
                    raise _Malformed(f"site {_short(where)}:{site['line']} has no digest in files")
                report.sites.setdefault(where, []).append(site)
        except _Malformed as exc:
            raise ConfigError(f"{path}: a site or file entry is malformed ({exc})") from None
        return report

    def paths(self) -> List[str]:
        """The files the report measured sites in that still exist."""
        return sorted(path for path in self.sites if os.path.isfile(path))


def within(path: str, root: str) -> bool:
    """Whether the file at ``path`` lies under the folder ``root`` (links resolved)."""
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def decide(report: RunReport, margin: Margin) -> Dict[Site, str | None]:
    """Every site of the report: None when ``fix`` rewrites it, else why not (one line's reason).

    A site is a candidate when it was called, torch computed some of its calls and its verdict is ``saves``.
    The process's one-time work (``one_time_s``, over all sites) is paid once the fix keeps any candidate, so
    the kept sites share it in proportion to their savings: a candidate is kept when its saving, less its own
    warm-up and its share, clears ``margin``.  Dropping a site only grows the others' shares, so the kept set
    is found by dropping every site that fails until none does."""
    why: Dict[Site, str | None] = {}
    candidates: Dict[Site, CheckedSite] = {}
    for path, sites in report.sites.items():
        for site in sites:
            key = (path, site["line"], site["col"], site["code"])
            if not site["calls"]:
                why[key] = NOT_CALLED
            elif not computed_by_helper(site["paths"]):
                why[key] = "every helper call ran the original (torch computed none)"
            elif site["verdict"] != "saves" or site["saved_s"] <= 0:
                why[key] = (f"{site['verdict']}: saved {format_seconds(site['saved_s'])} of "
                            f"{format_seconds(site['original_s'])} over {site['calls']} calls, 95% interval "
                            f"{format_seconds(site['saved_low_s'])} to {format_seconds(site['saved_high_s'])}")
            else:
                candidates[key] = site
    one_time = sum(site["one_time_s"] for sites in report.sites.values() for site in sites)
    while True:
        total = sum(site["saved_s"] for site in candidates.values())
        failing = {}
        for key, site in candidates.items():
            share = one_time * site["saved_s"] / total
            warmup = max(0.0, site["warmup_s"] - site["one_time_s"]) + share
            if not margin.admits(site["saved_s"] - warmup, site["original_s"]):
                failing[key] = (f"saves {format_seconds(site['saved_s'])} of {format_seconds(site['original_s'])} over "
                                f"{site['calls']} calls, {format_seconds(site['saved_s'] - warmup)} net of "
                                f"{format_seconds(warmup)} of warm-up (needs {margin})")
        if not failing:
            break
        why.update(failing)
        for key in failing:
            del candidates[key]
    why.update(dict.fromkeys(candidates))
    return why


@dataclass(frozen=True)
class FilePlan:
    """One file's part of the report: the sites to rewrite (None: refused) and one line per site left out."""

    keep: frozenset[Key] | None
    lines: Tuple[str, ...] = ()
    error: str | None = None


def plan_file(report: RunReport, decisions: Mapping[Site, str | None], path: str, raw: bytes,
              findings: Sequence[Finding]) -> FilePlan:
    """What ``fix`` may rewrite in the file at ``path`` (bytes ``raw``, fixable ``findings`` as ``check`` gives;
    ``decisions`` as :func:`decide` made them)."""
    absolute = os.path.abspath(path)
    display = display_path(path)
    expected = report.files.get(absolute)
    if expected is not None and hashlib.sha256(raw).hexdigest() != expected:
        return FilePlan(None, error=f"{display}: error: changed since the run that wrote {report.source}; "
                                    "not fixed (run it again)")
    keep = []
    lines = []
    for finding in findings:
        if not finding.fixable:
            continue
        key = (finding.line, finding.column, finding.code)
        rule = RULES_BY_CODE.get(finding.code)
        reason = NOT_A_SITE if rule is not None and rule.is_meta else decisions.get((absolute, *key), NOT_CALLED)
        if reason is None:
            keep.append(key)
        else:
            lines.append(f"{display}:{finding.line}:{finding.column}: {finding.code} {LEFT_OUT}: {reason}")
    return FilePlan(frozenset(keep), tuple(lines))
