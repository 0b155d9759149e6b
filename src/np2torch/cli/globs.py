"""File patterns as ruff reads them: ``exclude``, ``extend-exclude``, ``include``, ``per-file-ignores``.

ruff builds each pattern with the ``globset`` crate, ``literal_separator`` off (``*`` and ``?`` cross
``/``), and matches it twice: made absolute against the file's absolute path (joined to the folder it is
relative to, ``.`` dropped, ``..`` taking off the folder before it, as the ``path-absolutize`` crate
does), and, for every per-file-ignores key, as written against the file's name. An exclude or include
pattern without ``/`` is also kept as written beside its absolute form, in the one set ruff matches the
file's absolute path against (and, for an exclude only, its name): ``*build*`` covers every file below a
folder ``/home/me/build-tools/`` above the project. So ``sub/*.py`` also covers ``sub/deep/c.py``,
``./sub/*.py`` is ``sub/*.py``, ``build/`` is ``build`` at the folder, and ``/build`` the absolute path
``/build``.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Iterable


def glob_regex(pattern: str) -> str:
    """A glob as ruff's ``globset`` reads it (``literal_separator`` off): ``*`` and ``?`` cross ``/``,
    ``**/`` and ``/**`` may match no folder, ``[...]`` (``[!...]``) and ``{a,b}``; ``ValueError`` if unbalanced."""
    out: list[str] = []
    i, n, depth = 0, len(pattern), 0
    while i < n:
        char = pattern[i]
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif char == "*":
            out.append(".*")
            i += 1
        elif char == "?":
            out.append(".")
            i += 1
        elif char == "[":
            first = i + 2 if pattern.startswith(("[!", "[^"), i) else i + 1
            end = pattern.find("]", first + 1)  # a `]` first in the class is one of its characters
            if end == -1:
                raise ValueError(f"unclosed character class in glob {pattern!r}")
            body = pattern[i + 1:end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
            i = end + 1
        elif char == "{":
            out.append("(?:")
            depth += 1
            i += 1
        elif char == "}" and depth:
            out.append(")")
            depth -= 1
            i += 1
        elif char == "," and depth:
            out.append("|")
            i += 1
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    if depth:
        raise ValueError(f"unclosed alternation in glob {pattern!r}")
    return "".join(out)


def glob_escape(text: str) -> str:
    """``text`` as a glob that matches only itself."""
    return re.sub(r"([*?\[\]{}\\])", r"[\1]", text)


def _slashed(path: str) -> str:
    return path.replace(os.sep, "/")


def absolute_glob(folder: str | os.PathLike[str], pattern: str) -> str:
    """``pattern`` made absolute as ruff makes its patterns: joined to ``folder`` (its text escaped) unless
    absolute already, without ``.`` and empty components, each ``..`` taking off the component before it."""
    body = _slashed(pattern)
    if os.path.isabs(pattern):
        first, _, rest = body.partition("/")
        parts, body = [first], rest
    else:
        parts = [glob_escape(part) for part in _slashed(os.fspath(folder)).rstrip("/").split("/")]
    for part in body.split("/"):
        if part == "..":
            if len(parts) > 1:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts) if len(parts) > 1 else parts[0] + "/"


@functools.lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(glob_regex(pattern) + r"\Z", re.DOTALL)


def matches(folder: str | os.PathLike[str], pattern: str, path: str, *, by_name: bool) -> bool:
    """Whether ``pattern`` (relative to ``folder``) matches the file or folder at ``path`` (absolute); with
    ``by_name`` its name too (ruff's per-file-ignores always; an exclude or include pattern without ``/``)."""
    if by_name and _compiled(pattern).match(os.path.basename(path)):
        return True
    return _compiled(absolute_glob(folder, pattern)).match(_slashed(path)) is not None


class FilePatterns:
    """A set of exclude or include patterns relative to one folder, as ruff's ``FilePatternSet`` matches them:
    the path against every pattern, and with ``by_name`` (an exclude; ruff's include reads the path only) the
    name against the patterns without ``/``."""

    def __init__(self, root: str | os.PathLike[str], patterns: Iterable[str], *, by_name: bool = True) -> None:
        self.root = os.path.abspath(root)
        self._patterns = tuple(pattern for pattern in patterns if pattern)
        absolute = [glob_regex(absolute_glob(self.root, pattern)) for pattern in self._patterns]
        names = [glob_regex(pattern) for pattern in self._patterns if "/" not in _slashed(pattern)]
        self._absolute = _alternatives(absolute + names)
        self._names = _alternatives(names if by_name else [])

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def matches(self, path: str) -> bool:
        """Whether ``path`` (absolute) itself, not a folder above it, matches a pattern."""
        return bool(self._absolute.match(_slashed(path)) or self._names.match(os.path.basename(path)))

    def excludes(self, path: str) -> bool:
        """Whether ``path`` or one of its folders below the root matches (``--force-exclude``)."""
        while True:
            if self.matches(path):
                return True
            parent = os.path.dirname(path)
            if parent == path or not _below(parent, self.root):
                return False
            path = parent


def _alternatives(regexes: list[str]) -> re.Pattern[str]:
    return re.compile("(?:" + "|".join(f"(?:{regex})" for regex in regexes) + r")\Z" if regexes else r"(?!)",
                      re.DOTALL)


def _below(path: str, root: str) -> bool:
    try:
        rel = os.path.relpath(path, root)
    except ValueError:  # another drive on Windows
        return False
    return rel != os.curdir and rel != os.pardir and not rel.startswith(os.pardir + os.sep)
