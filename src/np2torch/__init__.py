"""np2torch: find NumPy/SciPy calls that torch computes faster and rewrite them to exact drop-in helpers.

``import np2torch`` stays cheap: the engine (and LibCST) load on first use of
:func:`check_source` / :func:`fix_source`, and torch only ever loads inside
:mod:`np2torch.runtime`, on the first call that takes the torch path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Finding", "Settings", "check_source", "fix_source", "__version__"]

if TYPE_CHECKING:
    from np2torch.lint.engine import Finding, Settings, check_source, fix_source


def __getattr__(name: str) -> Any:
    if name in {"Finding", "Settings", "check_source", "fix_source"}:
        from np2torch.lint import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'np2torch' has no attribute {name!r}")
