"""Which project a file belongs to: what ``np2torch run``, ``fix --from-run`` and the project index agree on.

Standard library only (``np2torch run`` loads it before the program runs).
"""

from __future__ import annotations

import os

__all__ = ["project_root"]


def project_root(start: str) -> str:
    """The folder of the project ``start`` (a folder) belongs to: the nearest one at or above it holding a
    ``pyproject.toml`` or ``.git``; ``start`` itself when there is none."""
    folder = os.path.realpath(start)
    while True:
        if os.path.exists(os.path.join(folder, "pyproject.toml")) or os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.path.realpath(start)
        folder = parent
