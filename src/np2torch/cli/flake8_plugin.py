"""flake8 plugin: np2torch's findings as flake8 errors (``NPT`` codes), over :func:`np2torch.check_source`.

Registered as the ``flake8.extension`` entry point ``NPT``, so an editor or CI that runs flake8
reports them with no setting of its own: ``path:line:col: NPT001 `numpy.exp` can run on torch via
`np2torch.runtime.exp```.  The rules are the ones ``np2torch check`` runs on that file
(``[tool.np2torch]`` of the nearest pyproject.toml); flake8's ``--select``/``--extend-ignore``,
``# noqa`` and ``# flake8: noqa`` apply as to any plugin.  Fixing stays ``np2torch fix``'s.
"""

from __future__ import annotations

import ast
import os
from typing import Iterator, Sequence

from np2torch import __version__


class Plugin:
    name = "np2torch"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        # flake8 hands over the lines it read (stdin included); `tree` is asked for only to make this an AST
        # plugin, run once per file: the engine parses the text itself, with its own positions.
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from np2torch.cli.config import ConfigError, ConfigFinder, Overrides, run_settings
        from np2torch.lint import engine
        from np2torch.lint.model import DEFAULT_SETTINGS

        path = self.filename if self.filename not in ("-", "stdin") else "stdin.py"
        try:
            settings = run_settings(ConfigFinder().for_file(os.path.abspath(path)), Overrides()).lint
        except ConfigError:
            settings = DEFAULT_SETTINGS  # a broken [tool.np2torch] is `np2torch check`'s to report
        try:
            findings = engine.check_source("".join(self.lines), self.filename, settings=settings)
        except engine.SourceError:
            return  # flake8 reports the syntax error itself (E999)
        for finding in findings:
            yield finding.line, finding.column - 1, f"{finding.code} {finding.message}", type(self)
