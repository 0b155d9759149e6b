"""``np2torch fix --from-run REPORT.json``: rewrite only the call sites whose measured saving cleared a margin.

The report is what ``np2torch run --report-file`` wrote: per call site its
position, rule code and the seconds the helper saved against the original,
both timed on the user's data; per file the SHA-256 of the bytes the run
analysed.  A file whose bytes changed since is refused (its positions may
name other code now); in the others, the sites that saved at least
``--min-saving`` (default: 10 % of the site's original time and 1 ms over the
run, and torch computing at least one of its calls) are rewritten and every
other finding is left as it is, with one line saying why.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from np2torch.cli.config import ConfigError, display_path

FORMAT = 1
"""The version of the report ``np2torch run`` writes (np2torch.run.report) and this reads."""

TORCH_PATHS = ("cpu", "cuda")
"""The paths of a report's site on which torch computed a helper call (``numpy``: the helper ran the original)."""

Key = Tuple[int, int, str]
"""A site as the engine's findings place it: 1-based line and column, rule code."""


@dataclass(frozen=True)
class Margin:
    """The saving a site must show: at least ``fraction`` of its original time and ``seconds`` in all."""

    fraction: float = 0.10
    seconds: float = 1e-3

    def admits(self, site: Mapping[str, Any]) -> bool:
        saved, original = float(site["saved_s"]), float(site["original_s"])
        return saved >= self.seconds and saved >= self.fraction * original and computed_by_torch(site["paths"])

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


def computed_by_torch(paths: Mapping[str, int]) -> bool:
    """Whether torch computed any of a site's helper calls (``paths``: calls per path): a helper that ran the
    original on every call saved nothing, whatever the timings say (their difference is noise)."""
    return any(paths.get(path) for path in TORCH_PATHS)


def format_seconds(value: float) -> str:
    """``1.23 s``, ``4.5 ms`` or ``67 us``: a report's figures."""
    if abs(value) >= 1:
        return f"{value:.2f} s"
    if abs(value) >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} us"


@dataclass
class RunReport:
    """A report of ``np2torch run``, read for ``fix``: sites and file digests by absolute path."""

    source: str
    sites: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)
    files: Dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str) -> RunReport:
        """Read ``path``; :class:`ConfigError` with one line when it is not a report this version reads."""
        try:
            with open(path, encoding="utf-8") as file:
                data = json.load(file)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the run report ({exc.strerror or exc})") from None
        except (ValueError, RecursionError) as exc:
            raise ConfigError(f"{path}: not a run report (invalid JSON: {exc})") from None
        if not isinstance(data, dict) or data.get("version") != FORMAT or not isinstance(data.get("sites"), list):
            raise ConfigError(f"{path}: not a report of `np2torch run --report-file` (version {FORMAT})")
        report = cls(path)
        try:
            for name, digest in dict(data.get("files", {})).items():
                report.files[os.path.abspath(str(name))] = str(digest)
            for site in data["sites"]:
                entry = {"line": int(site["line"]), "col": int(site["col"]), "code": str(site["code"]),
                         "function": str(site["function"]), "saved_s": float(site["saved_s"]),
                         "original_s": float(site["original_s"]), "calls": int(site["calls"]),
                         "paths": {str(path): int(count) for path, count in dict(site["paths"]).items()}}
                report.sites.setdefault(os.path.abspath(str(site["path"])), []).append(entry)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: a site or file entry is malformed ({type(exc).__name__}: {exc})") from None
        return report

    def paths(self) -> List[str]:
        """The files the report measured sites in that still exist."""
        return sorted(path for path in self.sites if os.path.isfile(path))


@dataclass(frozen=True)
class FilePlan:
    """One file's part of the report: the sites to rewrite (None: refused) and one line per site left out."""

    keep: frozenset[Key] | None
    lines: Tuple[str, ...] = ()
    error: str | None = None


def plan_file(report: RunReport, margin: Margin, path: str, raw: bytes, findings: Sequence[Any]) -> FilePlan:
    """What ``fix`` may rewrite in the file at ``path`` (bytes ``raw``, fixable ``findings`` as ``check`` gives)."""
    absolute = os.path.abspath(path)
    display = display_path(path)
    expected = report.files.get(absolute)
    if expected is not None and hashlib.sha256(raw).hexdigest() != expected:
        return FilePlan(None, error=f"{display}: error: changed since the run that wrote {report.source}; "
                                    "not fixed (run it again)")
    sites = {(site["line"], site["col"], site["code"]): site for site in report.sites.get(absolute, [])}
    keep = []
    lines = []
    for finding in findings:
        if not finding.fixable:
            continue
        key = (finding.line, finding.column, finding.code)
        site = sites.get(key)
        where = f"{display}:{finding.line}:{finding.column}: {finding.code}"
        if site is None:
            lines.append(f"{where} left as it is: not called in the run")
        elif not site["calls"]:
            lines.append(f"{where} left as it is: not called in the run")
        elif margin.admits(site):
            keep.append(key)
        elif not computed_by_torch(site["paths"]):
            lines.append(f"{where} left as it is: every helper call ran the original (torch computed none)")
        else:
            lines.append(f"{where} left as it is: saved {format_seconds(site['saved_s'])} of "
                         f"{format_seconds(site['original_s'])} over {site['calls']} calls (needs {margin})")
    return FilePlan(frozenset(keep), tuple(lines))
