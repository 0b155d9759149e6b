"""``[tool.np2torch]`` in pyproject.toml (or ``np2torch.toml``), and the options it shares with the CLI.

Like ruff, each path takes its settings from the nearest configuration file at or
above it: in each folder ``.np2torch.toml``, then ``np2torch.toml`` (keys at the top
level, as ``ruff.toml``), then a ``pyproject.toml`` with a ``[tool.np2torch]`` table
(one without the table is passed over).  Keys::

    [tool.np2torch]
    select = ["NPT"]              # rule codes or prefixes; "ALL"
    extend-select = ["NPT019"]    # added to select (or to the defaults)
    ignore = ["NPT004"]
    fixable = ["ALL"]             # the rules whose findings may be fixed (the default)
    extend-fixable = ["NPT901"]   # added to fixable
    unfixable = ["NPT002"]        # reported, never fixed (ruff's `unfixable`)
    per-file-ignores = {"tests/**" = ["NPT"], "!src/**" = ["NPT001"]}
    extend-per-file-ignores = {"bench_*.py" = ["NPT002"]}
    exclude = [...]               # replaces DEFAULT_EXCLUDE
    extend-exclude = ["tests/fixtures"]
    include = ["*.py", "*.ipynb"] # what a folder's walk collects (the default); patterns as exclude's
    extend-include = ["*.pyw"]    # added to include
    extend = "../pyproject.toml"  # inherit that file's settings; this file's keys win
    force-exclude = true          # excludes hold for files named on the command line too
    respect-gitignore = true      # skip what .gitignore ignores (the default)
    unsafe-fixes = false
    runtime-module = "np2torch.runtime"
    alias = "np2t"
    target-version = "py312"      # the oldest Python the code supports, as ruff's
    cache-dir = ".np2torch_cache" # relative to this file's folder
    output-format = "concise"

Exclude, include and ``per-file-ignores`` patterns are globs as ruff reads them
(:mod:`np2torch.cli.globs`): each matches the path relative to the configuration
file's folder (an absolute pattern: the absolute path; ``.`` and ``..`` resolved),
an exclude or include pattern without ``/`` (every ``per-file-ignores`` key) the name
too; ``*`` and ``?`` cross ``/``, ``{a,b}`` is either; a leading ``!`` applies the
per-file-ignores codes to every file the rest does NOT match.

CLI flags override the file, layered as ruff layers them: the file's ``select``
(or the defaults), plus its ``extend-select``, less its ``ignore``; then the
command line's ``--select`` starts over, ``--extend-select`` adds and ``--ignore``
removes; per-file ignores remove last.  ``--config 'KEY = VALUE'`` (TOML) and
``--exclude``/``--extend-exclude`` override every file's value; their patterns are
relative to the working directory.  ``--isolated`` reads no configuration file.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from np2torch.cli.files import FileError, read_regular
from np2torch.cli.globs import FilePatterns, absolute_glob, glob_regex
from np2torch.cli.globs import matches as glob_matches
from np2torch.cli.import_order import ImportOrders
from np2torch.lint.isort import ImportOrder
from np2torch.lint.model import DEFAULT_SETTINGS, Settings, check_alias, check_module
from np2torch.lint.rules import DEFAULT_RULES, RULES, select_rules

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

DEFAULT_INCLUDE: tuple[str, ...] = ("*.py", "*.ipynb")
"""What a folder's walk collects (files named on the command line are read whatever their name)."""

SECTION = "[tool.np2torch]"
CONFIG_NAMES = (".np2torch.toml", "np2torch.toml", "pyproject.toml")
"""The files a folder's settings may come from, in precedence order (as ruff's ``.ruff.toml``, ``ruff.toml``,
``pyproject.toml``)."""
PYPROJECT = "pyproject.toml"
OUTPUT_FORMATS = ("concise", "full", "grouped", "json", "json-lines", "junit", "gitlab", "github", "pylint", "sarif",
                  "rdjson", "azure")
"""``--output-format`` values (``text`` is accepted as ``concise``, np2torch's older name for it)."""
_LIST_KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude", "fixable", "extend-fixable",
              "unfixable", "include", "extend-include")
_TABLE_KEYS = ("per-file-ignores", "extend-per-file-ignores")
_BOOL_KEYS = ("force-exclude", "respect-gitignore", "unsafe-fixes")
_STR_KEYS = ("runtime-module", "alias", "target-version", "cache-dir", "output-format", "extend", "exact")
KNOWN_KEYS = _LIST_KEYS + _TABLE_KEYS + _BOOL_KEYS + _STR_KEYS
_SELECTOR_KEYS = ("select", "extend-select", "ignore", "fixable", "extend-fixable", "unfixable")
_GLOB_KEYS = ("exclude", "extend-exclude", "include", "extend-include")

PerFileIgnores = tuple[tuple[str, tuple[str, ...]], ...]


class ConfigError(Exception):
    """A bad configuration file or option value; ``str()`` is one line."""


@dataclass(frozen=True)
class Config:
    root: Path
    """Absolute folder that exclude and per-file-ignores patterns are relative to."""
    source: Path | None = None
    """The file these settings came from; ``None`` for the defaults."""
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fixable: tuple[str, ...] | None = None
    extend_fixable: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()
    per_file_ignores: PerFileIgnores = ()
    extend_per_file_ignores: PerFileIgnores = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = DEFAULT_INCLUDE
    """The files a folder's walk collects (as ruff's ``include``: patterns as ``exclude``'s)."""
    extend_include: tuple[str, ...] = ()
    force_exclude: bool = False
    respect_gitignore: bool = True
    unsafe_fixes: bool = False
    runtime_module: str | None = None
    alias: str | None = None
    target_version: tuple[int, int] | None = None
    cache_dir: str | None = None
    output_format: str | None = None
    exact: str | None = None
    """The runtime's exactness for the programs ``np2torch run`` runs here (``ulp`` or ``bits``: NP2TORCH_EXACT)."""
    extend: str | None = None
    """The configuration file this one extends, as written (its settings are merged in already)."""
    keys: frozenset[str] = frozenset()
    """The keys the file set (the others have their defaults)."""
    overridden: frozenset[str] = frozenset()
    """The keys ``--config KEY = VALUE`` or ``--exclude``/``--extend-exclude`` set for every file."""
    cli_exclude: tuple[tuple[Path, tuple[str, ...]], ...] = ()
    """Exclude patterns given on the command line, with the folder they are relative to (the working directory),
    and those of a file this one extends (``extend``), relative to that file's folder."""
    import_order: ImportOrder = ImportOrder()
    """The project's import order (ruff's or isort's settings): where a fix's runtime import goes."""

    @property
    def exclude_patterns(self) -> tuple[str, ...]:
        return self.exclude + self.extend_exclude

    @property
    def exclude_groups(self) -> tuple[tuple[Path, tuple[str, ...]], ...]:
        """Every exclude pattern with the folder it is relative to."""
        return ((self.root, self.exclude_patterns), *self.cli_exclude)

    def origin(self, key: str) -> str:
        """Where ``key``'s value comes from: the command line, this file, or the default."""
        if key in self.overridden:
            return "command line"
        if key in self.keys and self.source is not None:
            return display_path(self.source)
        return "default"


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


def check_output_format(value: str) -> str:
    """``value`` if it names an output format (``text``: ``concise``); ``ValueError`` otherwise."""
    if value == "text":
        return "concise"
    if value not in OUTPUT_FORMATS:
        raise ValueError(f"output-format must be one of {', '.join(OUTPUT_FORMATS)}, got {value!r}"
                         + _suggestion(value, OUTPUT_FORMATS))
    return value


def check_exact(value: object) -> str:
    """``ulp`` or ``bits``: the runtime's exactness (``exact = "bits"``: only paths that give the original's bits)."""
    if value not in ("ulp", "bits"):
        raise ValueError(f"must be 'ulp' or 'bits', got {value!r}")
    return str(value)


def check_selectors(values: Sequence[str]) -> tuple[str, ...]:
    """``values`` if every one selects at least one rule; ``ValueError`` naming the first that does not."""
    select_rules(list(values), None)
    return tuple(values)


def check_globs(values: Sequence[str]) -> tuple[str, ...]:
    """``values`` if each is a glob ruff would build; ``ValueError`` naming the first that is not."""
    for value in values:
        glob_regex(value)
    return tuple(values)


def pattern_codes(values: Iterable[str]) -> PerFileIgnores:
    """``--per-file-ignores`` values as ruff's command line takes them: comma-separated ``PATTERN:CODE`` items
    (``"tests/*:NPT001,*.ipynb:NPT"``), grouped by pattern; ``ValueError`` for an item without a code."""
    grouped: dict[str, list[str]] = {}
    for value in values:
        for item in value.split(","):
            pattern, colon, code = item.strip().rpartition(":")
            if not colon or not pattern or not code.strip():
                raise ValueError(f"expected <FilePattern>:<RuleCode>, got {item.strip()!r}")
            check_selectors([code.strip()])
            glob_regex(pattern.lstrip("!"))
            grouped.setdefault(pattern, []).append(code.strip())
    return tuple((pattern, tuple(codes)) for pattern, codes in grouped.items())


def split_codes(values: Iterable[str]) -> tuple[str, ...]:
    """``("NPT001,NPT002", "NPT4")`` -> ``("NPT001", "NPT002", "NPT4")``."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _suggestion(value: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(value, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# ---------------------------------------------------------------- reading files


def _read_toml(path: Path) -> dict[str, object] | None:
    """The parsed ``pyproject.toml``, or ``None`` when it cannot mention np2torch (unrelated files stay unparsed)."""
    raw = _read(path)
    return _parse_toml(raw, display_path(path)) if b"np2torch" in raw else None


def _read_settings_file(path: Path) -> dict[str, object]:
    """The parsed file (an ``np2torch.toml`` is np2torch's whatever it says)."""
    return _parse_toml(_read(path), display_path(path))


def _read(path: Path) -> bytes:
    try:
        raw, _ = read_regular(str(path), display_path(path))
    except FileError as exc:
        raise ConfigError(f"{exc.path}: {exc.message}") from None
    return raw


def _parse_toml(raw: bytes, where: str) -> dict[str, object]:
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or table
        raise ConfigError(f"{where}: invalid TOML: nested too deeply") from None


def _string_list(where: str, key: str, value: object, section: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key!r}{section} must be a list of strings")
    return tuple(value)


def _per_file_ignores(where: str, key: str, value: object, section: str) -> PerFileIgnores:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {key!r}{section} must be a table of glob = [codes]")
    entries = []
    for pattern, codes in value.items():
        listed = _string_list(where, f"{key}.{pattern}", codes, section)
        try:
            check_selectors(listed)
            glob_regex(pattern.lstrip("!"))
        except ValueError as exc:
            raise ConfigError(f"{where}: {key!r}{section}: {exc}") from None
        entries.append((pattern, listed))
    return tuple(entries)


def table_values(table: object, where: str, section: str = f" in {SECTION}") -> dict[str, Any]:
    """The validated values of a settings table, by :class:`Config` field name; ``ConfigError`` names the key."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: {SECTION} must be a table")
    for key in table:
        if key not in KNOWN_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}{section}" + _suggestion(key, KNOWN_KEYS))
    values: dict[str, Any] = {}
    for key in _LIST_KEYS:
        if key in table:
            values[key] = _string_list(where, key, table[key], section)
    for key in _SELECTOR_KEYS + _GLOB_KEYS:
        if key in values:
            try:
                (check_globs if key in _GLOB_KEYS else check_selectors)(values[key])
            except ValueError as exc:
                raise ConfigError(f"{where}: {key!r}{section}: {exc}") from None
    for key in _TABLE_KEYS:
        if key in table:
            values[key] = _per_file_ignores(where, key, table[key], section)
    for key in _BOOL_KEYS:
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{where}: {key!r}{section} must be true or false")
            values[key] = table[key]
    checks = {"runtime-module": check_module, "alias": check_alias, "target-version": check_target_version,
              "output-format": check_output_format, "cache-dir": _check_folder, "extend": _check_folder,
              "exact": check_exact}
    for key, check in checks.items():
        if key in table:
            try:
                values[key] = check(table[key])
            except ValueError as exc:
                raise ConfigError(f"{where}: {key!r}{section}: {exc}") from None
    return {key.replace("-", "_"): value for key, value in values.items()}


def _check_folder(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"must be a folder path, got {value!r}")
    return value


def config_from_table(table: object, path: Path, section: str = f" in {SECTION}", extending: tuple[Path, ...] = ()) -> Config:
    """Validate a settings table read from ``path`` (``[tool.np2torch]``, or an ``np2torch.toml``'s top level);
    with ``extend``, merged onto the settings of the file it names (``extending``: the files on the way)."""
    values = table_values(table, display_path(path), section)
    keys = frozenset(name.replace("_", "-") for name in values)
    config = Config(root=path.parent, source=path, keys=keys, **values)
    if config.extend is None:
        return config
    return _merged(_extended(path, config.extend, extending), config)


def _extended(path: Path, base: str, extending: tuple[Path, ...]) -> Config:
    """The settings of the file ``extend = base`` names in ``path`` (relative to its folder, ``~`` and
    ``$VARS`` expanded, as ruff's): its ``[tool.np2torch]``, or an ``np2torch.toml``'s top level."""
    target = Path(os.path.abspath(path.parent / os.path.expandvars(os.path.expanduser(base))))
    where = display_path(path)
    if target in (*extending, path):
        chain = " -> ".join(display_path(p) for p in (*extending, path, target))
        raise ConfigError(f"{where}: 'extend' makes a cycle: {chain}")
    if not target.is_file():
        raise ConfigError(f"{where}: 'extend': no such file {display_path(target)}")
    data = _read_settings_file(target)
    tool = data.get("tool")
    if isinstance(tool, dict) and "np2torch" in tool:
        return config_from_table(tool["np2torch"], target, extending=(*extending, path))
    if target.name == PYPROJECT:
        raise ConfigError(f"{where}: 'extend': {display_path(target)} has no {SECTION} table")
    return config_from_table(data, target, "", extending=(*extending, path))


_PATTERN_KEYS = ("exclude", "extend-exclude", "include", "extend-include", "per-file-ignores",
                 "extend-per-file-ignores")


def _merged(base: Config, config: Config) -> Config:
    """``config`` on top of ``base``: each key ``config`` sets wins; the others are ``base``'s, its patterns
    still relative to its own folder (exclude patterns as a group of their own, include and per-file-ignores
    patterns made absolute)."""
    values: dict[str, Any] = {}
    groups: list[tuple[Path, tuple[str, ...]]] = []
    for key in base.keys - config.keys:
        name = key.replace("-", "_")
        value = getattr(base, name)
        if key in ("per-file-ignores", "extend-per-file-ignores"):
            value = tuple((_absolute_glob(base.root, pattern), codes) for pattern, codes in value)
        elif key in ("include", "extend-include"):
            value = tuple(_absolute_glob(base.root, pattern) for pattern in value)
        elif key in ("exclude", "extend-exclude"):
            groups.append((base.root, value))
            value = () if key == "exclude" else config.extend_exclude
        values[name] = value
    return dataclasses.replace(config, **values, keys=config.keys | base.keys,
                               cli_exclude=base.cli_exclude + tuple(groups) + config.cli_exclude)


# A requirement's name: PEP 508 starts with it, PEP 503 normalises runs of "-_." to one "-".
_REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _requirement_names(value: object) -> Iterable[str]:
    """The names a dependency list or table mentions (PEP 621 lists, dependency groups, Poetry tables)."""
    if isinstance(value, dict):
        yield from value  # Poetry: {name = version}
    elif isinstance(value, list):
        for item in value:
            match = _REQUIREMENT_NAME.match(item) if isinstance(item, str) else None
            if match:
                yield match.group(1)


def _dependency_lists(data: dict[str, object]) -> Iterable[object]:
    project = data.get("project")
    if not isinstance(project, dict):
        project = {}
    yield project.get("dependencies")
    for table in (project.get("optional-dependencies"), data.get("dependency-groups")):
        if isinstance(table, dict):
            yield from table.values()
    tool = data.get("tool")
    poetry = tool.get("poetry", {}) if isinstance(tool, dict) else {}
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
        if (candidate / PYPROJECT).is_file():
            return candidate / PYPROJECT
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
    """The settings in ``path``: a ``pyproject.toml``'s ``[tool.np2torch]`` (``None`` when it has no such
    table), or an ``np2torch.toml``'s top level (an empty one is the defaults, rooted at its folder)."""
    path = Path(os.path.abspath(path))
    if path.name != PYPROJECT:
        return config_from_table(_read_settings_file(path), path, "")
    data = _read_toml(path)
    if data is None:
        return None
    tool = data.get("tool")
    if not isinstance(tool, dict) or "np2torch" not in tool:
        return None
    return config_from_table(tool["np2torch"], path)


def load_explicit_config(path: str) -> Config:
    """``--config PATH``: the file must exist; a ``pyproject.toml`` (or any file with a ``[tool.np2torch]``
    table) gives that table, any other file its top level, as an ``np2torch.toml``."""
    file = Path(os.path.abspath(path))
    if not file.is_file():
        raise ConfigError(f"{path}: " + ("not a regular file" if file.exists() else "no such configuration file"))
    data = _read_settings_file(file)
    tool = data.get("tool")
    if isinstance(tool, dict) and "np2torch" in tool:
        return config_from_table(tool["np2torch"], file)
    if file.name == PYPROJECT or (data and set(data) <= {"tool", "project", "build-system"}):
        raise ConfigError(f"{path}: no {SECTION} table")
    return config_from_table(data, file, "")


def is_inline_setting(value: str) -> bool:
    """Whether a ``--config`` value is ``KEY = VALUE`` rather than a path (as ruff tells them apart)."""
    return not os.path.exists(value) and "=" in value


def inline_settings(values: Sequence[str]) -> dict[str, Any]:
    """``--config 'KEY = VALUE'`` options (each a line of TOML) as validated :class:`Config` field values."""
    table: dict[str, object] = {}
    for value in values:
        try:
            parsed = tomllib.loads(value)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"--config {value!r}: neither a file nor a valid TOML `KEY = VALUE`: {exc}") from None
        table.update(parsed)
    return table_values(table, "--config", "")


@dataclass(frozen=True)
class Overlay:
    """What the command line sets for every file: ``--config 'KEY = VALUE'``, ``--exclude``, ``--extend-exclude``."""

    values: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """:class:`Config` field values, as :func:`inline_settings` returns them."""
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    cwd: Path = dataclasses.field(default_factory=lambda: Path(os.path.abspath(os.getcwd())))
    extend_per_file_ignores: PerFileIgnores = ()
    """``--extend-per-file-ignores``: added to every file's own (``--per-file-ignores`` replaces them: ``values``)."""

    def __bool__(self) -> bool:
        return bool(self.values) or self.exclude is not None or bool(self.extend_exclude) or bool(
            self.extend_per_file_ignores)

    def apply(self, config: Config) -> Config:
        values = dict(self.values)
        # Patterns given here are relative to the working directory (as ruff's command line), not to the file.
        extra: list[tuple[Path, tuple[str, ...]]] = []
        exclude = values.pop("exclude", None) if self.exclude is None else self.exclude
        if exclude is not None:
            values["exclude"] = ()
            extra.append((self.cwd, tuple(exclude)))
        extend = tuple(values.pop("extend_exclude", ())) + self.extend_exclude
        if extend:
            extra.append((self.cwd, extend))
        if "cache_dir" in values:
            values["cache_dir"] = os.path.join(self.cwd, values["cache_dir"])
        for key in ("per_file_ignores", "extend_per_file_ignores"):
            if key in values:  # relative to the working directory too: made absolute
                values[key] = tuple((_absolute_glob(self.cwd, pattern), codes) for pattern, codes in values[key])
        for key in ("include", "extend_include"):
            if key in values:
                values[key] = tuple(_absolute_glob(self.cwd, pattern) for pattern in values[key])
        if self.extend_per_file_ignores:
            values["extend_per_file_ignores"] = (
                *values.get("extend_per_file_ignores", config.extend_per_file_ignores),
                *((_absolute_glob(self.cwd, pattern), codes) for pattern, codes in self.extend_per_file_ignores))
        overridden = {name.replace("_", "-") for name in values}
        overridden |= {"exclude"} if exclude is not None else set()
        overridden |= {"extend-exclude"} if extend else set()
        return dataclasses.replace(config, **values, cli_exclude=config.cli_exclude + tuple(extra),
                                   overridden=config.overridden | overridden)


def _absolute_glob(folder: Path, pattern: str) -> str:
    """A per-file-ignores or include pattern relative to ``folder``, made absolute; a name pattern (no ``/``)
    stays a name, matched against the file's name wherever the pattern lands."""
    negated = pattern.startswith("!")
    body = pattern[1:] if negated else pattern
    if "/" not in body.replace(os.sep, "/"):
        return pattern
    return ("!" if negated else "") + absolute_glob(folder, body)


class ConfigFinder:
    """Finds, for each folder, the config that governs it; memoized per folder.

    ``override``: ``--config PATH``, for every file; ``isolated``: no file at all (``--isolated``);
    ``overlay``: what the command line sets on top of whichever applies.
    """

    def __init__(self, override: Config | None = None, cwd: Path | None = None, *, isolated: bool = False,
                 overlay: Overlay | None = None) -> None:
        self._overlay = overlay or Overlay()
        self.cwd = Path(os.path.abspath(cwd or os.getcwd()))
        self._isolated = isolated
        self._orders = ImportOrders(isolated=isolated)
        self._ordered: dict[str, Config] = {}
        self._variants: dict[tuple[int, ImportOrder], Config] = {}
        self._override = None if override is None else self._overlaid(override)
        self._default = self._overlaid(Config(root=self.cwd))
        self._memo: dict[str, Config] = {}

    def _overlaid(self, config: Config) -> Config:
        return self._overlay.apply(config) if self._overlay else config

    def for_directory(self, directory: str) -> Config:
        """Settings for files in ``directory`` (an absolute path): its nearest folder, upwards, with a config,
        and the import order ruff's or isort's settings nearest to it give (the config's folder standing for
        the project's when there are none)."""
        found = self._ordered.get(directory)
        if found is None:
            config = self._config_for(directory)
            order = self._orders.for_folder(Path(directory), config.root if not self._isolated else self.cwd)
            key = (id(config), order)
            if key not in self._variants:  # one Config per order: a folder's matchers are built once per Config
                self._variants[key] = config if config.import_order == order else dataclasses.replace(
                    config, import_order=order)
            found = self._ordered[directory] = self._variants[key]
        return found

    def _config_for(self, directory: str) -> Config:
        """The config of the nearest folder, upwards, that has one.

        A loop, not a recursion: a path may be thousands of folders deep.
        """
        if self._override is not None:
            return self._override
        if self._isolated:
            return self._default
        unknown: list[str] = []
        found = self._memo.get(directory)
        while found is None:
            unknown.append(directory)
            found = self._in_folder(directory)
            if found is None:
                parent = os.path.dirname(directory)
                found = self._default if parent == directory else self._memo.get(parent)
                directory = parent
        for folder in unknown:
            self._memo[folder] = found
        return found

    def _in_folder(self, directory: str) -> Config | None:
        for name in CONFIG_NAMES:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                found = load_config(Path(candidate))
                if found is not None:
                    return self._overlaid(found)
        return None

    def for_file(self, path: str) -> Config:
        return self.for_directory(os.path.dirname(os.path.abspath(path)))

    def project(self) -> Config:
        """The settings of the working directory: where the run-wide ones come from (cache-dir, output-format)."""
        return self.for_directory(str(self.cwd))


# ---------------------------------------------------------------- per-file-ignores


def per_file_ignored(config: Config, path: str) -> tuple[str, ...]:
    """The selectors ``per-file-ignores`` and ``extend-per-file-ignores`` ignore in the file at ``path``
    (absolute); a ``!pattern`` applies to the files the pattern does not match."""
    ignored: list[str] = []
    for pattern, codes in config.per_file_ignores + config.extend_per_file_ignores:
        negated = pattern.startswith("!")
        if glob_matches(config.root, pattern[1:] if negated else pattern, path, by_name=True) != negated:
            ignored.extend(codes)
    return tuple(ignored)


# ---------------------------------------------------------------- exclude patterns


class Excluder:
    """A config's exclude patterns, each group relative to its own folder (the file's, the working directory's)."""

    def __init__(self, config: Config) -> None:
        self._matchers = [FilePatterns(root, patterns) for root, patterns in config.exclude_groups if patterns]

    def matches(self, path: str) -> bool:
        return any(m.matches(path) for m in self._matchers)

    def excludes(self, path: str) -> bool:
        return any(m.excludes(path) for m in self._matchers)


# ---------------------------------------------------------------- merging with the CLI


@dataclass(frozen=True)
class Overrides:
    """What the command line says; ``None`` means "not given"."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    runtime_module: str | None = None
    alias: str | None = None
    unsafe_fixes: bool | None = None
    target_version: tuple[int, int] | None = None
    extend_select: tuple[str, ...] = ()
    ignore_noqa: bool = False
    fixable: tuple[str, ...] | None = None
    extend_fixable: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()


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


def _codes(selectors: Sequence[str]) -> set[str]:
    return {rule.code for rule in select_rules(list(selectors), None)}


def selected_codes(config: Config, overrides: Overrides, ignored_here: Sequence[str] = ()) -> set[str]:
    """The codes a file runs, layered as ruff layers them: the file's ``select`` (or the defaults), its
    ``extend-select`` and ``ignore``; then the command line's; then the file's per-file ignores."""
    codes = {rule.code for rule in DEFAULT_RULES}
    for select, extend, ignore in ((config.select, config.extend_select, config.ignore),
                                   (overrides.select, overrides.extend_select, overrides.ignore)):
        if select is not None:
            codes = _codes(select)
        codes = (codes | _codes(extend)) - _codes(ignore)
    return codes - _codes(ignored_here)


def fixable_codes(config: Config, overrides: Overrides) -> set[str]:
    """The codes whose findings may be fixed, layered as ruff layers ``fixable`` (default ``ALL``),
    ``extend-fixable`` and ``unfixable``: the file's, then the command line's."""
    codes = {rule.code for rule in RULES}
    for fixable, extend, unfixable in ((config.fixable, config.extend_fixable, config.unfixable),
                                       (overrides.fixable, overrides.extend_fixable, overrides.unfixable)):
        if fixable is not None:
            codes = _codes(fixable)
        codes = (codes | _codes(extend)) - _codes(unfixable)
    return codes


def run_settings(config: Config, overrides: Overrides, path: str | None = None) -> RunSettings:
    """The settings of the files ``config`` governs (of the file at absolute ``path`` when given: its
    per-file-ignores apply), with the command line's ``overrides``."""
    codes = selected_codes(config, overrides, per_file_ignored(config, path) if path is not None else ())
    unsafe = overrides.unsafe_fixes if overrides.unsafe_fixes is not None else config.unsafe_fixes
    lint = Settings(rules=tuple(sorted((rule for rule in RULES if rule.code in codes), key=lambda r: r.code)),
                    runtime_module=overrides.runtime_module or config.runtime_module or DEFAULT_SETTINGS.runtime_module,
                    alias=overrides.alias or config.alias or DEFAULT_SETTINGS.alias,
                    unsafe_fixes=unsafe, import_order=config.import_order, ignore_noqa=overrides.ignore_noqa,
                    unfixable=tuple(sorted(codes - fixable_codes(config, overrides))))
    return RunSettings(lint, overrides.target_version or config.target_version)


def settings_for_file(path: str, overrides: Overrides = Overrides(), finder: ConfigFinder | None = None) -> RunSettings | None:
    """The settings ``np2torch check --force-exclude`` gives the file at ``path``, or ``None`` when its
    config excludes it: what an editor integration that is handed one file lints it with (the flake8
    plugin, the language server).  ``finder`` keeps what it read between calls; raises :class:`ConfigError`."""
    path = os.path.abspath(path)
    config = (finder or ConfigFinder()).for_file(path)
    if Excluder(config).excludes(path):
        return None
    return run_settings(config, overrides, path)
