"""Per-file result cache in ``.np2torch_cache/`` at the project root, as ruff keeps ``.ruff_cache/``.

The folder (:func:`cache_folder`): ``--cache-dir`` or ``NP2TORCH_LINT_CACHE_DIR``, else the
``cache-dir`` of the configuration that governs the working directory (relative to that file),
else ``.np2torch_cache`` beside that file (the project root), else in the working directory.
``NP2TORCH_CACHE_DIR`` is the runtime's (its measured profile), never this cache's.

One small JSON entry per (absolute path, settings, the sites ``fix --from-run`` may rewrite): it
records the SHA-256 of the
file's bytes it was computed for, a fingerprint of the tool that computed it
(np2torch's version and the size and mtime of its own modules, so an edited
engine never serves stale results; the Python version, whose ``ast`` may
differ), and the findings without their path.  A lookup is a hit only when the
digest and fingerprint both match, so a changed file, a changed tool or
different settings simply miss; so does a result computed for ``fix --from-run`` (whose
findings left out by the report carry that reason) for any command without the same report's sites.  Entries are overwritten in place: the cache
grows with the number of files and settings used, not with the number of edits.

Entries are written atomically (temporary file, ``os.replace``), so runs that
share a cache concurrently never see a torn entry; the last writer wins and
every entry is self-consistent.  The folder holds a ``CACHEDIR.TAG`` (backup
tools skip it) and a ``.gitignore`` of ``*``.  Any problem with the cache
(read-only folder, corrupt entry) costs only speed, never a result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import AbstractSet, Any, Optional, Sequence, Tuple

from np2torch import __version__
from np2torch.cli.config import Config, RunSettings
from np2torch.cli.files import FileError, read_regular, replace_file
from np2torch.lint.model import Finding

Only = Optional[AbstractSet[Tuple[int, int, str]]]
"""``fix --from-run``'s sites, ``(line, column, code)``, that a result was computed for (None: every finding)."""

CACHE_DIR_NAME = ".np2torch_cache"
CACHE_DIR_ENV = "NP2TORCH_LINT_CACHE_DIR"

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by np2torch.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)
GITIGNORE = "# Automatically created by np2torch.\n*\n"


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def tool_fingerprint() -> str:
    """Changes whenever anything that decides findings may have changed."""
    package = Path(__file__).resolve().parent.parent
    parts = [__version__, "%d.%d" % sys.version_info[:2]]
    for path in sorted(package.rglob("*.py")):
        try:
            st = path.stat()
        except OSError:
            continue
        parts.append(f"{path.relative_to(package)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def cache_folder(given: str | None, project: Config) -> Path:
    """The lint cache's folder: ``given`` (``--cache-dir``, or the environment through it), the project's
    ``cache-dir``, or ``.np2torch_cache`` at the project root (the folder of ``project``'s file)."""
    if given:
        return Path(given).absolute()
    if project.cache_dir is not None:
        return Path(os.path.join(project.root, project.cache_dir)).absolute()
    return Path(project.root, CACHE_DIR_NAME)


def is_cache(folder: Path) -> bool:
    """Whether ``folder`` is a cache np2torch made (its CACHEDIR.TAG says so): only such a folder is removed."""
    try:
        return (folder / "CACHEDIR.TAG").read_text(encoding="utf-8", errors="replace") == CACHEDIR_TAG
    except OSError:
        return False


def clean_caches(folder: Path, below: str) -> list[Path]:
    """``np2torch clean``: remove ``folder`` and every ``.np2torch_cache`` under ``below`` that np2torch made
    (symbolic links are not followed); the folders removed."""
    import shutil

    found = [folder] if is_cache(folder) else []
    for top, dirs, _files in os.walk(below):
        if CACHE_DIR_NAME in dirs:
            candidate = Path(top, CACHE_DIR_NAME).absolute()
            if candidate not in found and not os.path.islink(candidate) and is_cache(candidate):
                found.append(candidate)
        dirs[:] = [d for d in dirs if d not in (CACHE_DIR_NAME, ".git")]
    for cache in found:
        shutil.rmtree(cache, ignore_errors=True)
    return found


class Cache:
    def __init__(self, folder: Path, fingerprint: str | None = None) -> None:
        self.folder = folder
        self.fingerprint = fingerprint or tool_fingerprint()
        self.write_error: str | None = None
        """Why the last write failed, if one did (reported once by the CLI)."""
        self._prepared = False

    def _entry(self, path: str, settings: RunSettings, only: Only) -> Path:
        named = f"{os.path.abspath(path)}\0{settings_key(settings)}"
        if only is not None:  # `fix --from-run`: its findings are not `check`'s
            named += f"\0{sorted(only)!r}"
        key = hashlib.sha256(named.encode("utf-8", "surrogateescape")).hexdigest()
        return self.folder / key[:2] / f"{key[2:32]}.json"

    def get(self, path: str, settings: RunSettings, content_digest: str,
            only: Only = None) -> list[dict[str, Any]] | None:
        """The cached findings (dicts without ``path``), or ``None`` on a miss (``only``: the sites
        ``fix --from-run`` may rewrite, part of the key)."""
        try:
            raw, _ = read_regular(str(self._entry(path, settings, only)), "cache entry")  # a FIFO planted here must not hang
            entry = json.loads(raw)
        except (FileError, ValueError, RecursionError):
            return None
        if not isinstance(entry, dict) or entry.get("fingerprint") != self.fingerprint:
            return None
        if entry.get("digest") != content_digest or not isinstance(entry.get("findings"), list):
            return None
        findings: list[dict[str, Any]] = entry["findings"]
        return findings

    def put(self, path: str, settings: RunSettings, content_digest: str, findings: Sequence[Finding],
            only: Only = None) -> None:
        entry = {
            "fingerprint": self.fingerprint,
            "digest": content_digest,
            "findings": [finding_to_dict(f) for f in findings],
        }
        target = self._entry(path, settings, only)
        try:
            self._prepare()
            target.parent.mkdir(exist_ok=True)
            _write_atomic(target, json.dumps(entry, separators=(",", ":")).encode())
        except OSError as exc:
            self.write_error = f"{self.folder}: {exc.strerror or exc}"

    def _prepare(self) -> None:
        if self._prepared:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        for name, text in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", GITIGNORE)):
            if not (self.folder / name).exists():
                _write_atomic(self.folder / name, text.encode())
        self._prepared = True


def _write_atomic(target: Path, data: bytes) -> None:
    # A cache entry need not survive a crash: no fsync.
    replace_file(target, data, durable=False)


def settings_key(settings: RunSettings) -> str:
    """Every setting, the rules as their codes (a rule's documentation does not decide a finding); not the
    import order, which decides only where a fix puts its import (and depends on the working directory)."""
    lint = {f.name: getattr(settings.lint, f.name) for f in dataclasses.fields(settings.lint)
            if f.name not in ("rules", "import_order")}
    return repr((settings.codes, sorted(lint.items()), settings.target_version))


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    data = dataclasses.asdict(finding)
    data.pop("path", None)
    return data
