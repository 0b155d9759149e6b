"""``[tool.np2torch]`` in pyproject.toml, and the options it shares with the CLI.

Like ruff, each path takes its settings from the nearest ``pyproject.toml`` at or
above it that has a ``[tool.np2torch]`` table; a ``pyproject.toml`` without one is
passed over.  Keys::

    [tool.np2torch]
    select = ["NPT"]              # rule codes or prefixes; "ALL"
    ignore = ["NPT004"]
    exclude = [...]               # replaces DEFAULT_EXCLUDE
    extend-exclude = ["tests/fixtures"]
    runtime-module = "np2torch.runtime"
    alias = "np2t"
    target-version = "py312"      # the oldest Python the code supports, as ruff's

Exclude patterns are gitignore-like globs relative to the folder that holds the
``pyproject.toml``: a pattern without ``/`` matches a file or folder name at any
depth, one with ``/`` is anchored at that folder, ``*`` stays within one path
component, ``**`` crosses them, and a trailing ``/`` matches folders only.

CLI flags override the file: ``--select`` replaces both ``select`` and ``ignore``
from the file, ``--ignore`` adds to ``ignore``.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from np2torch.cli.files import FileError, read_regular
from np2torch.lint.model import DEFAULT_SETTINGS, Settings, check_alias, check_module
from np2torch.lint.rules import select_rules

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".git",
    ".venv",
    "venv",
    "build",
    "dist",
    "__pycache__",
    ".tox",
    ".nox",
    "node_modules",
    "site-packages",
)

SECTION = "[tool.np2torch]"
_LIST_KEYS = ("select", "ignore", "exclude", "extend-exclude")
_STR_KEYS = ("runtime-module", "alias", "target-version")
KNOWN_KEYS = _LIST_KEYS + _STR_KEYS


class ConfigError(Exception):
    """A bad configuration file or option value; ``str()`` is one line."""


@dataclass(frozen=True)
class Config:
    root: Path
    """Absolute folder that exclude patterns are relative to."""
    source: Path | None = None
    """The file these settings came from; ``None`` for the defaults."""
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    runtime_module: str | None = None
    alias: str | None = None
    target_version: tuple[int, int] | None = None

    @property
    def exclude_patterns(self) -> tuple[str, ...]:
        return self.exclude + self.extend_exclude


def display_path(path: os.PathLike[str] | str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    text = os.fspath(path)
    try:
        rel = os.path.relpath(text)
    except ValueError:  # another drive on Windows
        return text
    return text if rel.startswith(os.pardir) else rel


# ---------------------------------------------------------------- validation


_TARGET_VERSION = re.compile(r"py3(\d{1,2})\Z")


def check_target_version(value: str) -> tuple[int, int]:
    """``"py312"`` -> ``(3, 12)``; ``ValueError`` for anything else (ruff's spelling: py37 ... py314)."""
    match = _TARGET_VERSION.match(value) if isinstance(value, str) else None
    if match is None or not 7 <= int(match.group(1)) <= 14:
        raise ValueError(f"target-version must be one of py37 ... py314 (as ruff's), got {value!r}")
    return 3, int(match.group(1))


def check_selectors(values: Sequence[str]) -> tuple[str, ...]:
    """``values`` if every one selects at least one rule; ``ValueError`` naming the first that does not."""
    select_rules(list(values), None)
    return tuple(values)


def split_codes(values: Iterable[str]) -> tuple[str, ...]:
    """``("NPT001,NPT002", "NPT4")`` -> ``("NPT001", "NPT002", "NPT4")``."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


# ---------------------------------------------------------------- reading files


def _read_toml(path: Path) -> dict[str, Any] | None:
    """The parsed file, or ``None`` when it cannot mention np2torch (skips parsing unrelated files)."""

    try:
        raw, _ = read_regular(str(path), display_path(path))
    except FileError as exc:
        raise ConfigError(f"{exc.path}: {exc.message}") from None
    if b"np2torch" not in raw:
        return None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{display_path(path)}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or table
        raise ConfigError(f"{display_path(path)}: invalid TOML: nested too deeply") from None


def _string_list(where: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key!r} in {SECTION} must be a list of strings")
    return tuple(value)


def config_from_table(table: Any, path: Path) -> Config:
    """Validate a ``[tool.np2torch]`` table read from ``path``."""
    where = display_path(path)
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: {SECTION} must be a table")
    for key in table:
        if key not in KNOWN_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r} in {SECTION}")
    values: dict[str, Any] = {}
    for key in _LIST_KEYS:
        if key in table:
            values[key] = _string_list(where, key, table[key])
    for key in ("select", "ignore"):
        if key in values:
            try:
                check_selectors(values[key])
            except ValueError as exc:
                raise ConfigError(f"{where}: {key!r} in {SECTION}: {exc}") from None
    for key, check in (("runtime-module", check_module), ("alias", check_alias),
                       ("target-version", check_target_version)):
        if key in table:
            try:
                values[key] = check(table[key])
            except ValueError as exc:
                raise ConfigError(f"{where}: {key!r} in {SECTION}: {exc}") from None
    return Config(
        root=path.parent,
        source=path,
        select=values.get("select"),
        ignore=values.get("ignore", ()),
        exclude=values.get("exclude", DEFAULT_EXCLUDE),
        extend_exclude=values.get("extend-exclude", ()),
        runtime_module=values.get("runtime-module"),
        alias=values.get("alias"),
        target_version=values.get("target-version"),
    )


# A requirement's name: PEP 508 starts with it, PEP 503 normalises runs of "-_." to one "-".
_REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _requirement_names(value: Any) -> Iterable[str]:
    """The names a dependency list or table mentions (PEP 621 lists, dependency groups, Poetry tables)."""
    if isinstance(value, dict):
        yield from value  # Poetry: {name = version}
    elif isinstance(value, list):
        for item in value:
            match = _REQUIREMENT_NAME.match(item) if isinstance(item, str) else None
            if match:
                yield match.group(1)


def _dependency_lists(data: dict[str, Any]) -> Iterable[Any]:
    project = data.get("project")
    if not isinstance(project, dict):
        project = {}
    yield project.get("dependencies")
    for table in (project.get("optional-dependencies"), data.get("dependency-groups")):
        if isinstance(table, dict):
            yield from table.values()
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
    if isinstance(poetry, dict):
        yield poetry.get("dependencies")
        yield poetry.get("dev-dependencies")
        groups = poetry.get("group")
        if isinstance(groups, dict):
            yield from (g.get("dependencies") for g in groups.values() if isinstance(g, dict))


def project_file(path: str) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``path``'s folder, with or without ``[tool.np2torch]``."""
    folder = Path(os.path.abspath(path)).parent
    for candidate in (folder, *folder.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate / "pyproject.toml"
    return None


def depends_on(pyproject: Path, distribution: str) -> bool:
    """Whether ``pyproject`` names ``distribution`` among the project's dependencies (any list of them)."""
    try:
        data = tomllib.loads(pyproject.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return False  # the notice errs on the side of being printed
    wanted = re.sub(r"[-_.]+", "-", distribution).lower()
    return any(re.sub(r"[-_.]+", "-", name).lower() == wanted
               for value in _dependency_lists(data) for name in _requirement_names(value))


def load_config(path: Path) -> Config | None:
    """The ``[tool.np2torch]`` settings in ``path``, or ``None`` when it has no such table."""
    path = Path(os.path.abspath(path))
    data = _read_toml(path)
    if data is None:
        return None
    tool = data.get("tool")
    if not isinstance(tool, dict) or "np2torch" not in tool:
        return None
    return config_from_table(tool["np2torch"], path)


def load_explicit_config(path: str) -> Config:
    """``--config PATH``: the file must exist and hold a ``[tool.np2torch]`` table."""
    file = Path(os.path.abspath(path))
    if not file.is_file():
        raise ConfigError(f"{path}: " + ("not a regular file" if file.exists() else "no such configuration file"))
    config = load_config(file)
    if config is None:
        raise ConfigError(f"{path}: no {SECTION} table")
    return config


class ConfigFinder:
    """Finds, for each folder, the config that governs it; memoized per folder."""

    def __init__(self, override: Config | None = None, cwd: Path | None = None) -> None:
        self._override = override
        self._default = Config(root=Path(os.path.abspath(cwd or os.getcwd())))
        self._memo: dict[str, Config] = {}

    def for_directory(self, directory: str) -> Config:
        """Settings for files in ``directory`` (an absolute path)."""
        if self._override is not None:
            return self._override
        found = self._memo.get(directory)
        if found is None:
            candidate = os.path.join(directory, "pyproject.toml")
            found = load_config(Path(candidate)) if os.path.isfile(candidate) else None
            if found is None:
                parent = os.path.dirname(directory)
                found = self._default if parent == directory else self.for_directory(parent)
            self._memo[directory] = found
        return found

    def for_file(self, path: str) -> Config:
        return self.for_directory(os.path.dirname(os.path.abspath(path)))


# ---------------------------------------------------------------- exclude patterns


def _glob_to_regex(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    anchored: bool
    dirs_only: bool


class PathMatcher:
    """Matches absolute paths against one config's exclude patterns."""

    def __init__(self, root: Path, patterns: Iterable[str]) -> None:
        self.root = os.path.abspath(root)
        self._patterns: list[_Pattern] = []
        for raw in patterns:
            pattern = raw.replace(os.sep, "/").strip()
            if not pattern:
                continue
            dirs_only = pattern.endswith("/")
            pattern = pattern.rstrip("/")
            anchored = "/" in pattern
            pattern = pattern.lstrip("/")
            if pattern.startswith("./"):
                pattern = pattern[2:]
            regex = re.compile(_glob_to_regex(pattern) + r"\Z", re.DOTALL)
            self._patterns.append(_Pattern(regex, anchored, dirs_only))

    def _relative(self, path: str) -> str | None:
        try:
            rel = os.path.relpath(path, self.root)
        except ValueError:
            return None
        if rel == os.curdir or rel.startswith(os.pardir):
            return None
        return rel.replace(os.sep, "/")

    def matches(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` itself (not its parents) is excluded."""
        rel = self._relative(path)
        name = os.path.basename(path)
        for p in self._patterns:
            if p.dirs_only and not is_dir:
                continue
            if p.anchored:
                if rel is not None and p.regex.match(rel):
                    return True
            elif p.regex.match(name):
                return True
        return False

    def excludes(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` or one of its folders below the root is excluded (``--force-exclude``)."""
        if self.matches(path, is_dir):
            return True
        parent = os.path.dirname(path)
        while self._relative(parent) is not None:
            if self.matches(parent, is_dir=True):
                return True
            parent = os.path.dirname(parent)
        return False


# ---------------------------------------------------------------- merging with the CLI


@dataclass(frozen=True)
class Overrides:
    """What the command line says; ``None`` means "not given"."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    runtime_module: str | None = None
    alias: str | None = None
    unsafe_fixes: bool = False
    target_version: tuple[int, int] | None = None


@dataclass(frozen=True)
class RunSettings:
    """Everything that decides a file's result: the engine's settings, built once per configuration
    (:func:`run_settings`), and the project's target Python.  Hashable and cheap to send to a worker
    process (:class:`Settings` pickles its rules as their codes)."""

    lint: Settings = DEFAULT_SETTINGS
    target_version: tuple[int, int] | None = None
    """The oldest Python the code supports; decides whether syntax this interpreter cannot read is an error."""

    @property
    def codes(self) -> tuple[str, ...]:
        """The selected rules' codes, in table order."""
        return tuple(rule.code for rule in self.lint.rules)


def run_settings(config: Config, overrides: Overrides) -> RunSettings:
    """The settings of the files ``config`` governs, with the command line's ``overrides``."""
    if overrides.select is not None:
        select: tuple[str, ...] | None = overrides.select
        ignore = overrides.ignore
    else:
        select, ignore = config.select, config.ignore + overrides.ignore
    lint = Settings(rules=select_rules(None if select is None else list(select), list(ignore)),
                    runtime_module=overrides.runtime_module or config.runtime_module or DEFAULT_SETTINGS.runtime_module,
                    alias=overrides.alias or config.alias or DEFAULT_SETTINGS.alias,
                    unsafe_fixes=overrides.unsafe_fixes)
    return RunSettings(lint, overrides.target_version or config.target_version)


def settings_for_file(path: str, overrides: Overrides = Overrides(), finder: ConfigFinder | None = None) -> RunSettings | None:
    """The settings ``np2torch check --force-exclude`` gives the file at ``path``, or ``None`` when its
    config excludes it: what an editor integration that is handed one file lints it with (the flake8
    plugin, the language server).  ``finder`` keeps what it read between calls; raises :class:`ConfigError`."""
    path = os.path.abspath(path)
    config = (finder or ConfigFinder()).for_file(path)
    if PathMatcher(config.root, config.exclude_patterns).excludes(path, is_dir=False):
        return None
    return run_settings(config, overrides)
