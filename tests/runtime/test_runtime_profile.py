"""The machine profile and the decisions made from it (runtime/_decision/: profile.py, route.py, calibrate.py).

Decisions are checked on synthetic profiles (whose answer is known), the ski
rental in fresh interpreters (whose torch import
state is known), and the file handling with corrupt, foreign and concurrent
writers.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import numpy as np
import pytest
from runtime_checks import assert_same_values

import np2torch.runtime as np2t
from np2torch.runtime import _backend, _load, tuning
from np2torch.runtime._api import HELPERS
from np2torch.runtime._decision import calibrate as _calibrate
from np2torch.runtime._decision import model as _model
from np2torch.runtime._decision import profile as _profile
from np2torch.runtime._decision import route as _route
from np2torch.runtime._decision.model import Curve, Profile
from np2torch.runtime._exact.slices import shape_class
from np2torch.runtime._paths import blocks
from np2torch.runtime._state import PROCESS
from np2torch.runtime.table import FUNCTIONS_BY_NAME

ROOT = Path(__file__).resolve().parents[2]
SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)


def synthetic(numpy_ns: float, cpu1: Optional[tuple] = None, cpu: Optional[tuple] = None, cuda: Optional[tuple] = None) -> Curve:
    """A curve from affine models: ``(overhead seconds, ns per element)`` per torch path; the original at 0.2 us + numpy_ns."""
    seconds: Dict[str, tuple] = {"numpy": tuple(2e-7 + numpy_ns * 1e-9 * n for n in SIZES)}
    for path, model in (("cpu1", cpu1), ("cpu", cpu), ("cuda", cuda)):
        if model is not None:
            seconds[path] = tuple(model[0] + model[1] * 1e-9 * n for n in SIZES)
    return Curve(SIZES, seconds)


def write_profile(path: Path, curves: Dict[str, Curve], import_seconds: float = 2.0, fingerprint: Optional[dict] = None) -> Path:
    profile = Profile(str(path), fingerprint if fingerprint is not None else _profile.fingerprint(), import_seconds, 2, curves)
    _profile.write_profile(path, profile)
    return path


def run_python(code: str, env: Dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full, timeout=timeout, cwd=ROOT)


@pytest.fixture
def profile_env(tmp_path, monkeypatch):
    """Point the runtime at a profile file of the test's own (and a private cache folder)."""

    def use(path: Optional[Path] = None) -> None:
        monkeypatch.setenv("NP2TORCH_CACHE_DIR", str(tmp_path / "cache"))
        if path is None:
            monkeypatch.delenv("NP2TORCH_PROFILE", raising=False)
        else:
            monkeypatch.setenv("NP2TORCH_PROFILE", str(path))
        PROCESS.reload_profile()

    yield use
    monkeypatch.setenv("NP2TORCH_PROFILE", "builtin")
    PROCESS.reload_profile()


# ---------------------------------------------------------------- the cost model


def test_prediction_interpolates_and_extrapolates():
    curve = Curve((1000, 100_000), {"numpy": (1e-6, 1e-4)})
    assert curve.predict("numpy", 1000) == pytest.approx(1e-6)
    assert curve.predict("numpy", 10_000) == pytest.approx(1e-5)  # log-log between the points
    assert curve.predict("numpy", 10) == pytest.approx(1e-6)  # below: the smallest size's time
    # above: proportional to the size (the ratios measured at the largest size hold beyond it)
    assert curve.predict("numpy", 1_000_000) == pytest.approx(1e-3)
    assert curve.predict("cpu", 1000) is None


@pytest.mark.parametrize("n", [1_500, 20_000, 300_000, 3_000_000, 30_000_000, 10**9])
def test_the_fastest_path_is_chosen_at_every_size(n):
    # original 1 ns/element; one torch thread 5 us + 0.5 ns; the pool 30 us + 0.1 ns
    curve = synthetic(1.0, cpu1=(5e-6, 0.5), cpu=(3e-5, 0.1))
    bands = _model.bands_of(curve, _model.CPU_PATHS)
    predicted = {path: t for path in _model.CPU_PATHS if (t := curve.predict(path, n)) is not None}
    fastest = min(predicted, key=predicted.__getitem__)
    chosen = bands.at(n)
    if chosen == "numpy":
        assert all(predicted[p] * _model.MARGIN >= predicted["numpy"] for p in ("cpu1", "cpu"))
    else:
        assert chosen == fastest


def test_bands_go_original_then_one_thread_then_the_pool():
    curve = synthetic(1.0, cpu1=(5e-6, 0.5), cpu=(3e-5, 0.1))
    bands = _model.bands_of(curve, _model.CPU_PATHS)
    assert bands.paths == ("numpy", "cpu1", "cpu")
    assert 10_000 < bands.starts[1] < 20_000  # 5 us + 0.5 ns n < (1 ns n) / 1.1 from ~12,900
    assert bands.at(999) == "numpy"  # nothing measured below the smallest size: the original


def test_a_measured_size_gets_the_path_measured_fastest_there():
    # 30,000 lies between two sizes of the band grid (26,102 and 31,623): the grid alone put it in the
    # band of 26,102, below the smallest measured size, where nothing but the original is chosen.
    curve = Curve((30_000, 300_000), {"numpy": (14e-6, 173e-6), "cpu1": (9.8e-6, 102e-6), "cpu": (45e-6, 53e-6)})
    bands = _model.bands_of(curve, _model.CPU_PATHS)
    assert [bands.at(n) for n in (29_999, 30_000, 300_000)] == ["numpy", "cpu1", "cpu"]


def test_a_prior_decides_without_the_one_thread_guard_and_measures_nothing():
    # The reference machine (2 threads): one torch thread 2.3x the original, the pool 1.2x. Scaled to 16
    # cores the pool is predicted ~6x faster; one thread stays the reference machine's.
    assert _backend.load_torch()
    builtin = Profile("builtin", {}, 1.0, 2, {"exp/float64": synthetic(1.0, cpu1=(5e-6, 2.3), cpu=(1e-4, 1.2))})
    PROCESS.reload_profile()
    PROCESS.profile = _model.Active(None, builtin, "never-written.json", {"cores": 16})
    try:
        # the one-thread guard is not judged on another machine's one thread: the prior sends it to the pool,
        # and that is the decision (nothing is measured while the program runs)
        assert _route.route("exp", "float64", 10**7, "cpu", None, False, dry_run=True).path == "cpu"
        found = _route.route("exp", "float64", 10**7, "cpu", None, False)
        assert found is not None and found.path == "cpu" and "scaled to this machine" in found.why
        assert _profile.active().machine is None  # nothing recorded
        # the built-in profile alone (NP2TORCH_PROFILE=builtin) keeps the guard
        PROCESS.reload_profile()
        PROCESS.profile = _model.Active(None, builtin, None, {"cores": 16})
        assert _route.route("exp", "float64", 10**7, "cpu", None, False) is None
    finally:
        PROCESS.reload_profile()


def test_a_reduction_is_decided_by_its_shape_class_and_falls_back_to_its_classless_curve():
    assert _backend.load_torch()
    fast = synthetic(1.0, cpu1=(5e-6, 0.3), cpu=(3e-5, 0.2))
    slow = synthetic(1.0, cpu1=(5e-6, 3.0), cpu=(3e-5, 2.0))
    curves = {"logsumexp/float64/short-inner": fast, "logsumexp/float64/long-outer": slow, "logsumexp/float64": slow}
    PROCESS.reload_profile()
    PROCESS.profile = _model.Active(Profile("m", {}, 1.0, 2, curves), Profile("builtin", {}, 1.0, 2), None, {"cores": 2})
    try:
        short = _route.route("logsumexp", "float64", 15_000, "cpu", None, False, klass="short-inner")
        assert short is not None and short.path == "cpu1" and "short-inner" in short.why
        assert _route.route("logsumexp", "float64", 15_000, "cpu", None, False, klass="long-outer") is None
        # a class the profile lacks: the class-less curve of the same profile
        assert _route.route("logsumexp", "float64", 15_000, "cpu", None, False, klass="medium-outer") is None
        assert _route.torch_floor("logsumexp", ("float64",), _model.REDUCTION_CLASSES) <= 15_000
        assert _route.torch_floor("logsumexp", ("float64",)) == _route.CUDA_UNMEASURED_FROM
    finally:
        PROCESS.reload_profile()


def test_shape_classes_name_the_reduced_length_and_layout():
    a = np.zeros((5000, 3))
    assert shape_class(a.shape, a.strides, (1,)) == "short-inner"
    assert shape_class(a.shape, a.strides, (0,)) == "long-outer"
    assert shape_class(a.T.shape, a.T.strides, (0,)) == "short-inner"
    b = np.zeros((64, 2000))
    assert shape_class(b.shape, b.strides, (0,)) == "medium-outer"
    assert shape_class(b.shape, b.strides, (0, 1)) == "long-inner"
    assert shape_class((1, 7), (56, 8), (0,)) == "short-inner"  # a length-1 reduced axis steps over nothing


def test_a_path_must_be_ten_percent_faster():
    curve = synthetic(1.0, cpu1=(2e-7, 0.95))  # only 5 % faster: not worth the risk
    assert _model.bands_of(curve, _model.CPU_PATHS).paths == ("numpy",)


def test_torch_is_chosen_only_where_one_thread_stays_within_the_contention_bound():
    # The pool is 4x faster, but one thread is 2x slower than the original: under
    # full contention the pool shrinks to one thread, so the original keeps it.
    curve = synthetic(1.0, cpu1=(0.0, 2.0), cpu=(0.0, 0.25))
    assert _model.bands_of(curve, _model.CPU_PATHS).paths == ("numpy",)
    curve = synthetic(1.0, cpu1=(0.0, 1.3), cpu=(0.0, 0.25))
    assert _model.bands_of(curve, _model.CPU_PATHS).paths[-1] == "cpu"
    # Within the bound, but not by the margin measurement noise needs: a prediction of 1.4x is a 1.5x call
    # as often as a 1.3x one.
    curve = synthetic(1.0, cpu1=(0.0, 1.4), cpu=(0.0, 0.25))
    bands = _model.bands_of(curve, _model.CPU_PATHS)
    assert [bands.at(n) for n in (100_000, 1_000_000, 10_000_000)] == ["numpy"] * 3


def test_cuda_is_chosen_only_when_allowed_and_fastest():
    curve = synthetic(1.0, cpu1=(5e-6, 0.8), cpu=(3e-5, 0.4), cuda=(1e-4, 0.05))
    with_cuda = _model.bands_of(curve, _model.ALL_PATHS)
    assert with_cuda.paths[-1] == "cuda"
    assert "cuda" not in _model.bands_of(curve, _model.CPU_PATHS).paths


def test_decisions_are_deterministic():
    curve = synthetic(1.0, cpu1=(5e-6, 0.5), cpu=(3e-5, 0.1))
    first = _model.bands_of(curve, _model.CPU_PATHS)
    assert all(_model.bands_of(curve, _model.CPU_PATHS) == first for _ in range(3))


def test_the_prior_scales_the_pool_to_this_machines_threads():
    curve = synthetic(1.0, cpu1=(5e-6, 0.5), cpu=(3e-5, 0.4))
    cut = _route._blocks_of("exp/float64")
    scaled = _model.scaled_prior(curve, 2, 16, cut)
    assert scaled.predict("cpu", SIZES[-1]) < curve.predict("cpu", SIZES[-1]) / 4
    assert scaled.seconds["cpu1"] == curve.seconds["cpu1"] and scaled.seconds["numpy"] == curve.seconds["numpy"]
    assert _model.scaled_prior(curve, 2, 2, cut) is curve


def test_the_prior_scales_a_call_only_as_far_as_its_blocks_let_threads_share_it():
    # A call of one block is the calling thread's alone, on any machine: scaled by the threads alone, the 2-core
    # reference profile predicted float64 erf over 4,096 elements 1.7x faster on every core of a 16-core machine.
    sizes = (1024, 4096, 8192, 65536, 131072, 262144, 4194304)
    work = (0.0, 30e-6, 60e-6, 270e-6, 540e-6, 1080e-6, 16e-3)  # on the reference's two threads, past the fixed cost
    seconds = tuple(1e-5 + t for t in work)
    curve = Curve(sizes, {"numpy": tuple(1e-5 + 8e-9 * n for n in sizes), "cores": seconds, "cpu": seconds})
    cut = _route._blocks_of("erf/float64")
    # An elementwise call is cut for its threads, on either path.
    assert [cut(path, n, 16) for n in sizes for path in ("cores", "cpu")] == [
        count for count in (1, 1, 2, 16, 16, 16, 32) for _ in range(2)]
    assert [cut("cores", n, 2) for n in sizes] == [1, 1, 2, 2, 2, 4, 32]
    wide = _model.scaled_prior(curve, 2, 16, cut).seconds
    assert wide["cores"] == wide["cpu"] == pytest.approx(seconds[:3] + tuple(1e-5 + t / 8 for t in work[3:]))
    alone = _model.scaled_prior(curve, 2, 1, cut).seconds  # one core: more than one block's work on one thread
    assert alone["cores"] == pytest.approx(seconds[:2] + tuple(1e-5 + 2 * t for t in work[2:]))
    # A reduction's pool cuts by the size alone: logsumexp's rows of short slices in blocks of 2**19 elements.
    rows = _route._blocks_of("logsumexp/float64/short-inner")
    assert [rows("cpu", n, 16) for n in sizes] == [1, 1, 1, 1, 1, 1, 8]
    reduced = _model.scaled_prior(Curve(sizes, {"numpy": curve.seconds["numpy"], "cpu": seconds}), 2, 16, rows)
    assert reduced.seconds["cpu"] == pytest.approx(seconds[:6] + (1e-5 + work[6] / 4,))


def test_each_helper_says_how_many_blocks_its_pool_cuts_a_call_into():
    def torch(name: str, n: int, klass: str = "") -> int:
        return blocks.pool_blocks(name, n, 16, True, klass)

    assert [torch("exp", n) for n in (1, 4096, 4097, 65536, 1 << 20, 10**8)] == [1, 1, 2, 16, 16, 96]
    assert torch("hypot", 1 << 18) == 16  # the two-argument helpers cut alike
    assert torch("softmax", 10**8, "long-inner") == 1  # one torch thread per call
    assert torch("log_softmax", 10**8, "short-outer") == 1
    assert torch("logsumexp", 10**6, "short-inner") == 2  # rows in blocks of 2**19 elements
    assert torch("logsumexp", 1 << 20, "long-outer") == 16
    assert torch("logsumexp", 1 << 26, "long-outer") == 128  # blocks of at most 2**19
    # The original on every core alike: as many blocks as threads where the size alone would give fewer.
    assert [blocks.pool_blocks("exp", n, 2, False) for n in (4096, 4097, 120_000, 1 << 20)] == [1, 2, 2, 16]
    assert [blocks.pool_blocks("exp", n, 3, False) for n in (10_000, 1 << 20)] == [3, 16]
    assert blocks.pool_blocks("exp", 1 << 20, 1, False) == 16  # (run serially on one thread)
    assert blocks.pool_blocks("logsumexp", 1 << 20, 16, False, "long-outer") == 16  # (SciPy's: no such path)


def test_a_curve_read_before_any_call_knows_its_reductions_cut():
    # `np2torch tune --show` reads curves without calling a helper: the reductions' modules, which say how their
    # pools cut a call, may not be imported yet.
    code = """
        from np2torch.runtime import tuning
        curve = tuning.Curve((1024, 10**6), {"numpy": (1e-6, 1e-3), "cpu": (1e-5, 5e-4)})
        profile = tuning.Profile("m", {}, 1.0, 2, {}, {tuning.WAKE_NOTE: 1e-4})
        print(*(tuning.as_decided(profile, curve, key).seconds["cpu"][1]
                for key in ("softmax/float64/long-inner", "logsumexp/float64/short-inner", "exp/float64")))
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_")}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    # softmax: one torch thread, no worker woken; logsumexp's short rows: two blocks of 2**19; exp: 16 blocks
    assert [float(t) for t in proc.stdout.split()] == pytest.approx([5e-4, 6e-4, 6e-4])


def test_an_elementwise_call_is_cut_for_its_threads_in_aligned_blocks():
    for n, threads in [(120_000, 2), (16_384, 2), (4_097, 2), (10_000, 3), (262_144, 16), (65_536, 64), (10**6, 2)]:
        spans = blocks.elementwise_bounds(n, threads)
        assert spans[0][0] == 0 and spans[-1][1] == n and all(b == c for (_, b), (c, _) in zip(spans, spans[1:]))
        assert all(a % blocks.ALIGN == 0 for a, _ in spans) and len(spans) == blocks.elementwise_blocks(n, threads)
        assert len({b - a for a, b in spans[:-1]}) <= 1 and 0 <= (spans[-1][1] - spans[-1][0]) - (spans[0][1] - spans[0][0]) < len(spans) * blocks.ALIGN
        if n // threads >= blocks.SHARED_BLOCK and n <= threads * blocks.MIN_BLOCK:
            assert len(spans) == threads  # one a thread
    assert blocks.elementwise_bounds(120_000, 2) == [(0, 59_392), (59_392, 120_000)]  # not 65,536 and 54,464
    assert blocks.elementwise_bounds(4_096, 16) == [(0, 4_096)]
    assert blocks.elementwise_bounds(10, 16) == [(0, 10)] and blocks.elementwise_bounds(0, 2) == [(0, 0)]
    assert len(blocks.elementwise_bounds(65_537, 16)) == 16 and len(blocks.elementwise_bounds(10**8, 2)) == 96


def test_on_many_cores_the_prior_keeps_a_call_of_one_block_on_the_original():
    assert _backend.load_torch()
    sizes = (1024, 4096, 16384, 65536, 262144, 1048576)
    original = tuple(1e-5 + 8e-9 * n for n in sizes)  # one block up to 4,096: the original's call, and 5 us
    curve = Curve(sizes, {"numpy": original, "cores": tuple(t + 5e-6 if n <= 4096 else t / 1.8
                                                            for n, t in zip(sizes, original))})
    builtin = Profile("builtin", {}, 1.0, 2, {"erf/float64": curve})
    PROCESS.reload_profile()
    PROCESS.profile = _model.Active(None, builtin, "never-written.json", {"cores": 16})
    try:
        decided = [_route.route("erf", "float64", n, "auto", None, False, dry_run=True, cores=True, exact=True)
                   for n in (1024, 4096, 16384, 262144)]
        assert [None if route is None else route.path for route in decided] == [None, None, "cores", "cores"]
    finally:
        PROCESS.reload_profile()


def test_a_call_on_every_core_pays_the_wake_of_an_idle_worker_past_one_block():
    # tune times calls back to back; a program's calls come between other work, and each wakes a worker.
    sizes = (1024, 4096, 262144, 1048576)
    curve = Curve(sizes, {"numpy": (1e-6, 1e-5, 4e-4, 1.6e-3), "cores": (1e-6, 1e-5, 3e-4, 0.9e-3)})
    cut = _route._blocks_of("exp/float64")
    woken = _model.woken(curve, 2e-4, cut, 2)
    assert woken.seconds["numpy"] == curve.seconds["numpy"]
    assert woken.seconds["cores"] == pytest.approx((1e-6, 1e-5, 5e-4, 1.1e-3))
    assert _model.woken(curve, 0.0, cut, 2) is curve
    # 1.33x back to back at 262,144 elements, slower than the original once a worker is woken; 1.45x at 1M.
    assert _model.exact_path(curve, _model.EXACT_PATHS, 262144) == "cores"
    assert _model.exact_path(woken, _model.EXACT_PATHS, 262144) == "numpy"
    assert _model.exact_path(woken, _model.EXACT_PATHS, 1048576) == "cores"


def test_past_the_largest_size_measured_a_pool_tied_with_one_thread_serves():
    # tune timed the pool and one torch thread alike at its far size; the pool's lead only grows past it.
    sizes = (1024, 1 << 20, 1 << 24)
    curve = Curve(sizes, {"numpy": (1e-6, 2e-2, 3.2e-1), "cpu1": (2e-5, 5e-3, 3.30e-2), "cpu": (3e-5, 4e-3, 3.31e-2)})
    assert _model.best_path(curve, _model.ALL_PATHS, 1 << 24) == "cpu1"  # measured there: the faster by a hair
    assert _model.best_path(curve, _model.ALL_PATHS, 10**8) == "cpu"
    apart = Curve(sizes, {**curve.seconds, "cpu": (3e-5, 4e-3, 3.30e-2 * _model.MARGIN * 1.01)})
    assert _model.best_path(apart, _model.ALL_PATHS, 10**8) == "cpu1"  # slower beyond the noise: as measured


def test_the_original_on_every_core_pays_the_wake_after_a_loops_idle():
    # It runs on its workers only after short idles (blocks.LOOP_IDLE): what waking one costs then is its charge;
    # torch's pool pays the wake after a program's longer pauses.  A profile without that note: its wake for both.
    sizes = (1024, 65536, 262144)
    curve = Curve(sizes, {"numpy": (1e-6, 1e-4, 4e-4), "cores": (1e-6, 1e-4, 3e-4), "cpu": (1e-5, 1e-4, 2e-4)})
    cut = _route._blocks_of("exp/float64")
    woken = _model.woken(curve, 2e-4, cut, 2, 3e-5)
    assert woken.seconds["cores"] == pytest.approx((1e-6, 1.3e-4, 3.3e-4))  # 65,536: two blocks, one a thread
    assert woken.seconds["cpu"] == pytest.approx((1e-5, 3e-4, 4e-4))
    assert _model.woken(curve, 2e-4, cut, 2).seconds["cores"] == pytest.approx((1e-6, 3e-4, 5e-4))
    assert _model.woken(curve, 2e-4, cut, 1) is not curve  # (one thread: the blocks of the size alone)
    tuned = Profile("m", {}, 1.0, 2, {}, {_model.WAKE_NOTE: 2e-4, _model.LOOP_WAKE_NOTE: 3e-5})
    older = Profile("m", {}, 1.0, 2, {}, {_model.WAKE_NOTE: 2e-4})
    assert _model.loop_wake_of(tuned) == 3e-5 and _model.loop_wake_of(older) == _model.wake_of(older) == 2e-4
    assert _route.as_decided(tuned, curve, "exp/float64").seconds["cores"] == pytest.approx((1e-6, 1.3e-4, 3.3e-4))


@pytest.mark.parametrize(("name", "first"), [("exp", None), ("logaddexp", 0.5)])
def test_a_call_after_the_workers_slept_takes_the_originals_single_call(tmp_path, profile_env, monkeypatch, name, first):
    # The original on every core 1.6x the original's single call back to back, a worker's wake 0.1 ms after a
    # program's pause and nothing in a loop: at 131,072 elements it runs on the workers in a loop of its calls only
    # (after a pause the original's single call, the same bits and warnings at the caller's line); at 4M, where it
    # pays after a pause too, always.
    from np2torch.runtime._paths import blocks
    from np2torch.runtime._state import TAKEN

    sizes = (1024, 65536, 131072, 262144, 4194304)
    original = tuple(1e-9 * n for n in sizes)
    curve = Curve(sizes, {"numpy": original, "cores": tuple(t if n <= 65536 else t / 1.6 for n, t in zip(sizes, original))})
    notes = {_model.WAKE_NOTE: 1e-4, _model.LOOP_WAKE_NOTE: 0.0}
    path = tmp_path / "p.json"
    _profile.write_profile(path, Profile(str(path), _profile.fingerprint(), 2.0, 2, {f"{name}/float64": curve}, notes))
    profile_env(path)
    monkeypatch.setattr(_route, "DEFER_ELEMENTS", 0)
    monkeypatch.setattr(blocks, "LOOP_IDLE", 0.002)  # (tests/conftest.py makes it endless)
    monkeypatch.setattr(blocks, "free_cores", lambda wanted: wanted)
    monkeypatch.setattr(PROCESS, "every_core_call", -np.inf)  # no call yet: the workers never ran
    now = [100.0]
    monkeypatch.setattr(blocks.time, "monotonic", lambda: now[0])
    helper, real = getattr(np2t, name), HELPERS[name].load()
    for n, pauses, expected in ((131072, (0.0, 0.001, 0.0019, 0.5, 0.0015, 0.003, 0.001),
                                 [None, "cores", "cores", None, "cores", None, "cores"]),
                                (4194304, (0.5, 0.5), ["cores", "cores"])):
        if blocks.original_limit() < 2:
            expected = [None] * len(pauses)  # one core: nothing to run on every core
        x = np.linspace(-800.0, 800.0, n)  # overflows: a warning to report
        args = (x,) if first is None else (first, x)
        taken = []
        for pause in pauses:
            now[0] += pause
            with np2t.using(exact="bits"), warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                TAKEN.device = None
                got = helper(*args)
                line = sys._getframe().f_lineno - 1
            taken.append(TAKEN.device)
            assert [(str(w.message), w.lineno) for w in seen] == ([("overflow encountered in exp", line)] if name == "exp" else [])
            with np.errstate(all="ignore"):
                assert_same_values(got, real(*args), max_ulp=0)
        assert taken == expected, n
        with np2t.using(exact="bits"):
            assert ("in a loop of such calls" in np2t.which(name, *args)[1]) == (n == 131072 and "cores" in expected)


def test_the_wake_cost_is_that_of_the_profile_a_curve_came_from():
    active = _profile.active()
    builtin = float(_profile.load_builtin().notes[_model.WAKE_NOTE])
    assert 0 < builtin < 0.01
    assert _wake(active, "builtin") == _wake(active, _route.PRIOR) == builtin
    tuned = _model.Active(Profile("m", {}, 1.0, 2, {}, {_model.WAKE_NOTE: 3e-5}), active.builtin, None, active.print_)
    assert _wake(tuned, "machine") == 3e-5 and _wake(tuned, _route.PRIOR) == builtin
    older = _model.Active(Profile("m", {}, 1.0, 2, {}, {}), active.builtin, None, active.print_)
    assert _wake(older, "machine") == 0.0  # measured before tune measured it: as it decided then


def _wake(active, origin):
    return _model.wake_of(_route.wake_profile(active, origin))


def test_tune_times_each_path_on_every_thread_it_asks_for_whatever_the_load(monkeypatch):
    # A moment's load once left the original on every core timed on one thread over a whole curve (the original's
    # own speed): tune tells a busy machine by its meter over each curve, and the paths run as on a quiet one.
    from np2torch.runtime._paths import blocks

    asked = []
    monkeypatch.setattr(blocks, "free_cores", lambda wanted: asked.append(wanted) or 1)
    assert blocks._threads_for(4, 0, torch=False) == 1 and asked == [min(4, blocks.original_limit())]
    with blocks.whole_pool():
        assert blocks._threads_for(4, 0, torch=False) == min(4, blocks.original_limit())
    assert blocks._threads_for(4, 0, torch=False) == 1
    asked.clear()
    ran_on = []
    real = blocks._on_threads
    monkeypatch.setattr(blocks, "_on_threads", lambda tasks, wanted, kind: ran_on.append(wanted) or real(tasks, wanted, kind))
    _calibrate.measure(HELPERS["exp"].run_path, "exp", np.dtype(np.float64), ("numpy", "cores"), (4 * blocks.MIN_BLOCK,),
                       None, repeat=1)
    limit = min(4, blocks.original_limit())
    assert asked == [] and set(ran_on) == ({limit} if limit > 1 else set())


def test_tune_measures_the_wake_of_an_idle_worker(monkeypatch):
    found = _calibrate.measure_wake(runs=3, idle=0.002)
    assert 0.0 <= found < 1.0
    monkeypatch.setattr(_load, "usable_cores", lambda: 1)  # one core: no worker to wake, nothing to charge
    assert _calibrate.measure_wake(runs=3, idle=0.002) == 0.0


# ---------------------------------------------------------------- files


def test_profile_round_trip(tmp_path):
    curve = synthetic(1.0, cpu1=(5e-6, 0.5))
    path = write_profile(tmp_path / "p.json", {"exp/float64": curve}, 1.5)
    loaded = _profile.read_profile(path)
    assert loaded.curves["exp/float64"] == curve and loaded.import_seconds == 1.5
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize(
    "text",
    ["", "{", "[]", '{"np2torch_profile": 99}', '{"np2torch_profile": 1, "fingerprint": {}, "curves": {"a": {"sizes": [3, 1], "numpy": [1, 1]}}, "import_seconds": 1, "threads": 1}',
     '{"np2torch_profile": 1, "fingerprint": {}, "curves": {"a": {"sizes": [1], "numpy": ["x"]}}, "import_seconds": 1, "threads": 1}',
     '{"np2torch_profile": 1, "fingerprint": {}, "curves": {}, "import_seconds": -1, "threads": 1}', "[" * 100_000],
    ids=["empty", "truncated", "a list", "another format", "sizes not increasing", "a time not a number", "negative import cost", "nested deep"],
)
def test_a_corrupt_profile_is_one_warning_and_the_builtin(tmp_path, profile_env, text):
    path = tmp_path / "p.json"
    path.write_text(text)
    profile_env(path)
    with pytest.warns(RuntimeWarning, match="ignoring the profile") as record:
        active = _profile.active()
        _profile.active()
    assert len(record) == 1
    assert active.machine is None and active.builtin.source == "builtin"
    np2t.exp(np.ones(10))  # and the helpers still work


@pytest.mark.parametrize("kind", ["corrupt", "foreign"])
def test_a_bad_profile_never_raises_into_the_call_under_an_error_filter(tmp_path, profile_env, kind):
    # warnings.simplefilter("error") (pytest's filterwarnings = error): np.exp does not raise
    # there, so the runtime's own housekeeping must not either; the warning is shown instead.
    path = tmp_path / "p.json"
    if kind == "corrupt":
        path.write_text("{")
    else:
        write_profile(path, {}, fingerprint={**_profile.fingerprint(), "cpu": "another CPU"})
    profile_env(path)
    x = np.linspace(0, 1, _route.DEFER_ELEMENTS)  # large enough to read the profile, torch imported or not
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("error")
        got = call_exp(x)
    assert_same_values(got, np.exp(x))
    assert [(w.category, w.filename, w.lineno) for w in shown] == [(RuntimeWarning, __file__, CALL_EXP_LINE)]
    assert "np2torch: " in str(shown[0].message)


def call_exp(x: np.ndarray) -> np.ndarray:
    return np2t.exp(x)  # the line the profile's warning points at


CALL_EXP_LINE = call_exp.__code__.co_firstlineno + 1


def test_a_missing_named_profile_is_one_warning(tmp_path, profile_env):
    profile_env(tmp_path / "absent.json")
    with pytest.warns(RuntimeWarning, match="ignoring the profile"):
        assert _profile.active().machine is None


def test_a_foreign_profile_is_one_warning(tmp_path, profile_env):
    path = write_profile(tmp_path / "p.json", {}, fingerprint={**_profile.fingerprint(), "cpu": "another CPU"})
    profile_env(path)
    with pytest.warns(RuntimeWarning, match="another machine.*cpu: 'another CPU'"):
        assert _profile.active().machine is None


def test_a_matching_profile_is_used_and_no_warning(tmp_path, profile_env):
    path = write_profile(tmp_path / "p.json", {"exp/float64": synthetic(1.0, cpu1=(5e-6, 0.5))})
    profile_env(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        active = _profile.active()
    assert active.machine is not None and "exp/float64" in active.machine.curves


def test_without_any_profile_file_there_is_no_warning(profile_env):
    profile_env(None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        active = _profile.active()
    assert active.machine is None and active.write_to == _profile.default_path()


def test_the_fingerprint_needs_no_torch_and_names_what_decides():
    proc = run_python(
        """
        import sys, json
        from np2torch.runtime._decision import profile as _profile
        print(json.dumps(_profile.fingerprint()), 'torch' in sys.modules, 'scipy' in sys.modules)
        """,
        {},
    )
    text, torch_loaded, scipy_loaded = proc.stdout.rsplit(" ", 2)
    assert (torch_loaded, scipy_loaded.strip()) == ("False", "False"), proc.stderr
    found = json.loads(text)
    assert {"cpu", "cores", "numpy", "scipy", "torch", "gpus", "python"} <= set(found)
    import scipy
    import torch

    assert found["scipy"] == scipy.__version__ and found["torch"] == torch.__version__
    assert found["cores"] == _profile.usable_cores()


def test_concurrent_writers_keep_every_curve(tmp_path):
    path = tmp_path / "shared.json"
    code = """
        import sys
        from pathlib import Path
        from np2torch.runtime._decision import profile as _profile
        from np2torch.runtime._decision.model import Curve, Profile
        base = Profile("", _profile.fingerprint(), 1.0, 1)
        for i in range(25):
            _profile.merge_into_file(Path(sys.argv[1]), base, {f"{sys.argv[2]}{i}/float64": Curve((1,), {"numpy": (1.0,)})})
    """
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), str(path), tag], cwd=ROOT) for tag in "ab"]
    assert all(proc.wait(120) == 0 for proc in procs)
    keys = set(_profile.read_profile(path).curves)
    assert keys == {f"{tag}{i}/float64" for tag in "ab" for i in range(25)}


def test_two_processes_tuning_at_once_leave_a_valid_profile(tmp_path):
    target = tmp_path / "tuned.json"
    cmd = [sys.executable, "-m", "np2torch", "tune", "--quick", "--functions", "sin", "--output", str(target)]
    env = {k: v for k, v in os.environ.items() if k != "NP2TORCH_PROFILE"}
    procs = [subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outs
    profile = _profile.read_profile(target)
    # float32 sin, which torch does not compute exactly: the original against the original on every core
    own = {f"sin/{dtype}" for dtype in tuning.cores_only_loops("sin")} if tuning.serves_cores("sin") else set()
    assert own == ({"sin/float32"} if tuning.serves_cores("sin") else set())
    assert set(profile.curves) == {"sin/float64"} | own
    assert set(profile.curves["sin/float64"].seconds) >= {"numpy", "cpu1", "cpu"}
    assert all(set(profile.curves[key].seconds) == {"numpy", "cores"} for key in own)
    assert "np2torch tune" in outs[0][1]  # the progress bar, on stderr


# ---------------------------------------------------------------- in a fresh process


def _synthetic_profile_for_rental(tmp_path: Path, saving: float, import_seconds: float) -> Path:
    # exp/float32 at 100,000 elements: the original 2 ms, the pool 2 ms - saving (exactly, at a measured size)
    sizes = (10_000, 100_000, 1_000_000)
    curve = Curve(sizes, {"numpy": (2e-4, 2e-3, 2e-2), "cpu1": (1e-4, 2e-3 - saving, 1e-2), "cpu": (1e-4, 2e-3 - saving, 1e-2)})
    return write_profile(tmp_path / "rental.json", {"exp/float32": curve}, import_seconds)


def test_ski_rental_imports_torch_when_the_savings_reach_ten_times_its_cost(tmp_path):
    path = _synthetic_profile_for_rental(tmp_path, saving=1e-3, import_seconds=0.00095)  # the 10th call pays
    proc = run_python(
        """
        import sys, numpy as np, np2torch.runtime as r
        from np2torch.runtime._decision import route as _route
        _route.DEFER_ELEMENTS = 0  # the rental itself, from the first call
        x = np.full(100_000, 0.5, dtype=np.float32)
        seen = []
        for _ in range(12):
            r.exp(x)
            seen.append('torch' in sys.modules)
        print(seen.index(True) + 1, r.which('exp', x)[0])
        """,
        {"NP2TORCH_PROFILE": str(path), "NP2TORCH_CACHE_DIR": str(tmp_path)},
    )
    assert proc.stdout.split() == ["10", "cpu"], proc.stderr


def test_ski_rental_counts_predictions_never_measured_time(tmp_path):
    # The profile predicts the original at 2 ms (torch saving half of it); this input's original takes 30 ms.
    # The rental counts the prediction only: torch is imported by the tenth call, however slow the original.
    path = _synthetic_profile_for_rental(tmp_path, saving=1e-3, import_seconds=0.00095)
    proc = run_python(
        """
        import sys, time, numpy as np, np2torch.runtime as r
        from np2torch.runtime import _api
        from np2torch.runtime._decision import route as _route
        _route.DEFER_ELEMENTS = 0
        state = _api.HELPERS['exp']
        def slow(*args, **kwargs):
            time.sleep(0.03)
            return np.exp(*args, **kwargs)
        state.original = slow
        x = np.full(100_000, 0.5, dtype=np.float32)
        seen = []
        for _ in range(12):
            r.exp(x)
            seen.append('torch' in sys.modules)
        print(seen.index(True) + 1)
        """,
        {"NP2TORCH_PROFILE": str(path), "NP2TORCH_CACHE_DIR": str(tmp_path)},
    )
    assert proc.stdout.split() == ["10"], proc.stderr


LEDGER_PRELUDE = """
    import sys, numpy as np, np2torch.runtime as r
    from np2torch.runtime._decision import ledger as _ledger, route as _route
    from np2torch.runtime._paths import blocks as _blocks
    from np2torch.runtime._state import PROCESS
    _route.DEFER_ELEMENTS = 0  # the rental itself, from the first call
    _blocks.LOOP_IDLE = float("inf")  # every call on every core in a loop of them, however long the test pauses
    if "LEDGER" == "off":  # every call decided in full, by the Python function and the C front
        _ledger.Ledger.count = lambda self, key, settings: False
        _ledger.Ledger.route = lambda self, key, settings: None
        from np2torch.runtime._api import HELPERS
        for helper in HELPERS.values():
            if helper.front is not None:
                helper.front.ledger = None
    decided = []  # the helpers' calls decided in full
    def spy(*args, _decide=_route.route, **kwargs):
        decided.append(args[0])
        return _decide(*args, **kwargs)
    _route.route = spy
"""
"""What a program run with the ledger on and off (:func:`_with_and_without_ledger`) begins with."""

LEDGER_PROGRAM = LEDGER_PRELUDE + """
    import threading
    from np2torch.runtime._paths import blocks
    from np2torch.runtime._state import TAKEN
    x32, x64 = np.full(100_000, 0.5, dtype=np.float32), np.linspace(-3, 3, 100_000)
    seen, sums, taken = [], [], []
    for i in range(14):
        # Every third round other processes leave one core (where the profile sends a call to the original on every
        # core, it takes the original's single call then), the others all of them.
        blocks.free_cores = (lambda wanted: 1) if i % 3 == 1 else (lambda wanted: wanted)
        for call in (lambda: r.exp(x32), lambda: r.hypot(3.0, x64)):  # (beside a scalar: the broadcast size is known)
            TAKEN.device = None
            call()
            taken.append(TAKEN.device)
        if i == 2:
            with r.using(device="numpy"):  # other settings: neither decided from the ledger nor counted
                r.exp(x32)
            worker = threading.Thread(target=lambda: r.exp(x32))  # another thread's calls never count
            worker.start()
            worker.join()
        seen.append("torch" in sys.modules)
        sums.append(PROCESS.saved)
    print(seen.index(True))
    print(repr(sums))
    print(repr(taken))
    print(len(decided))
"""

_LEDGER_SIZES = (10_000, 100_000, 1_000_000)
LEDGER_CURVES = {
    # The original's single call until torch is imported: the profile has no other exact path.
    "original": {"exp/float32": Curve(_LEDGER_SIZES, {"numpy": (2e-4, 2e-3, 2e-2), "cpu1": (1e-4, 1.7e-3, 1e-2),
                                                      "cpu": (1e-4, 1.7e-3, 1e-2)}),
                 "hypot/float64": Curve(_LEDGER_SIZES, {"numpy": (3e-4, 3e-3, 3e-2), "cpu1": (2e-4, 2.5e-3, 2e-2),
                                                        "cpu": (2e-4, 2.5e-3, 2e-2)})},
    # The original on every core until then (its own loop, faster than its single call, slower than torch).
    "cores": {"exp/float32": Curve(_LEDGER_SIZES, {"numpy": (4e-4, 4e-3, 4e-2), "cores": (2e-4, 2e-3, 2e-2),
                                                   "cpu1": (1e-4, 1.7e-3, 1e-2), "cpu": (1e-4, 1.7e-3, 1e-2)}),
              "hypot/float64": Curve(_LEDGER_SIZES, {"numpy": (6e-4, 6e-3, 6e-2), "cores": (3e-4, 3e-3, 3e-2),
                                                     "cpu1": (2e-4, 2.5e-3, 2e-2), "cpu": (2e-4, 2.5e-3, 2e-2)})},
}


def _with_and_without_ledger(program: str, tmp_path: Path, curves: Dict[str, Curve]) -> Dict[str, list]:
    """The lines ``program`` (:data:`LEDGER_PRELUDE` first) printed with the ledger on and off, by ``on``/``off``,
    under a profile of ``curves`` whose rental imports torch once 4.5 ms are saved."""
    path = write_profile(tmp_path / "ledger.json", curves, 0.00045)
    env = {"NP2TORCH_PROFILE": str(path), "NP2TORCH_CACHE_DIR": str(tmp_path)}
    runs = {}
    for ledger in ("on", "off"):
        proc = run_python(program.replace('"LEDGER"', repr(ledger)), env)
        assert proc.returncode == 0, proc.stderr
        runs[ledger] = proc.stdout.splitlines()
    return runs


@pytest.mark.parametrize("exact_path", sorted(LEDGER_CURVES))
def test_the_ledger_counts_a_call_decided_before_and_changes_no_path(tmp_path, exact_path):
    # A plain call past the floor that takes an exact path (the original, or its own loop on every core) while torch
    # is not imported is decided once per (dtype, size); the next ones add the same saving from the ledger (cold, a
    # decision cost 40-70 us).  The rental sees the very sums it saw deciding every call, and imports torch at the same
    # call; every call takes the same path, the load deciding between the cores and the original's single call.
    runs = _with_and_without_ledger(LEDGER_PROGRAM, tmp_path, LEDGER_CURVES[exact_path])
    assert runs["on"][:3] == runs["off"][:3]  # the same call imports torch, after the same sums, the same paths
    assert runs["on"][0] == "5"  # 0.3 + 0.5 ms saved by each round, 4.5 ms the threshold: the 6th round's hypot
    taken = eval(runs["on"][2])
    assert taken[12:] == ["cpu"] * 16  # torch's from the hypot that imports it
    if exact_path == "cores" and _load.usable_cores() > 1:  # (on one core its blocks run on one thread: cores)
        assert taken[:11] == (["cores", "cores", None, None, "cores", "cores"] * 2)[:11]  # the 2nd and 5th: loaded
    else:
        assert set(taken[:11]) == {"cores" if exact_path == "cores" else None}
    # Not decided again: the main thread's calls of rounds 1-5 but for the hypot that imports torch (the thread's
    # call, the one under other settings and every call once torch is imported are decided as before).
    assert int(runs["off"][3]) - int(runs["on"][3]) == 9


THREAD_PROGRAM = LEDGER_PRELUDE + """
    import threading
    from np2torch.runtime._state import TAKEN
    _blocks.free_cores = lambda wanted: wanted  # whatever the machine's load
    x32 = np.full(100_000, 0.5, dtype=np.float32)
    taken = []
    def work():
        for _ in range(20):
            TAKEN.device = None
            r.exp(x32)
            taken.append(TAKEN.device)
    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    print(repr(taken))
    print(PROCESS.saved, "torch" in sys.modules)
    print(len(decided))
"""


@pytest.mark.parametrize("exact_path", sorted(LEDGER_CURVES))
def test_another_threads_calls_are_decided_once_and_count_nothing(tmp_path, exact_path):
    # A thread of the program (a pool's, say) calling a helper in a loop: its calls never count towards the rental,
    # so each (dtype, size) is decided once and held apart from the main thread's entries; the same paths as deciding
    # every call (two threads calling erf over 120,000 elements: 1.05-1.07x the original's time decided in full).
    runs = _with_and_without_ledger(THREAD_PROGRAM, tmp_path, LEDGER_CURVES[exact_path])
    assert runs["on"][:2] == runs["off"][:2]
    assert runs["on"][1] == "0.0 False"  # nothing counted, torch not imported
    assert set(eval(runs["on"][0])) == {"cores" if exact_path == "cores" else None}
    assert (runs["on"][2], runs["off"][2]) == ("1", "20")


INTERRUPTED_PROGRAM = LEDGER_PRELUDE + """
    x32, x64 = np.full(100_000, 0.5, dtype=np.float32), np.linspace(-3, 3, 100_000)
    # A signal handler's call, made once between each helper's first decision and its end (after its route, before
    # the rest of the call): the other helper, over another size.
    handlers = {"exp": lambda: r.hypot(3.0, x64[:50_000]), "hypot": lambda: r.exp(x32[:50_000])}
    real = _route.route
    def interrupted(*args, **kwargs):
        found = real(*args, **kwargs)
        handler = handlers.pop(args[0], None) if args[2] == 100_000 else None
        if handler is not None:
            handler()
        return found
    _route.route = interrupted
    seen, sums = [], []
    for i in range(14):
        r.exp(x32)
        r.hypot(3.0, x64)
        seen.append("torch" in sys.modules)
        sums.append(PROCESS.saved)
    print(seen.index(True))
    print(repr(sums))
"""


@pytest.mark.parametrize("exact_path", sorted(LEDGER_CURVES))
def test_a_call_made_inside_a_decision_leaves_the_ledger_its_own_saving(tmp_path, exact_path):
    # A helper called from a signal handler in the middle of another call's decision counts its own saving; the
    # interrupted call's entry in the ledger keeps the interrupted call's (it had the handler's), so the rental sees
    # the sums it sees deciding every call in full and imports torch at the same call.
    runs = _with_and_without_ledger(INTERRUPTED_PROGRAM, tmp_path, LEDGER_CURVES[exact_path])
    assert runs["on"] == runs["off"]


def test_torch_already_imported_is_used_at_once(tmp_path):
    path = _synthetic_profile_for_rental(tmp_path, saving=1e-3, import_seconds=100.0)
    proc = run_python(
        """
        import torch, numpy as np, np2torch.runtime as r
        from np2torch.runtime._paths import torch_cpu
        calls = []
        real = torch_cpu.compute
        torch_cpu.compute = lambda *a: calls.append(a) or real(*a)
        r.exp(np.full(100_000, 0.5, dtype=np.float32))
        print(len(calls))
        """,
        {"NP2TORCH_PROFILE": str(path), "NP2TORCH_CACHE_DIR": str(tmp_path)},
    )
    assert proc.stdout.split() == ["1"], proc.stderr


def test_one_call_does_not_import_torch():
    # The script: one 1e5-element call, default settings, no profile.
    proc = run_python(
        """
        import sys, numpy as np, np2torch.runtime as r
        r.exp(np.linspace(-3, 3, 100_000)); r.exp(np.linspace(-3, 3, 100_000).astype(np.float32))
        print('torch' in sys.modules)
        """,
        {},
    )
    assert proc.stdout.split() == ["False"], proc.stderr


def test_a_short_script_does_not_even_read_the_profile():
    proc = run_python(
        """
        import sys, numpy as np, np2torch.runtime as r
        from np2torch.runtime._decision import profile as _profile
        x = np.linspace(-3, 3, 100_000)
        r.exp(x); r.erf(x); r.exp(np.ones(10))
        before = _profile.loaded()
        r.exp(np.linspace(-3, 3, 3_000_000))  # past DEFER_ELEMENTS: now the profile decides
        print(before, _profile.loaded(), 'torch' in sys.modules)
        """,
        {},
    )
    assert proc.stdout.split() == ["False", "True", "False"], proc.stderr


@pytest.mark.parametrize("helper, call", [
    ("exp", "r.exp(x)"),
    ("logsumexp", "r.logsumexp(x)"),  # a reduction: Helper.admits
    ("hypot", "r.hypot(x, x)"),  # two arguments: Helper.admits
])
def test_calls_above_the_provisional_floor_end_the_deferral(helper, call):
    # Calls of one size between the provisional floor and the profile's: they count until the profile is
    # read, and then take the profile's floor (no longer the helper's slow path at every call), as the
    # same calls would after any other call had read the profile first.
    proc = run_python(
        f"""
        import numpy as np, np2torch.runtime as r
        from np2torch.runtime import _api
        from np2torch.runtime._decision import route as _route
        from np2torch.runtime._decision import profile as _profile
        x = np.linspace(-3, 3, 2 * _route.DEFER_FLOOR)
        calls = _route.DEFER_ELEMENTS // x.size + 2
        for _ in range(calls):
            {call}
        floors = _api.HELPERS[{helper!r}].floors
        print(_profile.loaded(), floors.get(x.dtype) != _route.DEFER_FLOOR, len(floors))
        """,
        {},
    )
    assert proc.stdout.split() == ["True", "True", "1"], proc.stderr


def test_reading_the_profile_elsewhere_does_not_end_the_deferral():
    # which() (or tune --show) reads the profile: asking must change no later call's path (issue 37, item 8).
    proc = run_python(
        """
        import numpy as np, np2torch.runtime as r
        from np2torch.runtime import _api
        from np2torch.runtime._decision import route as _route
        from np2torch.runtime._decision import profile as _profile
        x = np.linspace(-3, 3, 2 * _route.DEFER_FLOOR)
        r.exp(x)
        before = _api.HELPERS['exp'].floors.get(x.dtype) == _route.DEFER_FLOOR
        _profile.active()  # read by something else (which(), tune, another helper's path)
        r.which('exp', x)
        r.exp(x)
        print(before, _api.HELPERS['exp'].floors.get(x.dtype) == _route.DEFER_FLOOR, _route.PROCESS.deferred)
        """,
        {},
    )
    assert proc.stdout.split() == ["True", "True", str(4 * 4096)], proc.stderr


def test_a_program_asking_which_imports_torch_at_the_same_call_as_without(tmp_path):
    # A program that logs which() must switch to torch at the same call, so every result is the same.
    path = _synthetic_profile_for_rental(tmp_path, saving=1e-3, import_seconds=0.00095)
    code = """
        import os, sys, numpy as np, np2torch.runtime as r
        x = np.full(100_000, 0.5, dtype=np.float32)
        seen = []
        for _ in range(40):
            if os.environ["ASK"] == "1":
                r.which('exp', x)
            r.exp(x)
            seen.append('torch' in sys.modules)
        print(seen.index(True) + 1)
    """
    env = {"NP2TORCH_PROFILE": str(path), "NP2TORCH_CACHE_DIR": str(tmp_path)}
    plain = run_python(code, {**env, "ASK": "0"})
    asked = run_python(code, {**env, "ASK": "1"})
    assert plain.returncode == asked.returncode == 0, plain.stderr + asked.stderr
    # the deferral (2**21 elements: the 21st call ends it and is the rental's first), then the rental's 10 calls
    assert plain.stdout.split() == asked.stdout.split() == ["30"]


def test_nothing_is_measured_or_written_while_a_program_runs(tmp_path):
    # No tuned profile: the built-in one, scaled to this machine, decides; no profile file appears.
    env = {"NP2TORCH_CACHE_DIR": str(tmp_path)}
    code = """
        import torch, numpy as np, np2torch.runtime as r
        x = np.linspace(-2, 2, 300_000)
        r.erf(x); r.exp(x); r.logsumexp(x.reshape(-1, 3), axis=1)
        print(r.which('erf', x)[1])
    """
    proc = run_python(code, env)
    assert proc.returncode == 0, proc.stderr
    assert "scaled to this machine" in proc.stdout
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- which() and threads


def test_which_says_where_and_why():
    _backend.load_torch()
    assert np2t.which("exp", np.ones(3)) == ("numpy", np2t.which("exp", np.ones(3))[1])
    path, why = np2t.which("exp", np.ones(3))
    assert path == "numpy" and "exp over 3 elements of float64" in why
    with np2t.using(min_size=0):
        assert np2t.which("erf", np.ones(3)) == ("cpu", "erf over 3 elements of float64: min_size=0 set explicitly: torch from that size on")
    with np2t.using(device="numpy"):
        assert np2t.which("erf", np.ones(10**6))[0] == "numpy"
    assert np2t.which("exp", [1.0, 2.0])[0] == "numpy"
    assert "not exactly a numpy.ndarray" in np2t.which("exp", np.ma.ones(3))[1]
    with np2t.using(min_size=0):
        assert np2t.which("logsumexp", np.ones((3, 3)), axis=0)[0] == "cpu"
    with pytest.raises(ValueError, match="no helper 'square'"):
        np2t.which("square", np.ones(3))


def test_which_changes_nothing(tmp_path):
    path = _synthetic_profile_for_rental(tmp_path, saving=1e-3, import_seconds=0.00005)
    proc = run_python(
        """
        import sys, numpy as np, np2torch.runtime as r
        x = np.full(100_000, 0.5, dtype=np.float32)
        for _ in range(5):
            path, why = r.which('exp', x)
        print(path, 'torch' in sys.modules, 'import cost' in why)
        """,
        {"NP2TORCH_PROFILE": str(path), "NP2TORCH_CACHE_DIR": str(tmp_path)},
    )
    assert proc.stdout.split() == ["numpy", "False", "True"], proc.stderr


def test_the_thread_count_changes_no_bit():
    # torch's own split between threads rounds the element at a boundary differently for sigmoid and
    # atanh, and adds a reduction's partial sums in another order: the runtime's blocks are aligned (a
    # reduction's fixed by the shape), so 1, 2 and 3 threads (and a pool shrunk for the load) give the same bits.
    assert _backend.load_torch()
    import torch

    rng = np.random.default_rng(7)
    x = rng.uniform(-4, 4, 300_007)
    matrix = rng.normal(size=(699, 1_001))
    odd = rng.uniform(-4, 4, 1_000_003).astype(np.float32)
    calls = [
        lambda: np2t.expit(x), lambda: np2t.arctanh(x / 5), lambda: np2t.exp(x.astype(np.float32)),
        lambda: np2t.erf(x.astype(np.float32)), lambda: np2t.log1p(np.abs(x)), lambda: np2t.hypot(x, x[::-1].copy()),
        lambda: np2t.logsumexp(matrix, axis=0), lambda: np2t.logsumexp(matrix, axis=1), lambda: np2t.logsumexp(matrix),
        lambda: np2t.logsumexp(matrix.reshape(-1, 3), axis=1), lambda: np2t.softmax(matrix, axis=0),
        lambda: np2t.exp(x[::-3]), lambda: np2t.sin(matrix.T),
        # One thread computes an elementwise op as one block: sizes whose last block has a tail of every kind.
        lambda: np2t.expit(odd), lambda: np2t.arctanh(odd / 5), lambda: np2t.tanh(odd.astype(np.float16)),
        lambda: np2t.expit(odd[: 2 * 65_536 + 17]), lambda: np2t.hypot(odd, odd[::-1].copy()),
        # Small calls, cut for the threads (as many blocks as threads, the last one taking the rest).
        lambda: np2t.expit(odd[:9_001]), lambda: np2t.arctanh(odd[3:20_006] / 5),
        lambda: np2t.hypot(odd[:9_001], odd[9_001:18_002].copy()),
    ]
    before = torch.get_num_threads()
    seen = []
    try:
        for count in (1, 2, 3):
            torch.set_num_threads(count)
            with np2t.using(min_size=0):
                seen.append([np.ascontiguousarray(call()).tobytes() for call in calls])
    finally:
        torch.set_num_threads(before)
    assert seen[0] == seen[1] == seen[2]


def test_blocks_are_fixed_by_the_size_and_aligned():
    from np2torch.runtime._paths import blocks

    assert blocks.block_elements(10) == blocks.MIN_BLOCK
    assert blocks.block_elements(10**8) == blocks.MAX_BLOCK
    for n in (1, 1_000, 65_537, 10**6, 3 * 10**7):
        size = blocks.block_elements(n)
        spans = blocks.bounds(n, size)
        assert size % blocks.ALIGN == 0 and spans[0][0] == 0 and spans[-1][1] == n
        assert all(a % size == 0 for a, _ in spans)


def test_an_elementwise_op_on_one_thread_is_one_block():
    from np2torch.runtime._paths import blocks

    assert _backend.load_torch()
    spans: list[tuple[int, int]] = []
    n = 5 * blocks.MIN_BLOCK + 3
    assert blocks.elementwise(n, lambda a, b: spans.append((a, b)) or b - a, 1, "spans") == [n]
    assert spans == [(0, n)]
    assert blocks.elementwise(0, lambda a, b: b - a, 1, "spans") == []
    # On more threads, the blocks cut for them (each aligned), in order.
    with np2t.using(min_size=0):
        found = blocks.elementwise(n, lambda a, b: (a, b), 2, "spans")
    assert found in ([(0, n)], blocks.elementwise_bounds(n, 2))  # (one core free: one block)


def test_a_failing_block_raises_in_the_caller_once_every_block_stopped():
    from np2torch.runtime._paths import blocks

    assert _backend.load_torch()
    done = []

    def ok(i: int) -> int:
        done.append(i)
        return i

    def bad() -> int:
        raise ValueError("block 3")

    tasks = [functools.partial(ok, i) for i in range(3)] + [bad] + [functools.partial(ok, i) for i in range(4, 9)]
    with pytest.raises(ValueError, match="block 3"):
        blocks.run(tasks, 3, "blocks")
    assert blocks.run([functools.partial(ok, i) for i in range(9)], 3, "blocks") == list(range(9))


@pytest.mark.parametrize("threads", [0, 2])
def test_the_pool_runs_blocks_on_several_threads(monkeypatch, threads):
    # 0 is what a "cpu" route asks for: as many threads as torch may use.  Both blocks wait for each
    # other, so the call returns only if two threads ran them at once (serially the barrier breaks).
    import threading

    import torch

    from np2torch.runtime._paths import blocks

    assert _backend.load_torch()
    monkeypatch.setattr(blocks, "free_cores", lambda wanted: wanted)  # as on a quiet machine
    monkeypatch.setattr(blocks, "process_cores", lambda: 2)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        if not blocks._pool_per_thread():
            pytest.skip("this torch's thread setting is process-wide: blocks run in the caller")
        barrier = threading.Barrier(2, timeout=60)

        def meet(i: int) -> int:
            barrier.wait()
            return threading.get_ident()

        blocks.run([lambda: 0], 1, "meet")  # (the first block of a kind runs alone: test_the_first_block_of_a_kind...)
        idents = blocks.run([functools.partial(meet, i) for i in range(2)], threads, "meet")
    finally:
        torch.set_num_threads(before)
    assert len(set(idents)) == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_the_first_block_of_a_kind_of_torch_work_runs_alone(monkeypatch, threads):
    # Intel MKL sets up torch's erf on its first call: a second thread's first call made meanwhile computed its block
    # ~12,500 ULP off.  The first block of a kind runs under the re-entrant lock every first block of a kind waits
    # for, before any worker is given the call; later calls of the kind run as before.
    from np2torch.runtime._paths import blocks

    assert _backend.load_torch()
    monkeypatch.setattr(blocks, "free_cores", lambda wanted: wanted)
    monkeypatch.setattr(blocks, "thread_limit", lambda: 2)
    if threads > 1 and not blocks._pool_per_thread():
        pytest.skip("this torch's thread setting is process-wide: blocks run in the caller")
    given: list[object] = []
    real_give = blocks._Worker.give
    monkeypatch.setattr(blocks._Worker, "give", lambda self, job: (given.append(job), real_give(self, job)))
    seen: list[tuple[bool, int]] = []

    def block(i: int) -> int:
        seen.append((blocks._FIRST._is_owned(), len(given)))
        return i

    kind = ("a kind no call computed", threads)
    assert kind not in blocks.PROCESS.first_blocks
    assert blocks.run([functools.partial(block, i) for i in range(4)], threads, kind) == [0, 1, 2, 3]
    assert kind in blocks.PROCESS.first_blocks
    assert seen[0] == (True, 0)
    if threads == 1:
        assert seen == [(True, 0)] * 4  # one thread: the whole call is its first block's
    else:
        assert all(not owned and count == 1 for owned, count in seen[1:])
    seen.clear()
    given.clear()
    blocks.run([functools.partial(block, i) for i in range(4)], threads, kind)
    assert all(not owned for owned, _ in seen) and len(given) == (threads > 1)

def test_tune_times_a_reduction_per_shape_class():
    _backend.load_torch()
    x = _calibrate.make_input("logsumexp", np.dtype(np.float64), 4096, klass="short-inner")
    assert x.shape == (4, 1024) and x.strides[0] == 8  # the reduced axis 0 is the contiguous one
    x = _calibrate.make_input("logsumexp", np.dtype(np.float64), 4096, klass="medium-outer")
    assert x.shape == (128, 32) and x.flags.c_contiguous
    curve = _calibrate.measure(HELPERS["logsumexp"].run_path, "logsumexp", np.dtype(np.float64), ("numpy", "cpu1", "cpu"),
                               sizes=(4096, 16384), max_call=None, repeat=1, klass="short-inner")
    assert curve.sizes == (4096, 16384) and set(curve.seconds) == {"numpy", "cpu1", "cpu"}


def test_calibration_times_each_path(monkeypatch):
    _backend.load_torch()
    curve = _calibrate.measure(HELPERS["sin"].run_path, "sin", np.dtype(np.float64), ("numpy", "cpu1", "cpu"), sizes=(4096, 32768),
                               max_call=None, repeat=1)
    assert curve.sizes == (4096, 32768) and set(curve.seconds) == {"numpy", "cpu1", "cpu"}
    assert all(t > 0 for times in curve.seconds.values() for t in times)


def test_calibration_measures_the_far_size_after_the_original_grew_too_slow(monkeypatch):
    # The model extrapolates from the largest measured size: that must be the far size, where a large call's own
    # costs show, even once the original's call outgrew max_call; a path already that slow is timed by one call
    # there, and nothing there when the original's call would take too long.
    ran = []

    def run(path: str, x: np.ndarray) -> None:
        ran.append((path, x.size))

    def time_paths(calls, repeat):
        for call in calls.values():
            call()
        return {path: {"numpy": 0.01, "cpu1": 0.0001}[path] * repeat for path in calls}

    monkeypatch.setattr(_calibrate, "time_paths", time_paths)
    sizes = (1024, 4096, 16384, 65536)
    curve = _calibrate.measure(run, "exp", np.dtype(np.float64), ("numpy", "cpu1"), sizes, max_call=0.001)
    assert curve.sizes == (1024, 4096, 65536)  # stopped after 4096, then the far size
    assert curve.seconds["cpu1"][-1] == 0.0001 * _calibrate.FAR_RUNS  # fewer runs there
    assert curve.seconds["numpy"][-1] < 0.01 and ran[-2:] == [("cpu1", 65536), ("numpy", 65536)]  # one call of its own
    monkeypatch.setattr(_calibrate, "FAR_LIMIT", 0.3)  # the original's call predicted at 0.05 * 16 s there
    curve = _calibrate.measure(run, "exp", np.dtype(np.float64), ("numpy", "cpu1"), sizes, max_call=0.001)
    assert curve.sizes == (1024, 4096)
    curve = _calibrate.measure(run, "exp", np.dtype(np.float64), ("numpy", "cpu1"), sizes, max_call=None)
    assert curve.sizes == sizes


class FakeClock:
    """``time`` for :mod:`_calibrate`: ``perf_counter`` reads :attr:`now`, which the fake calls advance."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_calibration_reads_each_result_once_after_its_call(monkeypatch):
    # What the program's next operation on a result costs differs by path (the pool's result lies in its workers'
    # caches): every timed call's result is read by the timing thread, and the read is part of the path's time.
    made, seen = [], []
    clock = FakeClock()
    cost = {"numpy": 1.0, "cpu1": 0.25, "read": 0.5}  # seconds: each path's call, and a read of its result

    def run(path: str, x: np.ndarray) -> np.ndarray:
        clock.now += cost[path]
        made.append(np.array([len(made)], dtype=np.float64))
        return made[-1]

    def read(result: object) -> int:
        clock.now += cost["read"]
        seen.append(result)
        return 8

    monkeypatch.setattr(_calibrate, "time", clock)
    monkeypatch.setattr(_calibrate, "read", read)
    curve = _calibrate.measure(run, "exp", np.dtype(np.float64), ("numpy", "cpu1"), (1024, 4096), None, repeat=2)
    assert len(made) > 4 and all(a is b for a, b in zip(made, seen)) and len(seen) == len(made)
    assert curve.seconds == {"numpy": (1.5, 1.5), "cpu1": (0.75, 0.75)}
    # The far size too, where a path already slower than max_call is timed by one call.
    cost.update(numpy=1e-4, cpu1=1e-4, read=1e-5)  # the far size predicted well under FAR_LIMIT
    made.clear()
    seen.clear()
    curve = _calibrate.measure(run, "exp", np.dtype(np.float64), ("numpy", "cpu1"), (1024, 4096, 16384), 0.0, repeat=2)
    assert curve.sizes == (1024, 4096, 16384) and len(seen) == len(made) and all(a is b for a, b in zip(made, seen))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64, np.complex128])
def test_reading_a_result_reads_every_byte_under_any_error_state(dtype):
    values = np.array([[np.inf, -np.inf, np.nan], [1.0, -0.0, 5e-324]]).astype(dtype)
    with np.errstate(all="raise"):
        for result in (values, values.T, values[:, ::2], np.asfortranarray(values), values[::-1]):
            assert _calibrate.read(result) == result.nbytes
        assert _calibrate.read((values, values[0])) == values.nbytes * 3 // 2
        assert _calibrate.read(values[0, 0]) == _calibrate.read(values[:0]) == _calibrate.read(None) == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_tune_times_each_size_over_a_ramp_of_the_whole_domain(dtype):
    # A loop with branches (SciPy's erf) costs least over sorted values: the input on which another path saves
    # least, so a path chosen there wins on any input.  Every size gets its own ramp over the whole domain, not
    # the first n values of the largest size's (which would cover only the domain's low end at small sizes).
    ramps = []

    def run(path: str, x: np.ndarray) -> np.ndarray:
        ramps.append(x)
        return x

    _calibrate.measure(run, "erf", np.dtype(dtype), ("numpy", "cpu1"), (1024, 4096), None, repeat=1)
    low, high = FUNCTIONS_BY_NAME["erf"].domain
    assert {x.size for x in ramps} == {1024, 4096}
    for x in ramps:
        real = x.real.astype(np.float64)
        assert x.dtype == dtype and np.all(np.diff(real) > 0)
        assert real[0] == pytest.approx(low, rel=1e-6) and real[-1] == pytest.approx(high, rel=1e-6)
    for name, row in FUNCTIONS_BY_NAME.items():
        x = _calibrate.make_input(name, np.dtype(np.float64), 4096)
        assert x.size == 4096 and np.all(np.diff(x.reshape(-1)) >= 0), name
        if row.kind != "reduction":
            with np.errstate(all="raise"):  # still the flag-free domain: the common case
                HELPERS[name].run_path("numpy", x)


def test_paths_tied_at_the_far_size_are_timed_again_and_those_times_decide(monkeypatch):
    # The far size decides every larger call: where its few runs put two paths within the noise margin, those two
    # (and no other) are timed again with more runs, and the model's choice past it follows the second timing.
    asked = []
    answers = iter([
        {"numpy": 0.004, "cpu1": 0.001, "cpu": 0.0005},  # the first size
        {"numpy": 0.08, "cpu1": 0.02, "cpu": 0.01},  # the original now slower than max_call: the far size next
        {"cpu1": 0.047, "cpu": 0.0475},  # a tie, as one fresh tune measured erf on the VM (the original: one call)
        {"cpu1": 0.07, "cpu": 0.04},  # timed again
    ])

    def time_paths(calls, repeat):
        asked.append((sorted(calls), repeat))
        return next(answers)

    clock = FakeClock()

    def run(path: str, x: np.ndarray) -> None:  # the original's one call at the far size takes 0.3 s
        clock.now += 0.3

    monkeypatch.setattr(_calibrate, "time_paths", time_paths)
    monkeypatch.setattr(_calibrate, "time", clock)
    paths = ("numpy", "cpu1", "cpu")
    curve = _calibrate.measure(run, "erf", np.dtype(np.float64), paths, (1024, 4096, 16384, 65536), 0.05)
    assert asked[2:] == [(["cpu", "cpu1"], _calibrate.FAR_RUNS), (["cpu", "cpu1"], _calibrate.CLOSE_RUNS)]
    assert {path: times[-1] for path, times in curve.seconds.items()} == {"numpy": 0.3, "cpu1": 0.07, "cpu": 0.04}
    assert _model.best_path(curve, paths, 10**8, one_thread_guard=False) == "cpu"
    answers = iter([{"numpy": 0.004, "cpu1": 0.001, "cpu": 0.0005}, {"numpy": 0.08, "cpu1": 0.02, "cpu": 0.01},
                    {"cpu1": 0.07, "cpu": 0.04}])
    asked.clear()
    _calibrate.measure(run, "erf", np.dtype(np.float64), paths, (1024, 4096, 16384, 65536), 0.05)
    assert len(asked) == 3  # no tie, nothing timed again


def test_calibration_interleaves_the_paths_and_keeps_only_the_timed_paths_last_result(monkeypatch):
    # A fake clock: each call advances it by its path's next duration.  The median of the five runs is
    # what counts (the minimum would be 1), the paths' runs are rotated, and when a path is timed the only
    # result alive is its own last one.
    import weakref

    clock = FakeClock()
    monkeypatch.setattr(_calibrate, "time", clock)
    durations = {"a": [2.0, 5.0, 1.0, 9.0, 3.0, 7.0], "b": [4.0] * 6, "c": [6.0, 8.0, 8.0, 1.0, 8.0, 2.0]}
    alive: "weakref.WeakSet[Result]" = weakref.WeakSet()
    order, seen = [], []

    class Result:
        def __init__(self, path: str) -> None:
            self.path = path

    def call(path: str) -> Result:
        seen.append((path, sorted(r.path for r in alive)))
        order.append(path)
        clock.now += durations[path].pop(0)
        result = Result(path)
        alive.add(result)
        return result

    timed = _calibrate.time_paths({p: functools.partial(call, p) for p in "abc"}, repeat=5, min_run=1e-9)
    assert timed == {"a": 5.0, "b": 4.0, "c": 8.0}
    assert order == list("abc" "abc" "bca" "cab" "abc" "bca")  # warm-ups, then five rotated rounds
    assert all(others in ([], [path]) for path, others in seen[3:])
    assert not alive  # nothing kept once timed


def test_the_load_is_measured_over_a_window(monkeypatch):
    # Another process keeps 1.6 of 2 cores busy over the window: one core is taken out of the pool;
    # a transient 0.2 core is noise and leaves the pool whole.
    import os as os_module

    ticks = iter([(0, 0), (160, 200), (180, 400)])  # busy, total jiffies of the machine (2 CPUs)
    monkeypatch.setattr(_load, "_cpu_ticks", lambda: next(ticks))
    monkeypatch.setattr(_load, "_cpu_stall", lambda: None)
    monkeypatch.setattr(_load, "_running", lambda: 1)  # at the first sample: this thread alone
    monkeypatch.setattr(os_module, "cpu_count", lambda: 2)
    monkeypatch.setattr(PROCESS, "load", type(PROCESS.load)())
    monkeypatch.setattr(_load, "usable_cores", lambda: 2)
    monkeypatch.setattr(_load, "_threads_cpu", lambda tracked, me: {me: 0.0})  # this thread ran nothing
    _load.sample(1.0)
    assert PROCESS.load.busy == 0  # the first window has no previous sample
    _load.sample(2.0)
    assert PROCESS.load.busy == 1
    monkeypatch.setattr(PROCESS.load, "when", 2.0)
    monkeypatch.setattr(_load.time, "monotonic", lambda: 2.01)  # within the window: no new sample
    assert _load.free_cores(2) == 1
    _load.sample(3.0)
    assert PROCESS.load.busy == 0


@pytest.mark.parametrize(("got", "stalled", "busy"), [(0.2, 0.35, 1), (0.2, 0.02, 0), (0.67, 0.33, 1), (0.67, 0.0, 0),
                                                      (0.05, 0.5, 0), (1.6, 0.3, 2), (1.6, 0.0, 1)])
def test_where_tasks_wait_for_a_cpu_what_others_got_counts_to_whole_cores(monkeypatch, got, stalled, busy):
    # A busy loop at nice 10 gets ~0.2 of a core while this process runs on both (tasks waiting ~35 % of the time);
    # one at nice 0, 0.67 of one. Counted by their CPU time alone, both read as noise, and the pool flipped
    # between one thread and two. Where nobody waits, the CPU time others got is what they wanted.
    import os as os_module

    ticks = iter([(0, 0), (round(100 * got), 200)])  # busy, total jiffies of the machine (2 CPUs, 1 s)
    stall = iter([0, round(stalled * 1e6)])
    monkeypatch.setattr(_load, "_cpu_ticks", lambda: next(ticks))
    monkeypatch.setattr(_load, "_cpu_stall", lambda: next(stall))
    monkeypatch.setattr(_load, "_running", lambda: 1)
    monkeypatch.setattr(os_module, "cpu_count", lambda: 2)
    monkeypatch.setattr(PROCESS, "load", type(PROCESS.load)())
    monkeypatch.setattr(_load, "usable_cores", lambda: 2)
    monkeypatch.setattr(_load, "_threads_cpu", lambda tracked, me: {me: 0.0})  # this thread ran nothing
    _load.sample(1.0)
    _load.sample(2.0)
    assert PROCESS.load.others == pytest.approx(got) and PROCESS.load.busy == busy


@pytest.mark.parametrize(("mine", "workers", "other_thread", "busy"), [
    (0.9, 0.0, 0.9, 1),  # another thread of the program kept a core busy: load, as another process's would be
    (0.9, 0.9, 0.0, 0),  # this thread's call ran on a worker too: this call's own work
    (0.3, 0.0, 0.0, 0),  # the machine idle but for this thread
])
def test_this_threads_and_the_workers_time_come_off_the_load_another_threads_does_not(monkeypatch, mine, workers,
                                                                                      other_thread, busy):
    # Two threads of one program calling erf over 120,000 elements in a loop took 1.12-1.18x the original's time
    # while the meter took the whole process's CPU time off the load: each call's blocks waited for the other
    # thread's core (2-core reference VM, 2026-11-30).
    import os as os_module

    used = round(100 * (mine + workers + other_thread))
    ticks = iter([(0, 0), (used, 200)])  # busy, total jiffies of the machine (2 CPUs, 1 s)
    clocks = iter([{7: 5.0, 8: 2.0}, {7: 5.0 + mine, 8: 2.0 + other_thread}])
    spent = iter([1.0, 1.0 + workers])
    monkeypatch.setattr(_load, "_cpu_ticks", lambda: next(ticks))
    monkeypatch.setattr(_load, "_cpu_stall", lambda: None)
    monkeypatch.setattr(_load, "_running", lambda: 1)
    monkeypatch.setattr(_load, "_threads_cpu", lambda tracked, me: next(clocks))
    monkeypatch.setattr(_load, "_workers_cpu", lambda: next(spent))
    monkeypatch.setattr(_load.threading, "get_native_id", lambda: 7)
    monkeypatch.setattr(os_module, "cpu_count", lambda: 2)
    monkeypatch.setattr(PROCESS, "load", type(PROCESS.load)())
    monkeypatch.setattr(_load, "usable_cores", lambda: 2)
    _load.sample(1.0)
    _load.sample(2.0)
    assert PROCESS.load.others == pytest.approx(other_thread) and PROCESS.load.busy == busy


def test_a_threads_first_sample_takes_it_to_have_run_the_window_at_most(monkeypatch):
    import os as os_module

    ticks = iter([(0, 0), (190, 200)])  # 1.9 cores busy over 1 s
    clocks = iter([{8: 0.0}, {7: 40.0, 8: 0.0}])  # thread 7 (this one) has run 40 s since it started; 8 nothing
    monkeypatch.setattr(_load, "_cpu_ticks", lambda: next(ticks))
    monkeypatch.setattr(_load, "_cpu_stall", lambda: None)
    monkeypatch.setattr(_load, "_running", lambda: 1)
    monkeypatch.setattr(_load, "_threads_cpu", lambda tracked, me: next(clocks))
    monkeypatch.setattr(_load, "_workers_cpu", lambda: 0.0)
    monkeypatch.setattr(os_module, "cpu_count", lambda: 2)
    monkeypatch.setattr(PROCESS, "load", type(PROCESS.load)())
    monkeypatch.setattr(_load, "usable_cores", lambda: 2)
    monkeypatch.setattr(_load.threading, "get_native_id", lambda: 8)
    _load.sample(1.0)  # sampled by thread 8
    monkeypatch.setattr(_load.threading, "get_native_id", lambda: 7)
    _load.sample(2.0)  # thread 7's first: at most the window's 1 s is its own
    assert PROCESS.load.others == pytest.approx(0.9) and PROCESS.load.busy == 1


@contextlib.contextmanager
def _numpy_thread() -> Iterator[int]:
    """Another thread of this program running ``np.exp`` in a loop (which releases the GIL: a core's worth of work
    beside this thread) while the block runs; its native id."""
    stop = threading.Event()
    started: List[int] = []

    def spin() -> None:
        started.append(threading.get_native_id())
        x = np.linspace(0.0, 1.0, 100_000)
        while not stop.is_set():
            np.exp(x)

    other = threading.Thread(target=spin)
    other.start()
    try:
        while not started:
            time.sleep(0.001)
        yield started[0]
    finally:
        stop.set()
        other.join()


def test_the_meter_reads_the_cpu_time_of_this_thread_of_the_tracked_ones_and_of_the_workers():
    with _numpy_thread() as spinner:
        me, gone = threading.get_native_id(), 2**22 + 7  # (no thread has the last id)
        first = _load._threads_cpu([spinner, me, gone], me)
        assert set(first) == {me, spinner}
        while _load._threads_cpu([], me)[me] < first[me] + 0.05:  # this thread runs 50 ms of CPU
            pass
        assert _load._threads_cpu([spinner], me)[spinner] > first[spinner]
    # A worker counts the CPU time of the blocks it ran once its jobs are done.
    worker, before = blocks._pool(1)[0], _load._workers_cpu()
    job = blocks._Job([lambda: sum(range(200_000))], torch=False)
    worker.give(job)
    job.done.acquire()
    deadline = time.monotonic() + 60
    while _load._workers_cpu() == before and time.monotonic() < deadline:
        time.sleep(0.001)
    assert _load._workers_cpu() > before


@pytest.mark.skipif(_load.usable_cores() < 2, reason="one core: nothing to take out of the pool")
def test_another_thread_of_the_program_busy_takes_its_core_out_of_the_pool(monkeypatch):
    monkeypatch.setattr(PROCESS, "load", type(PROCESS.load)())
    with _numpy_thread():
        _load.start_window()
        time.sleep(2 * _load.WINDOW)
        _load.sample(time.monotonic())
        assert _load.free_cores(2) == 1  # whatever else runs on the machine: at least the other thread


def test_tunes_meter_counts_another_thread_of_the_program_as_load_too():
    # (np2torch tune asks it over each curve whether the machine was busy: the same "own" as the calls' meter.)
    with _numpy_thread():
        others = _load.others_meter()
        time.sleep(2 * _load.WINDOW)
        assert others() >= 0.5  # the other thread's core, whatever else runs


@pytest.mark.parametrize(("running", "cores", "machine", "busy"), [(1, 2, 2, 0), (2, 2, 2, 1), (3, 2, 2, 2), (5, 16, 16, 4),
                                                                (2, 2, 16, 0), (9, 2, 16, 1), (None, 2, 2, 0)])
def test_before_the_first_window_the_tasks_running_then_stand_for_the_load(monkeypatch, running, cores, machine, busy):
    import os as os_module

    monkeypatch.setattr(_load, "_cpu_ticks", lambda: (0, 0))
    monkeypatch.setattr(_load, "_running", lambda: running)
    monkeypatch.setattr(os_module, "cpu_count", lambda: machine)
    monkeypatch.setattr(PROCESS, "load", type(PROCESS.load)())
    monkeypatch.setattr(_load, "usable_cores", lambda: cores)
    _load.sample(1.0)
    assert PROCESS.load.busy == busy
    assert _load._running() is None or _load._running() >= 1  # (the real one: this thread at least)


def test_the_builtin_profile_is_valid_and_read_as_validated():
    # The runtime reads the shipped profile without validating it (import cost): it must validate.
    path = Path(np2t.__file__).with_name("builtin_profile.json")
    validated = _profile.read_profile(path)
    assert validated.curves == _profile.load_builtin().curves and validated.curves
    assert validated.import_seconds > 0 and validated.threads >= 1


def test_a_process_gets_the_same_bits_with_omp_num_threads_1_or_unset_and_a_busy_pool():
    # Fresh processes, the default dispatch on the built-in profile: OMP_NUM_THREADS changes how many
    # blocks run at once, never the path (it is not in the fingerprint) nor the bits; so does a pool the
    # load shrank to one thread.
    code = """
        import hashlib, sys, torch, numpy as np, np2torch.runtime as r
        from np2torch.runtime import _load
        if sys.argv[-1] == "busy":
            _load.free_cores = lambda threads: 1
        rng = np.random.default_rng(3)
        x = rng.normal(size=1_500_001)
        h = hashlib.sha256()
        for result in (r.erf(x), r.exp(x.astype(np.float32)), r.expit(x), r.logsumexp(x[:1_500_000].reshape(-1, 500), axis=0),
                       r.logsumexp(x[:15_000].reshape(5000, 3), axis=1)):
            h.update(np.ascontiguousarray(result).tobytes())
        print(h.hexdigest(), [r.which("erf", x)[0]])
    """
    seen = set()
    for env, argv in (({}, "quiet"), ({"OMP_NUM_THREADS": "1"}, "quiet"), ({}, "busy"), ({"OMP_NUM_THREADS": "3"}, "quiet")):
        full = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_") and k != "OMP_NUM_THREADS"}
        full.update({"NP2TORCH_PROFILE": "builtin", **env})
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code), argv], capture_output=True, text=True, env=full,
                              timeout=300, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        seen.add(proc.stdout.strip())
    assert len(seen) == 1, seen
    assert "['cpu']" in seen.pop()  # erf over 1.5e6 takes torch on the built-in profile: torch's bits were compared
