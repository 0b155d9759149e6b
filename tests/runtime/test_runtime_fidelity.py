"""Runtime cases adversarial passes found: outputs torch cannot write exactly, fork after the user's torch or during
an import of it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.special
from numpy.lib.stride_tricks import as_strided

import np2torch.runtime as np2t

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("min_size", [None, 0], ids=["default settings", "torch forced"])
def test_self_overlapping_output_matches_scipy(min_size):
    results = []
    for func in (np2t.erf, scipy.special.erf):
        a = np.linspace(0.001, 0.5, 400)
        x = as_strided(a, (100, 100), (8, 8))  # rows overlap: out is x, and x overlaps itself
        with np2t.using(min_size=min_size), np.errstate(all="ignore"):
            func(x, out=x)
        results.append(a.copy())
    assert results[0].tobytes() == results[1].tobytes()


@pytest.mark.parametrize("min_size", [None, 0], ids=["default settings", "torch forced"])
def test_zero_stride_output_matches_scipy(min_size):
    results = []
    for func in (np2t.erf, scipy.special.erf):
        o = as_strided(np.zeros(1), (5000,), (0,))
        with np2t.using(min_size=min_size):
            func(np.linspace(0, 1, 5000), out=o)
        results.append(o.copy())
    assert results[0].tobytes() == results[1].tobytes()


@pytest.mark.parametrize(
    "shape, strides, overlaps",
    [((10,), (8,), False), ((10,), (0,), True), ((4, 4), (32, 8), False), ((4, 4), (8, 32), False), ((4, 4), (16, 8), True),
     ((3, 4), (-32, 8), False), ((1, 5), (0, 8), False), ((2, 3), (8, 8), True)],
)
def test_the_overlap_test_is_exact_for_simple_layouts(shape, strides, overlaps):
    from np2torch.runtime._ufunc import _no_self_overlap

    base = np.zeros(64)
    start = base[32:] if any(s < 0 for s in strides) else base
    a = as_strided(start, shape, strides)
    assert _no_self_overlap(a) is not overlaps
    if not overlaps:
        offsets = [sum(i * s for i, s in zip(idx, strides)) for idx in np.ndindex(*shape)]
        assert len(set(offsets)) == a.size


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_fork_after_the_users_own_torch_op_does_not_hang():
    code = textwrap.dedent(
        """
        import multiprocessing as mp, numpy as np, torch
        import np2torch.runtime as np2t
        torch.exp(torch.ones(2_000_000))          # the user's own parallel op starts OpenMP's pool

        def work(_):
            x = np.linspace(0, 1, 400_000, dtype=np.float32)
            with np2t.using(min_size=0):
                return float(np2t.exp(x).sum())

        with mp.get_context("fork").Pool(2) as pool:
            print(len(pool.map(work, range(4), chunksize=1)))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.stdout.strip() == "4", proc.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_fork_when_torch_was_imported_before_the_runtime_does_not_hang():
    code = textwrap.dedent(
        """
        import multiprocessing as mp, numpy as np, torch
        torch.exp(torch.ones(2_000_000))
        import np2torch.runtime as np2t

        def work(_):
            with np2t.using(min_size=0):
                return float(np2t.erf(np.linspace(0, 1, 400_000)).sum())

        with mp.get_context("fork").Pool(2) as pool:
            print(len(pool.map(work, range(2), chunksize=1)))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.stdout.strip() == "2", proc.stderr


_FORK_DURING_IMPORT = """
import os, sys, threading, time
import numpy as np
import np2torch.runtime as np2t
from np2torch.runtime._fork import being_imported
from np2torch.runtime._state import PROCESS

np2t.configure(min_size=0)
x = np.linspace(-3, 3, 200_000)
{start}
deadline = time.monotonic() + 60
while not being_imported(sys.modules.get({module!r})) and time.monotonic() < deadline:
    time.sleep(0.0005)
pid = os.fork()
if pid == 0:
    try:
        {child}
    except BaseException as exc:
        print(type(exc).__name__, exc, flush=True)
    print(sorted(PROCESS.half_imported), flush=True)
    os._exit(0)
worker.join()
_, status = os.waitpid(pid, 0)
print("parent", status, {parent})
"""


def _fork_during_import(start: str, module: str, child: str, parent: str) -> list[str]:
    code = _FORK_DURING_IMPORT.format(start=start, module=module, child=child, parent=parent)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.timeout(300)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_fork_while_the_runtime_imports_torch_in_a_thread_does_not_hang():
    # A thread's first large call imports torch; the main thread forks meanwhile: the child's own
    # large call must return NumPy's values (it cannot finish that import), the parent's torch's.
    lines = _fork_during_import(
        start="worker = threading.Thread(target=np2t.exp, args=(x,)); worker.start()",
        module="torch",
        child="print(np2t.exp(x).tobytes() == np.exp(x).tobytes(), np2t.which('exp', x)[0], flush=True)",
        parent="np2t.which('exp', x)[0]",
    )
    assert lines == ["True numpy", "['torch']", "parent 0 cpu"]


@pytest.mark.timeout(300)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_fork_while_the_users_thread_imports_torch_does_not_hang():
    lines = _fork_during_import(
        start="worker = threading.Thread(target=__import__, args=('torch',)); worker.start()",
        module="torch",
        child="print(np2t.exp(x).tobytes() == np.exp(x).tobytes(), flush=True)",
        parent="'torch' in sys.modules",
    )
    assert lines == ["True", "['torch']", "parent 0 True"]


@pytest.mark.timeout(300)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_fork_while_the_runtime_imports_an_original_raises_instead_of_hanging():
    lines = _fork_during_import(
        start="worker = threading.Thread(target=np2t.erf, args=(x,)); worker.start()",
        module="scipy.special",
        child="np2t.erf(x)",
        parent="float(np2t.erf(x)[0])",
    )
    assert lines[0].startswith("ImportError np2torch.runtime: scipy.special.erf cannot be imported in this process"), lines
    assert "scipy.special" in lines[1] and lines[2].startswith("parent 0 -0.99997")
