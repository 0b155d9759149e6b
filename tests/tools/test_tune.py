"""`np2torch tune`'s pieces that need no timing: the import-cost probe's errors."""

from __future__ import annotations

import subprocess
from typing import Any

import click
import pytest

from np2torch.tools import tune


def fake_run(returncode: int, stdout: str = "", stderr: str = "") -> Any:
    def run(args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, returncode, stdout, stderr)

    return run


@pytest.mark.parametrize(
    "stderr, detail",
    [
        pytest.param("Traceback (most recent call last):\n  ...\nImportError: libtorch.so: cannot open\n",
                     "ImportError: libtorch.so: cannot open", id="the last line of the traceback"),
        pytest.param("", "exit status 3, nothing on stderr", id="nothing on stderr"),
    ],
)
def test_a_failed_torch_import_names_why(monkeypatch: pytest.MonkeyPatch, stderr: str, detail: str) -> None:
    monkeypatch.setattr(tune.subprocess, "run", fake_run(3, stderr=stderr))
    with pytest.raises(click.ClickException) as raised:
        tune.measure_import_seconds(repeat=1)
    assert raised.value.message == f"`import torch` failed in a fresh interpreter: {detail}"


def test_the_import_cost_is_the_median_run_warm_and_cold(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = iter(["2.5\n", "warning\n1.5\n", "3.5\n", "4.0\n", "6.0\n", "5.0\n"])
    caches = []

    def run(args: list[str], **kwargs: object) -> object:
        caches.append(args[-1])
        return fake_run(0, stdout=next(runs))(args)

    monkeypatch.setattr(tune.subprocess, "run", run)
    assert tune.measure_import_seconds(repeat=3) == {"warm": 2.5, "cold": 5.0}
    assert caches == ["warm"] * 3 + ["cold"] * 3


def test_the_rental_charges_the_cold_import_or_twice_the_warm_one() -> None:
    assert tune.import_charge({"warm": 0.8, "cold": 2.1}) == 2.1
    assert tune.import_charge({"warm": 1.3, "cold": 1.4}) == 2.6


def test_the_cold_import_runs_after_numpy_and_scipy_with_torch_out_of_the_page_cache() -> None:
    # The measuring program itself: NumPy and SciPy first, then the page cache dropped for torch's files only.
    code = tune._IMPORT_CODE
    assert code.index("import numpy") < code.index("import scipy.special") < code.index("import torch\n")
    assert "POSIX_FADV_DONTNEED" in code and 'sys.argv[1] == "cold"' in code


def test_show_reads_each_curve_as_the_decision_does_with_the_wake_of_an_idle_worker() -> None:
    from np2torch.runtime import tuning

    sizes = (1024, 65536, 262144, 1048576, 4194304)
    curve = tuning.Curve(sizes, {"numpy": (1e-6, 1e-4, 4e-4, 1.6e-3, 6.4e-3),
                                 "cores": (1e-6, 1e-4, 3e-4, 0.9e-3, 3.4e-3)})

    def first_on_cores(notes: dict) -> int:
        [row] = tune.bands_report(tuning.Profile("p", {}, 1.0, 2, {"log/float64": curve}, notes))
        return next(band["from"] for band in row["bands"] if band["path"] == "cores")

    assert first_on_cores({}) < 262144 <= first_on_cores({tuning.WAKE_NOTE: 2e-4}) <= 1048576


def test_tune_measures_the_smallest_call_the_every_core_paths_cut_in_two() -> None:
    # Below SHARED_SPLIT a call is one block on the calling thread; at SHARED_SPLIT two, one a thread. The power of 4
    # below is one block: interpolating from it put a two-block call's time on a one-thread line.
    from np2torch.runtime._paths import blocks

    assert tune.SHARED_SPLIT in tune.SIZES and blocks.elementwise_blocks(tune.SHARED_SPLIT, 2) == 2
    assert blocks.elementwise_blocks(max(n for n in tune.SIZES if n < tune.SHARED_SPLIT), 64) == 1
    # From SPLIT on, a call of two threads has the blocks of its size alone.
    assert tune.SPLIT in tune.SIZES and all(blocks.elementwise_blocks(n, 2) == blocks.call_blocks(n)
                                            for n in tune.SIZES if n >= tune.SPLIT)
