"""np2torch: find NumPy/SciPy calls that torch computes faster and rewrite them to exact drop-in helpers.

The linter's API is text in, text out: :func:`check_source` gives the findings,
:func:`fix_source` the fixed text, :func:`fix_and_check` both from one analysis (a
:class:`FixResult`: the findings, the fixed text and the findings left in it).
``import np2torch`` stays cheap: the engine (and LibCST) load on first use of
these, and torch only ever loads inside :mod:`np2torch.runtime`, on the first
call that takes the torch path.

``%load_ext np2torch`` in IPython or Jupyter runs every later cell with the
rewrite of ``np2torch run`` (:mod:`np2torch.run.ipython`, loaded then).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: `python -m np2torch` imports this package before np2torch/__main__.py can
# take the working directory off sys.path, where a program's own typing.py would shadow the standard one

__version__ = "0.1.0"
__all__ = ["Finding", "FixResult", "Settings", "check_source", "fix_and_check", "fix_source", "__version__"]

if TYPE_CHECKING:
    from np2torch.lint.engine import Finding, FixResult, Settings, check_source, fix_and_check, fix_source
    from np2torch.run.ipython import Shell


def load_ipython_extension(ipython: Shell) -> None:
    """``%load_ext np2torch``: every cell run afterwards runs with the rewrite (docs/run.md)."""
    from np2torch.run import ipython as extension

    extension.load(ipython)


def unload_ipython_extension(ipython: Shell) -> None:
    """``%unload_ext np2torch``: cells run as they are again."""
    from np2torch.run import ipython as extension

    extension.unload(ipython)


def __getattr__(name: str) -> object:
    if name in {"Finding", "FixResult", "Settings", "check_source", "fix_and_check", "fix_source"}:
        from np2torch.lint import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'np2torch' has no attribute {name!r}")
