"""The shared model of the linter: settings, findings, errors, source lines and planned fixes.

:mod:`np2torch.lint.engine` (analysis) and :mod:`np2torch.lint.rewrite` (rewriting)
both use these; neither imports the other's internals, so there is no import
circle between them.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from typing import Optional

from np2torch.lint.resolve import Ref
from np2torch.lint.rules import DEFAULT_RULES, Rule


@dataclass(frozen=True)
class LintSettings:
    """What the engine looks for and how a fix spells the helper."""

    rules: tuple[Rule, ...] = DEFAULT_RULES
    """The default selection, as ``np2torch check`` without ``--select`` (opt-in rules need ``select_rules``)."""
    runtime_module: str = "np2torch.runtime"
    alias: str = "np2t"
    unsafe_fixes: bool = False
    """Also make the findings of rules whose ``fix_safety`` is ``unsafe`` fixable."""

    def __post_init__(self) -> None:
        if not all(part.isidentifier() and not keyword.iskeyword(part) for part in self.runtime_module.split(".")):
            raise ValueError(f"runtime-module {self.runtime_module!r} is not a dotted module name")
        if not self.alias.isidentifier() or keyword.iskeyword(self.alias):
            raise ValueError(f"alias {self.alias!r} is not a Python identifier")
        if self.alias == "npt":
            raise ValueError("alias 'npt' is reserved: it is numpy.typing's conventional alias")


Settings = LintSettings
"""The engine's settings under their earlier name (the runtime's are ``RuntimeSettings``)."""

DEFAULT_SETTINGS = LintSettings()


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    message: str
    fixable: bool
    # Optional, not ``str | None``: runner reads these with typing.get_type_hints, which evaluates
    # them, and Python 3.9 has no ``X | Y`` at runtime.
    fix_title: Optional[str]
    reason: Optional[str] = None


class SourceError(Exception):
    """The text cannot be parsed; ``str(e)`` is one line, ``line``/``column`` are 1-based or None."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.line = line
        self.column = column


class FixError(Exception):
    """The fixed text would not parse (a bug in np2torch): the file must be left as it was."""


_NEWLINE = re.compile(r"\r\n|\r|\n")


class Lines:
    """Source lines split as the tokenizer splits them, and byte-to-character columns."""

    def __init__(self, text: str) -> None:
        self._lines = _NEWLINE.split(text)

    def __getitem__(self, line: int) -> str:
        return self._lines[line - 1] if 0 < line <= len(self._lines) else ""

    def char_col(self, line: int, byte_col: int) -> int:
        """``ast`` columns are UTF-8 byte offsets; findings count characters."""
        text = self[line]
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


@dataclass
class Planned:
    """A fixable finding with what the rewrite needs: the reference and its rule."""

    finding: Finding
    ref: Ref
    rule: Rule
