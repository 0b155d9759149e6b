"""The project's import order, as ruff or isort would read it, for the fix's runtime import.

The engine ranks imports by an :class:`~np2torch.lint.isort.ImportOrder`; this
module fills one in from disk, the way ruff finds its own settings for a file: the
nearest folder at or above the file's with ``.ruff.toml``, ``ruff.toml`` or a
``pyproject.toml`` holding ``[tool.ruff]`` (its ``lint.isort`` table, or the
older ``isort`` one, and ``src``); failing that, a ``pyproject.toml`` with
``[tool.isort]`` (isort's own keys).  Ruff's ``line-length`` comes along (``fix`` notes the lines it makes
longer than it).  First party, besides what ``known-first-party``
lists, is every top-level module in the project's source folders (ruff's ``src``,
by default the project's folder and its ``src/``): in the np2torch project itself
``np2torch`` is first party, and a runtime vendored as ``mypkg._np2torch`` is
first party where ``mypkg`` lies in a source folder.  (ruff looks for the whole
dotted path, ``mypkg/_np2torch``; here the first name stands for it, which is the
same answer wherever the imports name modules that exist.)

A file that cannot be read or parsed, or a value of the wrong type, is passed
over: these are ruff's settings, and ruff reports them; ``check`` needs none of it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Mapping

from np2torch.lint.isort import LINE_LENGTH, ImportOrder

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

_RUFF_FILES = (".ruff.toml", "ruff.toml")
_LISTS = ("known-first-party", "known-third-party", "known-local-folder", "extra-standard-library")
_FLAGS = ("force-sort-within-sections", "case-sensitive", "from-first")


_Found = tuple[Path, Mapping[str, object], tuple[str, ...], int]
"""A settings file, its isort table, its source folders and its line length."""


class ImportOrders:
    """The import order of each folder, found as ruff finds a file's settings: the nearest ruff settings
    at or above the folder, else the nearest ``[tool.isort]``, else the defaults with the source folders of
    ``fallback`` (the project's folder).  Each folder and each file is looked at once."""

    def __init__(self, *, isolated: bool = False) -> None:
        self._isolated = isolated
        self._nearest: dict[tuple[Path, bool], _Found | None] = {}
        self._read: dict[Path, dict[str, object]] = {}
        self._orders: dict[tuple[Path, Path | None], ImportOrder] = {}

    def for_folder(self, folder: Path, fallback: Path) -> ImportOrder:
        """The order for the files in ``folder`` (absolute); ``fallback``: the project's folder, whose source
        folders count when no settings file says otherwise (``--isolated``: always)."""
        found = None if self._isolated else (self._find(folder, ruff=True) or self._find(folder, ruff=False))
        key = (fallback, None) if found is None else (found[0].parent, found[0])
        if key not in self._orders:
            self._orders[key] = _order(found, fallback)
        return self._orders[key]

    def _find(self, folder: Path, *, ruff: bool) -> _Found | None:
        """The nearest ruff settings (``ruff``) or ``[tool.isort]`` table at or above ``folder``."""
        unknown: list[Path] = []
        candidate: Path | None = folder
        found: _Found | None = None
        while candidate is not None:
            if (candidate, ruff) in self._nearest:
                found = self._nearest[(candidate, ruff)]
                break
            unknown.append(candidate)
            found = self._here(candidate, ruff)
            if found is not None:
                break
            candidate = candidate.parent if candidate.parent != candidate else None
        for seen in unknown:
            self._nearest[(seen, ruff)] = found
        return found

    def _here(self, folder: Path, ruff: bool) -> _Found | None:
        if ruff:
            for name in _RUFF_FILES:
                if (folder / name).is_file():
                    data = self._parsed(folder / name)
                    return folder / name, _ruff_isort(data), _sources(data.get("src")), _line_length(data)
        pyproject = folder / "pyproject.toml"
        if not pyproject.is_file():
            return None
        tool = self._parsed(pyproject).get("tool", {})
        table = tool.get("ruff" if ruff else "isort") if isinstance(tool, dict) else None
        if not isinstance(table, dict):
            return None
        if ruff:
            return pyproject, _ruff_isort(table), _sources(table.get("src")), _line_length(table)
        return pyproject, table, _sources(table.get("src_paths")), LINE_LENGTH

    def _parsed(self, path: Path) -> dict[str, object]:
        if path not in self._read:
            self._read[path] = _read(path)
        return self._read[path]


def _order(found: _Found | None, fallback: Path) -> ImportOrder:
    if found is None:
        return ImportOrder(project_modules=_modules_in(fallback, (".", "src")))
    path, table, src, line_length = found
    values: dict[str, Any] = {"line_length": line_length}
    for key in (*_LISTS, *_FLAGS):
        for spelling in (key, key.replace("-", "_")):  # ruff's keys have dashes, isort's underscores
            given = table.get(spelling)
            value = _strings(given) if key in _LISTS else _flag(given)
            if value is not None:
                values[key.replace("-", "_")] = value
    return ImportOrder(project_modules=_modules_in(path.parent, src), **values)


def _line_length(data: Mapping[str, object]) -> int:
    """The line length ruff's E501 holds lines to: ``lint.pycodestyle.max-line-length``, else ``line-length``."""
    lint = data.get("lint")
    for table in ((lint or {}).get("pycodestyle") if isinstance(lint, dict) else None, data.get("pycodestyle")):
        if isinstance(table, dict) and isinstance(table.get("max-line-length"), int):
            return int(table["max-line-length"])
    given = data.get("line-length")
    return given if isinstance(given, int) and not isinstance(given, bool) else LINE_LENGTH


def _ruff_isort(data: Mapping[str, object]) -> Mapping[str, object]:
    lint = data.get("lint")
    for table in ((lint or {}).get("isort") if isinstance(lint, dict) else None, data.get("isort")):
        if isinstance(table, dict):
            return table
    return {}


def _sources(value: object) -> tuple[str, ...]:
    return _strings(value) or (".", "src")


def _strings(value: object) -> tuple[str, ...] | None:
    """``value`` if it is a list of strings (as a tuple), else None."""
    return tuple(value) if isinstance(value, list) and all(isinstance(item, str) for item in value) else None


def _flag(value: object) -> bool | None:
    """``value`` if it is a bool, else None."""
    return value if isinstance(value, bool) else None


def _read(path: Path) -> dict[str, object]:
    """The parsed file; ``{}`` when it cannot be read, names neither ruff nor isort, or is not TOML."""
    try:
        raw = path.read_bytes()
        if b"ruff" not in raw and b"isort" not in raw and path.name == "pyproject.toml":
            return {}
        return tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return {}


def _modules_in(root: Path, folders: tuple[str, ...]) -> tuple[str, ...]:
    """The top-level modules in the source folders: each folder's sub-folders and ``.py`` files, as ruff
    matches an import's first name against ``<src>/<name>`` and ``<src>/<name>.py``."""
    names: set[str] = set()
    for folder in folders:
        try:
            entries = list(os.scandir(root / folder))
        except OSError:
            continue
        for entry in entries:
            name = entry.name[:-3] if entry.name.endswith(".py") else entry.name
            if name.isidentifier() and (entry.name.endswith(".py") or _is_dir(entry)):
                names.add(name)
    return tuple(sorted(names))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
