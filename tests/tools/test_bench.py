"""`np2torch bench`: structure of the table and JSON, tiny sizes only (timings themselves are not tested)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from np2torch.cli import main
from np2torch.lint.rules import RULES
from np2torch.tools import bench

FAST = ["--repeat", "1", "--min-run-time", "0.0005"]
TITLES = [title for _, title in bench.BACKENDS]


def run(*args: str) -> "click.testing.Result":
    return CliRunner().invoke(bench.command, [*args, *FAST])


def test_every_rule_has_a_recipe_and_the_list_comes_from_the_rules() -> None:
    from np2torch.runtime.table import FUNCTIONS

    assert [rule.helper for rule in bench.benchmarked_rules()] == [rule.helper for rule in RULES if rule.is_function]
    assert set(bench.RECIPES) == {rule.helper for rule in RULES if rule.helper} == {row.name for row in FUNCTIONS}


def test_originals_resolve_from_qualified_names() -> None:
    import numpy as np
    import scipy.special

    originals = {rule.helper: bench.original_function(rule) for rule in RULES if rule.is_function}
    assert originals["exp"] is np.exp and originals["logsumexp"] is scipy.special.logsumexp


def positive_numbers(row: dict, backends: set) -> None:
    for key in backends:
        assert row["seconds"][key] > 0, (row["function"], key)
        if key != "original":
            assert row["speedup"][key] > 0
    assert row["speedup"]["original"] is None


def test_json_rows_for_every_function_and_backend() -> None:
    result = run("--size", "40x30", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["shape"] == [40, 30] and report["dtype"] == "float64" and report["repeat"] == 1
    assert {"numpy", "np2torch", "torch", "cpu_count"} <= set(report["machine"])
    rows = report["results"]
    assert [row["function"] for row in rows] == [rule.helper for rule in RULES if rule.is_function]
    for row in rows:
        assert set(row["seconds"]) == {key for key, _ in bench.BACKENDS}
        assert row["elements"] == 1200 and row["mismatch"] == []
        available = {"original", "torch", "np2torch", "forced", "copy"}
        if bench.RECIPES[row["function"]].numexpr is not None:
            available.add("numexpr")  # installed in the test environment
        else:
            assert row["seconds"]["numexpr"] is None  # numexpr has no erf or logsumexp
        positive_numbers(row, available)
    assert {row["function"]: row["call"] for row in rows}["logsumexp"] == "scipy.special.logsumexp(x, axis=0)"
    for row in rows:
        assert row["path"] in ("numpy", "cpu", "cuda")
        assert row["best"] in bench.BEST_OF and row["seconds"][row["best"]] == min(
            row["seconds"][key] for key in bench.BEST_OF if row["seconds"][key] is not None)
        assert row["slow"] == (row["seconds"]["np2torch"] > 1.1 * row["seconds"][row["best"]] + 1e-6)


def test_table_has_a_column_per_backend_and_speedups() -> None:
    result = run("--size", "1e3", "--functions", "exp,logsumexp", "--dtype", "float32")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("np2torch bench: 1000, float32, median of 1 runs")
    header = lines[1]
    for title in ("NumPy/SciPy", "numexpr", "torch (naive)", "np2torch", "torch path", "copy (floor)", "best"):
        assert title in header
    rows = {line.split()[0]: line for line in lines[2:] if not line.startswith("!:")}
    assert set(rows) == {"exp", "logsumexp"}
    assert "x)" in rows["exp"] and "—" in rows["logsumexp"]  # speedups; no numexpr logsumexp
    assert "quiet machine" in result.stderr


def test_sweep_covers_sizes_up_to_the_cap() -> None:
    result = run("--sweep", "--max-size", "100", "--functions", "log", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = report["sweep"]
    assert [row["elements"] for row in rows] == [1, 3, 10, 30, 100]
    for row in rows:
        positive_numbers(row, {"original", "torch", "np2torch", "forced", "copy", "numexpr"})
    (summary,) = report["summary"]
    assert summary["function"] == "log"
    assert summary["crossover_elements"] in (None, 1, 3, 10, 30, 100)
    assert set(summary["over_budget_elements"]) <= {1, 3, 10, 30, 100}


def test_sweep_summary_finds_the_crossover_and_the_budget_breaks() -> None:
    def row(n: int, original: float, mine: float) -> dict:
        return {"function": "exp", "elements": n, "seconds": {"original": original, "np2torch": mine}, "speedup": {"np2torch": original / mine}}

    rows = [row(1, 1e-6, 1.5e-6), row(10, 2e-6, 4e-6), row(100, 3e-6, 2e-6), row(1000, 10e-6, 20e-6), row(10**4, 1e-4, 2e-5), row(10**5, 1e-3, 1e-4)]
    (summary,) = bench.summarize_sweep(rows)
    assert summary["crossover_elements"] == 10**4
    assert summary["over_budget_elements"] == [10, 1000]
    assert summary["overhead_seconds_at_smallest"] == pytest.approx(0.5e-6)


def test_sweep_table() -> None:
    result = run("--sweep", "--max-size", "30", "--functions", "erf")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "sizes 1 to 30" in lines[0]
    assert [line.split()[:2] for line in lines[2:6]] == [["erf", n] for n in ("1", "3", "10", "30")]
    assert lines[6].startswith("erf: np2torch faster from ")
    assert lines[7:] in ([], [line for line in lines[7:] if line.startswith("!: np2torch's default was more than")])


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "speedup.png"
    result = run("--plot", str(target), "--max-size", "10", "--functions", "exp")
    assert result.exit_code == 0, result.output
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import raises ImportError
    result = run("--plot", str(tmp_path / "x.png"), "--max-size", "10")
    assert result.exit_code != 0
    assert "pip install 'np2torch[plot]'" in result.output
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["--functions", "exp,square"], "unknown function(s) square", id="unknown function"),
        pytest.param(["--size", "ten"], "not a size", id="bad size"),
        pytest.param(["--size", "0x10"], "whole number >= 1", id="empty size"),
        pytest.param(["--size", "2.5"], "whole number >= 1", id="fractional size"),
    ],
)
def test_bad_options_are_usage_errors(args: list, message: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", *args, *FAST]) == 2
    assert message in capsys.readouterr().err


def test_size_parsing() -> None:
    assert bench.parse_size("1e6") == (1_000_000,)
    assert bench.parse_size("1000x1000") == (1000, 1000)
    assert bench.parse_size("10X20x3") == (10, 20, 3)
    assert bench.sweep_sizes(1) == [1]
    assert bench.sweep_sizes(50) == [1, 3, 10, 30, 50]
    assert bench.square_shape(10) == (2, 5) and bench.square_shape(1) == (1, 1)
    assert bench.square_shape(10**8) == (10**4, 10**4) and bench.square_shape(7) == (1, 7)


def test_mismatch_is_reported_and_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    import np2torch.runtime as np2t

    monkeypatch.setattr(np2t, "exp", lambda x: x)  # a broken helper
    result = run("--size", "100", "--functions", "exp")
    assert result.exit_code == 1
    assert "MISMATCH" in result.stdout


def test_importing_bench_loads_neither_torch_nor_numexpr() -> None:
    code = "import sys, np2torch.tools.bench; assert 'torch' not in sys.modules and 'numexpr' not in sys.modules; print('ok')"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert child.returncode == 0 and child.stdout.strip() == "ok", child.stderr


def test_the_cli_lists_and_runs_bench(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "--size", "20", "--functions", "exp", *FAST]) == 0
    assert "np2torch bench: 20, float64" in capsys.readouterr().out
