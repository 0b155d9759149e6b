"""``np2torch bench``: NumPy/SciPy vs numexpr vs torch vs np2torch.runtime, on this machine.

The functions come from the rule table (:data:`np2torch.lint.rules.RULES`): each
rule's original (its qualified name) against its runtime helper.  How to
benchmark each -- its input domain, keywords, numexpr name and naive torch
call -- is derived from the function table (``np2torch/runtime/table.py``)
in :data:`RECIPES`.  torch, numexpr and matplotlib are imported inside the
command, never at import.

Columns: the original (NumPy/SciPy), numexpr (when installed and it has the
function), the naive torch wrapper (``torch.exp(torch.as_tensor(x)).numpy()``),
np2torch.runtime with its default settings (the path it took beside the
time), np2torch's CPU torch path forced, its CUDA path forced (when
available), and a plain copy into a preallocated buffer: the memory-bandwidth
floor.  "best" names the fastest of the paths np2torch can take (the original,
CPU torch, CUDA); a default cell more than 1 µs + 10 % slower than it is
marked ``!``.  Each number is the median over ``--repeat`` runs; small sizes
loop each call enough times to be measurable.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
import statistics
import sys
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Dict, List, Mapping, Optional, Sequence, TypedDict

import click
import numpy as np

from np2torch import __version__
from np2torch.lint.rules import RULES, Rule
from np2torch.runtime.table import BINARY, FUNCTIONS, Function
from np2torch.tools.originals import importable

Shape = tuple[int, ...]


class Row(TypedDict):
    """One function at one size (:func:`measure`): seconds per call and speedup per backend (None: not run)."""

    function: str
    call: str
    shape: List[int]
    elements: int
    seconds: Dict[str, Optional[float]]
    speedup: Dict[str, Optional[float]]
    mismatch: List[str]
    path: str
    best: str
    slow: bool


class Summary(TypedDict):
    """One function over a sweep (:func:`summarize_sweep`)."""

    function: str
    crossover_elements: Optional[int]
    overhead_seconds_at_smallest: float
    over_budget_elements: List[int]


class _Report(TypedDict):
    machine: Dict[str, object]
    dtype: str
    repeat: int


class Report(_Report, total=False):
    """What ``--json`` prints: the machine and options, then a sweep's rows and summary or one size's rows."""

    sweep: List[Row]
    summary: List[Summary]
    shape: List[int]
    results: List[Row]


@dataclass(frozen=True)
class Recipe:
    """How to benchmark one runtime helper (the original comes from its rule)."""

    make_input: Callable[[np.random.Generator, Shape, np.dtype], np.ndarray]
    torch_call: Callable[[Any, Any], Any]
    """The naive torch equivalent: ``(torch, tensor) -> tensor``."""
    numexpr: str | None = None
    """numexpr expression in ``x``; None where numexpr lacks the function."""
    kwargs: Mapping[str, object] = field(default_factory=dict)
    """Keywords for the original and the helper, e.g. ``axis=0``."""
    operands: int = 1
    """2 for a two-argument function: its second operand is ``tuning.second_operand(x)``."""


def _recipe(row: Function) -> Recipe:
    low, high = row.domain
    naive = row.naive or row.torch_op
    kwargs = dict(row.bench_kwargs)

    def make_input(rng: np.random.Generator, shape: Shape, dtype: np.dtype) -> np.ndarray:
        x = rng.random(shape, dtype=dtype)
        x *= high - low
        x += low
        return x

    operands = 2 if row.kind == BINARY else 1

    def torch_call(torch: Any, *t: Any) -> Any:
        function = torch
        for part in naive.split("."):  # a dotted name: torch.special.ndtr
            function = getattr(function, part)
        if "axis" in kwargs:
            return function(*t, dim=kwargs["axis"])
        return function(*t)

    expression = None if row.numexpr is None else f"{row.numexpr}({', '.join('xy'[:operands])})"
    return Recipe(make_input, torch_call, numexpr=expression, kwargs=kwargs, operands=operands)


RECIPES: Mapping[str, Recipe] = {row.name: _recipe(row) for row in FUNCTIONS}
"""Derived from the function table: nothing to add here for a new function."""

BACKENDS: tuple[tuple[str, str], ...] = (
    ("original", "NumPy/SciPy"),
    ("numexpr", "numexpr"),
    ("torch", "torch (naive)"),
    ("np2torch", "np2torch"),
    ("forced", "torch path"),
    ("cuda", "np2torch CUDA"),
    ("copy", "copy (floor)"),
)
BEST_OF = ("original", "forced", "cuda")
"""The paths np2torch.runtime can choose between: "best" is the fastest of them."""
"""Column keys (JSON) and titles (table), in order."""

QUIET_MACHINE_NOTE = (
    "note: timings are only meaningful on a quiet machine; close other programs "
    "and compare ratios from one run, not numbers from different runs."
)


def benchmarked_rules(names: Sequence[str] | None = None) -> list[Rule]:
    """The rules to benchmark, in table order: all with a recipe, or those whose helper is in ``names``."""
    rules = [rule for rule in RULES if rule.is_function and rule.helper in RECIPES]
    if names is not None:
        known = {rule.helper: rule for rule in rules}
        unknown = [name for name in names if name not in known]
        if unknown:
            raise click.BadParameter(f"unknown function(s) {', '.join(unknown)}; choose from {', '.join(known)}", param_hint="--functions")
        rules = [rule for rule in rules if rule.helper in names]
    kept = importable([rule.helper for rule in rules], [rule.qualname for rule in rules], named=names is not None, tool="bench")
    return [rule for rule in rules if rule.helper in kept]


def original_function(rule: Rule) -> Callable[..., object]:
    """The function a rule's qualified name names, e.g. ``scipy.special.logsumexp``."""
    module, _, attribute = rule.qualname.rpartition(".")
    function: Callable[..., object] = getattr(importlib.import_module(module), attribute)
    return function


# ---------------------------------------------------------------- parsing options


def parse_size(text: str) -> Shape:
    """``"1e6"`` -> ``(1000000,)``; ``"1000x1000"`` -> ``(1000, 1000)``."""
    parts = text.lower().replace("×", "x").split("x")
    try:
        numbers = [float(part) for part in parts]
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a size like 1e6 or 1000x1000", param_hint="--size") from None
    if any(not (n >= 1 and n == int(n)) for n in numbers):
        raise click.BadParameter(f"{text!r}: every extent must be a whole number >= 1", param_hint="--size")
    return tuple(int(n) for n in numbers)


def sweep_sizes(max_size: int) -> list[int]:
    """1, 3, 10, 30, ... up to ``max_size`` (and ``max_size`` itself)."""
    sizes: list[int] = []
    decade = 1
    while decade <= max_size:
        sizes.extend(n for n in (decade, 3 * decade) if n <= max_size)
        decade *= 10
    if sizes[-1] != max_size:
        sizes.append(max_size)
    return sizes


def square_shape(n: int) -> Shape:
    """The most nearly square 2-d shape of exactly ``n`` elements (logsumexp reduces its axis 0)."""
    rows = next(r for r in range(math.isqrt(n), 0, -1) if n % r == 0)
    return (rows, n // rows)


# ---------------------------------------------------------------- timing


def time_call(call: Callable[[], object], repeat: int, min_run_time: float) -> float:
    """Median seconds per call over ``repeat`` runs, each looping until ``min_run_time`` has passed."""
    start = time.perf_counter()
    call()  # warm-up: imports, caches, first-touch of memory
    once = time.perf_counter() - start
    number = 1 if once >= min_run_time else min(100_000, max(1, int(min_run_time / max(once, 1e-7))))
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            call()
        runs.append((time.perf_counter() - start) / number)
    return statistics.median(runs)


@dataclass
class Environment:
    """What the machine offers, loaded inside the command."""

    torch: types.ModuleType | None = None
    numexpr: types.ModuleType | None = None
    runtime: Any = None
    cuda: bool = False

    @classmethod
    def load(cls) -> Environment:
        import np2torch.runtime as runtime
        from np2torch.runtime import tuning

        # Through the runtime, so torch loads with its settings (OMP_WAIT_POLICY=PASSIVE):
        # the naive column then measures torch itself, not libgomp spinning on a busy machine.
        env = cls(runtime=runtime)
        if tuning.torch_available():
            import torch

            env.torch = torch
            env.cuda = tuning.cuda_available()
        try:
            import numexpr

            env.numexpr = numexpr
        except ImportError:
            pass
        return env

    def describe(self) -> dict[str, object]:
        info: dict[str, object] = {
            "np2torch": __version__,
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "cpu_count": os.cpu_count(),
        }
        try:
            import scipy

            info["scipy"] = scipy.__version__
        except ImportError:
            pass
        if self.torch is not None:
            info["torch"] = self.torch.__version__
            info["torch_threads"] = self.torch.get_num_threads()
            info["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY", "")
            if self.cuda:
                info["cuda_device"] = self.torch.cuda.get_device_name(0)
        if self.numexpr is not None:
            info["numexpr"] = self.numexpr.__version__
            info["numexpr_threads"] = self.numexpr.get_num_threads()
        return info


def _operands(recipe: Recipe, x: np.ndarray) -> tuple[np.ndarray, ...]:
    if recipe.operands == 1:
        return (x,)
    from np2torch.runtime.tuning import second_operand

    return (x, second_operand(x))


def backend_calls(rule: Rule, recipe: Recipe, x: np.ndarray, env: Environment) -> dict[str, Callable[[], object] | None]:
    """A zero-argument call per backend (None where the backend cannot run it)."""
    original = original_function(rule)
    helper = getattr(env.runtime, rule.helper)
    kwargs = dict(recipe.kwargs)
    calls: dict[str, Callable[[], object] | None] = dict.fromkeys(key for key, _ in BACKENDS)
    args = _operands(recipe, x)
    calls["original"] = lambda: original(*args, **kwargs)
    if env.numexpr is not None and recipe.numexpr is not None:
        expression, numexpr = recipe.numexpr, env.numexpr
        calls["numexpr"] = lambda: numexpr.evaluate(expression, local_dict=dict(zip("xy", args)))
    if env.torch is not None:
        torch = env.torch
        calls["torch"] = lambda: recipe.torch_call(torch, *(torch.as_tensor(a) for a in args)).numpy()
        calls["np2torch"] = lambda: helper(*args, **kwargs)
        calls["forced"] = calls["np2torch"]  # run under using(device="cpu", min_size=0): see DEVICES
        if env.cuda:
            calls["cuda"] = calls["np2torch"]  # run under using(device="cuda", min_size=0)
    floor = np.empty_like(x)
    calls["copy"] = lambda: np.copyto(floor, x)
    return calls


DEVICES: Mapping[str, str] = {"forced": "cpu", "cuda": "cuda"}
"""The forced columns' device, set around the timing loop (a ``using`` block per call would cost µs);
the np2torch column runs with the user's settings."""


def _in_device(env: Environment, key: str) -> ContextManager[object]:
    return env.runtime.using(device=DEVICES[key], min_size=0) if key in DEVICES else contextlib.nullcontext()


def _agrees(got: object, want: object) -> bool:
    return bool(np.allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64), rtol=1e-5, atol=0, equal_nan=True))


def measure(rule: Rule, shape: Shape, dtype: np.dtype, env: Environment, repeat: int, min_run_time: float, seed: int = 0) -> Row:
    """One row: seconds per call for every backend, speedups over the original, and a sanity check."""
    recipe = RECIPES[rule.helper]
    x = recipe.make_input(np.random.default_rng(seed), shape, dtype)
    calls = backend_calls(rule, recipe, x, env)
    original = calls["original"]
    assert original is not None  # the original always runs
    want = original()
    times: dict[str, float | None] = {}
    mismatches = []
    for key, call in calls.items():
        if call is None:
            times[key] = None
            continue
        with _in_device(env, key):
            if key in DEVICES or key == "np2torch":
                if not _agrees(call(), want):
                    mismatches.append(key)
            times[key] = time_call(call, repeat, min_run_time)
    base = times["original"]
    assert base is not None  # the original always runs
    speedups = {key: (None if t is None or key == "original" else base / t) for key, t in times.items()}
    candidates = {key: t for key in BEST_OF if (t := times.get(key)) is not None}
    best = min(candidates, key=lambda key: candidates[key])
    mine = times.get("np2torch")
    args = _operands(recipe, x)
    path = env.runtime.which(rule.helper, *args, **recipe.kwargs)[0] if env.runtime is not None else "numpy"
    del x, args, calls, want, original  # the calls hold x: free it before the next row
    operands = "x" if recipe.operands == 1 else "x, y"
    call_text = f"{rule.qualname}({operands}{''.join(f', {k}={v!r}' for k, v in recipe.kwargs.items())})"
    return {
        "function": rule.helper,
        "call": call_text,
        "shape": list(shape),
        "elements": int(np.prod(shape)),
        "seconds": times,
        "speedup": speedups,
        "mismatch": mismatches,
        "path": path,
        "best": best,
        "slow": mine is not None and mine > 1.1 * candidates[best] + 1e-6,
    }


def summarize_sweep(rows: Sequence[Mapping[str, Any]]) -> list[Summary]:
    """Per function: where np2torch starts to win, its per-call overhead, and sizes that break the budget.

    The budget: never more than 1 µs + 10% slower than the original.
    """
    summary: list[Summary] = []
    for function in dict.fromkeys(row["function"] for row in rows):
        mine = [row for row in rows if row["function"] == function and row["seconds"]["np2torch"] is not None]
        if not mine:
            continue
        wins = [row["speedup"]["np2torch"] >= 1 for row in mine]
        crossover = next((row["elements"] for i, row in enumerate(mine) if all(wins[i:])), None)
        smallest = mine[0]["seconds"]
        summary.append({
            "function": function,
            "crossover_elements": crossover,
            "overhead_seconds_at_smallest": smallest["np2torch"] - smallest["original"],
            "over_budget_elements": [
                row["elements"] for row in mine if row["seconds"]["np2torch"] > 1.1 * row["seconds"]["original"] + 1e-6
            ],
        })
    return summary


# ---------------------------------------------------------------- output


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def _cell(row: Row, key: str) -> str:
    value = row["seconds"][key]
    text = _seconds(value)
    speedup = row["speedup"].get(key)
    text = text if speedup is None else f"{text} ({speedup:.2f}x)"
    if key == "np2torch" and value is not None:
        text += f" {row.get('path', '')}" + (" !" if row.get("slow") else "")
    return text


_BEST_TITLES = dict(BACKENDS)


def format_table(rows: Sequence[Row], first: str = "function") -> str:
    shown = [(key, title) for key, title in BACKENDS if any(row["seconds"][key] is not None for row in rows)]
    header = [first] + [title for _, title in shown] + ["best"]
    body = []
    for row in rows:
        label = row["function"] if first == "function" else f"{row['function']} {row['elements']:>9}"
        cells = [label] + [_cell(row, key) for key, _ in shown] + [_BEST_TITLES.get(row.get("best", ""), "—")]
        if row["mismatch"]:
            cells[-1] += "  MISMATCH: " + ",".join(row["mismatch"])
        body.append(cells)
    widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in [header] + body]
    return "\n".join(lines)


def plot_sweep(rows: Sequence[Row], path: str) -> None:
    """Speedup over the original versus size, one line per function and backend."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise click.ClickException("--plot needs matplotlib: pip install 'np2torch[plot]'") from None
    figure, axes = plt.subplots(figsize=(8, 5))
    for function in dict.fromkeys(row["function"] for row in rows):
        mine = [row for row in rows if row["function"] == function]
        for key, title in BACKENDS:
            if key in ("original", "copy") or all(row["speedup"][key] is None for row in mine):
                continue
            points = [(row["elements"], row["speedup"][key]) for row in mine if row["speedup"][key] is not None]
            axes.plot(*zip(*points), marker="o", linestyle="-" if key == "np2torch" else ":", label=f"{function}: {title}")
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("elements")
    axes.set_ylabel("speedup over NumPy/SciPy")
    axes.set_title("np2torch bench --sweep")
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def warn_if_busy(consequence: str = "the numbers will be noisy") -> None:
    """One warning line when other programs keep this machine's cores busy (timings then mislead)."""
    from np2torch.runtime.tuning import machine_busy

    if machine_busy():
        click.echo(f"warning: other programs keep more than half of this machine's cores busy: {consequence}.", err=True)


# ---------------------------------------------------------------- the command


@click.command("bench")
@click.option("--size", "size_text", default="10000x10000", show_default=True, metavar="N|RxC", help="Elements (1e6) or a shape (1000x1000).")
@click.option("--dtype", type=click.Choice(["float64", "float32"]), default="float64", show_default=True)
@click.option("--repeat", type=click.IntRange(min=1), default=5, show_default=True, help="Runs per number; the median is shown.")
@click.option("--functions", "function_text", metavar="NAMES", help="Comma-separated helpers, e.g. exp,logsumexp (default: all rules).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--sweep", is_flag=True, help="Time sizes from 1 up to --max-size instead of one size: the crossover and per-call overhead.")
@click.option("--max-size", "max_size_text", default="1e8", show_default=True, metavar="N", help="Largest size of --sweep.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), help="Write the --sweep speedup curve to this PNG (needs matplotlib; implies --sweep).")
@click.option("--min-run-time", type=float, default=0.02, hidden=True, help="Seconds each timed run loops for (tests use less).")
def command(
    size_text: str,
    dtype: str,
    repeat: int,
    function_text: str | None,
    as_json: bool,
    sweep: bool,
    max_size_text: str,
    plot_path: str | None,
    min_run_time: float,
) -> int:
    """Time the rule table's functions: NumPy/SciPy vs numexpr vs torch vs np2torch.runtime.

    The answer depends on the machine (cores, memory bandwidth, GPU), so run it
    on yours, on a quiet machine.  Speedups are over NumPy/SciPy; the copy
    column is the memory-bandwidth floor no elementwise function can beat.
    """
    names = None if function_text is None else [name.strip() for name in function_text.split(",") if name.strip()]
    rules = benchmarked_rules(names)
    shape = parse_size(size_text)
    sweep = sweep or plot_path is not None
    max_size = int(np.prod(parse_size(max_size_text)))
    if plot_path is not None:
        _require_matplotlib()  # before minutes of timing, not after
    click.echo(QUIET_MACHINE_NOTE, err=True)
    warn_if_busy()
    env = Environment.load()
    numpy_dtype = np.dtype(dtype)
    report: Report = {"machine": env.describe(), "dtype": dtype, "repeat": repeat}
    if sweep:
        plan = [(rule, n) for n in sweep_sizes(max_size) for rule in rules]
        with click.progressbar(plan, label="np2torch bench", file=sys.stderr) as items:
            rows = [measure(rule, square_shape(n), numpy_dtype, env, repeat, min_run_time) for rule, n in items]
        report["sweep"] = rows
        report["summary"] = summarize_sweep(rows)
        if plot_path is not None:
            plot_sweep(rows, plot_path)
    else:
        with click.progressbar(rules, label="np2torch bench", file=sys.stderr) as items:
            rows = [measure(rule, shape, numpy_dtype, env, repeat, min_run_time) for rule in items]
        report["shape"] = list(shape)
        report["results"] = rows
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        _echo_report(report, rows, sweep, plot_path)
    if any(row["mismatch"] for row in rows):
        click.get_current_context().exit(1)
    return 0


def _require_matplotlib() -> None:
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        raise click.ClickException("--plot needs matplotlib: pip install 'np2torch[plot]'") from None


def _echo_report(report: Report, rows: Sequence[Row], sweep: bool, plot_path: str | None) -> None:
    machine = report["machine"]
    versions = ", ".join(f"{key} {value}" for key, value in machine.items())
    what = "sizes 1 to " + str(rows[-1]["elements"]) if sweep else "x".join(map(str, report["shape"]))
    click.echo(f"np2torch bench: {what}, {report['dtype']}, median of {report['repeat']} runs ({versions})")
    click.echo(format_table(rows, first="function elements" if sweep else "function"))
    for item in report.get("summary", []):
        crossover = item["crossover_elements"]
        over = item["over_budget_elements"]
        click.echo(
            f"{item['function']}: np2torch faster from {crossover if crossover is not None else 'no size measured'}"
            f" elements on; overhead at the smallest size {item['overhead_seconds_at_smallest'] * 1e6:+.2f} µs;"
            + (f" more than 1 µs + 10% slower at {', '.join(map(str, over))}" if over else " within 1 µs + 10% of the original everywhere")
        )
    if any(row.get("slow") for row in rows):
        click.echo("!: np2torch's default was more than 1 µs + 10 % slower than the best path here; "
                   "run `np2torch tune` on a quiet machine (or report it with `np2torch tune --show`).")
    if any(row["mismatch"] for row in rows):
        click.echo("MISMATCH: np2torch.runtime disagreed with the original beyond 1e-5 relative: please report it.", err=True)
    if plot_path is not None:
        click.echo(f"wrote {plot_path}")
