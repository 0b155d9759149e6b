"""np2torch: find NumPy/SciPy calls that torch computes faster and rewrite them to exact drop-in helpers.

The linter's API is text in, text out: :func:`check_source` gives the findings,
:func:`fix_source` the fixed text, :func:`fix_and_check` both from one analysis (a
:class:`FixResult`: the findings, the fixed text and the findings left in it).
``import np2torch`` stays cheap: the engine (and LibCST) load on first use of
these, and torch only ever loads inside :mod:`np2torch.runtime`, on the first
call that takes the torch path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Finding", "FixResult", "Settings", "check_source", "fix_and_check", "fix_source", "__version__"]

if TYPE_CHECKING:
    from np2torch.lint.engine import Finding, FixResult, Settings, check_source, fix_and_check, fix_source


def __getattr__(name: str) -> Any:
    if name in {"Finding", "FixResult", "Settings", "check_source", "fix_and_check", "fix_source"}:
        from np2torch.lint import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'np2torch' has no attribute {name!r}")
