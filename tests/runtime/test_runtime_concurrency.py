"""Threads, fork and exit: concurrent calls stay exact, a forked Pool never hangs, a call at exit is the original's."""

from __future__ import annotations

import functools
import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import scipy.special

import np2torch.runtime as np2t

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_many_threads_compute_exactly():
    rng = np.random.default_rng(3)
    inputs = [rng.uniform(0.1, 5, 50_000 + 997 * i).astype(np.float64 if i % 2 else np.float32) for i in range(12)]
    funcs = [(np2t.exp, np.exp), (np2t.log, np.log), (np2t.erf, scipy.special.erf)]

    def job(i: int):
        helper, _ = funcs[i % 3]
        with np2t.using(device="cpu", min_size=0):
            return helper(inputs[i])

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(job, range(12), timeout=120))
    for i, got in enumerate(results):
        _, original = funcs[i % 3]
        want = original(inputs[i])
        assert got.dtype == want.dtype
        np.testing.assert_array_max_ulp(got, want, maxulp=4)


FORK_SCRIPT = textwrap.dedent(
    """
    import multiprocessing as mp
    import numpy as np
    import torch
    import np2torch.runtime as np2t

    def work(i):
        x = np.full(2_000_000, i / 10.0, dtype=np.float32)
        y = np2t.exp(x)  # large: the torch path
        return float(y[0]), torch.get_num_threads()

    if __name__ == "__main__":
        np2t.exp(np.linspace(0, 1, 2_000_000, dtype=np.float32))  # the parent runs a parallel torch op
        print("parent threads", torch.get_num_threads())
        with mp.get_context("fork").Pool(2) as pool:
            results = pool.map_async(work, range(4)).get(timeout=60)
        for value, threads in results:
            print(value, threads)
    """
)


@pytest.mark.timeout(180)
def test_forked_pool_after_parallel_torch_op_does_not_hang(tmp_path):
    # GNU OpenMP's pool does not survive fork: without the at-fork hook the
    # children's first parallel torch op waits forever (issue 3, measured).
    script = tmp_path / "fork_pool.py"
    script.write_text(FORK_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_")}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=150, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    assert lines[0].startswith("parent threads")
    children = [line.split() for line in lines[1:] if line]
    got = np.array([float(value) for value, _ in children], dtype=np.float32)
    # float32 exp: torch may differ from NumPy's SIMD loop by an ULP (docs/runtime.md)
    np.testing.assert_array_max_ulp(got, np.exp(np.arange(4, dtype=np.float32) / np.float32(10)), maxulp=4)
    assert {threads for _, threads in children} == {"1"}


def test_spawned_children_are_untouched(tmp_path):
    # The hook only runs in forked children; a spawned child has a fresh torch.
    script = tmp_path / "spawn_pool.py"
    script.write_text(FORK_SCRIPT.replace('get_context("fork")', 'get_context("spawn")'))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_")}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=170, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    parent_threads = proc.stdout.split("\n")[0].split()[-1]
    children = [line.split() for line in proc.stdout.split("\n")[1:] if line]
    assert {threads for _, threads in children} == {parent_threads}


LOCK_HELD_AT_FORK = textwrap.dedent(
    """
    import os, sys, threading
    import np2torch.runtime as np2t
    from np2torch.runtime._paths import blocks
    from np2torch.runtime._state import PROCESS

    held, release = threading.Event(), threading.Event()
    which = sys.argv[1]
    if which == "first block":
        import torch  # (what a child's torch work needs, loaded before the fork)

    def hold():
        with PROCESS.lock if which == "runtime" else blocks._FIRST:
            held.set()
            release.wait(120)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(120)
    pid = os.fork()
    if pid == 0:
        if which == "runtime":
            np2t.configure(device="numpy")  # takes the runtime's lock, which a parent's thread held at the fork
        else:  # the first block of a kind: the lock a parent's thread held while computing one (blocks._first_alone)
            blocks.run([lambda: 1], 1, "a kind first computed in the child")
        os._exit(0)
    release.set()
    thread.join()
    print(os.waitpid(pid, 0)[1])
    """
)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("which", ["runtime", "first block"])
def test_a_child_forked_while_a_thread_holds_the_runtime_lock_does_not_hang(tmp_path, which):
    script = tmp_path / "lock_at_fork.py"
    script.write_text(LOCK_HELD_AT_FORK)
    proc = subprocess.Popen([sys.executable, str(script), which], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the hung child too
        proc.communicate()
        pytest.fail("the forked child hung on a lock a parent's thread held at the fork")
    assert proc.returncode == 0 and out.split() == ["0"], err


def run_forced(tmp_path: Path, program: str, *argv: str) -> subprocess.CompletedProcess:
    """``program`` run as a script of its own in a fresh interpreter, with torch forced from any size (``min_size`` 0)
    on the built-in profile."""
    script = tmp_path / "program.py"
    script.write_text(program)
    env = {**os.environ, "NP2TORCH_MIN_SIZE": "0", "NP2TORCH_PROFILE": "builtin"}
    return subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=env)


AT_EXIT_SCRIPT = textwrap.dedent(
    """
    import atexit, sys, threading
    import numpy as np, scipy.special
    import np2torch.runtime as np2t

    x = np.linspace(-3, 3, 64)
    CASES = [(np2t.exp, np.exp, (x,)), (np2t.erf, scipy.special.erf, (x,)), (np2t.hypot, np.hypot, (x, 2.0))]
    with np2t.using(device="numpy"):  # the originals loaded, torch not imported
        for helper, _, args in CASES:
            helper(*args)

    def compare():
        for helper, original, args in CASES:
            got, want = helper(*args), original(*args)
            same = type(got) is type(want) and got.dtype == want.dtype and got.tobytes() == want.tobytes()
            sys.stdout.write(f"{helper.__name__} {same}\\n")

    class AtFinalization:
        def __del__(self):
            compare()

    when = sys.argv[1]
    if when == "thread after the main one":
        threading.Thread(target=lambda: (threading.main_thread().join(), compare())).start()
    elif when == "atexit":
        atexit.register(compare)
    else:
        keep = AtFinalization()
    """
)


@pytest.mark.parametrize("when", ["thread after the main one", "atexit", "finalization"])
def test_a_call_at_exit_returns_the_originals_result(tmp_path, when):
    # Importing torch once the interpreter shuts down raises ("can't register atexit after
    # shutdown"), and while it finalizes NumPy's Python parts cannot be imported: np.exp still runs.
    proc = run_forced(tmp_path, AT_EXIT_SCRIPT, when)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n") == ["exp True", "erf True", "hypot True", ""], proc.stderr



DURING_THE_IMPORT_SCRIPT = textwrap.dedent(
    """
    import signal, sys
    import numpy as np
    import scipy.special
    import np2torch.runtime as np2t

    x = np.random.default_rng(1).standard_normal(300_000)
    rows = x.reshape(1000, 300)
    CASES = [("exp", (x,), np.exp), ("erf", (x,), scipy.special.erf), ("logsumexp", (x,), scipy.special.logsumexp),
             ("softmax", (rows,), scipy.special.softmax)]
    seen = {}

    def compare(got, want):
        return type(got) is type(want) and got.dtype == want.dtype and got.tobytes() == want.tobytes()

    def handler(signum, frame):
        seen["torch half initialized"] = sys.modules["torch"].__spec__._initializing
        for name, args, original in CASES:
            seen[name] = compare(getattr(np2t, name)(*args), original(*args))

    class Interrupt:
        # The signal arrives when torch imports its first submodule: torch/__init__.py is running, its module
        # in sys.modules without most of its names (the same moment on every run, however fast the machine).
        def find_spec(self, name, path=None, target=None):
            if name.startswith("torch.") and self in sys.meta_path:
                sys.meta_path.remove(self)
                signal.raise_signal(signal.SIGUSR1)
            return None

    signal.signal(signal.SIGUSR1, handler)
    sys.meta_path.insert(0, Interrupt())
    got = np2t.erf(x)  # min_size 0: this call imports torch, then computes on it
    print(seen.pop("torch half initialized"), "torch" in sys.modules, np2t.which("erf", x)[0])
    print(sorted(seen.items()))
    print(compare(got, np2t.erf(x)))  # the torch path's bits, as a call nothing interrupted
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="POSIX signals")
def test_a_signal_handler_calling_helpers_while_the_runtime_imports_torch_gets_the_originals_results(tmp_path):
    # A Python signal handler runs between two bytecodes of the main thread, also inside the runtime's
    # `import torch`.  Its helper calls re-entered the import through the runtime's re-entrant lock, got the
    # half-initialized module and the program died (AttributeError: partially initialized module 'torch');
    # SciPy's own logsumexp, reading sys.modules["torch"].Tensor, failed there too.  They take the original.
    proc = run_forced(tmp_path, DURING_THE_IMPORT_SCRIPT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n") == [
        "True True cpu", "[('erf', True), ('exp', True), ('logsumexp', True), ('softmax', True)]", "True", ""
    ], proc.stderr


DAEMON_AT_EXIT_SCRIPT = textwrap.dedent(
    """
    import sys, threading
    import numpy as np
    import np2torch.runtime as np2t

    name = sys.argv[1]
    x = np.random.default_rng(1).standard_normal(4_000_000)
    call = {"erf": lambda: np2t.erf(x), "logsumexp": lambda: np2t.logsumexp(x),
            "logsumexp of rows": lambda: np2t.logsumexp(x.reshape(-1, 4), axis=1),
            "hypot": lambda: np2t.hypot(x, x), "softmax": lambda: np2t.softmax(x)}[name]
    computing = threading.Event()

    def work():
        call()  # torch loaded
        while True:
            computing.set()
            call()

    threading.Thread(target=work, daemon=True).start()
    computing.wait()  # the main thread returns while the daemon thread is inside a call on torch
    """
)


@pytest.mark.parametrize("name", ["erf", "logsumexp", "logsumexp of rows", "hypot", "softmax"])
def test_a_daemon_thread_inside_a_helper_at_exit_leaves_the_exit_status_0(tmp_path, name):
    # At exit, Python ends a daemon thread as it takes the GIL back; inside a torch op that unwinding crossed
    # torch's C++ and aborted the process ("terminate called without an active exception", status 134).  The
    # runtime's atexit hook lets the calls on torch finish and sends later ones to the original, as NumPy ran; no
    # tensor outlives a call (freeing one takes the GIL back inside torch too: logsumexp's parts were torch's).
    proc = run_forced(tmp_path, DAEMON_AT_EXIT_SCRIPT, name)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_the_exit_hook_waits_for_the_calls_on_torch_and_then_refuses_new_ones(monkeypatch):
    # The hook in the main thread: another thread's call on torch finishes first; its later call is refused (it
    # takes the original); the main thread's own count, one too high (a KeyboardInterrupt between a call's start
    # and its `try`), does not hold the exit back.
    from np2torch.runtime import _backend

    work = _backend._Work()
    monkeypatch.setattr(_backend, "_WORK", work)
    assert _backend.begin_torch_work()  # never ended: the main thread's leaked count
    order = []
    computing = threading.Event()

    def a_call_in_flight():
        assert _backend.begin_torch_work()
        computing.set()
        while not work.closing:  # the hook has begun waiting
            time.sleep(0)
        order.append(("refused", _backend.begin_torch_work()))
        order.append("ended")
        _backend.end_torch_work()

    thread = threading.Thread(target=a_call_in_flight)
    thread.start()
    computing.wait()
    _backend._close()
    order.append("closed")
    thread.join()
    assert order == [("refused", False), "ended", "closed"]


DURING_THE_IMPORT_OF_SCIPY_SPECIAL_SCRIPT = textwrap.dedent(
    """
    import faulthandler, os, signal, sys, threading
    import numpy as np
    import np2torch.runtime as np2t

    faulthandler.dump_traceback_later(60, exit=True)  # a hang fails the run, with every thread's stack
    program, where, name, moment = sys.argv[1:]
    x = np.linspace(-3, 3, 7)
    got = {}

    def call():
        if program == "fixed":
            return getattr(np2t, name)(x)
        import scipy.special  # the original program reaches scipy.special by importing it, wherever it runs
        return getattr(scipy.special, name)(x)

    def outcome(function):
        try:
            return np.asarray(function()).tobytes().hex()
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"

    def handler(signum, frame):
        got["handler"] = outcome(call)

    waiting = threading.Event()

    def watch(frame, event, arg):  # the other thread is about to wait for scipy.special's module lock
        if event == "call" and frame.f_code.co_name == "acquire" and \\
                getattr(frame.f_locals.get("self"), "name", None) == "scipy.special":
            waiting.set()

    def first_call():
        sys.setprofile(watch)
        got["other thread"] = outcome(call)

    thread = threading.Thread(target=first_call)
    INIT = os.path.join("scipy", "special", "__init__.py")

    def line(frame, event, arg):
        # "first line": scipy/special/__init__.py has bound nothing yet; "bound": the first line where `name` is
        if event != "line" or (moment == "bound" and name not in frame.f_globals):
            return line
        sys.settrace(None)
        frame.f_trace = None
        if where == "other thread":
            thread.start()
            waiting.wait()
        signal.raise_signal(signal.SIGUSR1)
        return None

    signal.signal(signal.SIGUSR1, handler)
    sys.settrace(lambda frame, event, arg: line if frame.f_code.co_filename.endswith(INIT) else None)
    if where == "other thread":
        import scipy.special  # the program's own import, in the main thread; the other thread's call imports it too
    else:
        got["main"] = outcome(call)  # fixed: the runtime's first import of scipy.special; original: the program's
    sys.settrace(None)
    if thread.ident is not None:
        thread.join()
    import scipy.special
    got["later"] = outcome(lambda: getattr(np2t, name)(x)) == outcome(lambda: getattr(scipy.special, name)(x))
    print(sorted(got.items()))
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="POSIX signals")
@pytest.mark.parametrize(("where", "name", "moment"), [
    ("same thread", "erf", "first line"),
    ("same thread", "erf", "bound"),
    ("other thread", "erf", "first line"),
    ("other thread", "erf", "bound"),
    ("other thread", "logsumexp", "first line"),
    ("other thread", "logsumexp", "bound"),
])
def test_a_signal_handler_calling_a_helper_while_scipy_special_is_imported_does_as_the_original(tmp_path, where, name,
                                                                                                 moment):
    # A handler runs inside an import of scipy.special in its thread: the runtime's first one (same thread), or the
    # program's own while another thread's first call imports it for the runtime (other thread).  The original's
    # handler gets the half-initialized module (its import in the importing thread returns it): SciPy's function once
    # scipy/special/__init__.py has bound it, else AttributeError; the import then completes.  The helper's call must
    # do the same.  With the other thread, it hung: the runtime held its loading lock over that thread's import,
    # which waited for the main thread's import, and the handler waited for the lock.
    script = tmp_path / "during_the_import_of_scipy_special.py"
    script.write_text(DURING_THE_IMPORT_OF_SCIPY_SPECIAL_SCRIPT)
    env = {**os.environ, "NP2TORCH_PROFILE": "builtin"}

    def run(program: str) -> str:
        proc = subprocess.run([sys.executable, str(script), program, where, name, moment], capture_output=True,
                              text=True, timeout=300, cwd=ROOT, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    scipys = np.asarray(getattr(scipy.special, name)(np.linspace(-3, 3, 7))).tobytes().hex()
    handlers = scipys if moment == "bound" else (f"AttributeError: partially initialized module 'scipy.special' has "
                                                 f"no attribute '{name}' (most likely due to a circular import)")
    expected = sorted({"handler": handlers, "later": True, where.replace("same thread", "main"): scipys}.items())
    assert run("original") == run("fixed") == f"{expected}\n"


INSIDE_AN_IMPORT_TORCH_NEEDS_SCRIPT = textwrap.dedent(
    """
    import faulthandler, sys, threading
    import numpy as np, scipy.special
    import np2torch.runtime as np2t
    from np2torch.runtime import _backend
    from np2torch.runtime._state import PROCESS, TAKEN

    faulthandler.dump_traceback_later(60, exit=True)  # a hang fails the run, with every thread's stack
    NEEDED = "typing_extensions"  # torch's import imports it; nothing before that here does
    assert NEEDED not in sys.modules and "torch" not in sys.modules
    x = np.linspace(-3, 3, 1000)
    got = {}

    def same(result, want):
        return type(result) is type(want) and result.dtype == want.dtype and result.tobytes() == want.tobytes()

    def first_call():  # min_size 0: the runtime imports torch here, which waits for NEEDED's import to end
        got["importing thread"] = np2t.erf(x)

    def path_of(call):
        TAKEN.device = None
        result = call()
        return TAKEN.device or "original", result

    importer = threading.Thread(target=first_call)

    def line(frame, event, arg):
        # The first line of NEEDED: this thread holds its module lock, as a program thread importing it does.
        sys.settrace(None)
        frame.f_trace = None
        importer.start()
        while _backend._importer is None and importer.is_alive():
            importer.join(0.001)  # until the runtime's import of torch is under way
        # A call made here (a signal handler's, a trace function's, the top level of a module torch needs): the
        # runtime's import waits for this thread, so the call must not wait for the runtime's import.
        path, result = path_of(lambda: np2t.erf(x))
        got["inside the import"] = [path, same(result, scipy.special.erf(x)), _backend.load_torch(),
                                    _backend.cuda_available()]
        return None

    sys.settrace(lambda frame, event, arg: line if frame.f_code.co_filename.endswith(NEEDED + ".py") else None)
    __import__(NEEDED)
    sys.settrace(None)
    importer.join()
    path, result = path_of(lambda: np2t.erf(x))
    got["importing thread"] = same(got["importing thread"], result)  # torch's bits, as a later call's
    got["later"] = [path, _backend.load_torch(), len(PROCESS.one_time)]
    print(sorted(got.items()))
    """
)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_a_call_inside_an_import_torch_needs_while_another_thread_imports_torch_takes_the_original(tmp_path):
    # One thread's first call imports torch for the runtime; torch's import needs a module another thread is
    # importing, and that thread calls a helper inside its import.  The runtime held its loading lock over
    # `import torch`: the call waited for the lock, the import for the call's thread, and both hung.  The call
    # takes the original instead of waiting (CUDA is not judged then), and the import is counted once.
    proc = run_forced(tmp_path, INSIDE_AN_IMPORT_TORCH_NEEDS_SCRIPT)
    assert proc.returncode == 0, proc.stderr
    expected = {"importing thread": True, "inside the import": ["original", True, False, False], "later": ["cpu", True, 1]}
    assert proc.stdout == f"{sorted(expected.items())}\n", proc.stderr


@pytest.mark.parametrize("check", ["check_lean", "check"])
def test_a_check_of_the_installed_scipy_holds_no_lock_another_threads_call_waits_for(monkeypatch, check):
    # logsumexp's checks call SciPy (and import): one that waits for another thread (that thread's import, say)
    # while that thread's call needs the check too.  Under the runtime's loading lock the call waited for the
    # check and the check for the call (here until the stand-in's hang guard); now each thread checks, and
    # the first answer is kept.
    from np2torch.runtime import _logsumexp
    from np2torch.runtime._exact import logsumexp_check
    from np2torch.runtime._paths import lean
    from np2torch.runtime._state import PROCESS

    if check == "check":
        pytest.importorskip("torch")
    key = lean.VERDICT if check == "check_lean" else "logsumexp"
    monkeypatch.setattr(PROCESS, "verdicts", {k: v for k, v in PROCESS.verdicts.items() if k != key})
    real = getattr(logsumexp_check, check)
    checking, other_done, waited = threading.Event(), threading.Event(), []

    def stand_in(*args):
        if not checking.is_set():
            checking.set()
            waited.append(other_done.wait(60))  # a hang guard: the other thread's call ends first
        return real(*args)

    monkeypatch.setattr(logsumexp_check, check, stand_in)
    rows = np.random.default_rng(5).standard_normal((4000, 3))
    settings = {"device": "cpu", "min_size": 10**9 if check == "check_lean" else 0}
    results = {}

    def call(name):
        with np2t.using(**settings):
            results[name] = np2t.logsumexp(rows, axis=1)
        if name == "other":
            other_done.set()

    first = threading.Thread(target=call, args=("first",))
    first.start()
    assert checking.wait(60)
    other = threading.Thread(target=call, args=("other",))
    other.start()
    other.join(120)
    first.join(120)
    assert waited == [True]
    stand_in_for = functools.partial(lean.compute, original=None) if check == "check_lean" else _logsumexp._expected
    assert PROCESS.verdicts[key] == real(scipy.special.logsumexp, stand_in_for)  # kept once, the same answer
    want = scipy.special.logsumexp(rows, axis=1)
    # Within 4 ULP of the slice's scale, as the torch path promises (test_runtime_logsumexp.py's assert_close): a
    # result near 0 after cancellation was 1,024 of its own ULP from SciPy's on an AMD EPYC (torch's log, 1 ULP off).
    scale = np.spacing(np.maximum(np.abs(want), np.abs(rows.max(axis=1))))
    for got in results.values():
        assert (np.abs(got - want) <= 4 * scale).all()
