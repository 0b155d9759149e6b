"""np2torch.runtime: drop-in helpers that return exactly what NumPy/SciPy return, computed with torch where faster."""

from __future__ import annotations

from ._config import configure, current_settings, using

__all__ = ["configure", "current_settings", "using"]
