"""Configuration (NP2TORCH_DEVICE, NP2TORCH_MIN_SIZE, configure, using) and which path a call takes."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
from typing import Any, List

import numpy as np
import pytest

import np2torch.runtime as np2t
from np2torch.runtime import _backend, _config, _ufunc
from np2torch.runtime._decision import route as _route
from np2torch.runtime._paths import torch_cpu
from np2torch.runtime._state import PROCESS
from np2torch.runtime.table import BINARY, ELEMENTWISE_FUNCTIONS, FUNCTIONS, FUNCTIONS_BY_NAME

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_python(code: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("NP2TORCH_") or k in ("NP2TORCH_PROFILE", "NP2TORCH_CACHE_DIR")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=timeout, cwd=ROOT)


@pytest.fixture
def torch_calls(monkeypatch: pytest.MonkeyPatch) -> List[Any]:
    calls: List[Any] = []
    real = torch_cpu.compute

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch_cpu, "compute", spy)
    return calls


@pytest.fixture(autouse=True)
def restore_process_settings():
    before = PROCESS.settings
    yield
    PROCESS.settings = before


@pytest.mark.parametrize(
    "text,expected",
    [("cpu", "cpu"), (" CUDA ", "cuda"), ("cuda:0", "cuda:0"), ("cuda:01", "cuda:1"), ("auto", "auto"), ("numpy", "numpy")],
)
def test_device_names(text, expected):
    assert _config.parse_device(text) == expected


@pytest.mark.parametrize("bad", ["gpu", "cuda:", "cuda:-1", "cuda:x", "", "mps", None, 0])
def test_bad_device_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="not a valid np2torch device; use cpu, cuda, cuda:N, auto or numpy"):
        np2t.configure(device=bad)


@pytest.mark.parametrize("text,expected", [("0", 0), ("10000", 10000), ("1e5", 100000), ("1_000", 1000), (" 7 ", 7)])
def test_min_size_values(text, expected):
    assert _config.parse_min_size(text) == expected


@pytest.mark.parametrize("bad", ["-1", "1.5", "abc", "nan", "inf", -3, 2.5, True])
def test_bad_min_size_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="not a valid size"):
        np2t.configure(min_size=bad)


@pytest.mark.parametrize(
    "variable,value,message",
    [("NP2TORCH_DEVICE", "gpu", "NP2TORCH_DEVICE='gpu' is not a valid np2torch device"), ("NP2TORCH_MIN_SIZE", "lots", "NP2TORCH_MIN_SIZE='lots' is not a valid size")],
)
def test_bad_environment_value_names_the_variable(variable, value, message):
    proc = run_python("import np2torch.runtime", {variable: value})
    assert proc.returncode != 0
    assert message in proc.stderr


def test_environment_is_read_at_import():
    proc = run_python("import np2torch.runtime as r; print(r.current_settings())", {"NP2TORCH_DEVICE": "numpy", "NP2TORCH_MIN_SIZE": "5"})
    assert proc.stdout.strip() == "RuntimeSettings(device='numpy', min_size=5)", proc.stderr


def test_the_default_device_is_auto():
    proc = run_python("import np2torch.runtime as r; print(r.current_settings().device)")
    assert proc.stdout.strip() == "auto", proc.stderr


def test_configure_returns_previous_and_keeps_unnamed_fields():
    first = np2t.configure(device="cpu", min_size=123)
    previous = np2t.configure(min_size=None)
    assert previous == np2t.RuntimeSettings(device="cpu", min_size=123)
    assert np2t.current_settings() == np2t.RuntimeSettings(device="cpu", min_size=None)
    np2t.configure(device=first.device, min_size=first.min_size)


def test_using_nests_and_restores():
    np2t.configure(device="cpu", min_size=None)
    with np2t.using(min_size=0) as outer:
        assert outer == np2t.current_settings() == np2t.RuntimeSettings("cpu", 0)
        with np2t.using(device="numpy"):
            assert np2t.current_settings() == np2t.RuntimeSettings("numpy", 0)
        assert np2t.current_settings() == outer
    assert np2t.current_settings() == np2t.RuntimeSettings("cpu", None)


def test_using_is_local_to_its_thread():
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def other() -> None:
        inside.wait(120)
        seen["other"] = np2t.current_settings()
        release.set()

    thread = threading.Thread(target=other)
    thread.start()
    with np2t.using(device="numpy", min_size=0):
        inside.set()
        release.wait(120)
    thread.join(120)
    assert seen["other"] == PROCESS.settings


@pytest.fixture
def torch_loaded():
    # With torch imported there is nothing to rent (test_runtime_profile.py covers the ski rental).
    assert _backend.load_torch()
    PROCESS.reload_profile()
    yield
    PROCESS.reload_profile()


def _first_torch_size(name: str, dtype: str) -> int | None:
    bands = _route.describe_bands(name, dtype, "cpu")
    return next((start for start, path in bands if path not in ("numpy", "cores")), None)


def test_small_arrays_take_the_numpy_path(torch_calls, torch_loaded):
    np2t.configure(device="cpu", min_size=None)
    pairs = [(row.name, d) for row in ELEMENTWISE_FUNCTIONS for d in row.loops if d.startswith("float")]
    name, dtype, threshold = next((n, d, t) for n, d in pairs if (t := _first_torch_size(n, d)) is not None)
    helper = getattr(np2t, name)
    low = FUNCTIONS_BY_NAME[name].domain[0]
    helper(np.full(10, low, dtype=dtype))
    helper(np.full(threshold - 1, low, dtype=dtype))
    assert not torch_calls
    helper(np.full(threshold, low, dtype=dtype))
    assert len(torch_calls) == 1


def test_decisions_follow_the_profile_per_dtype(torch_calls, torch_loaded):
    np2t.configure(device="cpu", min_size=None)
    never = [(row.name, d) for row in ELEMENTWISE_FUNCTIONS for d in row.loops if _first_torch_size(row.name, d) is None]
    some = [(row.name, d) for row in ELEMENTWISE_FUNCTIONS for d in row.loops if _first_torch_size(row.name, d) is not None]
    assert some, "the built-in profile sends nothing to torch"
    for name, dtype in never:
        x = np.full(10**6, 0.5, dtype=dtype)
        getattr(np2t, name)(x)
        assert not torch_calls, (name, dtype)
        with np2t.using(min_size=0):  # an explicit threshold still opts in
            getattr(np2t, name)(x[:4])
        assert len(torch_calls) == 1, (name, dtype)
        torch_calls.clear()


def test_min_size_override(torch_calls):
    np2t.configure(min_size=5)
    np2t.log(np.ones(4))
    assert not torch_calls
    np2t.log(np.ones(5))
    assert len(torch_calls) == 1


def test_device_numpy_turns_torch_off(torch_calls):
    with np2t.using(device="numpy", min_size=0):
        np2t.exp(np.ones(100_000))
    assert not torch_calls


def test_auto_without_cuda_uses_the_cpu(torch_calls, monkeypatch):
    monkeypatch.setattr(_ufunc, "cuda_available", lambda: False)
    with np2t.using(device="auto", min_size=0):
        np2t.exp(np.ones(100))
    assert len(torch_calls) == 1


def test_explicit_cuda_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_ufunc, "cuda_available", lambda: False)
    with np2t.using(device="cuda", min_size=0):
        with pytest.raises(RuntimeError, match="no usable CUDA device; use 'auto'"):
            np2t.exp(np.ones(100))


@pytest.mark.parametrize("min_size, n", [(0, 100), (None, _route.CUDA_UNMEASURED_FROM)])
def test_which_says_an_explicit_cuda_call_without_cuda_raises(monkeypatch, min_size, n):
    # which() answered 'cuda' while the call raised: it now raises the call's error, word for word.
    from np2torch.runtime import _logsumexp

    monkeypatch.setattr(_ufunc, "cuda_available", lambda: False)
    monkeypatch.setattr(_logsumexp, "cuda_available", lambda: False)
    x = np.ones(n)
    with np2t.using(device="cuda", min_size=min_size):
        with pytest.raises(RuntimeError) as from_call:
            np2t.exp(x)
        with pytest.raises(RuntimeError) as from_which:
            np2t.which("exp", x)
        assert str(from_which.value) == str(from_call.value)
        assert "no usable CUDA device; use 'auto'" in str(from_which.value)
        # logsumexp hands such a call to SciPy: which() says so rather than 'cuda'
        path, why = np2t.which("logsumexp", x.reshape(2, -1), axis=0)
        assert path == "numpy" and "no usable CUDA device" in why, why


def test_explicit_cuda_serves_unverified_dtypes_on_the_cpu(torch_calls, monkeypatch):
    # complex exp has no verified CUDA kernel: CUDA never sees it
    monkeypatch.setattr(_ufunc, "cuda_available", lambda: False)
    with np2t.using(device="cuda", min_size=0):
        np2t.exp(np.ones(100, dtype=np.complex128))
    assert len(torch_calls) == 1


def test_importing_the_runtime_loads_neither_torch_nor_scipy():
    proc = run_python(
        "import sys, numpy as np, np2torch.runtime as r\n"
        "r.exp(np.ones(10)); r.log(np.ones(10))\n"
        "print('torch' in sys.modules, 'scipy' in sys.modules, 'libcst' in sys.modules, 'click' in sys.modules)"
    )
    assert proc.stdout.split() == ["False", "False", "False", "False"], proc.stderr


def test_torch_loads_on_the_first_torch_call_with_a_passive_openmp_wait_policy():
    code = (
        "import os, sys, numpy as np, np2torch.runtime as r\n"
        "r.exp(np.ones(10)); print('torch' in sys.modules)\n"
        "with r.using(min_size=0):\n"
        "    r.exp(np.ones(10**6, dtype=np.float32)); print('torch' in sys.modules, os.environ.get('OMP_WAIT_POLICY'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert proc.stdout.split() == ["False", "True", "PASSIVE"], proc.stderr
    proc = run_python(code, {"OMP_WAIT_POLICY": "ACTIVE"})
    assert proc.stdout.split() == ["False", "True", "ACTIVE"], proc.stderr


def test_read_only_inputs_do_not_warn():
    # torch.from_numpy warns once per process on a read-only array; the runtime
    # consumes that warning when it loads torch, so a user never sees it.
    code = (
        "import warnings, numpy as np, np2torch.runtime as r\n"
        "warnings.simplefilter('error')\n"
        "x = np.broadcast_to(np.linspace(0, 1, 5), (4000, 5))\n"
        "with r.using(min_size=0):\n"
        "    assert (r.exp(x) == np.exp(x)).all()\n"
        "print('ok')\n"
    )
    proc = run_python(code)
    assert proc.stdout.strip() == "ok", proc.stderr


HIDE_TORCH = (
    "import sys\n"
    "class HideTorch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'torch' or name.startswith('torch.'):\n"
    "            raise ImportError('torch hidden for this test')\n"
    "sys.meta_path.insert(0, HideTorch())\n"
)
"""A program's first lines that make ``import torch`` fail, as where torch is not installed."""


def test_without_torch_everything_goes_to_numpy():
    code = HIDE_TORCH + (
        "import numpy as np, scipy.special, np2torch.runtime as r\n"
        "x = np.linspace(-3, 3, 100_000)\n"
        "with r.using(min_size=0):\n"
        "    assert r.exp(x).tobytes() == np.exp(x).tobytes()\n"
        "    assert r.log(x[x > 0]).tobytes() == np.log(x[x > 0]).tobytes()\n"
        "    assert r.erf(x).tobytes() == scipy.special.erf(x).tobytes()\n"
        "    assert r.logsumexp(x) == scipy.special.logsumexp(x)\n"
        "assert 'torch' not in sys.modules\n"
        "print('ok')\n"
    )
    proc = run_python(code)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_without_torch_which_says_so_before_any_call_tries_it():
    # which() imports nothing; it asks whether torch can be found, so that it names the path the call takes without
    # promising torch later (the call itself finds torch missing when the rental tries it, and says the same after).
    code = HIDE_TORCH + (
        "import numpy as np, np2torch.runtime as r\n"
        "x = np.linspace(-3, 3, 4_000_000)\n"
        "print(r.which('exp', x)[1])\n"
        "with r.using(min_size=0):\n"
        "    print(r.which('exp', x)[1])\n"
        "assert 'torch' not in sys.modules\n"
    )
    proc = run_python(code)
    default, forced = proc.stdout.splitlines()
    assert "torch" not in default, default
    assert forced.endswith("torch cannot be used in this process (not installed, or forked while another thread "
                           "imported it)"), forced


def test_without_torch_which_raises_as_the_call_does_for_an_explicit_cuda_device():
    # A CUDA device set explicitly and no torch: every call raises (no usable CUDA device), and so does which(), before
    # a call tried torch and after; a loop no CUDA path serves takes the original, and which() says so.
    code = HIDE_TORCH + (
        "import numpy as np, np2torch.runtime as r\n"
        "x = np.linspace(-3, 3, 100_000)\n"
        "for name, args in (('which', ('exp', x)), ('exp', (x,)), ('exp', (x,)), ('which', ('exp', x))):\n"
        "    try:\n"
        "        with r.using(device='cuda', min_size=0):\n"
        "            getattr(r, name)(*args)\n"
        "    except RuntimeError as error:\n"
        "        print(name, 'raises', 'no usable CUDA device' in str(error))\n"
        "with r.using(device='cuda', min_size=0):\n"
        "    print(r.which('expit', x)[0], r.which('hypot', x, x)[0])\n"
    )
    proc = run_python(code)
    assert proc.stdout.splitlines() == ["which raises True", "exp raises True", "exp raises True", "which raises True",
                                        "numpy numpy"], proc.stderr


def test_without_scipy_the_runtime_imports_and_erf_needs_scipy():
    code = (
        "import sys\n"
        "sys.modules['scipy'] = None\n"
        "import numpy as np, np2torch.runtime as r\n"
        "assert r.exp(np.ones(3)).tolist() == np.exp(np.ones(3)).tolist()\n"
        "try:\n"
        "    r.erf(np.ones(3))\n"
        "except ImportError:\n"
        "    print('ok')\n"
    )
    proc = run_python(code)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_helpers_look_like_the_originals():
    assert np2t.exp.__name__ == "exp" and np2t.log.__name__ == "log" and np2t.erf.__name__ == "erf"
    assert np2t.exp.__module__ == "np2torch.runtime"
    assert "numpy.exp" in np2t.exp.__doc__


def test_every_rule_has_its_helper():
    from np2torch.lint.rules import RULES

    for rule in RULES:
        if not rule.is_meta:  # NPT8xx rules are about noqa comments: no helper
            assert callable(getattr(np2t, rule.helper)), rule.helper


@pytest.mark.parametrize("row", FUNCTIONS, ids=[row.name for row in FUNCTIONS])
def test_device_numpy_is_the_originals_bits(row):
    # The switch docs/runtime.md gives for computations whose outcome hangs on the last bits
    # (an ill-conditioned fit): every helper, forced or not, returns the original's bits.
    original = getattr(importlib.import_module(row.module), row.name)
    helper = getattr(np2t, row.name)
    low, high = row.domain
    for dtype in ("float64", "float32"):
        x = np.random.default_rng(0).uniform(low, high, (300, 40)).astype(dtype)
        args = (x, x[::-1]) if row.kind == BINARY else (x,)  # a two-argument function: a second operand
        with np2t.using(device="numpy", min_size=0):
            got = helper(*args, **row.bench_kwargs)
        assert got.tobytes() == original(*args, **row.bench_kwargs).tobytes(), dtype
