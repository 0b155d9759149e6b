"""The original on every core: NumPy's or SciPy's own ufunc loop, run on aligned blocks.

A ufunc's loop releases the GIL, so the runtime's workers (:mod:`.blocks`,
``torch=False``) can each run the original on a slice of a call: block ``k``
is ``original(x[a:b], out=result[a:b])``.  Block boundaries fall on multiples
of :data:`.blocks.ALIGN` elements from the array's start, so every block
but the last is a whole number of any vector width, and the last one's tail is
the array's own: each element goes through the same vectorized or scalar code
as in the original's single call.  The result is the original's bits on any
number of threads, under any load, without torch, its import or a ULP table.

Floating-point errors: each block runs under an error state that records the
flags its loop raised (NumPy's ``call`` mode with a recorder, NumPy >= 2,
whose error state is a context variable that a worker sets for itself).  When
the caller's own state reports something and some block raised a flag, the
original runs once more, under the caller's state, on a few elements that
raise the same flags (:func:`_witnesses`: found by re-running smaller and
smaller pieces of a flagged block, their values rewritten identically): NumPy
itself then reports exactly what its single call would have, in its order, at
the caller's line (warn, raise, call, print, log), with ``out=`` already
written in full.

Served: any floating or complex loop of the original (:data:`LOOP_KINDS`), including those torch does not
compute exactly, and there only this path and the original's single call are candidates; exactly ``np.ndarray`` operands whose result is laid out alike (a dense
array and its dense result in the same order: :func:`lays_out_alike`; a
two-argument function's scalar operand goes whole to every block), the call's
``dtype=``/``casting=`` passed on to every block.  An in-place call under
a reporting error state is not (its inputs are gone once a block is written,
and the flags' witnesses could not be found again).
"""

from __future__ import annotations

from typing import Any, Callable, Container, List, Sequence, Tuple

import numpy as np

from .._exact.errstate import EXTOBJ_VAR, ErrorChecks, numpy_call, recording_state
from . import blocks

LOOP_KINDS = frozenset("fc")
"""The loops this path serves: any floating or complex loop of the original, torch's or not (float64 ``erfc``,
``logaddexp`` and ``log1p``, float32 ``sin``), each block being the original's own loop."""


def beyond_single_call(loop: np.dtype, torch_loops: Container[str]) -> bool:
    """Whether a path other than the original's single call may serve the original's loop ``loop``: torch where it
    computes that loop exactly (``torch_loops``: the row's), else this path (:data:`LOOP_KINDS`)."""
    return loop.name in torch_loops or loop.kind in LOOP_KINDS


PIECES = 16
"""A flagged span is cut into this many pieces to find the one raising a flag (:func:`_witnesses`)."""
WITNESS = 256
"""Pieces stop being cut at this many elements (a multiple of any vector width): a flag's witness."""


def lays_out_alike(x: np.ndarray, result: np.ndarray) -> bool:
    """Whether ``x`` and ``result`` have the same shape and are both dense (no gaps, positive strides) in the same
    axis order: flat views of both in memory order (``ravel(order="K")``) pair their elements, and flat slices of
    both are the blocks."""
    if x.shape != result.shape or not (dense(x) and dense(result)):
        return False
    long = [axis for axis, length in enumerate(x.shape) if length > 1]
    return [x.strides[a] // x.itemsize for a in long] == [result.strides[a] // result.itemsize for a in long]


def dense(a: np.ndarray) -> bool:
    """Whether ``a``'s elements fill its memory without gaps, in some order of its axes, with positive strides."""
    if a.flags.c_contiguous or a.flags.f_contiguous:
        return True
    extent = a.itemsize
    for stride, length in sorted((st, n) for st, n in zip(a.strides, a.shape) if n > 1):
        if stride != extent:
            return False
        extent *= length
    return True


_NONE: Any = object()


def compute(original: Callable[..., Any], name: str, x: Any, result: np.ndarray, checks: ErrorChecks | None,
            threads: int = 0, second: Any = _NONE, **kwargs: Any) -> None:
    """``original(x, out=result, **kwargs)`` (``original(x, second, out=result, ...)`` for a two-argument one) on up
    to ``threads`` threads (0: as many as allowed), reporting the floating-point errors of the single call as the
    original does.  Each array operand lays out like ``result`` (:func:`lays_out_alike`); a scalar (a Python number,
    a 0-d array) goes whole to every block."""
    operands = [_flat(x)] + ([] if second is _NONE else [_flat(second)])
    dst = result.ravel(order="K")
    caller = EXTOBJ_VAR.get()
    bufsize = np.getbufsize()

    def block(start: int, stop: int) -> Tuple[int, int, int]:
        if checks is None:  # nothing to report: the caller's own (quiet) state
            token = EXTOBJ_VAR.set(caller)
            try:
                original(*_parts(operands, start, stop), out=dst[start:stop], **kwargs)
            finally:
                EXTOBJ_VAR.reset(token)
            return start, stop, 0
        return start, stop, _flags_of(original, operands, dst, start, stop, bufsize, kwargs)

    spans = blocks.elementwise(dst.size, block, threads, None)
    if checks is not None and any(status for _, _, status in spans):
        _report(original, name, operands, dst, spans, bufsize, kwargs)


def _flags_of(original: Callable[..., Any], operands: Sequence[Any], dst: np.ndarray, start: int, stop: int,
              bufsize: int, kwargs: dict[str, Any]) -> int:
    """``dst[start:stop]`` computed by ``original`` under a recording error state: the flags its loop raised."""
    state, flags = recording_state(bufsize)
    token = EXTOBJ_VAR.set(state)
    try:
        original(*_parts(operands, start, stop), out=dst[start:stop], **kwargs)
    finally:
        EXTOBJ_VAR.reset(token)
    return flags.status


def _flat(operand: Any) -> Any:
    """A flat view of an array operand laid out like the result; a scalar (or 0-d array) as it is."""
    if type(operand) is np.ndarray and operand.ndim:
        return operand.ravel(order="K")
    return operand


def _parts(operands: Sequence[Any], start: int, stop: int) -> List[Any]:
    return [a[start:stop] if type(a) is np.ndarray and a.ndim else a for a in operands]


def _report(original: Callable[..., Any], name: str, operands: Sequence[Any], dst: np.ndarray,
            spans: Sequence[Tuple[int, int, int]], bufsize: int, kwargs: dict[str, Any]) -> None:
    """Run the original under the caller's error state on elements raising every flag the blocks (``spans``:
    ``(start, stop, flags)``) raised."""
    wanted = 0
    for _, _, status in spans:
        wanted |= status
    pieces: List[tuple[int, int]] = []
    for start, stop, status in spans:
        new = status & wanted
        if new:
            pieces += _witnesses(original, operands, dst, start, stop, new, bufsize, kwargs)
            wanted &= ~new
    # The array's tail (a partial vector) stays at the end, as in the original's call.
    pieces.sort(key=lambda span: span[1] == dst.size)
    # In the loop's dtype (the result's: an exact cast, as the call's own), so that no keyword or cast is needed and
    # NumPy's warnings can name the caller's line (:func:`.._exact.errstate.may_warn_in_a_cast`).
    witnesses = [_witness(a, pieces, dst.dtype) for a in operands]
    numpy_call(original, name, *witnesses)


def _witness(operand: Any, pieces: Sequence[tuple[int, int]], dtype: np.dtype) -> Any:
    if type(operand) is np.ndarray and operand.ndim:
        return np.concatenate([operand[a:b] for a, b in pieces]).astype(dtype, copy=False)
    return operand


def _witnesses(original: Callable[..., Any], operands: Sequence[Any], dst: np.ndarray, start: int, stop: int,
               wanted: int, bufsize: int, kwargs: dict[str, Any]) -> List[tuple[int, int]]:
    """Spans of at most :data:`WITNESS` elements within ``[start, stop)`` that together raise the flags ``wanted``
    (the whole span, should no piece of it raise a flag alone).

    Each step re-runs the span's pieces under a recording state (rewriting their values identically) and keeps
    a piece for each flag still wanted: the work is about the span's size once more."""
    if stop - start <= WITNESS:
        return [(start, stop)]
    step = _ceil(_ceil(stop - start, PIECES), WITNESS) * WITNESS
    found: List[tuple[int, int]] = []
    whole = (start, stop)
    for a in range(start, stop, step):
        b = min(a + step, stop)
        new = _flags_of(original, operands, dst, a, b, bufsize, kwargs) & wanted
        if new:
            found += _witnesses(original, operands, dst, a, b, new, bufsize, kwargs)
            wanted &= ~new
            if not wanted:
                break
    return found if not wanted else [whole]


def _ceil(a: int, b: int) -> int:
    return (a + b - 1) // b


def recorded(original: Callable[..., Any], inputs: np.ndarray, result: np.ndarray, mask: np.ndarray) -> int:
    """``result[mask] = original(inputs)``, computed under a recording error state: the flags it raised."""
    state, flags = recording_state(np.getbufsize())
    token = EXTOBJ_VAR.set(state)
    try:
        result[mask] = original(inputs)
    finally:
        EXTOBJ_VAR.reset(token)
    return flags.status


def witnesses(original: Callable[..., Any], inputs: np.ndarray, wanted: int) -> List[np.ndarray]:
    """Copies of a few pieces of ``inputs`` (a flat array in the loop's dtype) that together raise the flags
    ``wanted`` in ``original`` (:func:`_witnesses`, on a scratch result of ``inputs``' size)."""
    scratch = np.empty(inputs.shape, inputs.dtype)
    spans = _witnesses(original, [inputs], scratch, 0, inputs.size, wanted, np.getbufsize(), {})
    return [inputs[a:b].copy() for a, b in spans]
