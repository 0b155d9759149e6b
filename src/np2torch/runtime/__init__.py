"""np2torch.runtime: drop-in helpers that return exactly what NumPy/SciPy return, computed with torch where faster.

``np2torch fix`` rewrites ``np.exp(x)`` to ``np2t.exp(x)`` (``import np2torch.runtime as np2t``).
Each helper has the original's signature and returns what the original returns
(type, dtype, shape, memory order, values within a few ULP with identical
special values, warnings and exceptions under ``np.errstate``); it calls torch
only where that holds and is faster *on this machine*, and the original
everywhere else.  Which path is faster is measured here, not assumed: see
:mod:`._decision.profile` (``np2torch tune``) and :mod:`._decision.route`; everything the runtime
keeps between calls is one object, :data:`._state.PROCESS`.  torch is imported
only once it pays for its own import; without torch every call goes to
NumPy/SciPy.  See docs/runtime.md for the contract and the measured bounds.

Configuration: ``NP2TORCH_DEVICE`` (auto | cpu | cuda | cuda:N | numpy),
``NP2TORCH_MIN_SIZE`` (elements; replaces the profile: 0 forces the torch
path) and ``NP2TORCH_PROFILE`` (a profile file, or ``builtin``), or
:func:`configure` and the :func:`using` context manager.  :func:`which` says
where a call would run and why.

Importing this package costs nothing but the function table: NumPy and the
helpers load on the first attribute that needs them (``np2t.exp``), so the
linter can read :mod:`.table` and a script that never calls a helper pays
nothing.
"""

from __future__ import annotations

# Importing _state reads NP2TORCH_DEVICE and NP2TORCH_MIN_SIZE: a bad value fails this import, naming it.
from . import (
    _fork,
    _state,  # noqa: F401
)
from .table import FUNCTIONS

_fork.install()

_API = ("RuntimeSettings", "configure", "current_settings", "using", "which")
__all__ = list(_API) + [row.name for row in FUNCTIONS]


def __getattr__(name: str) -> object:
    """The helpers and the API, loaded together on first use and then plain module attributes."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import _api

    globals().update({public: getattr(_api, public) for public in __all__})
    return globals()[name]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
