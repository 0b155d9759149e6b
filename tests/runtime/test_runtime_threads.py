"""The runtime inside a program with threads of its own: a call's path never depends on how the threads were
scheduled, and the program's torch keeps its thread settings in every thread (issue 37, items 1, 2 and 6)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, List

import numpy as np
import pytest

import np2torch.runtime as np2t
from np2torch.runtime._decision import profile as _profile
from np2torch.runtime._decision.model import Curve, Profile
from np2torch.runtime._paths import blocks, torch_cpu

ROOT = Path(__file__).resolve().parents[2]

SCHEDULES = """
import hashlib, sys, threading
import numpy as np
import np2torch.runtime as np2t

x = np.linspace(-2, 2, 100_000)
digest = {}

def a():
    digest["a"] = hashlib.sha256(np2t.erf(x * 0.999).tobytes()).hexdigest()[:16]

def b():
    for i in range(40):
        np2t.erf(x + i * 1e-3)

first, second = (a, b) if sys.argv[1] == "a-first" else (b, a)
for target in (first, second):
    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
print(digest["a"])
"""


def _cheap_rental_profile(tmp_path: Path) -> Path:
    """erf over float64 where torch saves half of every call and costs 0.5 ms to import: a few calls pay for it (the
    rental imports it once the savings reach ten times that: 5 calls of 100,000 elements)."""
    curve = Curve((10_000, 100_000, 1_000_000), {"numpy": (2e-4, 2e-3, 2e-2), "cpu1": (1e-4, 1e-3, 1e-2),
                                                  "cpu": (1e-4, 1e-3, 1e-2)})
    path = tmp_path / "cheap.json"
    _profile.write_profile(path, Profile(str(path), _profile.fingerprint(), 0.0005, 2, {"erf/float64": curve}))
    return path


def _run(tmp_path: Path, argv: List[str], schedule: str) -> str:
    script = tmp_path / "schedules.py"
    script.write_text(textwrap.dedent(SCHEDULES))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_")}
    env.update({"NP2TORCH_PROFILE": str(_cheap_rental_profile(tmp_path)), "NP2TORCH_CACHE_DIR": str(tmp_path)})
    done = subprocess.run([sys.executable, *argv, str(script), schedule], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[-1]


@pytest.mark.parametrize("runner", [[], ["-m", "np2torch", "run", "--report", "none"]], ids=["plain", "np2torch run"])
def test_a_calls_bits_do_not_depend_on_how_the_threads_were_scheduled(tmp_path, runner):
    # Thread b's 40 calls would pay for torch's import in a process-wide rental: thread a's one call then ran on
    # torch when b went first, on SciPy when a did.
    assert _run(tmp_path, runner, "a-first") == _run(tmp_path, runner, "b-first")


@pytest.fixture
def two_torch_threads() -> Any:
    torch = pytest.importorskip("torch")
    if torch.get_num_threads() < 2:
        pytest.skip("torch runs on one thread here: nothing a helper could take away")
    return torch


def test_a_program_thread_started_inside_a_helper_keeps_torchs_threads(two_torch_threads, monkeypatch):
    # The program's own thread starts while a helper computes on torch (on the caller's thread, then on a
    # worker's): its first torch op must see torch's default, not the helper's one thread.
    torch = two_torch_threads
    default = torch.get_num_threads()
    seen: List[int] = []
    real = torch_cpu.torch_op

    def op_that_starts_a_thread(name: str) -> Any:
        op = real(name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
            thread.start()
            thread.join()
            return op(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(torch_cpu, "torch_op", op_that_starts_a_thread)
    x = np.linspace(-2, 2, 8 * blocks.MIN_BLOCK)
    with np2t.using(device="cpu", min_size=0):
        np2t.exp(x)
    assert seen and set(seen) == {default}
    assert torch.get_num_threads() == default


def test_the_runtime_sets_one_torch_thread_per_thread_not_the_process_default(two_torch_threads):
    torch = two_torch_threads
    default = torch.get_num_threads()
    before = blocks.one_thread()
    try:
        assert (before, torch.get_num_threads()) == (default, 1)
        fresh: List[int] = []
        thread = threading.Thread(target=lambda: fresh.append(torch.get_num_threads()))
        thread.start()
        thread.join()
        assert fresh == [default]
    finally:
        blocks.set_threads(before)
    assert torch.get_num_threads() == default


POOL = """
import hashlib, sys
from concurrent.futures import ThreadPoolExecutor
import numpy as np
import np2torch.runtime as np2t

arrays = [np.linspace(-2, 2, 100_000) + i * 1e-3 for i in range(48)]
with ThreadPoolExecutor(4) as pool:
    results = list(pool.map(np2t.erf, arrays))
digest = hashlib.sha256()
for r in results:
    digest.update(r.tobytes())
print(digest.hexdigest()[:16], "torch" in sys.modules)
"""


@pytest.mark.parametrize("runner", [[], ["-m", "np2torch", "run", "--report", "none"]], ids=["plain", "np2torch run"])
def test_a_thread_pools_results_are_the_same_on_every_run(tmp_path, runner):
    # The pool's calls would pay for torch's import in a process-wide rental, and which arrays then ran on torch
    # (or, under np2torch run, which ones were sampled) depended on the pool's schedule.
    script = tmp_path / "pool.py"
    script.write_text(textwrap.dedent(POOL))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_")}
    env.update({"NP2TORCH_PROFILE": str(_cheap_rental_profile(tmp_path)), "NP2TORCH_CACHE_DIR": str(tmp_path)})
    outputs = set()
    for _ in range(3):
        done = subprocess.run([sys.executable, *runner, str(script)], capture_output=True, text=True, env=env,
                              timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        outputs.add(done.stdout.strip())
    assert len(outputs) == 1, outputs
    plain = subprocess.run([sys.executable, "-c", textwrap.dedent(POOL).replace("np2t.erf", "__import__('scipy.special').special.erf")],
                           capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert outputs == {plain.stdout.strip()}  # the original's bits: a pool thread's calls keep the exact paths


def test_which_says_what_the_next_call_does_while_torch_is_not_imported():
    # Every helper kind names the path its next call takes (the original until the rental pays), not torch.
    code = """
        import sys, numpy as np, np2torch.runtime as r
        x = np.ones((3000, 1000))
        print(r.which('logsumexp', x, axis=0)[0], r.which('softmax', x, axis=0)[0], r.which('erf', x.ravel())[0],
              r.which('hypot', 3.0, x.ravel()[:20_000])[0], 'torch' in sys.modules)
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_")}
    env["NP2TORCH_PROFILE"] = "builtin"
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["numpy", "numpy", "cores", "numpy", "False"]


HANDOFF = """
import sys
import numpy as np
import scipy.special
import np2torch.runtime as np2t
from np2torch.runtime._paths import blocks

blocks.LOOP_IDLE = float("inf")  # the call on every core however long since the last (tests/conftest.py)
blocks.free_cores = lambda threads: threads  # on every core whatever the load (a busy CI machine's first window)
x = np.linspace(-2, 2, 16 * blocks.MIN_BLOCK)
inner = []
line = blocks._Worker.give.__code__.co_firstlineno + 2  # `self.jobs.append(job)`, the worker's lock held

def trace(frame, event, arg):
    # What a signal handler does between two bytecodes: here, while the call hands its blocks to a worker.
    if event == "line" and frame.f_code is blocks._Worker.give.__code__ and frame.f_lineno == line and not inner:
        inner.append(np2t.erf(x[::-1].copy()))
    return trace

with np2t.using(exact="bits", min_size=0):
    np2t.erf(x[:100].copy())
    sys.settrace(trace)
    outer = np2t.erf(x)
    sys.settrace(None)
print(len(inner), outer.tobytes() == scipy.special.erf(x).tobytes(),
      inner[0].tobytes() == scipy.special.erf(x[::-1].copy()).tobytes())
"""


def test_a_helper_called_while_its_thread_hands_blocks_to_the_workers_runs_them_itself():
    # A plain lock the interrupted hand-off holds: a nested call that waited on it would never return.
    env = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_")}
    env["NP2TORCH_PROFILE"] = "builtin"
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(HANDOFF)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "True", "True"]


def test_a_worker_that_comes_late_holds_nothing_of_the_call():
    # Freeing a tensor that views a NumPy array takes the GIL back inside torch's C++: a worker doing so while the
    # interpreter finalized was ended there, and the process aborted after the program's last line ("terminate
    # called without an active exception").  So what a call's blocks hold dies with the caller's references, also
    # while the worker that was given the call is still busy elsewhere and will find the job later.
    import functools
    import weakref

    class Data:
        pass

    release = threading.Event()
    busy = blocks._Job([release.wait], torch=False)
    blocks._pool(1)[0].give(busy)  # the worker waits in another job; the call's blocks are the caller's
    try:
        data = Data()
        alive = weakref.ref(data)
        tasks = [functools.partial(lambda held: held, data) for _ in range(2)]
        assert blocks._on_threads(tasks, 2, None) == [data, data]
        del tasks, data
        assert alive() is None
    finally:
        release.set()
        busy.done.acquire()
    failing = blocks._Job([lambda: 1 / 0], torch=False)
    failing.work()
    failing.done.acquire()
    results, error = failing.finish()
    assert isinstance(error, ZeroDivisionError) and (failing.tasks, failing.results, failing.error) == ((), [], None)
