"""The order isort keeps in a block of imports, as ruff's ``I001`` checks it: sections, then keys.

A fix that adds ``import <runtime> as <alias>`` to a block of plain imports puts it
where ruff's import sorting (default settings, or the project's
``[tool.ruff.lint.isort]``/``[tool.isort]``) would, so that a ruff-clean file stays
clean (:func:`np2torch.lint.placement.import_place` decides which positions are
sound; this module only ranks imports).  What decides a section on disk (the
project's source folders, its settings files) is read by the command line
(:mod:`np2torch.cli.import_order`) and arrives here as an :class:`ImportOrder`:
the engine stays text in, text out.

The order, as ruff's ``isort`` rules have it (``crates/ruff_linter/src/rules/isort``):
sections ``__future__``, standard library, third party, first party, local
folder (relative imports), one blank line between them; inside a section every
``import x`` before every ``from x import y`` (``from-first`` reverses that,
``force-sort-within-sections`` mixes them), each by module name compared case
insensitively in natural order (``np2torch`` < ``numpy``: ``p`` < ``u``; ``x2`` <
``x10``), then as spelled, then by the first imported name and its alias.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Union

__all__ = ["LINE_LENGTH", "SECTIONS", "ImportOrder", "sort_key"]

LINE_LENGTH = 88
"""ruff's default ``line-length``."""

SECTIONS = ("future", "standard-library", "third-party", "first-party", "local-folder")
"""The sections in the order isort keeps them; :meth:`ImportOrder.section` gives an index into it."""
_FUTURE, _STDLIB, _THIRD, _FIRST, _LOCAL = range(len(SECTIONS))

_Import = Union[ast.Import, ast.ImportFrom]


@dataclass(frozen=True)
class ImportOrder:
    """What decides where isort puts an import: ruff's ``lint.isort`` settings of the same names, and the
    top-level modules the project holds (what ruff learns from its ``src`` folders).  Tuples, not sets:
    the lint cache keys on ``repr(settings)``, which must not change between runs."""

    known_first_party: tuple[str, ...] = ()
    known_third_party: tuple[str, ...] = ()
    known_local_folder: tuple[str, ...] = ()
    extra_standard_library: tuple[str, ...] = ()
    project_modules: tuple[str, ...] = ()
    """Top-level modules found in the project's source folders (ruff's ``src``, by default the project's
    folder and its ``src/``): first party, unless the standard library has one of that name."""
    force_sort_within_sections: bool = False
    case_sensitive: bool = False
    from_first: bool = False
    line_length: int = LINE_LENGTH
    """ruff's ``line-length`` in the same settings (its E501's, ``lint.pycodestyle.max-line-length`` first):
    not where the import goes, but what ``fix`` notes when it makes a line longer."""

    def section(self, stmt: _Import) -> int:
        """The index in :data:`SECTIONS` of the section isort files ``stmt`` under."""
        if isinstance(stmt, ast.ImportFrom) and stmt.level:
            return _LOCAL
        module = stmt.module or "" if isinstance(stmt, ast.ImportFrom) else stmt.names[0].name
        if module == "__future__":
            return _FUTURE
        known = self._known(module)
        if known is not None:
            return known
        top = module.partition(".")[0]
        if top in _standard_library():
            return _STDLIB
        return _FIRST if top in self.project_modules else _THIRD

    def _known(self, module: str) -> int | None:
        """The section a ``known-*`` setting gives the module or a package holding it (the longest wins)."""
        parts = module.split(".")
        tables = ((self.known_first_party, _FIRST), (self.known_third_party, _THIRD),
                  (self.known_local_folder, _LOCAL), (self.extra_standard_library, _STDLIB))
        for size in range(len(parts), 0, -1):
            name = ".".join(parts[:size])
            for patterns, section in tables:
                if any(fnmatchcase(name, pattern) for pattern in patterns):
                    return section
        return None

    def key(self, stmt: _Import) -> tuple[object, ...]:
        """Where ``stmt`` sorts in the block: its section, then its place inside the section."""
        is_from = isinstance(stmt, ast.ImportFrom)
        if is_from:
            assert isinstance(stmt, ast.ImportFrom)
            module, level, first = stmt.module or "", stmt.level, stmt.names[0]
            member: tuple[object, ...] = (1, *sort_key(first.name, self.case_sensitive), first.asname or "")
        else:
            module, level, first = stmt.names[0].name, 0, stmt.names[0]
            member = (0,)
        kind = 0 if self.force_sort_within_sections else int(is_from != self.from_first)
        return (self.section(stmt), kind, -level, *sort_key(module, self.case_sensitive), member,
                "" if is_from else first.asname or "")


def sort_key(name: str, case_sensitive: bool = False) -> tuple[object, ...]:
    """A module or member name as ruff compares it: natural order (runs of digits as numbers), case
    insensitive unless ``case_sensitive``, ties broken as spelled."""
    natural = _natural(name if case_sensitive else name.lower())
    return (natural, _natural(name))


def _natural(text: str) -> list[tuple[int, int]]:
    # A digit run against a character compares as its first digit would ("0" to "9" sit together in
    # ASCII, so any one of them stands for all): what the natord crate ruff uses does.
    return [(48, int(part)) if part.isdigit() else (ord(part), 0) for part in re.findall(r"[0-9]+|.", text, re.S)]


@lru_cache(maxsize=1)
def _standard_library() -> frozenset[str]:
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return frozenset(names)
    return _standard_library_of_this_interpreter()  # pragma: no cover - Python 3.9 only


def _standard_library_of_this_interpreter() -> frozenset[str]:  # pragma: no cover - Python 3.9 only
    """Python 3.9 has no ``sys.stdlib_module_names``: the modules in its library folder, and the built-in ones."""
    import pkgutil
    import sysconfig

    folder = sysconfig.get_paths()["stdlib"]
    found = {module.name for module in pkgutil.iter_modules([folder])}
    return frozenset(found | set(sys.builtin_module_names) | {"__future__"})
