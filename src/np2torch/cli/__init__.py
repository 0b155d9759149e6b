"""The command line: ``np2torch check|fix|rules|explain|...`` (:mod:`.app`), built on :mod:`np2torch.lint`.

Files, configuration, discovery, the lint cache, worker processes, output
formats and the flake8 plugin live here; none of it is needed to lint a text.
"""

from __future__ import annotations

from np2torch.cli.app import main

__all__ = ["main"]
