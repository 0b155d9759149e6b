"""The shared model of the linter: settings, findings, errors, source lines and planned fixes.

:mod:`np2torch.lint.engine` (analysis) and :mod:`np2torch.lint.rewrite` (rewriting)
both use these; neither imports the other's internals, so there is no import
circle between them.  Importing this module loads no analysis code (the
resolver is named for type checkers only), so the command line can build
:class:`Settings` and read :class:`Finding` without loading the engine.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional

from np2torch.lint.isort import ImportOrder
from np2torch.lint.rules import DEFAULT_RULES, RULES_BY_CODE, Rule, select_rules

if TYPE_CHECKING:
    from np2torch.lint.resolve import Ref

RESERVED_ALIASES = frozenset({"npt"})
"""Names a fix never binds the runtime to: ``npt`` is numpy.typing's conventional alias."""


def check_alias(value: object) -> str:
    """``value`` if it can name the runtime module in an import; ``ValueError`` otherwise."""
    if not isinstance(value, str) or not value.isidentifier() or keyword.iskeyword(value):
        raise ValueError(f"alias must be a Python identifier, got {value!r}")
    if value in RESERVED_ALIASES:
        raise ValueError(f"alias {value!r} is reserved (numpy.typing's conventional alias)")
    return value


def check_module(value: object) -> str:
    """``value`` if it is a dotted module name; ``ValueError`` otherwise."""
    if isinstance(value, str) and all(p.isidentifier() and not keyword.iskeyword(p) for p in value.split(".")):
        return value
    raise ValueError(f"runtime module must be a dotted module name, got {value!r}")


@dataclass(frozen=True, repr=False, init=False)
class Settings:
    """What the engine looks for and how a fix spells the helper.

    ``rules`` takes rule codes and selectors as ``--select`` does (``"NPT001"``, a prefix such as
    ``"NPT0"``, ``"ALL"``; one string or several), :class:`~np2torch.lint.rules.Rule` objects, or both;
    it holds the rules.  An unknown selector is a ``ValueError``, anything else a ``TypeError``.
    """

    rules: tuple[Rule, ...]
    """The rules to run; by default the default selection, as ``np2torch check`` without ``--select``."""
    runtime_module: str
    alias: str
    unsafe_fixes: bool
    """Also make the findings of rules whose ``fix_safety`` is ``unsafe`` fixable."""
    compiled_elsewhere: tuple[tuple[str, str, str], ...] = ()
    """The functions of this module that other modules of its project hand to a compiler, as
    ``(name, family, what compiles it)`` (``("kernel", "numba", "main.py")``; the name ``*``: any function):
    the project index's answer for the module (:mod:`np2torch.lint.project`).  Calls in them are reported
    without a fix, as in a function the module compiles itself."""
    ignore_noqa: bool = False
    """Line ``# noqa`` comments suppress nothing (``--ignore-noqa``, as ruff's); NPT801 judges none."""
    unfixable: tuple[str, ...] = ()
    """Codes whose findings get no fix (ruff's ``unfixable``, less ``fixable``): reported, left as they are."""
    import_order: ImportOrder = ImportOrder()
    """Where isort puts the runtime import in a block of imports (the project's isort settings, read by the
    command line)."""

    def __init__(self, rules: str | Iterable[str] | Iterable[Rule] = DEFAULT_RULES,
                 runtime_module: str = "np2torch.runtime", alias: str = "np2t", unsafe_fixes: bool = False,
                 compiled_elsewhere: tuple[tuple[str, str, str], ...] = (), ignore_noqa: bool = False,
                 unfixable: tuple[str, ...] = (), import_order: ImportOrder | None = None) -> None:
        object.__setattr__(self, "rules", _rules(rules))
        object.__setattr__(self, "runtime_module", check_module(runtime_module))
        object.__setattr__(self, "alias", check_alias(alias))
        object.__setattr__(self, "unsafe_fixes", unsafe_fixes)
        if not all(isinstance(item, tuple) and len(item) == 3 and all(isinstance(part, str) for part in item)
                   for item in compiled_elsewhere):
            raise ValueError(f"compiled_elsewhere must hold (name, family, module) string triples, "
                             f"got {compiled_elsewhere!r}")
        object.__setattr__(self, "compiled_elsewhere", tuple(compiled_elsewhere))
        object.__setattr__(self, "ignore_noqa", ignore_noqa)
        object.__setattr__(self, "unfixable", tuple(unfixable))
        object.__setattr__(self, "import_order", ImportOrder() if import_order is None else import_order)

    def __repr__(self) -> str:  # the rules by code: their documentation would fill a screen
        values = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                  if f.name != "rules" and (f.name != "compiled_elsewhere" or self.compiled_elsewhere)]
        return f"Settings(rules=<{', '.join(rule.code for rule in self.rules)}>, {', '.join(values)})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Worker processes receive settings with every file: the table's rules travel as their codes
        # (a few hundred bytes, not the rules' documentation).
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["rules"] = tuple(rule.code if RULES_BY_CODE.get(rule.code) is rule else rule for rule in self.rules)
        return _settings, (values,)


def _rules(rules: object) -> tuple[Rule, ...]:
    """``Settings.rules`` from what a caller passes: rules, and codes or selectors that stand for them."""
    if isinstance(rules, tuple) and all(isinstance(rule, Rule) for rule in rules):
        return rules
    items = [rules] if isinstance(rules, str) else rules
    if not isinstance(items, Iterable):
        raise TypeError(f"Settings(rules=...) takes rule codes or selectors such as 'NPT001', 'NPT0' or 'ALL' "
                        f"(or np2torch's Rule objects), got {type(rules).__name__}")
    chosen: dict[str, Rule] = {}
    for item in items:
        if isinstance(item, Rule):
            chosen.setdefault(item.code, item)
        elif isinstance(item, str):
            for rule in select_rules([item]):
                chosen.setdefault(rule.code, rule)
        else:
            raise TypeError(f"Settings(rules=...) takes rule codes or selectors such as 'NPT001', 'NPT0' or 'ALL' "
                            f"(or np2torch's Rule objects), got {item!r}")
    return tuple(chosen.values())


def _settings(values: dict[str, Any]) -> Settings:
    rules = tuple(RULES_BY_CODE[rule] if isinstance(rule, str) else rule for rule in values["rules"])
    return Settings(**{**values, "rules": rules})


DEFAULT_SETTINGS = Settings()


@dataclass(frozen=True)
class Finding:
    """One reference to a table function: where it is (1-based lines and columns, in characters; the end
    is exclusive), the rule's code and message, and whether ``fix`` rewrites it (``reason``: why not).  The
    command line also reports a file it could not analyse as one (:data:`NOT_ANALYSED`), as ruff does."""

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


INVALID_SYNTAX = "invalid-syntax"
"""ruff's name for a file that does not parse (:class:`SourceError`): a diagnostic of no rule, so its name
stands where a code would, printed ``path:2:11: invalid-syntax: message``."""
IO_ERROR = "E902"
"""ruff's code for a path that cannot be read (pycodestyle's ``io-error``)."""
NOT_ANALYSED: Mapping[str, str] = {INVALID_SYNTAX: "invalid-syntax", IO_ERROR: "io-error"}
"""The codes the command line reports a file it could not analyse under, as ruff does, and their names: a
finding of no np2torch rule (no page), never fixable, an error where findings are warnings."""


@dataclass(frozen=True)
class CellFinding(Finding):
    """A finding in a notebook: ``line``/``end_line`` count inside cell number ``cell`` (1-based)."""

    cell: int = 0


@dataclass(frozen=True)
class FixResult:
    """One text's fix from one analysis: what was found in the text, the fixed text, and what is left in it."""

    findings: tuple[Finding, ...]
    """Every finding in the original text, positions in it.  The fixable ones are exactly those the fix
    rewrote (the rewrite applies every one of them or raises :class:`FixError`)."""
    text: str
    """The fixed text; the original itself (the same object) when nothing was fixable."""
    remaining: tuple[Finding, ...]
    """The findings left in :attr:`text`, positions in it: the ones the fix could not make."""

    @property
    def fixed(self) -> tuple[Finding, ...]:
        """The findings the fix rewrote, positions in the original text."""
        return tuple(finding for finding in self.findings if finding.fixable)


class SourceError(Exception):
    """The text cannot be parsed; ``str(e)`` is one line, ``line``/``column`` are 1-based or None."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.line = line
        self.column = column


class FixError(Exception):
    """The fix cannot be applied safely (LibCST cannot rewrite the text exactly, or the result would not
    compile): a bug in np2torch, and the text must be left as it was."""


_NEWLINE = re.compile(r"\r\n|\r|\n")


class Lines:
    """Source lines split as the tokenizer splits them, and byte-to-character columns."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._lines = _NEWLINE.split(text)

    @property
    def count(self) -> int:
        return len(self._lines)

    @property
    def text(self) -> str:
        """The whole text."""
        return self._text

    def __getitem__(self, line: int) -> str:
        return self._lines[line - 1] if 0 < line <= len(self._lines) else ""

    def spells(self, word: str) -> bool:
        """Whether ``word`` (no line break in it) occurs anywhere in the text (comments and strings included)."""
        return word in self._text

    def matches(self, pattern: re.Pattern[str]) -> bool:
        """Whether ``pattern`` matches in the text (comments and strings included)."""
        return pattern.search(self._text) is not None

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
