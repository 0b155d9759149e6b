"""What an editor may set, named as ruff's language server names its settings (docs/editors.md, "Settings").

They come as the client's ``initializationOptions`` and, later, as its ``np2torch``
section of ``workspace/didChangeConfiguration`` (a key given there replaces the
same key of the initialization options).  Either may be the settings themselves,
``{"np2torch": {...}}`` (a settings section) or ``{"settings": {...}}`` (the shape
ruff's VS Code extension sends)::

    {"configuration": "~/np2torch.toml",            # a file for every document, or an inline table
     "lint": {"select": ["NPT0"], "extendSelect": ["NPT901"], "ignore": ["NPT002"],
              "perFileIgnores": {"tests/*": ["NPT001"]}},
     "unsafeFixes": false, "fixAll": true, "logLevel": "info"}

``lint.*`` act as ``np2torch check``'s ``--select``/``--extend-select``/``--ignore``
(on top of the file's configuration); ``lint.perFileIgnores`` and an inline
``configuration`` as ``--config 'KEY = VALUE'`` (they replace the file's key).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from np2torch.cli.config import ConfigError, ConfigFinder, Overlay, Overrides, load_explicit_config, table_values

SECTION = "np2torch"
LOG_LEVELS = {"error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG,
              "trace": logging.DEBUG}
_TOP = {"configuration", "lint", "unsafeFixes", "fixAll", "logLevel"}
_LINT = {"select": "select", "extendSelect": "extend-select", "ignore": "ignore", "perFileIgnores": "per-file-ignores"}


@dataclass(frozen=True)
class ClientSettings:
    """The editor's settings, validated (:func:`client_settings`)."""

    raw: Mapping[str, object] = field(default_factory=dict)
    """As the client sent them, merged (what a later ``didChangeConfiguration`` is laid over)."""
    lint: Mapping[str, Any] = field(default_factory=dict)
    """``lint.*`` as :class:`~np2torch.cli.config.Config` field values (``select``, ``extend_select``, ...)."""
    configuration: str | None = None
    """A configuration file for every document (``~`` and ``$VARIABLES`` expanded; relative to the workspace root)."""
    inline: Mapping[str, Any] = field(default_factory=dict)
    """An inline ``configuration`` table, as :class:`~np2torch.cli.config.Config` field values."""
    unsafe_fixes: bool | None = None
    fix_all: bool = True
    log_level: str = "info"

    def overrides(self, started_unsafe: bool) -> Overrides:
        """What the command line would say: ``--select``, ``--extend-select``, ``--ignore``, ``--unsafe-fixes``."""
        unsafe = True if started_unsafe else self.unsafe_fixes
        return Overrides(select=self.lint.get("select"), extend_select=self.lint.get("extend_select", ()),
                         ignore=self.lint.get("ignore", ()), unsafe_fixes=unsafe)

    def finder(self, root: Path) -> ConfigFinder:
        """Where each document's settings come from; patterns given here are relative to the workspace ``root``."""
        values = {**self.inline}
        if "per_file_ignores" in self.lint:
            values["per_file_ignores"] = self.lint["per_file_ignores"]
        override = load_explicit_config(os.path.join(root, self.configuration)) if self.configuration else None
        return ConfigFinder(override, root, overlay=Overlay(values, cwd=root))


def section(options: object) -> dict[str, object] | None:
    """np2torch's settings in what a client sent, or ``None`` when it sent none of them."""
    if isinstance(options, dict):
        for wrapper in (SECTION, "settings"):
            if isinstance(options.get(wrapper), dict):
                return dict(options[wrapper])
        if _TOP & options.keys():
            return dict(options)
    return None


def merged(base: Mapping[str, object], update: Mapping[str, object]) -> dict[str, object]:
    """``update`` laid over ``base``; the ``lint`` tables key by key."""
    result = {**base, **update}
    base_lint, update_lint = base.get("lint"), update.get("lint")
    if isinstance(base_lint, dict) and isinstance(update_lint, dict):
        result["lint"] = {**base_lint, **update_lint}
    return result


def client_settings(raw: Mapping[str, object]) -> tuple[ClientSettings, list[str]]:
    """The validated settings, and a warning per key np2torch does not know (ignored, as ruff ignores them).

    Raises :class:`ConfigError` naming the setting whose value is wrong."""
    unknown = [key for key in raw if key not in _TOP]
    lint = raw.get("lint", {})
    if not isinstance(lint, dict):
        raise ConfigError("editor settings: 'lint' must be an object")
    unknown += [f"lint.{key}" for key in lint if key not in _LINT]
    table = {_LINT[key]: value for key, value in lint.items() if key in _LINT}
    values = table_values(table, "editor settings", section=" in 'lint'")
    configuration, inline = raw.get("configuration"), {}
    if isinstance(configuration, dict):
        inline, configuration = table_values(configuration, "editor settings", section=" in 'configuration'"), None
    elif isinstance(configuration, str):
        configuration = os.path.expandvars(os.path.expanduser(configuration))
    elif configuration is not None:
        raise ConfigError("editor settings: 'configuration' must be a file path or an object")
    settings = ClientSettings(dict(raw), values, configuration, inline, _flag(raw, "unsafeFixes"),
                              _flag(raw, "fixAll") is not False, _log_level(raw.get("logLevel", "info")))
    return settings, [f"{SECTION}: unknown setting {key!r} ignored" for key in unknown]


def _flag(raw: Mapping[str, object], key: str) -> bool | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"editor settings: {key!r} must be true or false")
    return value


def _log_level(value: object) -> str:
    if value not in LOG_LEVELS:
        raise ConfigError(f"editor settings: 'logLevel' must be one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return str(value)
