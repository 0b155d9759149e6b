"""Shared checks for the runtime tests: "returns what the original returns"."""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Iterator, List

import numpy as np

from np2torch.runtime._paths import torch_cpu


def outcome(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The result (or the exception's type and message) and the warnings, recorded: what a call did."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = func(*args, **kwargs)
        except Exception as exc:
            value = (type(exc), str(exc))
    return value, [(w.category, str(w.message)) for w in caught]


_INT_FOR = {2: np.int16, 4: np.int32, 8: np.int64}


def _ordered(a: np.ndarray) -> np.ndarray:
    """Float bits mapped to integers that increase with the value (ULP distance = difference)."""
    bits = np.ascontiguousarray(a).view(_INT_FOR[a.itemsize]).astype(np.int64)
    low = np.int64(np.iinfo(_INT_FOR[a.itemsize]).min)
    return np.where(bits < 0, low - bits, bits)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise ULP distance between two finite real float arrays of one dtype."""
    assert a.dtype == b.dtype and a.dtype.kind == "f"
    oa, ob = _ordered(a), _ordered(b)
    opposite = (np.signbit(a) != np.signbit(b)) & (a != 0) & (b != 0)
    assert not opposite.any(), f"opposite signs: {a[opposite]} vs {b[opposite]}"
    return np.abs(oa - ob)


def _real_parts(a: np.ndarray) -> List[np.ndarray]:
    return [a.real, a.imag] if a.dtype.kind == "c" else [a]


def exact_bits() -> bool:
    """Whether the suite runs with ``NP2TORCH_EXACT=bits``: then every helper must give the original's very bits."""
    import np2torch.runtime as np2t

    return bool(np2t.current_settings().exact == "bits")


def assert_same_values(actual: np.ndarray, expected: np.ndarray, max_ulp: int = 4) -> None:
    """NaN/inf/zero identical (inf and zero signs too); finite values within ``max_ulp`` (the very bytes, NaN
    payloads included, under ``NP2TORCH_EXACT=bits``)."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape
    if exact_bits():
        if expected.dtype.kind in "fc" and np.finfo(expected.dtype).dtype.itemsize in _INT_FOR:
            assert np.ascontiguousarray(actual).tobytes() == np.ascontiguousarray(expected).tobytes(), "bits differ"
        else:  # ints, bools, objects; longdouble, whose padding bytes are not its value
            np.testing.assert_array_equal(actual, expected)
            if expected.dtype.kind in "fc":
                assert (np.signbit(actual.real) == np.signbit(expected.real)).all(), "signs differ"
        return
    if actual.dtype.kind not in "fc" or np.finfo(actual.dtype).dtype.itemsize not in _INT_FOR:
        # ints, bools, objects; longdouble always comes from NumPy itself
        np.testing.assert_array_equal(actual, expected)
        return
    for got, want in zip(_real_parts(actual), _real_parts(expected)):
        got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg="NaN positions differ")
        special = np.isinf(want) | (want == 0)
        np.testing.assert_array_equal(got[special], want[special], err_msg="inf/zero differ")
        np.testing.assert_array_equal(np.signbit(got[special]), np.signbit(want[special]), err_msg="sign of inf/zero differs")
        finite = np.isfinite(want) & ~special
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want), err_msg="finiteness differs")
        if finite.any():
            dist = ulp_distance(got[finite], want[finite])
            worst = int(dist.max())
            assert worst <= max_ulp, f"{worst} ULP apart at {got[finite][dist.argmax()]!r} vs {want[finite][dist.argmax()]!r}"


def assert_same_result(actual: Any, expected: Any, max_ulp: int = 4) -> None:
    """Same type; for arrays the same dtype, shape, strides and contiguity; values as above."""
    assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(expected, np.ndarray):
        assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
        assert actual.shape == expected.shape
        assert actual.strides == expected.strides, (actual.strides, expected.strides)
        assert actual.flags.c_contiguous == expected.flags.c_contiguous
        assert actual.flags.f_contiguous == expected.flags.f_contiguous
        assert actual.flags.writeable == expected.flags.writeable
    if isinstance(expected, (np.ndarray, np.generic)):
        assert_same_values(np.asarray(actual), np.asarray(expected), max_ulp)
    else:
        assert actual == expected or (actual != actual and expected != expected)


class TorchPathSpy:
    """Counts calls of the runtime's CPU compute step (the real one still runs)."""

    def __init__(self) -> None:
        self.calls = 0

    @contextlib.contextmanager
    def installed(self, monkeypatch: Any) -> Iterator["TorchPathSpy"]:
        real = torch_cpu.compute

        def spy(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(torch_cpu, "compute", spy)
        yield self
