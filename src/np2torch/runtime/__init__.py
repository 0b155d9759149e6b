"""np2torch.runtime: drop-in helpers that return exactly what NumPy/SciPy return, computed with torch where faster.

``np2torch fix`` rewrites ``np.exp(x)`` to ``np2t.exp(x)`` (``import np2torch.runtime as np2t``).
Each helper has the original's signature and returns what the original returns
(type, dtype, shape, memory order, values within a few ULP with identical
special values, warnings and exceptions under ``np.errstate``); it calls torch
only where that holds and is faster *on this machine*, and the original
everywhere else.  Which path is faster is measured here, not assumed: see
:mod:`._profile` (``np2torch tune``) and :mod:`._decide`.  torch is imported
only once it pays for its own import; without torch every call goes to
NumPy/SciPy.  See docs/runtime.md for the contract and the measured bounds.

Configuration: ``NP2TORCH_DEVICE`` (auto | cpu | cuda | cuda:N | numpy),
``NP2TORCH_MIN_SIZE`` (elements; replaces the profile: 0 forces the torch
path) and ``NP2TORCH_PROFILE`` (a profile file, or ``builtin``), or
:func:`configure` and the :func:`using` context manager.  :func:`which` says
where a call would run and why.
"""

from __future__ import annotations

from typing import Any

from ._backend import install_fork_hook
from ._config import RuntimeSettings, Settings, configure, current_settings, using
from ._logsumexp import logsumexp
from ._table import FUNCTIONS_BY_NAME
from ._ufunc import HELPERS

install_fork_hook()

# The elementwise helpers: one per row of the table (_table.py), nothing to keep in sync here.
globals().update(HELPERS)


def which(name: str, *args: Any, **kwargs: Any) -> tuple[str, str]:
    """Where ``np2torch.runtime.<name>(*args, **kwargs)`` would run, and why, without running it.

    Returns ``(path, reason)``: ``path`` is ``"numpy"`` (the original),
    ``"cpu"`` (torch on the host) or ``"cuda"``; ``reason`` is one line.
    Nothing is counted, measured or imported.
    """
    if name not in FUNCTIONS_BY_NAME:
        raise ValueError(f"np2torch.runtime has no helper {name!r}; choose from {', '.join(FUNCTIONS_BY_NAME)}")
    helper = logsumexp if name == "logsumexp" else HELPERS[name]
    if not args:
        raise TypeError(f"which({name!r}, ...) needs the call's arguments")
    return helper._np2torch_which(*args, **kwargs)  # type: ignore[no-any-return]


__all__ = ["RuntimeSettings", "Settings", "configure", "current_settings", "using", "which", "logsumexp", *HELPERS]  # pyright: ignore[reportUnsupportedDunderAll]
