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


def test_the_import_cost_is_the_median_run(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = iter(["2.5\n", "warning\n1.5\n", "3.5\n"])
    monkeypatch.setattr(tune.subprocess, "run", lambda args, **kwargs: fake_run(0, stdout=next(runs))(args))
    assert tune.measure_import_seconds(repeat=3) == 2.5
