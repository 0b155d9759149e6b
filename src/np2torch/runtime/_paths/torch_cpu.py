"""torch on the CPU (the paths ``cpu1`` and ``cpu``): an elementwise op in blocks fixed by the size, each on one torch thread.

:func:`compute` writes ``dst[...] = op(src)`` with ``torch.<op>`` (:func:`torch_op`) on
:mod:`.blocks`'s workers: block boundaries are a function of the size alone, so
the bits are the same on one thread (``cpu1``) and on the pool (``cpu``), under
any load.  A result laid out unlike its input is computed in its own dense
layout after NumPy's exact copy.  What the helper does around it -- whether torch
can serve the call at all (the loop, the arguments, the layouts), NumPy's
input casts, and the original's values and reports for the elements NumPy would
flag (:mod:`.._exact.errstate`) -- is :mod:`.._ufunc`'s; :func:`all_finite` is
the one pass over the result that says whether any element needs them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from .._backend import tensor_view
from . import blocks

if TYPE_CHECKING:
    import torch

    TorchOp = Callable[..., torch.Tensor]
    """A torch elementwise function: ``op(tensor, out=tensor) -> tensor``."""


def compute(op_name: str, wide: str | None, src: np.ndarray, dst: np.ndarray, threads: int, check: bool) -> bool:
    """``dst[...] = op(src)`` with torch on the host, in blocks fixed by the size (:mod:`.blocks`): the same
    bits on any number of threads; ``wide``: the torch dtype computed in, where the loop's own is not (None: the
    loop's).  Returns whether every result is finite (True unasked: ``check`` False)."""
    if flat_pair(src, dst):
        return _in_blocks(op_name, wide, src, dst, threads, check)
    if dst.flags.c_contiguous or dst.flags.f_contiguous:
        np.copyto(dst, src, casting="unsafe")  # NumPy's exact copy into the result's own dense layout
        return _in_blocks(op_name, wide, dst, dst, threads, check)
    # An out= that is not dense: computed in a dense buffer, then copied into it.
    dense = np.empty(dst.shape, dst.dtype)
    np.copyto(dense, src, casting="unsafe")
    finite = _in_blocks(op_name, wide, dense, dense, threads, check)
    np.copyto(dst, dense)
    return finite


def _in_blocks(op_name: str, wide_name: str | None, src: np.ndarray, dst: np.ndarray, threads: int, check: bool) -> bool:
    """:func:`compute` of a dense ``src`` and ``dst`` laid out alike, as 1-D blocks."""
    import torch

    op = torch_op(op_name)
    flat_src, flat_dst = tensor_view(flat(src)), tensor_view(flat(dst))
    wide: torch.dtype | None = None if wide_name is None else getattr(torch, wide_name)

    def block(start: int, stop: int) -> bool:
        part = flat_dst[start:stop]
        if wide is None:
            op(flat_src[start:stop], out=part)
        else:
            tmp = flat_src[start:stop].to(wide)
            op(tmp, out=tmp)
            part.copy_(tmp)
        return not check or all_finite(part)

    return all(blocks.elementwise(flat_dst.numel(), block, threads, (op_name, wide or flat_src.dtype)))


def torch_op(name: str) -> TorchOp:
    """``torch.<name>`` (a dotted name such as ``special.ndtr`` too), or a composition in :data:`_COMPOSED`."""
    composed = _COMPOSED.get(name)
    if composed is not None:
        return composed
    import torch

    op: Any = torch
    for part in name.split("."):
        op = getattr(op, part)
    found: TorchOp = op
    return found


def _erfinv_unsigned_zero(t: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    # scipy.special.erfinv(-0.0) is +0.0 where torch.erfinv gives -0.0; adding
    # +0.0 changes only that sign (-0.0 + 0.0 == +0.0; every other value, NaN
    # included, is unchanged).
    import torch

    return torch.erfinv(t, out=out).add_(0.0)


# torch_op names the runtime composes itself (CPU only: a row using one lists no CUDA loops).
_COMPOSED: Mapping[str, TorchOp] = {"erfinv_unsigned_zero": _erfinv_unsigned_zero}


def all_finite(t: torch.Tensor) -> bool:
    """One multithreaded pass over the result: does it hold only finite values?

    float64: a sum is finite only if every term is (a sum that overflows is a
    false alarm, settled by the precise pass).  Narrower types: min and max,
    which propagate NaN (a float32 sum overflows too easily, and summing it in
    float64 costs ten times more on the CPU).
    """
    import torch

    if t.is_complex():
        t = torch.view_as_real(t)
    if t.numel() == 0:
        return True
    if t.dtype == torch.float64:
        return math.isfinite(float(t.sum()))
    low, high = torch.aminmax(t)
    return math.isfinite(float(low)) and math.isfinite(float(high))


def flat_pair(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` are dense with the same layout, so 1-D views pair elements."""
    return a.strides == b.strides and a.itemsize == b.itemsize and (a.flags.c_contiguous or a.flags.f_contiguous)


def flat(a: np.ndarray) -> np.ndarray:
    return a.ravel(order="K")
