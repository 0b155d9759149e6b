"""Does the installed ``scipy.special.logsumexp`` compute what the torch path (and the lean path) computes?

What it keeps of the original's semantics: the installed SciPy's own formula,
special-value rules and result layout, asked of SciPy itself rather than
assumed from its version; a SciPy that answers otherwise keeps its calls.

The torch path reproduces one SciPy formula and result layout (1.16/1.17's; see
``_logsumexp``).  Rather than trusting a list of versions, this module asks the
installed SciPy: it calls it on small probes and compares each result, bit for
bit and in type, dtype, shape and strides, with the torch path's own arithmetic
redone in NumPy (``expected``, given by ``_logsumexp``: ``a_max``, ``m`` and
``s`` reduced as its blocks do, then its :func:`.._paths.lean.finish`).  The probes are chosen so that every sum is exact in any
order (at most two terms per slice are neither a maximum nor an exact 0), so
only a different formula, special-value rule or layout can make them differ.

Two verdicts, because SciPy 1.16 matches on slices with a finite maximum and
differs on slices whose maximum is +inf or that are all -inf (its
``_sign(inf)`` is NaN).  SciPy < 1.15 (textbook ``log(sum(exp(a - a_max)))``)
fails the dominant-term probe, 1.15 the bool probe (it raises).  A SciPy that
raises, returns something else, or signals a floating-point error on any probe
of a group loses that group: those calls go to SciPy.  NaN inputs are not
probed: the torch path declines them before the verdict matters.  Warnings
raised with ``warnings.warn`` are not watched (catching them is process-wide).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Literal

import numpy as np


@dataclass(frozen=True)
class LseVerdict:
    """Which slices the torch path may serve for the installed SciPy."""

    finite: bool
    """Slices with a finite maximum (every call needs this)."""
    infinite: bool
    """Slices whose maximum is +inf, or all -inf."""


@dataclass(frozen=True)
class Probe:
    a: np.ndarray
    axis: int | tuple[int, ...] | None = None
    keepdims: bool = False
    return_sign: bool = False
    over: Literal["ignore", "raise"] = "raise"
    """``np.errstate(over=)`` for the call: ``ignore`` where the torch path serves only then."""


Expected = Callable[[np.ndarray, object, bool, bool], object]
"""``(a, axis, keepdims, return_sign) -> result``: the torch path's arithmetic, done in NumPy."""


def check(original: Callable[..., object], expected: Expected) -> LseVerdict:
    """The verdict on ``original`` (``scipy.special.logsumexp`` or a stand-in)."""
    finite = all(agrees(original, expected, probe) for probe in finite_probes())
    return LseVerdict(finite, finite and all(agrees(original, expected, probe) for probe in infinite_probes()))


def agrees(original: Callable[..., object], expected: Expected, probe: Probe) -> bool:
    """SciPy's result for ``probe`` is the torch path's, bit for bit and in layout."""
    with np.errstate(all="raise", under="ignore", over=probe.over):
        try:
            got = original(probe.a, axis=probe.axis, keepdims=probe.keepdims, return_sign=probe.return_sign)
        except Exception:
            return False
    return same_result(got, expected(probe.a, probe.axis, probe.keepdims, probe.return_sign))


def same_result(got: object, want: object) -> bool:
    if isinstance(want, tuple):
        return type(got) is tuple and len(got) == len(want) and all(map(same_value, got, want))
    return same_value(got, want)


def same_value(got: Any, want: Any) -> bool:
    if type(got) is not type(want) or got.dtype != want.dtype or np.shape(got) != np.shape(want):
        return False
    if isinstance(want, np.ndarray) and not same_layout(got, want):
        return False
    bits = f"u{want.dtype.itemsize}"
    return bool(np.array_equal(np.asarray(got).view(bits), np.asarray(want).view(bits)))


def same_layout(got: np.ndarray, want: np.ndarray) -> bool:
    flags: tuple[Literal["C_CONTIGUOUS", "F_CONTIGUOUS", "WRITEABLE"], ...] = ("C_CONTIGUOUS", "F_CONTIGUOUS", "WRITEABLE")
    return got.strides == want.strides and all(got.flags[f] == want.flags[f] for f in flags)


Lean = Callable[[np.ndarray, Any, bool, bool], Any]
"""``(a, axis, keepdims, return_sign) -> result or None``: the lean path (:func:`.._paths.lean.compute`)."""


def check_lean(original: Callable[..., Any], lean: Lean) -> bool:
    """Whether ``lean`` gives ``original``'s result, bit for bit and in layout, on :func:`order_probes`:
    sums whose bits depend on the order of their terms, so another formula or another order of
    NumPy's additions shows.  A probe ``lean`` declines counts against it."""
    for probe in order_probes():
        with np.errstate(all="raise", under="ignore"):
            try:
                want = original(probe.a, axis=probe.axis, keepdims=probe.keepdims, return_sign=False)
            except Exception:
                return False
        got = lean(probe.a, probe.axis, probe.keepdims, False)
        if got is None or not same_result(got, want):
            return False
    return True


def order_probes() -> Iterator[Probe]:
    """Slices of 2..7 terms whose sums round differently in other orders: ties, -inf terms, both
    float types, the reduced axis last (C order) and first (its transpose, F order)."""
    rng = np.random.default_rng(20261127)
    for length in range(2, 8):
        for dtype in (np.float64, np.float32):
            a = rng.normal(0.0, 4.0, (97, length)).astype(dtype)
            a[::7] = np.round(a[::7])  # ties: m > 1
            a[3::11, 0] = -np.inf
            a[5, :] = a[5, 0]  # every term the maximum: s == 0
            yield Probe(a, axis=1, keepdims=length % 2 == 0)
            yield Probe(a.T, axis=0, keepdims=length % 2 == 1)
            yield Probe(a[1].copy())  # one slice: a scalar (:func:`.._paths.lean.one_slice`)
    yield Probe(rng.normal(0.0, 4.0, (3, 5, 4)), axis=-1)


# ---------------------------------------------------------------- the probes


def finite_probes() -> Iterator[Probe]:
    """Every slice's maximum is finite."""
    # One term dominates: log1p(4.2e-18) = 4.2e-18, log(1 + 4.2e-18) = 0.
    yield Probe(np.array([0.0, -40.0]))
    yield Probe(np.array([0.0, -40.0], np.float32), axis=0, return_sign=True)
    # Equal maxima (m = 3, 2), -inf terms, signed zeros, exp underflowing to 0,
    # a subnormal-free tail, and a maximum next to the overflow guard.
    rows = np.array(
        [
            [2.0, 2.0, 2.0, 1.0],
            [1.0, 0.0, 1.0, -np.inf],
            [-0.0, 0.0, -np.inf, -1000.0],
            [-0.0, -np.inf, -50.0, -np.inf],
            [-740.0, -742.0, -745.0, -1e300],
            [1e291, -1e291, 0.0, 1e291],
        ]
    )
    for return_sign in (False, True):
        yield Probe(rows, axis=1, return_sign=return_sign)
        yield Probe(rows[:4].astype(np.float32), axis=-1, keepdims=True, return_sign=return_sign)
    yield Probe(np.array([[1.7e308, -1.7e308], [1.0, -1e308]]), axis=1, over="ignore")  # a - a_max overflows to -inf
    # Inputs SciPy promotes to float64 (1.15 raises on bool).
    yield Probe(np.array([[True, False, True], [True, True, True]]), axis=None)
    yield Probe(np.array([[True, False, True], [True, True, True]]), axis=0, return_sign=True)
    yield Probe(np.array([[3, 3, -37], [0, -1000, 5]], np.int64), axis=1)
    yield Probe(np.array([[-128, 127, 126], [0, 0, -1]], np.int8), axis=0, keepdims=True)
    yield Probe(np.array([[255, 0, 254]], np.uint8))
    yield from layout_probes()


def layout_probes() -> Iterator[Probe]:
    """Result type (scalar or array), dtype, shape and strides over layouts, axes and flags."""
    base = np.full((3, 4, 2), -1000.0)
    base[0, 0, 0] = base[2, 3, 1] = base[1, 2, 0] = 0.0  # at most two live terms in any slice:
    base[1, 1, 1], base[0, 2, 1] = -1.0, -40.0  # exp(-1000 - max) is exactly 0
    layouts = {
        "C": base,
        "F": np.asfortranarray(base),
        "transposed": base.transpose(1, 2, 0),
        "negative strides": base[::-1, :, ::-1],
        "strided": np.repeat(base, 2, axis=1)[:, ::2],
    }
    # Per layout an axis None, an int and a tuple, keepdims and return_sign in turn.
    axes = [(None, 1, (0, 2)), (0, -1, (1, 2)), (None, 2, (0, 1)), (1, 0, (2, 0)), (None, -1, (0, 1))]
    for i, (a, choice) in enumerate(zip(layouts.values(), axes)):
        for j, axis in enumerate(choice):
            yield Probe(a, axis=axis, keepdims=(i + j) % 2 == 1, return_sign=(i + j) % 3 == 0)
    yield Probe(np.asfortranarray(base).astype(np.float32), axis=(0, 2), keepdims=True)
    yield Probe(base[:, :, 0].T, axis=1, return_sign=True)
    yield Probe(base.ravel(), axis=0)
    yield Probe(base.ravel()[::-3], axis=-1, keepdims=True)


def infinite_probes() -> Iterator[Probe]:
    """Slices whose maximum is +inf, and slices of -inf only."""
    inf = np.inf
    rows = np.array([[inf, 1.0, -inf], [inf, inf, 3.0], [-inf, -inf, -inf], [0.0, 1.0, 2.0]])
    for axis in (None, 0, 1):
        for return_sign in (False, True):
            yield Probe(rows, axis=axis, keepdims=axis == 0, return_sign=return_sign)
    yield Probe(rows.astype(np.float32), axis=1, return_sign=True)
    yield Probe(rows.astype(np.float32), axis=0)
    yield Probe(np.full((2, 3), -inf), return_sign=True)
    yield Probe(np.asfortranarray(np.full((2, 3), -inf)), axis=1, return_sign=True)
