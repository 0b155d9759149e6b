"""What ``--show-settings`` prints, and the source lines ``--output-format full`` shows under a finding."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path
from typing import Any, Iterator

from np2torch.cli.config import (
    KNOWN_KEYS,
    Config,
    ConfigFinder,
    Overrides,
    display_path,
    per_file_ignored,
    run_settings,
)
from np2torch.cli.files import FileError, decode_notebook, decode_source, is_notebook, read_bytes
from np2torch.lint.isort import SECTIONS
from np2torch.lint.model import CellFinding, Finding, SourceError

_NEWLINE = re.compile(r"\r\n|\r|\n")  # as the engine counts lines


def _toml(value: object) -> str:
    """A value as TOML writes it (the settings' types only: strings, booleans, lists, tables, pairs)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Path):
        return json.dumps(str(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def _value(config: Config, key: str) -> Any:
    value = getattr(config, key.replace("-", "_"))
    if key == "target-version" and value is not None:
        return f"py{value[0]}{value[1]}"
    return value


def settings_report(given: str, finder: ConfigFinder, overrides: Overrides, *, fmt: str, cache: Path) -> Iterator[str]:
    """The settings ``given`` (a file or folder) gets: each key, its value and where it comes from, then what
    they resolve to (the rules after every selector and per-file ignore, the runtime module and alias)."""
    path = os.path.abspath(given)
    config = finder.for_directory(path) if os.path.isdir(path) else finder.for_file(path)
    yield f"Resolved settings for: {given}"
    yield f"Settings path: {display_path(config.source) if config.source else '(none: the defaults)'}"
    yield ""
    width = max(len(key) for key in KNOWN_KEYS)
    for key in sorted(KNOWN_KEYS):
        value = _value(config, key)
        if key.endswith("per-file-ignores"):  # pairs of (glob, codes): a TOML table
            shown = "{" + ", ".join(f"{json.dumps(glob)} = {_toml(codes)}" for glob, codes in value) + "}"
        else:
            shown = _toml(value) if value is not None else "(unset)"
        yield f"{key:<{width}} = {shown}  # {config.origin(key)}"
    if config.cli_exclude:
        yield f"{'command line excludes':<{width}} = {_toml([p for _, group in config.cli_exclude for p in group])}"
    settings = run_settings(config, overrides, None if os.path.isdir(path) else path)
    yield ""
    yield "# Resolved"
    yield f"{'rules':<{width}} = {_toml(list(settings.codes))}"
    ignored = () if os.path.isdir(path) else per_file_ignored(config, path)
    if ignored:
        yield f"{'per-file ignored':<{width}} = {_toml(list(ignored))}"
    yield f"{'runtime-module':<{width}} = {_toml(settings.lint.runtime_module)}"
    yield f"{'alias':<{width}} = {_toml(settings.lint.alias)}"
    yield f"{'unsafe-fixes':<{width}} = {_toml(settings.lint.unsafe_fixes)}"
    yield f"{'unfixable':<{width}} = {_toml(list(settings.lint.unfixable))}"
    order = settings.lint.import_order
    runtime = ast.Import([ast.alias(settings.lint.runtime_module, settings.lint.alias)])
    yield f"{'runtime import':<{width}} = {_toml(SECTIONS[order.section(runtime)])}  # isort's section for it"
    yield f"{'output-format':<{width}} = {_toml(fmt)}"
    yield f"{'cache-dir':<{width}} = {_toml(display_path(cache))}"


class SourceLines:
    """A finding's line of code, for ``--output-format full``: read back from its file (after a fix: the fixed
    file, where the findings left are), a notebook's from its cell; stdin's from the text given."""

    def __init__(self, stdin: tuple[str, str | None] | None = None) -> None:
        self._texts: dict[str, dict[int, list[str]] | None] = {}
        if stdin is not None and stdin[1] is not None:
            self._texts[stdin[0]] = self._split(stdin[0], stdin[1])

    def __call__(self, finding: Finding) -> str | None:
        if finding.path not in self._texts:
            self._texts[finding.path] = self._read(finding.path)
        cells = self._texts[finding.path]
        lines = None if cells is None else cells.get(finding.cell if isinstance(finding, CellFinding) else 0)
        if lines is None or not 0 < finding.line <= len(lines):
            return None
        return lines[finding.line - 1]

    def _read(self, display: str) -> dict[int, list[str]] | None:
        path = os.path.abspath(display)
        try:
            raw, _ = read_bytes(path, display)
            text = (decode_notebook if is_notebook(path) else decode_source)(raw, display).text
        except FileError:
            return None
        return self._split(display, text)

    @staticmethod
    def _split(display: str, text: str) -> dict[int, list[str]] | None:
        if is_notebook(display):
            from np2torch.lint.notebook import cell_sources

            try:
                return {number: _NEWLINE.split(source) for number, source in cell_sources(text).items()}
            except SourceError:
                return None
        return {0: _NEWLINE.split(text.lstrip("\ufeff"))}
