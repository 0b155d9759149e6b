"""Runtime cases an adversarial pass found (issue 13): outputs torch cannot write exactly, fork after the user's torch."""

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
