"""The original on every core (runtime/_paths/cores.py): the original's bits, warnings, errors and callbacks, byte for byte.

Forced with ``using(min_size=0, exact="bits")`` (from that size on, the exact path that uses the cores); each case
compares the helper with the original over arrays of several blocks holding values that raise every flag in
different blocks, at element offsets 0, 1, 3 and 7, under every error-state mode.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from typing import Any, Callable, Dict, List

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import np2torch.runtime as np2t
from np2torch.runtime import _api, tuning
from np2torch.runtime._exact.errstate import error_checks
from np2torch.runtime._paths import blocks, cores
from np2torch.runtime.table import ELEMENTWISE_FUNCTIONS, FUNCTIONS

ROWS = [row for row in ELEMENTWISE_FUNCTIONS if row.kind == "elementwise"]
FLOATS = ("float32", "float64")
MODES = ["ignore", "warn", "raise", "call", "log", "print"]
SPECIALS = [1000.0, -1000.0, 0.0, -0.0, -1.0, 1e-310, np.nan, np.inf, -np.inf, 1e300, -745.2, 88.9, 1e-40]
N = 3 * blocks.MIN_BLOCK + 12_345


def _input(row: Any, dtype: str, offset: int, n: int = N) -> np.ndarray:
    """Values of the row's domain, with every special value in the first, a middle and the last block."""
    low, high = row.domain
    rng = np.random.default_rng(offset)
    x = rng.uniform(low, high, n + offset)
    for where in (17, 2 * blocks.MIN_BLOCK + 5 if n == N else n // 2, n + offset - len(SPECIALS) - 2):
        x[where : where + len(SPECIALS)] = SPECIALS
    with np.errstate(all="ignore"):
        return x.astype(dtype)[offset:]


class _Log:
    def __init__(self) -> None:
        self.lines: List[str] = []

    def write(self, text: str) -> None:
        self.lines.append(text)


def call_here(func: Callable[..., Any], x: Any, **kwargs: Any) -> Any:
    return func(x, **kwargs)  # the line every warning must point at


CALL_LINE = call_here.__code__.co_firstlineno + 1


def observe(func: Callable[..., Any], x: np.ndarray, mode: str, capfd: Any, **kwargs: Any) -> Dict[str, Any]:
    calls: List[tuple] = []
    log = _Log()
    handler = log if mode == "log" else (lambda kind, flag: calls.append((kind, flag)))
    errcall = {"call": handler} if mode in ("call", "log") else {}
    out = kwargs.get("out")
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(all=mode, **errcall):
            try:
                value, error = call_here(func, x, **kwargs), None
            except FloatingPointError as exc:
                value, error = None, str(exc)
    printed = capfd.readouterr()
    return {
        "value": value if out is None else out,
        "error": error,
        "warnings": [(w.category, str(w.message), w.filename, w.lineno) for w in caught],
        "calls": calls,
        "log": log.lines,
        "printed": printed.out + printed.err,
    }


def assert_same_bits(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    if isinstance(want, np.ndarray):
        assert (got.dtype, got.shape, got.strides) == (want.dtype, want.shape, want.strides)
        assert got.tobytes() == want.tobytes()


def _forced() -> Any:
    return np2t.using(min_size=0, exact="bits")


def _loops(rows: List[Any]) -> List[Any]:
    """Every float32/float64 loop of each row's original: torch's (the row lists them) and those only this path serves."""
    return [pytest.param(row, dtype, id=f"{row.name}-{dtype}") for row in rows for dtype in FLOATS
            if dtype in row.loops or dtype in tuning.cores_only_loops(row.name)]


LOOPS = _loops(ROWS)


@pytest.mark.parametrize("offset", [0, 1, 3, 7])
@pytest.mark.parametrize(("row", "dtype"), LOOPS)
def test_every_row_gives_the_originals_bits_and_reports_under_every_mode(row, dtype, offset, capfd):
    helper, original = getattr(np2t, row.name), _api.HELPERS[row.name].load()
    x = _input(row, dtype, offset)
    for mode in MODES:
        with _forced():
            assert np2t.which(row.name, x)[0] == "cores"
            got = observe(helper, x, mode, capfd)
        want = observe(original, x, mode, capfd)
        for key in ("error", "warnings", "calls", "log", "printed"):
            assert got[key] == want[key], (mode, key)
        for _, _, filename, lineno in got["warnings"]:
            assert (filename, lineno) == (__file__, CALL_LINE)
        if want["value"] is not None:
            assert_same_bits(got["value"], want["value"])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["out", "in place", "dtype", "F order", "2-d", "reversed", "int input"])
def test_keywords_and_layouts(case, mode, capfd):
    row = next(row for row in ROWS if row.name == "log")
    base = _input(row, "float64", 0)
    kwargs: Dict[str, Any] = {}
    x = base
    if case == "out":
        kwargs["out"] = np.empty_like(base)
    elif case == "dtype":
        with np.errstate(all="ignore"):
            x, kwargs["dtype"] = base.astype(np.float32), np.float64
    elif case == "F order":
        x = np.asfortranarray(base[: 400 * 500].reshape(400, 500))
    elif case == "2-d":
        x = base[: 400 * 500].reshape(400, 500)
    elif case == "reversed":
        x = base[::-1]
    elif case == "int input":
        x = np.arange(-5, N - 5, dtype=np.int64)

    def run(func: Callable[..., Any]) -> Dict[str, Any]:
        arg = x.copy(order="K")
        local = dict(kwargs)
        if case == "in place":
            local["out"] = arg
        elif "out" in local:
            local["out"] = np.empty_like(base)
        return observe(func, arg, mode, capfd, **local)

    with _forced():
        got = run(np2t.log)
    want = run(np.log)
    for key in ("error", "warnings", "calls", "log", "printed"):
        assert got[key] == want[key], key
    if want["value"] is not None:
        assert_same_bits(got["value"], want["value"])


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("name", ["exp", "log", "sin", "erf", "expit", "tanh"])
def test_the_thread_count_changes_no_bit(name, threads):
    row = next(row for row in ROWS if row.name == name)
    original = _api.HELPERS[name].load()
    for dtype in FLOATS:
        for n in (N, 9_001, 20_003):  # (the small ones cut for the threads: as many blocks as threads)
            x = _input(row, dtype, 3, n)
            with np.errstate(all="ignore"):
                want = original(x)
            got = np.empty_like(want)
            with np.errstate(all="ignore"):
                cores.compute(original, name, x, got, error_checks(), threads)
            assert got.tobytes() == want.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=40),
    offset=st.integers(0, 7),
    name=st.sampled_from(["exp", "log", "erf", "tanh", "log1p", "expm1"]),
    dtype=st.sampled_from(FLOATS),
    n=st.sampled_from([2 * blocks.MIN_BLOCK + 1000, 9_001]),  # (9,001: cut for the threads, one block each)
)
def test_any_values_give_the_originals_bits_and_flags(values, offset, name, dtype, n):
    original = _api.HELPERS[name].load()
    x = np.resize(np.array(values, dtype=dtype), n)[offset:]
    flags = []
    with np.errstate(all="call", call=lambda kind, status: flags.append(status)):
        want = original(x)
        with _forced():
            got = getattr(np2t, name)(x)
    assert got.tobytes() == want.tobytes()
    assert flags[: len(flags) // 2] == flags[len(flags) // 2 :]


def test_a_fixed_program_on_every_core_prints_the_originals_digest(tmp_path):
    program = textwrap.dedent(
        """
        import hashlib, sys
        import numpy as np, scipy.special
        if sys.argv[1] == "fixed":
            import np2torch.runtime as np2t
            exp, log, erf = np2t.exp, np2t.log, np2t.erf
        else:
            exp, log, erf = np.exp, np.log, scipy.special.erf
        rng = np.random.default_rng(7)
        digest = hashlib.sha256()
        x = rng.normal(size=1_000_003)
        for _ in range(4):
            x = erf(x) + log(exp(x) + 1.0)
            digest.update(x.tobytes())
        print(digest.hexdigest(), "torch" in sys.modules)
        """
    )
    script = tmp_path / "program.py"
    script.write_text(program)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_")}
    runs = {}
    for how in ("original", "fixed"):
        extra = {"NP2TORCH_EXACT": "bits", "NP2TORCH_MIN_SIZE": "0"} if how == "fixed" else {}
        proc = subprocess.run([sys.executable, str(script), how], capture_output=True, text=True, env={**env, **extra},
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        runs[how] = proc.stdout.split()
    assert runs["fixed"] == runs["original"]
    assert runs["fixed"][1] == "False"  # the original on every core needs no torch


def test_exact_bits_never_takes_torch():
    x = np.linspace(-3, 3, 4_000_000)
    with np2t.using(exact="bits"):
        for row in ROWS:
            if "float64" in row.loops:
                assert np2t.which(row.name, x)[0] in ("numpy", "cores")
    with np2t.using(exact="bits", min_size=0):
        assert np2t.which("exp", x)[0] == "cores"
        assert np2t.which("logsumexp", x.reshape(2000, 2000), axis=0)[0] != "cpu"


def test_a_loop_torch_does_not_serve_takes_the_original_on_every_core_and_never_torch():
    # float64 erfc, log1p and logaddexp, float32 sin: torch computes none of them exactly, the original's own loop
    # on every core does; the built-in profile (tests/conftest.py) measures it against the original's single call.
    # Where the two part is the profile's measurement; at the far size (2**24 elements, whose ratios decide every
    # larger call) the blocks' fixed costs are the least part of a call.
    def cases(x: np.ndarray) -> list:
        return [("erfc", (x,)), ("log1p", (np.abs(x),)), ("logaddexp", (0, x)), ("sin", (x.astype(np.float32),))]

    for name, args in cases(np.linspace(-3, 3, 1 << 24)):
        loop = np.result_type(*args).name
        assert loop not in _api.HELPERS[name].row.loops and loop in tuning.cores_only_loops(name)
        path, why = np2t.which(name, *args)
        assert path == ("cores" if tuning.serves_cores(name) else "numpy"), (name, why)
    x = np.linspace(-3, 3, 2_000_000)
    with np2t.using(min_size=0):  # torch forced from that size on: never for these loops
        for name, args in cases(x):
            assert np2t.which(name, *args)[0] == "cores"
            assert_same_bits(getattr(np2t, name)(*args), _api.HELPERS[name].load()(*args))


@pytest.mark.parametrize(("name", "first", "loaded"), [("exp", None, None), ("logaddexp", 0.5, None),
                                                      ("logaddexp", 1e5, "cores")])
def test_a_call_other_processes_leave_one_core_takes_the_originals_single_call(monkeypatch, name, first, loaded):
    # Its blocks would run on one thread: the same loop as the single call, plus cutting it and recording each
    # block's flags.  So the single call serves, with its own warnings at the caller's line -- unless those could
    # not be redirected there (a Python scalar past float16's range: NumPy might report a cast), where the blocks
    # run on the one thread and report at the caller's line themselves.
    from np2torch.runtime._state import TAKEN

    x = np.linspace(-800.0, 800.0, N)  # overflows: a warning to report
    args = (x,) if first is None else (first, x)
    helper, original = getattr(np2t, name), _api.HELPERS[name].load()
    for free, taken in ((lambda wanted: 1, loaded), (lambda wanted: wanted, "cores")):
        monkeypatch.setattr(blocks, "free_cores", free)
        with _forced(), warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            TAKEN.device = None
            got = helper(*args)
            line = sys._getframe().f_lineno - 1
        assert TAKEN.device == taken
        assert [(str(w.message), w.lineno) for w in seen] == ([("overflow encountered in exp", line)] if name == "exp" else [])
        with np.errstate(all="ignore"):
            assert_same_bits(got, original(*args))


BINARY = [row for row in FUNCTIONS if row.kind == "binary"]
BINARY_LOOPS = _loops(BINARY)


@pytest.mark.parametrize("second", ["array", "scalar", "reversed"])
@pytest.mark.parametrize(("row", "dtype"), BINARY_LOOPS)
def test_every_two_argument_row_gives_the_originals_bits_and_reports_under_every_mode(row, dtype, second, capfd):
    helper, original = getattr(np2t, row.name), _api.HELPERS[row.name].load()
    x1 = _input(row, dtype, 3)
    x2 = {"array": _input(row, dtype, 5), "scalar": 0.75, "reversed": _input(row, dtype, 3)[::-1]}[second]

    def run(func: Callable[..., Any], mode: str) -> Dict[str, Any]:
        return observe(lambda a: func(a, x2), x1, mode, capfd)

    for mode in MODES:
        with _forced():
            assert np2t.which(row.name, x1, x2)[0] == "cores"  # (a reversed operand: the call itself declines)
            got = run(helper, mode)
        want = run(original, mode)
        for key in ("error", "warnings", "calls", "log", "printed"):
            assert got[key] == want[key], (mode, key)
        if want["value"] is not None:
            assert_same_bits(got["value"], want["value"])
