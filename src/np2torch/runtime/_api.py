"""The runtime's public names: :mod:`np2torch.runtime` loads this module on first use.

One helper per row of the table (:mod:`.table`), made by the module the row
names (``implementation``: :mod:`._ufunc` for every elementwise row, a
reduction's own module) -- nothing to keep in sync here.
"""

from __future__ import annotations

import importlib
from typing import Mapping

from ._config import RuntimeSettings
from ._helper import Helper
from ._state import configure, current_settings, using
from .table import FUNCTIONS, Function

_MODULES = {name: importlib.import_module(f".{name}", __package__) for name in {row.implementation for row in FUNCTIONS}}


def _make(row: Function) -> Helper:
    helper: Helper = _MODULES[row.implementation].make_helper(row)
    return helper


HELPERS: Mapping[str, Helper] = {row.name: _make(row) for row in FUNCTIONS}
"""Helper name -> its :class:`._helper.Helper` (the public function is ``.function``)."""

globals().update({name: helper.function for name, helper in HELPERS.items()})


def which(name: str, *args: object, **kwargs: object) -> tuple[str, str]:
    """Where ``np2torch.runtime.<name>(*args, **kwargs)`` would run, and why, without running it.

    Returns ``(path, reason)``: ``path`` is ``"numpy"`` (the original),
    ``"cpu"`` (torch on the host) or ``"cuda"``; ``reason`` is one line.
    Nothing is counted or measured; torch is imported only to ask whether a configured CUDA device is
    usable.  A call that would raise (a CUDA device set explicitly, none usable) raises the same error here.
    """
    helper = HELPERS.get(name)
    if helper is None:
        raise ValueError(f"np2torch.runtime has no helper {name!r}; choose from {', '.join(HELPERS)}")
    if not args:
        raise TypeError(f"which({name!r}, ...) needs the call's arguments")
    return helper.which(*args, **kwargs)


__all__ = ["RuntimeSettings", "configure", "current_settings", "using", "which"] + list(HELPERS)
