"""``np2torch check --watch``: check again whenever a file changes, as ``ruff check --watch`` does.

The screen is cleared before each run (when stdout is a terminal), then ruff's
lines: ``Starting linter in watch mode...`` first, ``File change detected...``
before each later run.  Changes are found by polling (no file-system
notification library needed): the size and modification time of every Python
file, notebook and configuration file under the paths, twice a second, not
looking into the folders np2torch never checks by default (``.git``, ``.venv``,
caches).  Ctrl-C ends it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable, Iterator, Sequence

import click

from np2torch.cli.config import DEFAULT_EXCLUDE

INTERVAL = 0.5
"""Seconds between two looks at the files."""
_WATCHED = (".py", ".pyi", ".ipynb", ".toml", ".cfg")
_SKIPPED = frozenset(DEFAULT_EXCLUDE) | {".np2torch_cache", ".ruff_cache", ".mypy_cache", ".pytest_cache"}
_CLEAR = "\x1b[2J\x1b[3J\x1b[H"
"""Clear the screen and the scroll-back, cursor home (what the ``clearscreen`` crate ruff uses writes)."""

Snapshot = dict[str, tuple[int, int]]


def watch(run: Callable[[], int], paths: Sequence[str], *, sleep: Callable[[float], None] = time.sleep,
          running: Callable[[], bool] = lambda: True, quiet: bool = False) -> int:
    """Call ``run`` now and after every change under ``paths`` while ``running()``; 0 when it stops.  ``quiet``
    (``--quiet``, ``--silent``): without ruff's two lines, as ruff's."""
    _clear()
    if not quiet:
        click.echo("Starting linter in watch mode...")
    run()
    seen = snapshot(paths)
    while running():
        sleep(INTERVAL)
        now = snapshot(paths)
        if now != seen:
            seen = now
            _clear()
            if not quiet:
                click.echo("File change detected...")
            run()
    return 0


def snapshot(paths: Sequence[str]) -> Snapshot:
    """Each watched file under ``paths`` -> (size, modification time in ns)."""
    found: Snapshot = {}
    for path in _files(paths):
        try:
            stat = os.stat(path)
        except OSError:
            continue
        found[path] = (stat.st_size, stat.st_mtime_ns)
    return found


def _files(paths: Sequence[str]) -> Iterator[str]:
    for path in paths:
        if os.path.isfile(path):
            yield os.path.abspath(path)
            continue
        for folder, dirs, files in os.walk(path):
            dirs[:] = [name for name in dirs if name not in _SKIPPED]
            yield from (os.path.abspath(os.path.join(folder, name)) for name in files if name.endswith(_WATCHED))


def _clear() -> None:
    if sys.stdout.isatty():
        click.echo(_CLEAR, nl=False)
