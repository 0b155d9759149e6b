"""The CUDA path: host -> device -> compute -> host, streamed in chunks.

A NumPy array lives in pageable host memory; the GPU can only copy
asynchronously from page-locked ("pinned") memory.  So each chunk goes

    NumPy source --(CPU copy)--> pinned slot --(H2D)--> device slot
        --(kernel, in place)--> device slot --(D2H)--> pinned slot
        --(CPU copy)--> NumPy result

with three slots, each with its own CUDA stream, pinned buffer and device
buffer: while the GPU computes chunk k in one slot, its copy engines move chunk
k-1 back and chunk k+1 in, and the host stages chunk k+2, so both copy
directions, compute and host staging overlap.  A slot is reused only after the
event recorded at the end of its previous chunk has completed.  The slots
(pinned host memory is slow to allocate: ~ms per call) are kept per device and
dtype for the life of the process and reused by every later call, one call at
a time (a lock), ``3 x CUDA_CHUNK_BYTES`` of pinned and of device memory each.  The floating-point error check (any non-finite value) runs on the
device, per slot, and is read back once at the end.

The schedule (:func:`plan_chunks`, :func:`run_pipeline`) is plain Python and is
tested on the CPU; only :func:`cuda_unary` touches CUDA.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, List, Sequence, Tuple

import numpy as np

from .._backend import torch_dtype
from .._record import Record
from .._state import PROCESS

if TYPE_CHECKING:
    import torch

# 32 MiB per chunk: large enough that per-chunk launch and event costs vanish,
# small enough that two slots of pinned and device memory stay modest.
CUDA_CHUNK_BYTES = 32 << 20
_CUDA_SLOTS = 3


class Slots(Record):
    """Pinned and device buffers of ``span`` elements, with a stream and an event each, reused across
    calls (:attr:`.._state.Process.cuda_slots`, per device and dtype)."""

    __slots__ = ("span", "streams", "pinned", "buffers", "events")

    def __init__(self, span: int, streams: List[torch.cuda.Stream], pinned: List[torch.Tensor],
                 buffers: List[torch.Tensor], events: List[torch.cuda.Event]) -> None:
        self.span = span
        self.streams = streams
        self.pinned = pinned
        self.buffers = buffers
        self.events = events


def _slots(dev: torch.device, dtype: torch.dtype, span: int, count: int) -> Slots:
    """``count`` slots of at least ``span`` elements (call with :attr:`.._state.Process.cuda_lock` held)."""
    import torch

    key = (str(dev), dtype)
    cached = PROCESS.cuda_slots.get(key)
    if isinstance(cached, Slots) and cached.span >= span and len(cached.streams) >= count:
        return cached
    streams = [torch.cuda.Stream(device=dev) for _ in range(count)]
    pinned = [torch.empty(span, dtype=dtype, pin_memory=True) for _ in range(count)]
    buffers = []
    for stream in streams:
        # Allocated on the slot's own stream, so the caching allocator ties
        # the memory to the stream that uses it.
        with torch.cuda.stream(stream):
            buffers.append(torch.empty(span, dtype=dtype, device=dev))
    events = [torch.cuda.Event() for _ in range(count)]
    found = Slots(span, streams, pinned, buffers, events)
    PROCESS.cuda_slots[key] = found
    return found


def plan_chunks(n: int, itemsize: int, chunk_bytes: int = CUDA_CHUNK_BYTES) -> List[Tuple[int, int]]:
    """Split ``n`` elements into consecutive ``(start, stop)`` ranges of at most ``chunk_bytes``.

    Every chunk holds at least one element; the ranges cover ``0..n`` exactly,
    in order, and all but the last have the same length.
    """
    if n < 0 or itemsize <= 0 or chunk_bytes <= 0:
        raise ValueError(f"bad chunk plan request: n={n}, itemsize={itemsize}, chunk_bytes={chunk_bytes}")
    per_chunk = max(1, chunk_bytes // itemsize)
    return [(start, min(start + per_chunk, n)) for start in range(0, n, per_chunk)]


def run_pipeline(
    chunks: Sequence[Tuple[int, int]],
    slots: int,
    launch: Callable[[int, int, int], None],
    finish: Callable[[int, int, int], None],
) -> None:
    """Drive ``chunks`` through ``slots`` round-robin slots.

    ``launch(slot, start, stop)`` stages a chunk into a slot and queues its
    device work without waiting; ``finish(slot, start, stop)`` waits for that
    slot's work and delivers the chunk's result.  A slot is finished before it
    is launched again, and every launched chunk is finished exactly once, in
    chunk order.
    """
    if slots < 1:
        raise ValueError("need at least one slot")
    in_flight: List[Tuple[int, int] | None] = [None] * slots
    for index, (start, stop) in enumerate(chunks):
        slot = index % slots
        previous = in_flight[slot]
        if previous is not None:
            finish(slot, *previous)
        launch(slot, start, stop)
        in_flight[slot] = (start, stop)
    # Drain in chunk order: the oldest in-flight chunk sits in the next slot.
    for offset in range(slots):
        slot = (len(chunks) + offset) % slots
        pending = in_flight[slot]
        if pending is not None:
            finish(slot, *pending)
            in_flight[slot] = None


def cuda_unary(
    op_name: str,
    src: np.ndarray,
    dst: np.ndarray,
    device: str,
    compute_dtype: str | None = None,
    check: bool = False,
    chunk_bytes: int | None = None,
) -> bool:
    """``dst[:] = torch.<op_name>(src)`` on ``device``, streamed; 1-D contiguous same-dtype arrays.

    ``compute_dtype``: a wider torch dtype name to compute in on the device,
    rounded once into ``dst``'s dtype.  With ``check``, returns whether any
    result is non-finite (else False).  ``src`` may be ``dst`` (in place).
    """
    import torch

    n = src.shape[0]
    if n == 0:
        return False
    chunks = plan_chunks(n, src.itemsize, chunk_bytes or CUDA_CHUNK_BYTES)
    slots = min(_CUDA_SLOTS, len(chunks))
    span = chunks[0][1] - chunks[0][0]
    dev = torch.device(device)
    dtype = torch_dtype(src.dtype)
    wide = getattr(torch, compute_dtype) if compute_dtype else None
    op: Callable[..., torch.Tensor] = getattr(torch, op_name)
    src_t = torch.from_numpy(src)
    dst_t = torch.from_numpy(dst)

    with PROCESS.cuda_lock, torch.cuda.device(dev):
        found = _slots(dev, dtype, span, slots)
        streams, pinned, buffers, events = found.streams, found.pinned, found.buffers, found.events
        flags: List[torch.Tensor] = []
        if check:
            for stream in streams[:slots]:
                with torch.cuda.stream(stream):
                    flags.append(torch.zeros((), dtype=torch.int64, device=dev))

        def launch(slot: int, start: int, stop: int) -> None:
            length = stop - start
            host = pinned[slot][:length]
            host.copy_(src_t[start:stop])
            with torch.cuda.stream(streams[slot]):
                work = buffers[slot][:length]
                work.copy_(host, non_blocking=True)
                if wide is None:
                    op(work, out=work)
                else:
                    work.copy_(op(work.to(wide)))
                if check:
                    flags[slot].add_(torch.isfinite(work).logical_not_().sum())
                host.copy_(work, non_blocking=True)
                events[slot].record(streams[slot])

        def finish(slot: int, start: int, stop: int) -> None:
            events[slot].synchronize()
            dst_t[start:stop].copy_(pinned[slot][: stop - start])

        run_pipeline(chunks, slots, launch, finish)
        if not check:
            return False
        return any(int(flag.item()) for flag in flags)
