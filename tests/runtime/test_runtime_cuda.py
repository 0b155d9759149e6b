"""The CUDA path: the chunk plan and the two-slot schedule (pure, tested here) and the device run."""

from __future__ import annotations

import signal
import threading
import warnings
from typing import List, Tuple

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
from runtime_checks import assert_same_result, assert_same_values

import np2torch.runtime as np2t
from np2torch.runtime._paths.cuda import CUDA_CHUNK_BYTES, plan_chunks, run_pipeline
from np2torch.runtime._state import SlotsLock


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 10_000), itemsize=st.sampled_from([1, 2, 4, 8, 16]), chunk_bytes=st.integers(1, 5_000))
def test_plan_covers_everything_in_order(n, itemsize, chunk_bytes):
    chunks = plan_chunks(n, itemsize, chunk_bytes)
    per_chunk = max(1, chunk_bytes // itemsize)
    assert [start for start, _ in chunks] == list(range(0, n, per_chunk))
    assert all(0 < stop - start <= per_chunk for start, stop in chunks)
    assert all(stop == following for (_, stop), (following, _) in zip(chunks, chunks[1:]))
    assert (chunks[-1][1] if chunks else 0) == n
    assert all(stop - start == per_chunk for start, stop in chunks[:-1])


def test_default_plan_for_a_large_array():
    n = 100_000_000
    chunks = plan_chunks(n, 8)
    assert len(chunks) == -(-n * 8 // CUDA_CHUNK_BYTES)
    assert chunks[0] == (0, CUDA_CHUNK_BYTES // 8)


@pytest.mark.parametrize("args", [(-1, 8, 10), (10, 0, 10), (10, 8, 0)])
def test_bad_plan_requests(args):
    with pytest.raises(ValueError):
        plan_chunks(*args)


class FakeDevice:
    """A device whose queued work completes only when finished: checks the schedule's invariants."""

    def __init__(self, slots: int, src: np.ndarray, dst: np.ndarray) -> None:
        self.busy: List[Tuple[int, int] | None] = [None] * slots
        self.staged: List[np.ndarray | None] = [None] * slots
        self.src, self.dst = src, dst
        self.events: List[tuple] = []

    def launch(self, slot: int, start: int, stop: int) -> None:
        assert self.busy[slot] is None, "slot reused before its chunk finished"
        self.staged[slot] = np.exp(self.src[start:stop])  # what the stream would compute
        self.busy[slot] = (start, stop)
        self.events.append(("launch", slot, start))

    def finish(self, slot: int, start: int, stop: int) -> None:
        assert self.busy[slot] == (start, stop)
        self.dst[start:stop] = self.staged[slot]
        self.busy[slot] = None
        self.events.append(("finish", slot, start))


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 500), per_chunk=st.integers(1, 60), slots=st.integers(1, 3))
def test_pipeline_delivers_every_chunk_once_in_order(n, per_chunk, slots):
    src = np.linspace(-3, 3, n)
    dst = np.full(n, np.nan)
    device = FakeDevice(slots, src, dst)
    chunks = plan_chunks(n, 1, per_chunk)
    run_pipeline(chunks, slots, device.launch, device.finish)
    assert device.busy == [None] * slots
    finished = [start for kind, _, start in device.events if kind == "finish"]
    assert finished == [start for start, _ in chunks]
    np.testing.assert_array_equal(dst, np.exp(src))


def test_pipeline_overlaps_two_slots():
    events: List[tuple] = []
    run_pipeline(
        [(0, 1), (1, 2), (2, 3), (3, 4)],
        2,
        lambda slot, a, b: events.append(("launch", a)),
        lambda slot, a, b: events.append(("finish", a)),
    )
    # chunk k+1 is queued before chunk k is waited for
    assert events == [("launch", 0), ("launch", 1), ("finish", 0), ("launch", 2), ("finish", 1), ("launch", 3), ("finish", 2), ("finish", 3)]


def test_the_slots_lock_says_whether_this_thread_is_inside_it():
    # threading.Lock cannot say who holds it; a call made inside a call on the CUDA slots must know it is
    lock = SlotsLock()
    seen = []
    other = threading.Thread(target=lambda: seen.append(lock.held_here()))
    assert not lock.held_here()
    with lock:
        assert lock.held_here()
        other.start()
        other.join()
    assert not lock.held_here() and seen == [False]


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="POSIX signals")
def test_a_signal_handlers_call_inside_a_call_on_the_cuda_slots_takes_the_original(monkeypatch):
    # The CUDA path holds PROCESS.cuda_lock over its slots.  A signal handler's call on the same path, in the
    # thread holding it, waited for it forever (a Lock is not re-entrant, and the slots are in use).  It takes the
    # original.  The CUDA work is played on the CPU by a stand-in for cuda_unary that holds the lock as it does.
    import torch

    from np2torch.runtime import _ufunc
    from np2torch.runtime._state import PROCESS

    x = np.linspace(-3, 3, 4096)
    inside, seen = [], {}

    def cuda_unary(op_name, src, dst, device, compute_dtype=None, check=False, chunk_bytes=None):
        if inside:
            raise AssertionError("a call re-entered the CUDA path inside a call holding cuda_lock: it waits forever")
        inside.append(True)
        try:
            with PROCESS.cuda_lock:
                signal.raise_signal(signal.SIGUSR1)  # its handler runs before raise_signal returns
                torch.from_numpy(dst).copy_(getattr(torch, op_name)(torch.from_numpy(src)))
        finally:
            inside.pop()
        return False

    def handler(signum, frame):
        seen["handler"] = np2t.exp(x)

    monkeypatch.setattr(_ufunc, "cuda_unary", cuda_unary)
    monkeypatch.setattr(PROCESS, "cuda", True)  # torch "can use a CUDA device"
    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        with np2t.using(device="cuda", min_size=0):
            got = np2t.exp(x)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert seen["handler"].tobytes() == np.exp(x).tobytes()
    assert got.tobytes() == torch.exp(torch.from_numpy(x)).numpy().tobytes()  # the outer call: the "CUDA" path's


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


cuda = pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA device")

PAIRS = [
    pytest.param(np2t.exp, np.exp, id="exp"),
    pytest.param(np2t.log, np.log, id="log"),
    pytest.param(np2t.erf, scipy.special.erf, id="erf"),
]


@pytest.mark.cuda
@cuda
@pytest.mark.parametrize("helper,original", PAIRS)
@pytest.mark.parametrize("dtype", ["f", "d", "l", "e"])
@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative"])
def test_cuda_parity(helper, original, dtype, layout, monkeypatch):
    from np2torch.runtime._paths import cuda as cuda_path

    monkeypatch.setattr(cuda_path, "CUDA_CHUNK_BYTES", 1 << 12)  # many chunks, both slots busy
    rng = np.random.default_rng(0)
    x = rng.uniform(0.01, 20, (60, 70)).astype(dtype)
    x = {"C": x, "F": np.asfortranarray(x), "strided": x[::2, 1:], "negative": x[::-1]}[layout]
    with np2t.using(device="cuda", min_size=0):
        got = helper(x)
    assert_same_result(got, original(x))


@pytest.mark.cuda
@cuda
@pytest.mark.parametrize("helper,original", PAIRS)
def test_cuda_errstate_and_specials(helper, original):
    x = np.concatenate([np.linspace(-5, 5, 5000), [0.0, -0.0, -1.0, 1000.0, -1000.0, np.nan, np.inf, -np.inf]])
    for mode in ("ignore", "warn", "raise"):
        outcomes = []
        for func in (helper, original):
            with np2t.using(device="cuda", min_size=0), np.errstate(all=mode), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    value = func(x)
                except FloatingPointError as exc:
                    value = str(exc)
            outcomes.append((value, [str(w.message) for w in caught]))
        (got, got_w), (want, want_w) = outcomes
        assert got_w == want_w
        if isinstance(want, str):
            assert got == want
        else:
            assert_same_values(got, want)


@pytest.mark.cuda
@cuda
def test_cuda_in_place_and_out():
    x = np.linspace(-3, 3, 100_000)
    want = np.exp(x)
    out = np.empty_like(x)
    with np2t.using(device="cuda", min_size=0):
        assert np2t.exp(x, out=out) is out
        with np.errstate(all="ignore"):
            assert np2t.exp(x, out=x) is x
    assert_same_values(out, want)
    assert_same_values(x, want)
