"""np2torch.runtime: drop-in helpers that return exactly what NumPy/SciPy return, computed with torch where faster.

``np2torch fix`` rewrites ``np.exp(x)`` to ``np2t.exp(x)`` (``import np2torch.runtime as np2t``).
Each helper has the original's signature and returns what the original returns
(type, dtype, shape, memory order, values within a few ULP with identical
special values, warnings and exceptions under ``np.errstate``); it calls torch
only where that holds and is faster, and the original everywhere else.  torch
is imported on the first call that needs it; without torch every call goes to
NumPy/SciPy.  See docs/runtime.md for the contract and the measured bounds.

Configuration: ``NP2TORCH_DEVICE`` (cpu | cuda | cuda:N | auto | numpy) and
``NP2TORCH_MIN_SIZE`` (elements; 0 forces the torch path), or
:func:`configure` and the :func:`using` context manager.
"""

from __future__ import annotations

from ._config import Settings, configure, current_settings, using
from ._logsumexp import logsumexp
from ._ufunc import cos, erf, erfinv, exp, log, sin

__all__ = ["Settings", "configure", "cos", "current_settings", "erf", "erfinv", "exp", "log", "logsumexp", "sin", "using"]
