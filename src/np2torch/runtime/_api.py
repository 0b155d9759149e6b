"""The runtime's public names: :mod:`np2torch.runtime` loads this module on first use."""

from __future__ import annotations

from typing import Any

from ._config import RuntimeSettings, Settings, configure, current_settings, using
from ._logsumexp import logsumexp
from ._ufunc import HELPERS
from .table import FUNCTIONS_BY_NAME

# The elementwise helpers: one per row of the table (table.py), nothing to keep in sync here.
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
    answer: tuple[str, str] = helper._np2torch_which(*args, **kwargs)  # type: ignore[attr-defined]
    return answer


__all__ = ["RuntimeSettings", "Settings", "configure", "current_settings", "using", "which", "logsumexp"] + list(HELPERS)
