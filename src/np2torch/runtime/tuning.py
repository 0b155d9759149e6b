"""The runtime's tuning API: what ``np2torch tune`` and ``np2torch bench`` use, and nothing private.

Measuring a pair (:func:`measure`: the helper's own paths, timed on scratch
inputs), the profile files (:func:`read_profile`, :func:`write_profile`,
:func:`locked`, :func:`default_path`, :func:`fingerprint`), the profile in force
(:func:`profile_in_force`), the size bands decisions are made from
(:func:`bands_of` and its margins), torch and CUDA as the runtime loads them,
whether the machine is busy (:func:`machine_busy`), and the second operand a
two-argument function is timed with (:func:`second_operand`).  The runtime's other
modules are private: their names may change with any release.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ._backend import cuda_available
from ._backend import load_torch as torch_available
from ._binary import second_operand
from ._decision import calibrate as _calibrate
from ._decision import profile as _profile
from ._decision import route as _route
from ._decision.model import (
    ALL_PATHS,
    CONTENDED_LIMIT,
    CPU_PATHS,
    LOOP_WAKE_NOTE,
    MARGIN,
    REDUCTION_CLASSES,
    WAKE_NOTE,
    Active,
    Bands,
    Curve,
    Profile,
    ProfileError,
    bands_of,
    curve_key,
)
from ._decision.profile import BUILTIN, PROFILE_ENV, default_path, fingerprint, locked, read_profile, write_profile
from ._load import machine_busy, others_meter, usable_cores
from ._paths.blocks import LOOP_IDLE, MIN_BLOCK, SHARED_BLOCK

__all__ = [
    "ALL_PATHS", "BUILTIN", "CONTENDED_LIMIT", "CPU_PATHS", "MARGIN", "PROFILE_ENV", "Active", "Bands", "Curve",
    "Profile", "ProfileError", "REDUCTION_CLASSES", "bands_of", "cuda_available", "curve_key", "default_path", "fingerprint", "locked",
    "LOOP_IDLE", "LOOP_WAKE_NOTE", "MIN_BLOCK", "SHARED_BLOCK", "WAKE_NOTE", "as_decided", "cores_only_loops", "machine_busy", "measure", "measure_wake", "others_meter", "profile_in_force", "serves_cores", "read_profile", "second_operand", "torch_available", "usable_cores", "write_profile",
]


def measure_wake(idle: float = _calibrate.WAKE_IDLE) -> float:
    """What a call on two threads pays to wake a worker that idled ``idle`` seconds (:func:`._decision.calibrate.measure_wake`)."""
    return _calibrate.measure_wake(idle=idle)


def measure(
    name: str,
    dtype: np.dtype,
    paths: Sequence[str],
    sizes: Sequence[int],
    max_call: float | None,
    repeat: int = _calibrate.RUNS,
    progress: Callable[[], None] | None = None,
    klass: str = "",
) -> Curve:
    """A :class:`Curve` of the helper ``name`` over ``paths`` and ``sizes`` for ``dtype`` input (a reduction's
    shape class ``klass``: :data:`REDUCTION_CLASSES`).

    Each path runs as a user's call taking it would (``numpy`` is the
    original); sizes stop growing once the original's call takes longer than
    ``max_call`` (None: every size), and the largest size is measured then too
    (:func:`._decision.calibrate.measure`); ``progress`` is called after each size.
    """
    from ._api import HELPERS

    run = HELPERS[name].run_path
    return _calibrate.measure(run, name, dtype, paths, sizes, max_call, repeat, progress, klass)


def as_decided(profile: Profile, curve: Curve, key: str) -> Curve:
    """The curve ``key`` of ``profile`` as the runtime's decisions read it (:func:`._decision.route.as_decided`), the
    helpers loaded first as a call has them: a reduction's module says how its pool cuts a call as it is imported
    (:func:`._paths.blocks.register_cut`), and ``np2torch tune --show`` reads curves without a call."""
    from ._api import HELPERS  # noqa: F401

    return _route.as_decided(profile, curve, key)


def serves_cores(name: str) -> bool:
    """Whether the helper ``name`` has the path ``cores`` (the original's own loop on every core) and this process
    more than one core to run it on."""
    from ._api import HELPERS

    return HELPERS[name].cores and usable_cores() > 1


CORES_ONLY_DTYPES = ("float32", "float64")
"""The dtypes ``np2torch tune`` measures the original on every core for where torch serves no exact loop."""


def cores_only_loops(name: str) -> tuple[str, ...]:
    """The loops (of :data:`CORES_ONLY_DTYPES`) the helper ``name``'s original runs on its own dtype that torch does
    not serve exactly (the row does not list them) and the original on every core does: float64 ``erfc``, ``log1p``
    and ``logaddexp``, float32 ``sin``.  Empty where the helper has no path ``cores`` (``tune`` measures them where
    this process has more than one core: :func:`serves_cores`)."""
    from ._api import HELPERS

    helper = HELPERS[name]
    if not helper.cores:
        return ()
    return tuple(dtype for dtype in CORES_ONLY_DTYPES
                 if dtype not in helper.row.loops and helper.loop_of(np.dtype(dtype)) == dtype)


def profile_in_force() -> Active:
    """The profile the runtime decides from in this process (read on first use; never imports torch)."""
    return _profile.active()
