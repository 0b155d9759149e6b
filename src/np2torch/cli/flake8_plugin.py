"""flake8 plugin: np2torch's findings as flake8 errors (``NPT`` codes), over :func:`np2torch.check_source`.

Registered as the ``flake8.extension`` entry point ``NPT``, so an editor or CI that runs flake8
reports them with no setting of its own: ``path:line:col: NPT001 `numpy.exp` can run on torch via
`np2torch.runtime.exp```.  The file gets the settings ``np2torch check`` gives it: the
``[tool.np2torch]`` of the nearest pyproject.toml, its rule selection, and its ``exclude`` and
``extend-exclude`` (applied as ``--force-exclude`` applies them, since flake8 names every file).
A broken ``[tool.np2torch]`` stops flake8 with that file's one-line error rather than running
other settings than the project's.  flake8's ``--select``/``--extend-ignore``, ``# noqa`` and
``# flake8: noqa`` apply as to any plugin.  Fixing stays ``np2torch fix``'s.
"""

from __future__ import annotations

import ast
from typing import Iterator, Sequence

from np2torch import __version__
from np2torch.cli.config import ConfigError, RunSettings, settings_for_file


class BrokenConfig(Exception):
    """A ``[tool.np2torch]`` the plugin cannot use; flake8 prints it and exits 1."""

    def __repr__(self) -> str:  # flake8 shows the exception's repr: make it the one line np2torch check prints
        return f"np2torch: {self}"


class Plugin:
    name = "np2torch"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        # flake8 hands over the lines it read (stdin included); `tree` is asked for only to make this an AST
        # plugin, run once per file: the engine parses the text itself, with its own positions.
        self.filename = filename
        self.lines = lines
        # Read here, not in run(): flake8 turns an exception raised while it builds a plugin into a clear
        # "failed during execution" error, but one raised while it iterates the findings into a traceback.
        self.settings = _settings_for(filename)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        if self.settings is None:
            return
        from np2torch.lint import engine

        try:
            findings = engine.check_source("".join(self.lines), self.filename, settings=self.settings.lint)
        except engine.SourceError:
            return  # flake8 reports the syntax error itself (E999)
        for finding in findings:
            yield finding.line, finding.column - 1, f"{finding.code} {finding.message}", type(self)


def _settings_for(filename: str) -> RunSettings | None:
    """The settings ``np2torch check`` uses for ``filename``; ``None`` when the project excludes it."""
    try:
        return settings_for_file(filename if filename not in ("-", "stdin") else "stdin.py")
    except ConfigError as exc:
        raise BrokenConfig(str(exc)) from None
