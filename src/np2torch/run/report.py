"""The report of ``np2torch run``: per call site, what the helper cost and what the original would have.

How the calls were timed: each arm's clock (``time.perf_counter``) wraps the
call alone, as the program pays it -- the helper as ``fix`` will call it, the
original as ``python`` calls it (np2torch's warning redirect, which makes the
original's warnings point at the program's line, is set up before the clock
starts and reset after it stops; a spelled-out pattern's pieces take the time
they spend on it out of the expression's).  One-time work the runtime does
inside a helper call (``import torch``: :attr:`np2torch.runtime._state.Process.one_time`) is taken
out of that call's time and charged to the site as ``one_time_s``: the site
whose call was in flight when it happened.

Each site's calls fall in size bands (element counts of one bit length).  In
each band each arm's timed calls after its first are kept as a histogram of
their times (:func:`np2torch.runtime.sites.time_bin`, 4.4 % bins); each arm's
first call of a band is kept apart (it may touch memory first: what the
helper's first calls took beyond its median is the site's own warm-up).  The
estimate of a band is robust: the **median** call of each arm, with a 95 %
distribution-free interval (order statistics), so one stalled call moves
nothing.  Over the band's calls:

- ``helper_s``  -- the helper's median call times the band's calls;
- ``original_s`` -- the same for the original;
- ``saved_s`` = ``original_s - helper_s``, with ``saved_low_s`` .. ``saved_high_s`` its interval: per band the
  difference of the arms' intervals (a band with fewer than :data:`FEW` timed calls of an arm: anything
  between minus the helper's slowest call and the original's slowest), bands combined in quadrature;
- ``verdict``: ``saves`` (the interval is above zero), ``costs`` (below zero) or ``unsure``.

A band with one call has only the original's sample: its calls count as
unmeasured and save nothing.  A site whose helper ran the original on every
call (torch computed none of them) saves nothing either: both arms ran the
same code, and their difference is the machine's noise.  ``samples`` says how
many calls each arm timed; a site whose busiest bands have fewer than
:data:`FEW` samples in either arm is marked ``few samples``.
"""

from __future__ import annotations

import json
import math
import os
from typing import TYPE_CHECKING, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, TypedDict

from np2torch import __version__
from np2torch.cli.config import display_path
from np2torch.cli.from_run import FORMAT, TORCH_PATHS, VERDICTS, computed_by_helper, format_seconds

if TYPE_CHECKING:
    from np2torch.run.hook import SkippedRecord
    from np2torch.runtime.sites import SiteRecord

FEW = 3
Z = 1.959964
"""The normal quantile of a two-sided 95 % interval."""

TIMING = ("each arm's time.perf_counter around the call alone (the original without np2torch's warning redirect); "
          "per size band the median call of each arm with a 95% order-statistic interval; bands combined in "
          "quadrature; one-time work (import torch) charged to the site whose call it was in")
"""How the report's figures were measured (its ``timing``)."""


def _absolute(path: str) -> str:
    """A file's absolute path; a name in angle brackets (``<In[3]>``, code with no file) as it is."""
    return path if path.startswith("<") and path.endswith(">") else os.path.abspath(path)


class MergedBand(TypedDict):
    """One band of one site, its records from every process added up: each arm's first calls (one per
    process, ``*_firsts``) kept apart, its other calls' histogram with the bins as integers."""

    calls: int
    elements: int
    helper_n: int
    helper_s: float
    original_n: int
    original_s: float
    one_time_s: float
    helper_firsts: List[float]
    original_firsts: List[float]
    helper_times: Dict[int, int]
    original_times: Dict[int, int]


class _MergedSite(TypedDict):
    path: str
    line: int
    col: int
    function: str
    code: str
    errors: int
    paths: Dict[str, int]
    sizes: Optional[Dict[str, int]]
    bands: Dict[str, MergedBand]


class MergedRecord(_MergedSite, total=False):
    """One site's records from every process added up (:func:`_merge_records`); ``sampling`` as the record's."""

    sampling: bool


class Samples(TypedDict):
    """The calls each arm of a site timed, and their seconds."""

    helper: int
    original: int
    helper_s: float
    original_s: float


class SiteFigures(TypedDict):
    """One site's line of the report (:func:`site_figures`)."""

    path: str
    line: int
    col: int
    code: str
    function: str
    calls: int
    elements: int
    median_elements: int
    helper_s: float
    original_s: float
    saved_s: float
    saved_low_s: float
    saved_high_s: float
    verdict: str
    warmup_s: float
    one_time_s: float
    paths: Dict[str, int]
    samples: Samples
    notes: List[str]


class Report(TypedDict):
    """The report as JSON-ready data (:func:`build`)."""

    version: int
    np2torch: str
    command: List[str]
    exit_status: Optional[int]
    wall_s: float
    rewritten_s: float
    saved_s: float
    warmup_s: float
    one_time_s: float
    timing: str
    files: Dict[str, str]
    rewrite: Dict[str, int]
    torch_imported: Optional[bool]
    sites: List[SiteFigures]
    not_rewritten: List[SkippedRecord]


def _merge_records(records: Iterable[SiteRecord]) -> Dict[tuple[str, int, int, str], MergedRecord]:
    """Records of the same site from several processes, added up (each process's first calls of a band
    stay first calls: ``firsts``)."""
    merged: Dict[tuple[str, int, int, str], MergedRecord] = {}
    for record in records:
        key = (_absolute(record["path"]), record["line"], record["col"], record["code"])
        into = merged.get(key)
        if into is None:
            merged[key] = into = {**record, "path": key[0], "bands": {}, "paths": {}, "sizes": {}, "errors": 0}
        into["errors"] += record["errors"]
        for path, count in record["paths"].items():
            into["paths"][path] = into["paths"].get(path, 0) + count
        if record["sizes"] is None or into["sizes"] is None:
            into["sizes"] = None
        else:
            for size, count in record["sizes"].items():
                into["sizes"][size] = into["sizes"].get(size, 0) + count
        for bits, band in record["bands"].items():
            total = into["bands"].setdefault(bits, {
                "calls": 0, "elements": 0, "helper_n": 0, "helper_s": 0, "original_n": 0, "original_s": 0,
                "one_time_s": 0, "helper_firsts": [], "original_firsts": [], "helper_times": {}, "original_times": {}})
            total["calls"] += band.get("calls", 0)
            total["elements"] += band.get("elements", 0)
            total["helper_n"] += band.get("helper_n", 0)
            total["helper_s"] += band.get("helper_s", 0)
            total["original_n"] += band.get("original_n", 0)
            total["original_s"] += band.get("original_s", 0)
            total["one_time_s"] += band.get("one_time_s", 0)
            _add_histogram(total["helper_times"], band.get("helper_times", {}))
            _add_histogram(total["original_times"], band.get("original_times", {}))
            first_helper_s, first_original_s = band["first_helper_s"], band["first_original_s"]
            if first_helper_s is not None:
                total["helper_firsts"].append(first_helper_s)
            if first_original_s is not None:
                total["original_firsts"].append(first_original_s)
    return merged


def _add_histogram(total: Dict[int, int], histogram: Mapping[str, int]) -> None:
    for index, count in histogram.items():
        total[int(index)] = total.get(int(index), 0) + count


class Arm(NamedTuple):
    """One arm's calls in one band: the median call, its 95 % interval, the slowest call, how many calls the
    statistics are of, and all calls timed (firsts included) with their seconds."""

    median: float
    low: float
    high: float
    slowest: float
    n: int
    timed: int
    seconds: float


def _ranked(histogram: Mapping[int, int], ranks: Sequence[int]) -> List[float]:
    """The times of the calls of 1-based ``ranks`` (ascending) in ``histogram``."""
    from np2torch.runtime.sites import bin_seconds  # NumPy loads with the program, not before (docs/run.md)

    values = []
    seen = 0
    pending = list(ranks)
    for index, count in sorted(histogram.items()):
        seen += count
        while pending and pending[0] <= seen:
            values.append(bin_seconds(index))
            pending.pop(0)
    return values


def median_interval(histogram: Mapping[int, int]) -> Tuple[float, float, float]:
    """``(median, low, high)`` of the calls in ``histogram`` (bin -> calls; not empty): the median call and
    the order statistics that hold it with 95 % probability, whatever the distribution of the times."""
    n = sum(histogram.values())
    half = Z * math.sqrt(n) / 2
    low = min(max(1, math.floor(n / 2 - half)), n)
    high = max(1, min(n, math.ceil(n / 2 + half) + 1))
    ranks = sorted({(n + 1) // 2, low, high})
    values = dict(zip(ranks, _ranked(histogram, ranks)))
    return values[(n + 1) // 2], values[low], values[high]


def _arm(band: MergedBand, arm: str) -> Tuple[Arm | None, float]:
    """One arm of one band, and its warm-up (what its first calls took beyond the median): the statistics of
    the calls after the first when there are any, else of the first calls."""
    from np2torch.runtime.sites import bin_seconds, time_bin

    if arm == "helper":
        firsts, histogram, n, s = band["helper_firsts"], band["helper_times"], band["helper_n"], band["helper_s"]
    else:
        firsts, histogram = band["original_firsts"], band["original_times"]
        n, s = band["original_n"], band["original_s"]
    timed, seconds = n + len(firsts), s + sum(firsts)
    warmup = True
    if not histogram:
        histogram, warmup = {}, False
        for first in firsts:
            histogram[time_bin(first)] = histogram.get(time_bin(first), 0) + 1
    if not histogram:
        return None, 0.0
    median, low, high = median_interval(histogram)
    statistics = Arm(median, low, high, bin_seconds(max(histogram)), sum(histogram.values()), timed, seconds)
    return statistics, sum(max(0.0, first - median) for first in firsts) if warmup else 0.0


def _median_elements(record: MergedRecord) -> int:
    """The median call's element count (the lower one of an even count): exact while the site kept its sizes,
    else the mean size of the band that holds the median call."""
    sizes = record["sizes"]
    if sizes:
        counts = sorted((int(size), count) for size, count in sizes.items())
    else:
        counts = [(band["elements"] // band["calls"], band["calls"])
                  for _bits, band in sorted(record["bands"].items(), key=lambda item: int(item[0])) if band["calls"]]
    half = (sum(count for _size, count in counts) + 1) // 2
    seen = 0
    for size, count in counts:
        seen += count
        if seen >= half:
            return int(size)
    return 0


def site_figures(record: MergedRecord) -> SiteFigures:
    """One site's line of the report (JSON-ready) from its merged record."""
    bands = record["bands"].values()
    calls = sum(band["calls"] for band in bands)
    helper = original = warmup = one_time = 0.0
    below = above = 0.0
    unmeasured = thin = 0
    samples: Samples = {"helper": 0, "original": 0, "helper_s": 0.0, "original_s": 0.0}
    for band in bands:
        helper_arm, helper_warmup = _arm(band, "helper")
        original_arm, _ = _arm(band, "original")
        if helper_arm is not None:
            samples["helper"] += helper_arm.timed
            samples["helper_s"] += helper_arm.seconds
        if original_arm is not None:
            samples["original"] += original_arm.timed
            samples["original_s"] += original_arm.seconds
        one_time += band.get("one_time_s", 0.0)
        if helper_arm is None or original_arm is None:
            unmeasured += band["calls"]
            continue
        warmup += helper_warmup
        count = band["calls"]
        saved = original_arm.median - helper_arm.median
        if min(helper_arm.n, original_arm.n) < FEW:
            thin += count
            low, high = -helper_arm.slowest, original_arm.slowest  # all that a few calls say
        else:
            low, high = original_arm.low - helper_arm.high, original_arm.high - helper_arm.low
        helper += helper_arm.median * count
        original += original_arm.median * count
        below += ((saved - min(low, saved)) * count) ** 2
        above += ((max(high, saved) - saved) * count) ** 2
    notes = []
    if unmeasured:
        why = "too few calls of their size" if record.get("sampling", True) else "a timed statement: never sampled"
        notes.append(f"{unmeasured} of {calls} calls unmeasured ({why})")
    if thin * 2 > calls - unmeasured > 0:
        notes.append("few samples")
    if record["errors"]:
        notes.append(f"{record['errors']} calls raised")
    if not computed_by_helper(record["paths"]):
        # Both arms ran the same code: a difference between them is the machine's noise, not a saving.
        helper, below, above = original, 0.0, 0.0
        if calls:
            notes.append("the helper ran the original on every call")
    saved_s = original - helper
    low_s, high_s = saved_s - math.sqrt(below), saved_s + math.sqrt(above)
    return {
        "path": record["path"], "line": record["line"], "col": record["col"], "code": record["code"],
        "function": record["function"], "calls": calls + record["errors"],
        "elements": sum(band["elements"] for band in bands), "median_elements": _median_elements(record),
        "helper_s": helper, "original_s": original, "saved_s": saved_s, "saved_low_s": low_s,
        "saved_high_s": high_s, "verdict": verdict(low_s, high_s),
        "warmup_s": warmup + one_time, "one_time_s": one_time,
        "paths": {"sampled": samples["original"], **record["paths"]},
        "samples": samples,
        "notes": notes,
    }


def verdict(low: float, high: float) -> str:
    """``saves`` when the interval of a site's saving is above zero, ``costs`` when below, else ``unsure``."""
    saves, costs, unsure = VERDICTS
    return saves if low > 0 else costs if high < 0 else unsure


def build(command: Sequence[str], wall_s: float, records: Iterable[SiteRecord],
          skipped: Iterable[SkippedRecord], files: Mapping[str, str], exit_status: int | None,
          rewrite: Mapping[str, int] | None = None, torch_imported: bool | None = None) -> Report:
    """The report as JSON-ready data (``rewrite``: files compiled afresh and taken from the cache, all processes)."""
    sites = [site_figures(record) for record in _merge_records(records).values()]
    sites = [site for site in sites if site["calls"]] + [site for site in sites if not site["calls"]]
    sites.sort(key=lambda site: (-site["saved_s"], site["path"], site["line"], site["col"]))
    unique: Dict[tuple[str, int, int, str], SkippedRecord] = {}
    for item in skipped:
        path = _absolute(item["path"])
        unique[(path, item["line"], item["col"], item["code"])] = {**item, "path": path}
    return {
        "version": FORMAT,
        "np2torch": __version__,
        "command": list(command),
        "exit_status": exit_status,
        "wall_s": wall_s,
        "rewritten_s": sum(site["samples"]["helper_s"] + site["samples"]["original_s"] for site in sites),
        "saved_s": sum(site["saved_s"] for site in sites),
        "warmup_s": sum(site["warmup_s"] for site in sites),
        "one_time_s": sum(site["one_time_s"] for site in sites),
        "timing": TIMING,
        "files": dict(sorted(files.items())),
        "rewrite": dict(rewrite or {}),
        "torch_imported": torch_imported,
        "sites": sites,
        "not_rewritten": sorted(unique.values(), key=lambda item: (item["path"], item["line"], item["col"])),
    }


def _count(value: int) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return str(value)


def text(report: Report) -> str:
    """The report as a table for a terminal."""
    lines = ["np2torch run report: " + " ".join(report["command"][2:])]
    sites = report["sites"]
    if not sites:
        lines.append("no call site was rewritten" + ("" if report["not_rewritten"] else
                     " (no finding in the program's files: see `np2torch check`)"))
    else:
        header = ("site", "function", "calls", "elements", "median", "helper", "original", "saved", "verdict",
                  "paths")
        rows = [header]
        idle = [site for site in sites if not site["calls"]]
        for site in sites:
            if not site["calls"]:
                continue
            paths = ", ".join(f"{name} {count}" for name, count in site["paths"].items() if count)
            rows.append((f"{display_path(site['path'])}:{site['line']}:{site['col']}", site["function"],
                         str(site["calls"]), _count(site["elements"]), _count(site["median_elements"]),
                         format_seconds(site["helper_s"]), format_seconds(site["original_s"]),
                         format_seconds(site["saved_s"]), site["verdict"], paths + ("; " + "; ".join(site["notes"]) if site["notes"] else "")))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
        for row in rows:
            cells = [cell.ljust(width) if i < 2 or i == 8 else cell.rjust(width)
                     for i, (cell, width) in enumerate(zip(row, widths))]
            lines.append("  ".join(cells) + "  " + row[-1])
        if idle:
            lines.append(f"{len(idle)} rewritten site{'s' if len(idle) != 1 else ''} never called")
    wall = report["wall_s"]
    share = f" ({report['rewritten_s'] / wall:.0%} of it)" if wall > 0 else ""
    lines.append(f"program {format_seconds(wall)}; rewritten calls {format_seconds(report['rewritten_s'])}{share}; "
                 f"estimated saving {format_seconds(report['saved_s'])}"
                 + (f", after {format_seconds(report['warmup_s'])} of one-time warm-up" if report["warmup_s"] >= 1e-3 else ""))
    if any(site["calls"] for site in sites):
        lines.append("timed: the median call of each arm per size band, the call alone as the program pays it; "
                     "a site saves or costs when the 95% interval of its saving is above or below zero")
    ran = [site for site in sites if site["calls"]]
    if ran and not any(site["paths"].get(path) for site in ran for path in TORCH_PATHS):
        if report.get("torch_imported") is False:
            lines.append("torch computed none of these calls: it was not imported, as the time it would have saved "
                         "did not pay for `import torch` (docs/runtime.md); on this machine's profile see "
                         "`np2torch tune --show`")
        else:
            lines.append("torch computed none of these calls: this machine's profile keeps their sizes on "
                         "NumPy/SciPy (`np2torch tune --show`)")
    skipped = report["not_rewritten"]
    if skipped:
        reasons: Dict[str, int] = {}
        for item in skipped:
            reasons[item["reason"] or "no fix"] = reasons.get(item["reason"] or "no fix", 0) + 1
        lines.append(f"not rewritten: {len(skipped)} finding{'s' if len(skipped) != 1 else ''}")
        for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
            lines.append(f"  {count} x {reason}")
        for item in skipped[:20]:
            lines.append(f"  {display_path(item['path'])}:{item['line']}:{item['col']} {item['code']} {item['function']}")
        if len(skipped) > 20:
            lines.append(f"  ... and {len(skipped) - 20} more (--report-file has them all)")
    return "\n".join(lines)


def dump(report: Report) -> str:
    return json.dumps(report, indent=1)
