"""The report of ``np2torch run``: per call site, what the helper cost and what the original would have.

Each site's calls fall in size bands (element counts of one bit length).  In
each band the original's mean time comes from the calls sampled to it and the
helper's from the others, both measured on this run's data; each arm's first
call of a band is left out of its mean when the arm has others (it may import
torch, measure the machine or touch memory first; what the helper's first
calls took beyond its mean is the site's ``warmup_s``).  One-time work the
runtime does inside any helper call (``import torch``, an on-the-spot
measurement of the machine) is taken out of that call's time and counted in
``warmup_s`` too, so a steady-state figure never carries it.  Over the band's calls:

- ``helper_s``  -- the time the helper takes for all of them (the mean of its timed calls times the calls);
- ``original_s`` -- the same for the original;
- ``saved_s`` = ``original_s - helper_s``.

A band with one call has only the original's sample: its calls count as
unmeasured and save nothing.  A site whose helper ran the original on every
call (torch computed none of them) saves nothing either: both arms ran the
same code, and their difference is the machine's noise.  ``samples`` says how many calls each arm timed;
a site whose busiest bands have fewer than :data:`FEW` samples in either arm is
marked ``few samples``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Sequence

from np2torch import __version__
from np2torch.cli.config import display_path
from np2torch.cli.from_run import FORMAT, computed_by_torch, format_seconds

FEW = 3


def _absolute(path: str) -> str:
    """A file's absolute path; a name in angle brackets (``<In[3]>``, code with no file) as it is."""
    return path if path.startswith("<") and path.endswith(">") else os.path.abspath(path)


_SUMS = ("calls", "elements", "helper_n", "helper_s", "original_n", "original_s", "one_time_s")


def _merge_records(records: Iterable[Mapping[str, Any]]) -> Dict[tuple[str, int, int, str], Dict[str, Any]]:
    """Records of the same site from several processes, added up (each process's first calls of a band
    stay first calls: ``firsts``)."""
    merged: Dict[tuple[str, int, int, str], Dict[str, Any]] = {}
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
            total = into["bands"].setdefault(bits, {**{name: 0 for name in _SUMS}, "helper_firsts": [],
                                                    "original_firsts": []})
            for name in _SUMS:
                total[name] += band.get(name, 0)
            for arm in ("helper", "original"):
                if band[f"first_{arm}_s"] is not None:
                    total[f"{arm}_firsts"].append(band[f"first_{arm}_s"])
    return merged


def _arm(band: Mapping[str, Any], arm: str) -> tuple[float | None, int, int, float, float]:
    """``(mean, calls the mean is of, calls timed, seconds timed, warm-up seconds)`` of one arm in one band:
    the mean of the calls after the first when there are any, else of the first calls."""
    firsts: List[float] = band[f"{arm}_firsts"]
    n, total = band[f"{arm}_n"], band[f"{arm}_s"]
    if n:
        mean = total / n
        return mean, n, n + len(firsts), total + sum(firsts), sum(max(0.0, first - mean) for first in firsts)
    if firsts:
        return sum(firsts) / len(firsts), len(firsts), len(firsts), sum(firsts), 0.0
    return None, 0, 0, 0.0, 0.0


def _median_elements(record: Mapping[str, Any]) -> int:
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


def site_figures(record: Mapping[str, Any]) -> Dict[str, Any]:
    """One site's line of the report (JSON-ready) from its merged record."""
    bands = record["bands"].values()
    calls = sum(band["calls"] for band in bands)
    helper = original = warmup = 0.0
    unmeasured = thin = 0
    samples = {"helper": 0, "original": 0, "helper_s": 0.0, "original_s": 0.0}
    for band in bands:
        helper_mean, helper_n, helper_timed, helper_s, helper_warmup = _arm(band, "helper")
        original_mean, original_n, original_timed, original_s, _ = _arm(band, "original")
        samples["helper"] += helper_timed
        samples["original"] += original_timed
        samples["helper_s"] += helper_s
        samples["original_s"] += original_s
        warmup += band.get("one_time_s", 0.0)
        if helper_mean is None or original_mean is None:
            unmeasured += band["calls"]
            continue
        warmup += helper_warmup
        helper += helper_mean * band["calls"]
        original += original_mean * band["calls"]
        if min(helper_n, original_n) < FEW:
            thin += band["calls"]
    notes = []
    if unmeasured:
        why = "too few calls of their size" if record.get("sampling", True) else "a timed statement: never sampled"
        notes.append(f"{unmeasured} of {calls} calls unmeasured ({why})")
    if thin * 2 > calls - unmeasured > 0:
        notes.append("few samples")
    if record["errors"]:
        notes.append(f"{record['errors']} calls raised")
    if not computed_by_torch(record["paths"]):
        # Both arms ran the same code: a difference between them is the machine's noise, not a saving.
        helper = original
        if calls:
            notes.append("the helper ran the original on every call")
    return {
        "path": record["path"], "line": record["line"], "col": record["col"], "code": record["code"],
        "function": record["function"], "calls": calls + record["errors"],
        "elements": sum(band["elements"] for band in bands), "median_elements": _median_elements(record),
        "helper_s": helper, "original_s": original, "saved_s": original - helper, "warmup_s": warmup,
        "paths": {"sampled": samples["original"], **record["paths"]},
        "samples": samples,
        "notes": notes,
    }


def build(command: Sequence[str], wall_s: float, records: Iterable[Mapping[str, Any]],
          skipped: Iterable[Mapping[str, Any]], files: Mapping[str, str], exit_status: int | None,
          rewrite: Mapping[str, int] | None = None, torch_imported: bool | None = None) -> Dict[str, Any]:
    """The report as JSON-ready data (``rewrite``: files compiled afresh and taken from the cache, all processes)."""
    sites = [site_figures(record) for record in _merge_records(records).values()]
    sites = [site for site in sites if site["calls"]] + [site for site in sites if not site["calls"]]
    sites.sort(key=lambda site: (-site["saved_s"], site["path"], site["line"], site["col"]))
    unique: Dict[tuple[str, int, int, str], Dict[str, Any]] = {}
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


def text(report: Mapping[str, Any]) -> str:
    """The report as a table for a terminal."""
    lines = ["np2torch run report: " + " ".join(report["command"][2:])]
    sites = report["sites"]
    if not sites:
        lines.append("no call site was rewritten" + ("" if report["not_rewritten"] else
                     " (no finding in the program's files: see `np2torch check`)"))
    else:
        header = ("site", "function", "calls", "elements", "median", "helper", "original", "saved", "paths")
        rows = [header]
        idle = [site for site in sites if not site["calls"]]
        for site in sites:
            if not site["calls"]:
                continue
            paths = ", ".join(f"{name} {count}" for name, count in site["paths"].items() if count)
            rows.append((f"{display_path(site['path'])}:{site['line']}:{site['col']}", site["function"],
                         str(site["calls"]), _count(site["elements"]), _count(site["median_elements"]),
                         format_seconds(site["helper_s"]), format_seconds(site["original_s"]), format_seconds(site["saved_s"]),
                         paths + ("; " + "; ".join(site["notes"]) if site["notes"] else "")))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
        for row in rows:
            cells = [cell.ljust(width) if i < 2 else cell.rjust(width) for i, (cell, width) in enumerate(zip(row, widths))]
            lines.append("  ".join(cells) + "  " + row[-1])
        if idle:
            lines.append(f"{len(idle)} rewritten site{'s' if len(idle) != 1 else ''} never called")
    wall = report["wall_s"]
    share = f" ({report['rewritten_s'] / wall:.0%} of it)" if wall > 0 else ""
    lines.append(f"program {format_seconds(wall)}; rewritten calls {format_seconds(report['rewritten_s'])}{share}; "
                 f"estimated saving {format_seconds(report['saved_s'])}"
                 + (f", after {format_seconds(report['warmup_s'])} of one-time warm-up" if report["warmup_s"] >= 1e-3 else ""))
    ran = [site for site in sites if site["calls"]]
    if ran and not any(computed_by_torch(site["paths"]) for site in ran):
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


def dump(report: Mapping[str, Any]) -> str:
    return json.dumps(report, indent=1)
