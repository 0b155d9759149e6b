"""Which originals this environment can import: ``np2torch bench`` and ``tune`` leave out the rest.

SciPy is optional (the ``scipy`` extra): without it the rows whose original is SciPy's cannot be timed,
and the tools time the others and say, in one line, what they left out and what to install.
"""

from __future__ import annotations

import importlib
from typing import Sequence

import click


def missing_module(qualname: str) -> str | None:
    """The top-level module of ``qualname``'s original (``scipy``) when it cannot be imported, else None."""
    module = qualname.rpartition(".")[0]
    try:
        importlib.import_module(module)
    except ImportError:
        return module.partition(".")[0]
    return None


def importable(names: Sequence[str], qualnames: Sequence[str], *, named: bool, tool: str) -> set[str]:
    """The helpers of ``names`` (with the originals ``qualnames``) whose originals import.

    Those that do not are left out with one line on stderr naming them and what to install; when the user
    named them (``named``: ``--functions``) that is an error instead.
    """
    missing: dict[str, list[str]] = {}
    for name, qualname in zip(names, qualnames):
        module = missing_module(qualname)
        if module is not None:
            missing.setdefault(module, []).append(name)
    for module, left in missing.items():
        what = f"{', '.join(left)} need{'s' if len(left) == 1 else ''} {module}, which is not installed"
        if named:
            raise click.UsageError(f"{what}: pip install {module}", click.get_current_context(silent=True))
        click.echo(f"np2torch {tool}: {what}: left out (pip install {module} to include them)", err=True)
    return {name for name in names if not any(name in left for left in missing.values())}
