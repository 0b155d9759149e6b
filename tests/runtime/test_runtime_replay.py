"""The many-core decisions, checked without a many-core machine: the 16-core/H100 host's recordings replayed.

scripts/replay.py turns the recordings (tests/data/replay/2026-11-22-16core-h100/,
copied from the measurement run) into the profile ``np2torch tune`` would have
written there, and asks the runtime which path it takes at every recorded size;
here each decision must be within 1 us + 10 % of the best recorded time at that
size.  Nothing is timed: the same answer on every machine.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from np2torch.runtime._decision.model import CPU_PATHS, Curve, Profile

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("replay", ROOT / "scripts" / "replay.py")
assert _SPEC is not None and _SPEC.loader is not None
replay = importlib.util.module_from_spec(_SPEC)
sys.modules["replay"] = replay
_SPEC.loader.exec_module(replay)


@pytest.fixture(scope="module")
def host():
    return replay.read_host()


@pytest.fixture(scope="module")
def rows(host):
    return replay.replay(host)


def _beats(recording, path: str, others) -> bool:
    """``path`` was faster than each of ``others`` by more than the bound."""
    mine = recording.seconds[path]
    return all(recording.seconds[o] > mine * replay.BOUND_FACTOR + replay.BOUND_SECONDS for o in others)


# ---------------------------------------------------------------- tuned: the profile tune would have written


def test_every_tuned_decision_is_within_the_bound_of_the_recorded_best(rows):
    wrong = [(r.recording.source, r.recording.name, r.recording.dtype, r.recording.n, r.tuned) for r in rows
             if r.recording.within_bound(r.tuned) is False]
    assert not wrong
    # and every decision was judged: some recording at its size timed the path it took
    judged = {}
    for r in rows:
        key = (r.recording.name, r.recording.dtype, r.recording.n)
        judged[key] = judged.get(key, False) or r.recording.within_bound(r.tuned) is not None
    assert all(judged.values()), [key for key, ok in judged.items() if not ok]
    assert len(judged) >= 30


@pytest.mark.parametrize("name", ["exp", "log"])
def test_float64_exp_and_log_take_the_pool_exactly_where_the_pool_won(rows, name):
    timed = [r for r in rows if (r.recording.name, r.recording.dtype) == (name, "float64") and "cpu" in r.recording.seconds]
    won = [r for r in timed if _beats(r.recording, "cpu", set(r.recording.seconds) - {"cpu"})]
    lost = [r for r in timed if not r.recording.within_bound("cpu")]
    assert won and lost
    assert {r.tuned for r in won} == {"cpu"}
    assert "cpu" not in {r.tuned for r in lost}
    # from the smallest size where 16 threads won, every larger recorded size goes to the pool
    first = min(r.recording.n for r in won)
    assert {r.tuned for r in timed if r.recording.n >= first} == {"cpu"}


def test_auto_never_chooses_cuda_where_a_recorded_cpu_path_was_faster(rows):
    with_cuda = [r for r in rows if "cuda" in r.recording.seconds]
    slower = [r for r in with_cuda if any(r.recording.seconds[p] < r.recording.seconds["cuda"] for p in CPU_PATHS
                                          if p in r.recording.seconds)]
    # where the row timed the pool too (the sweep's float64 rows timed the original and CUDA only)
    faster = [r for r in with_cuda if "cpu" in r.recording.seconds and _beats(r.recording, "cuda", set(r.recording.seconds) - {"cuda"})]
    assert slower and faster
    assert "cuda" not in {r.tuned for r in slower}
    assert {r.tuned for r in faster} == {"cuda"}  # float32 erf at 1e8: CUDA 3x faster than the pool


def test_one_thread_where_one_thread_beat_both(rows):
    beaten = [r for r in rows if {"numpy", "cpu1", "cpu"} <= set(r.recording.seconds) and _beats(r.recording, "cpu1", ("numpy", "cpu"))]
    assert len(beaten) >= 4
    assert {r.tuned for r in beaten} == {"cpu1"}


def test_the_tuned_profile_is_one_tune_could_have_written(host):
    profile = replay.tuned_profile(host)
    again = Profile.from_json(json.loads(json.dumps(profile.to_json())), "replayed")  # validated as a profile file is
    assert again.curves == profile.curves
    assert profile.threads == 16 and profile.fingerprint["cores"] == 16
    assert profile.fingerprint["gpus"] == ["NVIDIA H100 80GB HBM3"]
    exp = profile.curves["exp/float64"]
    assert set(exp.seconds) == set(replay.RECORDED_PATHS) and exp.sizes[0] == 10_000 and exp.sizes[-1] == 10**8
    assert exp.seconds["cpu"][exp.sizes.index(10**6)] == pytest.approx(112.28256666674004e-6)  # threads.jsonl, 16 threads
    # float32 at 1e6: the sweep (original, pool, CUDA) and threads.jsonl (original, 1 thread, pool) both timed
    # the original and the pool; threads.jsonl compared more CPU paths, so its times stand
    exp32 = profile.curves["exp/float32"]
    at = exp32.sizes.index(10**6)
    assert (exp32.seconds["numpy"][at], exp32.seconds["cpu"][at]) == pytest.approx((563.8695666666157e-6, 62.412766666852804e-6))
    assert exp32.seconds["cuda"][at] == pytest.approx(736.1306666666678e-6)  # the sweep's, the only CUDA time there


# ---------------------------------------------------------------- without tune


def test_without_tune_the_prior_never_takes_a_path_recorded_slower_than_the_original(rows):
    # No tune on the host: the built-in profile, its pool scaled to 16 cores, decides (nothing is measured
    # while a program runs, so the decision is the same on every run). It may miss a gain; it must not lose.
    judged = 0
    for r in rows:
        for found in (r.torch_imported, r.torch_not_imported):
            taken, original = r.recording.seconds.get(found.path), r.recording.seconds.get("numpy")
            if taken is not None and original is not None:
                judged += 1
                assert taken <= original * replay.BOUND_FACTOR + replay.BOUND_SECONDS, r
            else:  # only the original on every core, which the host's recordings never timed, goes unjudged
                assert found.path == "cores" and original is not None, r
    assert judged >= 16  # of 76 (38 rows, torch imported or not): the rest take the original on every core
    # the large calls gain: every exp/log/erf call from 1e6 elements leaves the original's single call -- erf for
    # torch's pool; exp and log, whose torch kernels the reference VM found no faster per core than NumPy's, for
    # the original on every core (the prior's prediction: the host's recordings never timed that path)
    large = [r for r in rows if r.recording.n >= 10**6]
    assert {r.torch_imported.path for r in large if r.recording.name == "erf"} == {"cpu"}
    assert {r.torch_imported.path for r in large if r.recording.name != "erf"} == {"cores"}


def test_without_tune_the_prior_decides_the_same_whether_or_not_the_program_imported_torch(rows):
    # A program that never imports torch: the ski rental imports it where the prior predicts savings (large
    # calls), after which its calls take the path a program that imported torch itself takes.
    assert all(r.torch_not_imported.path == r.torch_imported.path for r in rows)
    assert all(r.torch_not_imported.path != "numpy" for r in rows if r.recording.n >= 10**6)


# ---------------------------------------------------------------- the converter


def test_what_a_recording_cannot_stand_for_is_left_out_with_its_reason(host):
    reasons = dict(host.skipped)
    # torch timed float32 erf in float32; the runtime computes it in float64
    assert "float32, the runtime computes erf over float32 in float64" in reasons["threads.jsonl:5 erf"]
    assert "declined" in reasons["gpu_bench.jsonl:6 logsumexp0"]
    assert "no path" in reasons["threads.jsonl:1 log"]  # threads.jsonl timed no torch log
    assert not [r for r in host.recordings if (r.name, r.dtype) == ("erf", "float32") and "cpu1" in r.seconds]


def test_the_sweep_is_read_by_the_thresholds_of_its_commit(host):
    sweep = {(r.dtype, r.n): set(r.seconds) for r in host.recordings if r.source.startswith("gpu_bench") and r.n < 10**8}
    assert sweep[("float64", 1_000_000)] == {"numpy", "cuda"}  # float64 exp never took the pool then
    assert sweep[("float32", 100_000)] == {"numpy", "cpu"}
    assert sweep[("float32", 1_000_000)] == {"numpy", "cpu", "cuda"}
    assert ("float64", 10_000) not in sweep  # the wrapper around the original: no path's time


def test_a_path_missing_at_a_size_is_its_own_prediction():
    found = {"numpy": {10: 1e-6, 1000: 1e-4}, "cuda": {100: 5e-5, 10_000: 1e-4}}
    curve = replay.curve_from(found)
    own = Curve((100, 10_000), {"cuda": (5e-5, 1e-4)})
    assert curve.sizes == (10, 100, 1000, 10_000)
    for n in (1, 10, 50, 100, 500, 1000, 5000, 10_000, 10**6):
        assert curve.predict("cuda", n) == pytest.approx(own.predict("cuda", n))


@pytest.mark.parametrize(
    ("name", "edit", "message"),
    [
        ("threads.jsonl", lambda lines: lines[:2] + ["{not json"] + lines[3:], r"threads\.jsonl:3: not JSON"),
        ("threads.jsonl", lambda lines: [lines[0].replace('"numpy_exp_us": 7.5', '"numpy_exp_us": -7.5')] + lines[1:],
         r"threads\.jsonl:1: 'numpy_exp_us' must be a positive number"),
        ("simd.jsonl", lambda lines: lines[:1] + [lines[1].replace('"n": 30000', '"n": 3e4')] + lines[2:],
         r"simd\.jsonl:2: 'n' must be a whole number"),
        ("gpu_bench.jsonl", lambda lines: lines[1:], r"gpu_bench\.jsonl: no 'env' line"),
        ("gpu_bench.jsonl", lambda lines: [lines[0].replace('"cpus": 16', '"cpus": "16"')] + lines[1:],
         r"gpu_bench\.jsonl: env 'cpus' must be a whole number"),
        ("gpu_bench.jsonl", lambda lines: lines + ['{"fn": "sin", "dtype": "float64"}'],
         r"gpu_bench\.jsonl:27: an end-to-end row of 'sin'"),
        ("gpu_bench.jsonl", lambda lines: lines + ['{"sweep": "log", "dtype": "float64", "n": 10}'],
         r"gpu_bench\.jsonl:27: a sweep of log/float64, whose thresholds"),
    ],
    ids=["a line that is not JSON", "a negative time", "a size that is not a whole number", "no description of the host",
         "cores that are not a number", "an unknown function", "a sweep of unknown thresholds"],
)
def test_a_bad_recording_is_a_one_line_error_naming_file_and_line(tmp_path, name, edit, message):
    shutil.copytree(replay.HOST, tmp_path / "host")
    path = tmp_path / "host" / name
    path.write_text("\n".join(edit(path.read_text().splitlines())) + "\n")
    with pytest.raises(replay.ReplayError, match=message):
        replay.read_host(tmp_path / "host")


# ---------------------------------------------------------------- the docs


def test_docs_hold_the_replayed_tables_as_generated(host, rows):
    docs = replay.DOCS.read_text(encoding="utf-8")
    assert replay.documented(docs) == replay.markdown(host, rows), "regenerate: .venv/bin/python scripts/replay.py --write"
