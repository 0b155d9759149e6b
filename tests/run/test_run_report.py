"""What ``np2torch run`` reports: calls counted exactly, both arms really timed, the JSON's schema, and what
was not rewritten and why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import zlib
from pathlib import Path
from typing import Any, Dict, List

import jsonschema
import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st

from np2torch.run import report as run_report
from np2torch.runtime import sites

SITE = {
    "type": "object",
    "required": ["path", "line", "col", "function", "calls", "elements", "median_elements", "helper_s",
                 "original_s", "saved_s", "saved_low_s", "saved_high_s", "verdict", "warmup_s", "one_time_s",
                 "paths", "samples", "notes", "code"],
    "properties": {
        "path": {"type": "string"}, "line": {"type": "integer", "minimum": 1}, "col": {"type": "integer", "minimum": 1},
        "function": {"type": "string"}, "code": {"type": "string", "pattern": "^NPT[0-9]{3}$"},
        "calls": {"type": "integer", "minimum": 0}, "elements": {"type": "integer", "minimum": 0},
        "median_elements": {"type": "integer", "minimum": 0},
        "helper_s": {"type": "number"}, "original_s": {"type": "number"}, "saved_s": {"type": "number"},
        "saved_low_s": {"type": "number"}, "saved_high_s": {"type": "number"},
        "verdict": {"enum": ["saves", "costs", "unsure"]},
        "warmup_s": {"type": "number", "minimum": 0}, "one_time_s": {"type": "number", "minimum": 0},
        "paths": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0},
                  "propertyNames": {"enum": ["sampled", "numpy", "cpu", "cuda"]}},
        "samples": {"type": "object", "required": ["helper", "original", "helper_s", "original_s"]},
        "notes": {"type": "array", "items": {"type": "string"}},
    },
}
SCHEMA = {
    "type": "object",
    "required": ["version", "command", "wall_s", "sites", "not_rewritten", "files", "exit_status", "rewrite",
                 "timing", "one_time_s"],
    "properties": {
        "version": {"const": 2}, "command": {"type": "array", "items": {"type": "string"}},
        "timing": {"type": "string"}, "one_time_s": {"type": "number", "minimum": 0},
        "wall_s": {"type": "number", "minimum": 0}, "sites": {"type": "array", "items": SITE},
        "files": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]{64}$"}},
        "not_rewritten": {"type": "array", "items": {
            "type": "object", "required": ["path", "line", "col", "function", "reason", "code"]}},
    },
}


def _run(tmp_path: Path, program: str, *options: str, env: Dict[str, str] | None = None) -> Dict[str, Any]:
    root = tmp_path / "proj"
    root.mkdir(exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    (root / "prog.py").write_text(textwrap.dedent(program))
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "np2torch", "run", "--report-file", str(report), *options, "prog.py"],
                          cwd=root, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    data: Dict[str, Any] = json.loads(report.read_text())
    data["stderr"] = done.stderr
    return data


def _site(data: Dict[str, Any], line: int) -> Dict[str, Any]:
    found = [site for site in data["sites"] if site["line"] == line]
    assert len(found) == 1, data["sites"]
    return found[0]


def test_calls_and_elements_are_counted_exactly_and_the_json_has_the_schema(tmp_path: Path) -> None:
    data = _run(tmp_path, """\
        import numpy as np
        from scipy.special import erf
        sizes = [10] * 7 + [1000] * 20 + [50_000] * 14
        for n in sizes:
            np.exp(np.zeros(n))
        erf(np.ones(5)); erf(np.ones(6))
        def unused(x):
            return np.log(x)
        """)
    jsonschema.validate(data, SCHEMA)
    exp = _site(data, 5)
    assert (exp["function"], exp["code"], exp["calls"]) == ("numpy.exp", "NPT001", 41)
    assert exp["elements"] == 7 * 10 + 20 * 1000 + 14 * 50_000
    assert exp["median_elements"] == 1000
    assert sum(exp["paths"].values()) == 41
    assert exp["samples"]["helper"] + exp["samples"]["original"] == 41
    erf = [site for site in data["sites"] if site["code"] == "NPT003"]
    assert sorted(site["calls"] for site in erf) == [1, 1]
    assert _site(data, 8)["calls"] == 0
    assert data["exit_status"] == 0 and data["command"][:3] == ["np2torch", "run", "prog.py"]
    assert "prog.py:5:5" in data["stderr"] and "1 rewritten site never called" in data["stderr"]


def test_sampling_follows_size_bands(tmp_path: Path) -> None:
    data = _run(tmp_path, """\
        import numpy as np
        x = np.ones(100)
        for _ in range(40):
            np.sin(x)
        """, "--report", "none")
    site = _site(data, 4)
    # one band: 8 calls alternating (4 original, 4 helper), then one in 8 of the remaining 32 to the original
    assert site["samples"]["original"] == 4 + 4
    assert site["samples"]["helper"] == 40 - 8
    assert site["paths"]["sampled"] == 8


def test_a_real_run_times_both_arms_of_a_site_forced_onto_torch(tmp_path: Path) -> None:
    # Every call of 16 elements through torch (NP2TORCH_MIN_SIZE=0); both arms are really timed.  What the
    # timings say is the machine's (busy or not): the verdict itself is tested on a clock of the test's own
    # (test_a_site_forced_onto_a_slow_path_shows_a_negative_saving, test_one_stalled_call_flips_no_verdict).
    data = _run(tmp_path, """\
        import numpy as np
        x = np.linspace(0, 1, 16)
        for _ in range(400):
            np.sin(x)
        """, env={"NP2TORCH_MIN_SIZE": "0"})
    site = _site(data, 4)
    assert site["paths"].get("cpu", 0) == 400 - site["paths"]["sampled"]
    assert site["samples"]["helper"] == 400 - site["paths"]["sampled"] and site["samples"]["original"] == 53
    assert site["samples"]["helper_s"] > 0 and site["samples"]["original_s"] > 0
    assert site["saved_low_s"] <= site["saved_s"] <= site["saved_high_s"]
    assert site["saved_s"] == pytest.approx(site["original_s"] - site["helper_s"])
    assert site["verdict"] == run_report.verdict(site["saved_low_s"], site["saved_high_s"])
    assert "timed: the median call of each arm" in data["stderr"]


def test_sampled_calls_return_the_originals_bits(tmp_path: Path) -> None:
    data = _run(tmp_path, """\
        import numpy as np
        x = np.random.default_rng(0).standard_normal(4096)
        np.save("results.npy", np.stack([np.sin(x) for _ in range(24)]))
        np.save("x.npy", x)
        """, "--report", "none", env={"NP2TORCH_MIN_SIZE": "0"})
    site = _site(data, 3)
    assert site["calls"] == 24 and site["paths"]["sampled"] == 6 and site["paths"]["cpu"] == 18
    results, x = np.load(tmp_path / "proj" / "results.npy"), np.load(tmp_path / "proj" / "x.npy")
    expected = np.sin(x)
    sampled = [0, 2, 4, 6, 15, 23]  # the band's first eight calls alternate, then one in eight
    for call in sampled:
        assert results[call].tobytes() == expected.tobytes()
    assert np.all(np.abs(results - expected) <= 4 * np.spacing(np.abs(expected)))


def test_findings_not_rewritten_are_listed_with_their_reason(tmp_path: Path) -> None:
    data = _run(tmp_path, """\
        import numpy as np
        act = np.exp                     # a reference: an unsafe fix
        y = np.log(np.sum(np.exp(np.ones(3))))   # NPT901 is unsafe; its parts are rewritten
        z = np.exp(np.ones(2))  # noqa: NPT001
        """, "--report", "none")
    reasons = {(item["line"], item["code"]): item["reason"] for item in data["not_rewritten"]}
    assert reasons[(2, "NPT001")].startswith("unsafe fix (it passes the function on")
    assert reasons[(3, "NPT901")].startswith("unsafe fix (it changes rounding)")
    assert all(item["line"] != 4 for item in data["not_rewritten"])  # suppressed by its comment: no finding at all
    assert {site["line"] for site in data["sites"]} == {3}


def test_unsafe_fixes_rewrite_the_pattern_and_time_the_expression_as_written(tmp_path: Path) -> None:
    data = _run(tmp_path, """\
        import numpy as np
        x = np.ones((30, 4))
        for _ in range(10):
            np.log(np.sum(np.exp(x), axis=0))
        """, "--unsafe-fixes", "--report", "none")
    site = _site(data, 4)
    assert (site["code"], site["calls"]) == ("NPT901", 10)
    assert site["function"] == "numpy.log(numpy.sum(numpy.exp(...)))"


def test_softmax_patterns_are_rewritten_and_sampled_as_written(tmp_path: Path) -> None:
    data = _run(tmp_path, """\
        import numpy as np
        from scipy.special import logsumexp
        x = np.random.default_rng(0).standard_normal((30, 4))
        p, q = [], []
        for _ in range(10):
            p.append(np.exp(x) / np.exp(x).sum(axis=1, keepdims=True))
            q.append(x - logsumexp(x, axis=1, keepdims=True))
        np.save("p.npy", np.array(p)); np.save("q.npy", np.array(q))
        """, "--unsafe-fixes", "--select", "NPT902,NPT903", "--report", "none", env={"NP2TORCH_MIN_SIZE": "0"})
    ratio, difference = _site(data, 6), _site(data, 7)
    assert (ratio["code"], ratio["calls"]) == ("NPT902", 10)
    assert ratio["function"] == "numpy.exp(x) / numpy.sum(numpy.exp(x), ...)"
    assert (difference["code"], difference["calls"]) == ("NPT903", 10)
    assert ratio["paths"].get("cpu", 0) > 0 and difference["paths"].get("cpu", 0) > 0, (ratio["paths"], difference["paths"])
    assert difference["function"] == "x - scipy.special.logsumexp(x, ...)"
    x = np.random.default_rng(0).standard_normal((30, 4))
    for name, want in (("p", np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)),
                       ("q", x - scipy.special.logsumexp(x, axis=1, keepdims=True))):
        got = np.load(tmp_path / "proj" / f"{name}.npy")
        np.testing.assert_allclose(got, np.broadcast_to(want, got.shape), rtol=1e-13, atol=1e-15)


def test_two_argument_helpers_report_their_path(tmp_path: Path) -> None:
    data = _run(tmp_path, """\
        import numpy as np
        from scipy.special import xlogy
        x = np.random.default_rng(0).uniform(0.1, 2.0, (30, 4))
        for _ in range(10):
            np.hypot(x, 2.0)
            xlogy(x, x)
        """, "--select", "NPT024,NPT113", "--report", "none", env={"NP2TORCH_MIN_SIZE": "0"})
    for line, code in ((5, "NPT024"), (6, "NPT113")):
        site = _site(data, line)
        assert (site["code"], site["calls"]) == (code, 10)
        assert site["paths"].get("cpu", 0) > 0, site["paths"]


def test_select_and_noqa_apply_as_for_fix(tmp_path: Path) -> None:
    data = _run(tmp_path, """\
        import numpy as np
        np.exp(np.ones(2))
        np.log(np.ones(2))
        """, "--select", "NPT002", "--report", "none")
    assert [(site["line"], site["code"]) for site in data["sites"]] == [(3, "NPT002")]


def _record(bands: Dict[str, Dict[str, Any]], calls_paths: Dict[str, int] | None = None) -> Dict[str, Any]:
    return {"path": "/p/x.py", "line": 1, "col": 1, "code": "NPT001", "function": "numpy.exp", "errors": 0,
            "paths": calls_paths or {"cpu": 1}, "sizes": None, "bands": bands}


def _histogram(times: List[float]) -> Dict[str, int]:
    histogram: Dict[str, int] = {}
    for seconds in times:
        histogram[str(sites.time_bin(seconds))] = histogram.get(str(sites.time_bin(seconds)), 0) + 1
    return histogram


def _band(calls: int, helper: List[float], original: List[float]) -> Dict[str, Any]:
    """A band's record as a site folds it: each arm's first call apart, the others summed and in a histogram."""
    return {"calls": calls, "elements": calls * 1000, "first_helper_s": helper[0] if helper else None,
            "helper_n": max(0, len(helper) - 1), "helper_s": sum(helper[1:]), "helper_times": _histogram(helper[1:]),
            "first_original_s": original[0] if original else None, "original_n": max(0, len(original) - 1),
            "original_s": sum(original[1:]), "original_times": _histogram(original[1:])}


def _figures(*records: Dict[str, Any]) -> Dict[str, Any]:
    return run_report.site_figures(run_report._merge_records(records).popitem()[1])


BIN = 2 ** (1 / sites.BINS_PER_OCTAVE) - 1
"""A histogram bin's relative width: a median is read within half of it."""


def test_the_estimate_per_band_leaves_each_arms_first_call_out() -> None:
    # helper's first call 1 s (torch import), then 1 ms; the original's first 9 ms, then 4 ms
    figures = _figures(_record({"10": _band(20, [1.0, 0.001, 0.001, 0.001], [0.009, 0.004, 0.004, 0.004])}))
    assert figures["helper_s"] == pytest.approx(20 * 0.001, rel=BIN)
    assert figures["original_s"] == pytest.approx(20 * 0.004, rel=BIN)
    assert figures["saved_s"] == pytest.approx(20 * 0.003, rel=BIN)
    assert figures["warmup_s"] == pytest.approx(1.0 - 0.001, rel=BIN)
    assert figures["notes"] == []


def test_a_band_with_one_call_is_unmeasured_and_saves_nothing() -> None:
    figures = _figures(_record({"3": _band(1, [], [0.5]), "10": _band(4, [0.002, 0.001], [0.004, 0.004])}))
    assert figures["saved_s"] == pytest.approx(4 * 0.003, rel=BIN)
    assert figures["notes"][0].startswith("1 of 5 calls unmeasured")
    assert "few samples" in figures["notes"]


def test_a_site_whose_helper_always_ran_the_original_saves_nothing() -> None:
    # both arms ran NumPy: the 3 ms between their medians is the machine's noise
    figures = _figures(_record({"10": _band(20, [0.002, 0.001, 0.001], [0.004, 0.004, 0.004])}, {"numpy": 12}))
    assert figures["saved_s"] == 0.0 and figures["helper_s"] == figures["original_s"]
    assert (figures["saved_low_s"], figures["saved_high_s"], figures["verdict"]) == (0.0, 0.0, "unsure")
    assert "the helper ran the original on every call" in figures["notes"]


@pytest.mark.parametrize("path", ["lean", "cores"])
def test_a_site_whose_helper_computed_the_originals_arithmetic_itself_saves(path: str) -> None:
    # logsumexp's lean path (SciPy's bits without its overhead) and the original's loop on every core are the
    # helper's own computation, not the original's single call
    figures = _figures(_record({"10": _band(20, [0.002, 0.001, 0.001], [0.004, 0.004, 0.004])}, {path: 12}))
    assert figures["saved_s"] == pytest.approx(20 * 0.003, rel=BIN)
    assert "the helper ran the original on every call" not in figures["notes"]


def test_the_original_on_every_core_marks_its_calls_for_the_sites(monkeypatch: pytest.MonkeyPatch) -> None:
    import np2torch.runtime as np2t
    from np2torch.runtime import _state
    from np2torch.runtime._paths import blocks

    monkeypatch.setattr(blocks, "free_cores", lambda wanted: wanted)  # as on a quiet machine (else the single call)
    _state.TAKEN.device = None
    with np2t.using(exact="bits", min_size=0):
        np2t.exp(np.linspace(0, 1, 300_000))
    assert _state.TAKEN.device == "cores"


def test_the_report_says_why_torch_computed_nothing_beside_a_lean_site() -> None:
    lean = _record({"10": _band(20, [0.002, 0.001, 0.001], [0.004, 0.004, 0.004])}, {"lean": 12})
    plain = {**_record({"10": _band(20, [0.002, 0.002], [0.002, 0.002])}, {"numpy": 12}), "line": 2}
    report = run_report.build(["x.py"], 1.0, [lean, plain], [], {}, 0, torch_imported=False)
    assert "torch computed none of these calls: it was not imported" in run_report.text(report)


def test_the_lean_path_marks_its_calls_for_the_sites() -> None:
    from np2torch.runtime import _logsumexp, _state

    a = np.random.default_rng(0).normal(size=(100, 3))
    _state.TAKEN.device = None
    _logsumexp.logsumexp(a, axis=1)
    assert _state.TAKEN.device == "lean"


def test_records_of_one_site_from_several_processes_add_up() -> None:
    one = _record({"10": _band(10, [0.01, 0.002], [0.006, 0.005])}, {"cpu": 1})
    two = _record({"10": _band(6, [0.02, 0.002, 0.002], [0.007, 0.005])}, {"cpu": 2})
    merged = run_report._merge_records([one, two])
    assert len(merged) == 1
    assert merged[("/p/x.py", 1, 1, "NPT001")]["bands"]["10"]["helper_times"] == {sites.time_bin(0.002): 3}
    figures = run_report.site_figures(next(iter(merged.values())))
    assert figures["calls"] == 16
    assert figures["paths"]["cpu"] == 3
    assert figures["helper_s"] == pytest.approx(16 * 0.002, rel=BIN)
    assert figures["original_s"] == pytest.approx(16 * 0.005, rel=BIN)


def test_one_stalled_call_flips_no_verdict() -> None:
    # 60 helper calls of 1 ms and one the scheduler stalled for 2 s, against an original of 4 ms: the mean
    # helper call (34 ms) would make the site cost 2 s; the median call says what the program saves.
    helper = [0.0012] + [0.001] * 30 + [2.0] + [0.001] * 30
    figures = _figures(_record({"10": _band(70, helper, [0.004] * 9)}))
    assert figures["saved_s"] == pytest.approx(70 * 0.003, rel=2 * BIN)
    assert figures["verdict"] == "saves"
    assert 0 < figures["saved_low_s"] <= figures["saved_s"] <= figures["saved_high_s"]


@pytest.mark.parametrize("helper, original, verdict", [
    pytest.param([1e-5] * 40, [1e-6] * 8, "costs", id="the helper ten times slower costs"),
    pytest.param([1e-3] * 40, [4e-3] * 8, "saves", id="the helper four times faster saves"),
    pytest.param([1e-3, 2e-3, 3e-3, 4e-3] * 10, [1.5e-3, 2.5e-3, 3.5e-3, 4.5e-3] * 2, "unsure",
                 id="arms that overlap are unsure"),
    pytest.param([1e-3, 1e-3, 1e-3], [4e-3, 4e-3], "unsure", id="two samples of an arm say little"),
])
def test_the_verdict_is_the_side_of_zero_the_interval_is_on(helper: List[float], original: List[float],
                                                            verdict: str) -> None:
    figures = _figures(_record({"12": _band(100, helper, original)}))
    assert figures["verdict"] == verdict, figures
    assert figures["saved_low_s"] <= figures["saved_s"] <= figures["saved_high_s"]


def test_the_median_interval_is_the_order_statistics_that_hold_the_median() -> None:
    # 100 calls of distinct times: the 95 % interval of the median is between the 40th and the 61st call
    times = [0.001 * 1.1 ** i for i in range(100)]
    histogram = {sites.time_bin(t): 1 for t in times}
    median, low, high = run_report.median_interval(histogram)
    assert median == pytest.approx(times[49], rel=BIN)
    assert low == pytest.approx(times[39], rel=BIN) and high == pytest.approx(times[60], rel=BIN)
    assert run_report.median_interval({sites.time_bin(0.5): 1}) == (sites.bin_seconds(sites.time_bin(0.5)),) * 3


def _clocked_site(monkeypatch: pytest.MonkeyPatch, now: List[float], helper_s: float, original: Any, *,
                  spelled: bool = False, redirect_s: float = 1.0) -> Any:
    """A site on a clock of the test's own, ``now[0]``: it moves only where the test says (``helper_s`` per
    helper call, which torch computes; ``redirect_s`` each time np2torch sets up the warning redirect), so the
    timings are exact on any machine."""
    import time

    import numpy as np

    from np2torch.runtime._exact import errstate
    from np2torch.runtime._state import TAKEN

    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    real = errstate.warn_redirect

    def slow_redirect(name: str) -> object:
        now[0] += redirect_s
        return real(name)

    monkeypatch.setattr(errstate, "warn_redirect", slow_redirect)

    def helper(x: Any, *args: Any, **kwargs: Any) -> Any:
        now[0] += helper_s
        TAKEN.device = "cpu"
        return np.exp(x)

    return sites.Site("clocked.py", 1, 1, "numpy.exp", "NPT001", helper, original, "exp", spelled=spelled)


def test_the_original_arm_is_timed_without_the_warning_redirect(monkeypatch: pytest.MonkeyPatch) -> None:
    # Setting up the redirect costs (on this clock) 1 s a call and numpy.exp nothing: the program, which calls
    # numpy.exp itself under `python`, pays nothing, and so does the original's arm.
    import numpy as np

    site = _clocked_site(monkeypatch, [0.0], 0.5, np.exp)
    x = np.ones(4)
    with np.errstate(all="warn"):
        for _ in range(16):
            site.call(x)
    band = site.record()["bands"]["3"]
    assert (band["original_n"], band["helper_n"]) == (4, 10)
    assert band["first_original_s"] == 0.0 and band["original_s"] == 0.0
    assert band["first_helper_s"] == 0.5 and band["helper_s"] == 0.5 * 10


def test_a_spelled_patterns_pieces_take_their_redirects_out_of_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    site = _clocked_site(monkeypatch, [0.0], 0.5, None, spelled=True)
    site.original = sites._spelled("numpy.log", "numpy.sum", "numpy.exp")
    site.call = sites._make_call(site, "logsumexp")
    x = np.ones((3, 4))
    with np.errstate(all="warn"):
        results = [site.call(x, axis=0) for _ in range(8)]
    band = site.record()["bands"]["4"]
    assert band["first_original_s"] == 0.0 and band["original_s"] == 0.0 and band["original_n"] == 3
    np.testing.assert_array_equal(results[0], np.log(np.sum(np.exp(x), axis=0)))


def test_a_site_forced_onto_a_slow_path_shows_a_negative_saving(monkeypatch: pytest.MonkeyPatch) -> None:
    # The helper 30 us a call, the original 1 us (a Python stand-in, called plainly), on the test's own clock:
    # the verdict is "costs" on any machine, however busy.
    import numpy as np

    now = [0.0]

    def original(x: Any) -> Any:
        now[0] += 1e-6
        return np.exp(x)

    site = _clocked_site(monkeypatch, now, 30e-6, original)
    for _ in range(400):
        site.call(np.ones(16))
    figures = _figures(site.record())
    assert figures["helper_s"] == pytest.approx(400 * 30e-6, rel=BIN)
    assert figures["original_s"] == pytest.approx(400 * 1e-6, rel=BIN)
    assert figures["verdict"] == "costs" and figures["saved_high_s"] < 0


def test_which_calls_run_the_original_is_a_function_of_the_count_per_band() -> None:
    # No clock and no chance: in each size band the first eight calls alternate (the original first), then
    # one in eight runs the original; two sites given the same calls choose the same, call for call.
    import numpy as np

    def arms(sizes: List[int]) -> List[str]:
        ran: List[str] = []
        site = sites.Site("det.py", 1, 1, "numpy.exp", "NPT001", lambda x: ran.append("helper"),
                          lambda x: ran.append("original"), "exp", spelled=True)
        for n in sizes:
            site.call(np.ones(n))
        return ran

    sizes = [3, 100, 3, 3, 5000, 100] * 30 + [70, 3] * 20
    want: List[str] = []
    counts: Dict[int, int] = {}
    for n in sizes:
        index = counts[n.bit_length()] = counts.get(n.bit_length(), -1) + 1
        want.append("original" if (index % 2 == 0 if index < 8 else index % 8 == 7) else "helper")
    assert arms(sizes) == want
    assert arms(sizes) == arms(sizes)


def test_two_runs_give_the_same_bits(tmp_path: Path) -> None:
    # Torch forced on one thread: which calls are sampled depends on the counts only, so two runs of the same
    # program under `np2torch run` print the same digest, and sample and dispatch the same calls.
    program = """\
        import hashlib
        import numpy as np
        from scipy.special import erf
        rng = np.random.default_rng(1)
        digest = hashlib.sha256()
        for n in [17, 300, 4096, 70_000] * 12 + [5] * 9:
            x = rng.standard_normal(n)
            digest.update(np.exp(x).tobytes())
            digest.update(erf(x).tobytes())
        with open("digest.txt", "w") as out:
            out.write(digest.hexdigest())
        """
    env = {"NP2TORCH_MIN_SIZE": "0", "OMP_NUM_THREADS": "1"}
    runs = []
    for _ in range(2):
        data = _run(tmp_path, program, "--report", "none", env=env)
        runs.append(((tmp_path / "proj" / "digest.txt").read_text(),
                     sorted((site["line"], site["paths"]) for site in data["sites"])))
    assert runs[0] == runs[1]
    assert runs[0][1][0][1]["sampled"] == 5 * 4  # five bands of 9 or 12 calls: 4 of the first 8 each


def test_threads_get_the_same_bits_whatever_order_they_reach_a_site_in(tmp_path: Path) -> None:
    # Which calls run the original is counted per thread: two threads calling erf at one site give the same bits
    # when one runs all its calls before the other starts as when they take turns call by call (a count shared by
    # the threads sampled the first thread's calls 0-11 in one order, its every other call in the other).
    program = """\
        import hashlib, os, threading
        import numpy as np
        from scipy.special import erf
        inputs = {name: [np.random.default_rng([seed, k]).standard_normal(70_000) for k in range(12)]
                  for seed, name in enumerate("ab")}
        turn = {name: threading.Event() for name in "ab"}
        digests = {}
        def work(name, other):
            digest = hashlib.sha256()
            for x in inputs[name]:
                if os.environ["SCHEDULE"] == "turns":
                    turn[name].wait(); turn[name].clear()
                digest.update(erf(x).tobytes())
                if os.environ["SCHEDULE"] == "turns":
                    turn[other].set()
            digests[name] = digest.hexdigest()
            turn[other].set()
        threads = [threading.Thread(target=work, args=pair, name=pair[0]) for pair in ("ab", "ba")]
        turn["a"].set()
        threads[0].start()
        if os.environ["SCHEDULE"] == "one after the other":
            threads[0].join()
        threads[1].start()
        for thread in threads: thread.join()
        with open("digest.txt", "w") as out:
            out.write(repr(sorted(digests.items())))
        """
    runs = []
    for schedule in ("one after the other", "turns"):
        env = {"NP2TORCH_MIN_SIZE": "0", "OMP_NUM_THREADS": "1", "SCHEDULE": schedule}
        data = _run(tmp_path, program, "--report", "none", env=env)
        runs.append(((tmp_path / "proj" / "digest.txt").read_text(), [site["paths"] for site in data["sites"]]))
    assert runs[0] == runs[1]
    want = 0
    for name in "ab":  # each thread counts from a place its name fixes: 4 of the first 8 places, every 8th after
        start = zlib.crc32(name.encode()) % sites.SAMPLE_EVERY
        want += sum(1 for i in range(start, start + 12) if (i % 2 == 0 if i < 8 else i % 8 == 7))
    assert runs[0][1] == [{"sampled": want, "cpu": 24 - want}]


def test_a_thread_per_call_samples_some_calls_not_all() -> None:
    # A thread's first call in a band would run the original: a program starting one thread per call then
    # measured the original alone.  Each thread counts from a place its name fixes.
    import numpy as np

    ran: List[str] = []
    site = sites.Site("per_thread.py", 1, 1, "numpy.exp", "NPT001", lambda x: ran.append("helper"),
                      lambda x: ran.append("original"), "exp", spelled=True)
    for i in range(16):
        thread = threading.Thread(target=site.call, args=(np.ones(100),), name=f"Thread-{i + 1} (work)")
        thread.start()
        thread.join()
    want = ["original" if zlib.crc32(f"Thread-{i + 1} (work)".encode()) % 8 in (0, 2, 4, 6) else "helper"
            for i in range(16)]
    assert ran == want
    assert 0 < ran.count("original") < 16


def test_one_time_work_inside_a_helper_call_is_warm_up_not_the_helpers_time() -> None:
    # A helper call that imported torch (1 s, recorded by the runtime) is timed at 1.002 s: the site keeps
    # 2 ms as the call's time and the second as warm-up, so the steady state is not charged with it.
    from np2torch.runtime import sites
    from np2torch.runtime._state import PROCESS

    site = sites.table("one-time-test", "one_time.py", [(1, 1, "exp", "numpy.exp", "NPT001", ())])[0]
    record = next(s for s in sites._SITES.values() if s.call is site)
    saved = list(PROCESS.one_time)
    PROCESS.one_time.append((100.0005, 1.0))
    try:
        lane = record.lane(10)
        lane[2].extend([(1000, "", 99.0, 0.004), (1000, "", 201.0, 0.004)])
        lane[1].extend([(1000, "cpu", 100.0, 1.002), (1000, "cpu", 200.0, 0.002), (1000, "cpu", 202.0, 0.002)])
        band = record.record()["bands"]["10"]
    finally:
        PROCESS.one_time[:] = saved
    assert band["one_time_s"] == pytest.approx(1.0)
    assert band["first_helper_s"] == pytest.approx(0.002)
    figures = run_report.site_figures(run_report._merge_records([record.record()]).popitem()[1])
    assert figures["helper_s"] == pytest.approx(5 * 0.002, rel=BIN)
    assert figures["warmup_s"] == pytest.approx(1.0, rel=BIN) and figures["one_time_s"] == pytest.approx(1.0)


def _reference_bands(calls: List[tuple], events: List[tuple]) -> Dict[str, Dict[str, Any]]:
    """A site's bands as one step per call computes them: ``calls`` are ``(bits, n, path, start, seconds)`` in
    the order they ended, path ``""`` for a call sampled to the original."""
    bands: Dict[str, Dict[str, Any]] = {}
    for bits, n, path, start, seconds in calls:
        band = bands.setdefault(str(bits), {"calls": 0, "elements": 0, "helper_n": 0, "helper_s": 0.0,
                                            "first_helper_s": None, "original_n": 0, "original_s": 0.0,
                                            "first_original_s": None, "one_time_s": 0.0, "helper_times": {},
                                            "original_times": {}})
        band["calls"] += 1
        band["elements"] += n
        if path:
            inside = sum(max(0.0, min(start + seconds, began + took) - max(start, began)) for began, took in events)
            band["one_time_s"] += inside
            seconds = max(0.0, seconds - inside)
        arm = "helper" if path else "original"
        if band[f"first_{arm}_s"] is None:
            band[f"first_{arm}_s"] = seconds
        else:
            band[f"{arm}_n"] += 1
            band[f"{arm}_s"] += seconds
            times = band[f"{arm}_times"]
            times[str(sites.time_bin(seconds))] = times.get(str(sites.time_bin(seconds)), 0) + 1
    return bands


_CALL = st.tuples(st.integers(0, 3000), st.sampled_from(["", "numpy", "numpy", "cpu", "cuda"]),
                  st.floats(0, 100), st.floats(0, 2))


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(st.lists(_CALL, max_size=40), min_size=1, max_size=4),
       events=st.lists(st.tuples(st.floats(0, 100), st.floats(0, 5)), max_size=2))
def test_the_folded_record_is_the_sum_over_its_calls(batches: List[List[tuple]], events: List[tuple]) -> None:
    # Calls logged per band and arm, folded in batches (as the hot path and the report's reads interleave), give
    # the bands, paths and sizes a step per call gives, one-time work taken out of the helper calls it was in.
    from np2torch.runtime import sites
    from np2torch.runtime._state import PROCESS

    site = sites.Site("fold.py", 1, 1, "numpy.exp", "NPT001", np.exp, np.exp, "exp")
    saved = list(PROCESS.one_time)
    PROCESS.one_time[:] = events
    try:
        for batch in batches:
            for n, path, start, seconds in batch:
                site.lane(n.bit_length())[1 if path else 2].append((n, path, start, seconds))
            site.fold()
        record = site.record()
    finally:
        PROCESS.one_time[:] = saved
    calls = [(n.bit_length(), n, path, start, seconds) for batch in batches for n, path, start, seconds in batch]
    # the reference takes each band's calls arm by arm, as they were logged: the first of each arm is its own
    order = sorted(range(len(calls)), key=lambda i: (calls[i][0], calls[i][2] == ""))
    want = _reference_bands([calls[i] for i in order], events)
    got = record["bands"]
    assert got.keys() == want.keys()
    for bits, band in want.items():
        for key, value in band.items():
            if key.endswith("_times"):
                assert got[bits][key] == dict(sorted(value.items(), key=lambda item: int(item[0]))), (bits, key)
            else:
                assert got[bits][key] == pytest.approx(value, abs=1e-9), (bits, key)
    paths: Dict[str, int] = {}
    sizes: Dict[str, int] = {}
    for _bits, n, path, _start, _seconds in calls:
        if path:
            paths[path] = paths.get(path, 0) + 1
        sizes[str(n)] = sizes.get(str(n), 0) + 1
    assert record["paths"] == paths
    assert record["sizes"] == (sizes if len(sizes) <= sites._DISTINCT_SIZES else None)


def test_an_exception_raised_in_a_sites_own_bookkeeping_leaves_it_without_the_runtimes_frames(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A Ctrl-C (or a signal handler's exception) lands wherever the interpreter is: in the site's counting
    # as well as in either arm; the program sees its own line, as a C ufunc call shows under python.
    import traceback

    from np2torch.runtime import sites
    from np2torch.runtime._exact import errstate

    site = sites.table("bookkeeping-test", "bookkeeping.py", [(1, 1, "exp", "numpy.exp", "NPT001", ())])[0]

    def interrupted(self: Any, bits: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sites.Site, "lane", interrupted)
    with pytest.raises(KeyboardInterrupt) as caught:
        site(np.zeros(3))  # the first call of a size band makes its lane
    frames = [(frame.filename, frame.name) for frame in traceback.extract_tb(caught.value.__traceback__)]
    assert frames == [(__file__, "test_an_exception_raised_in_a_sites_own_bookkeeping_leaves_it_without_the_runtimes_"
                                 "frames"), (__file__, "interrupted")]
    assert not any(name.startswith(errstate.RUNTIME_FOLDER) for name, _function in frames)


def test_a_long_log_is_binned_as_each_call_is() -> None:
    # a fold of a long log bins it in NumPy: the same histogram as one call at a time
    times = list(np.random.default_rng(0).lognormal(-9, 3, 5000)) + [0.0, 1e-12, 3.0]
    folded: Dict[int, int] = {}
    sites._bin_all(folded, times)
    one_by_one: Dict[int, int] = {}
    for seconds in times:
        one_by_one[sites.time_bin(seconds)] = one_by_one.get(sites.time_bin(seconds), 0) + 1
    assert folded == one_by_one
