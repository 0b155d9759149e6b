"""Which files a run looks at: the paths on the command line expanded, excluded and ordered.

Discovery needs the configuration (excludes, per-folder ``pyproject.toml``);
the configuration needs safe file reading (:mod:`np2torch.cli.files`); reading
needs neither, so the three modules import in one direction only.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass
from typing import Iterable, Sequence

from np2torch.cli.config import Config, ConfigFinder, Excluder
from np2torch.cli.files import FileError, read_error
from np2torch.cli.globs import FilePatterns


@dataclass(frozen=True)
class Target:
    display: str
    """The path as the user sees it in output."""
    path: str
    """Absolute path to read and write."""
    config: Config


class _GitIgnored:
    """Paths git ignores, asked once per work tree (``git ls-files``), not once per file."""

    _SCRUB = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR")

    def __init__(self) -> None:
        self._trees: dict[str, frozenset[str]] = {}

    def for_tree(self, top: str) -> frozenset[str]:
        found = self._trees.get(top)
        if found is None:
            found = self._trees[top] = self._ask_git(top)
        return found

    def _ask_git(self, top: str) -> frozenset[str]:
        # A hook runs inside `git commit`, whose GIT_DIR/GIT_INDEX_FILE would point `-C top` elsewhere.
        env = {k: v for k, v in os.environ.items() if k not in self._SCRUB}
        command = ["git", "-C", top, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"]
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, env=env, check=False)
        except OSError:  # no git: .gitignore cannot be honoured, everything else still works
            return frozenset()
        if done.returncode != 0:
            return frozenset()
        names = done.stdout.decode("utf-8", "surrogateescape").split("\0")
        return frozenset(os.path.join(top, os.path.normpath(n)) for n in names if n)


def _work_tree(folder: str) -> str | None:
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _is_virtualenv(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "pyvenv.cfg"))


class Discovery:
    """Turns the paths on the command line into :class:`Target` s, in a deterministic order."""

    def __init__(self, finder: ConfigFinder, *, force_exclude: bool = False) -> None:
        self.finder = finder
        self.force_exclude = force_exclude
        """Apply excludes to the paths given too (``--force-exclude``; a config's ``force-exclude`` also does)."""
        self._git = _GitIgnored()
        self._matchers: dict[int, Excluder] = {}
        self._includes: dict[int, FilePatterns] = {}
        self.errors: list[FileError] = []

    def includer(self, config: Config) -> FilePatterns:
        """What a folder's walk collects: ``include`` and ``extend-include``, matched as exclude patterns are but
        against the path only (as ruff's: ``[a-c].py`` is no ``sub/b.py``)."""
        found = self._includes.get(id(config))
        if found is None:
            found = self._includes[id(config)] = FilePatterns(config.root, config.include + config.extend_include,
                                                              by_name=False)
        return found

    def matcher(self, config: Config) -> Excluder:
        found = self._matchers.get(id(config))
        if found is None:
            found = self._matchers[id(config)] = Excluder(config)
        return found

    def collect(self, paths: Sequence[str]) -> list[Target]:
        targets: dict[str, Target] = {}
        for given in paths:
            for target in self._expand(given):
                targets.setdefault(os.path.realpath(target.path), target)
        return sorted(targets.values(), key=lambda t: (t.display, t.path))

    def _expand(self, given: str) -> Iterable[Target]:
        path = os.path.abspath(given)
        display = os.path.normpath(given)
        try:
            st = os.stat(path)
        except OSError as exc:
            self.errors.append(read_error(display, exc))
            return
        if stat.S_ISDIR(st.st_mode):
            if self._explicit_excluded(path, is_dir=True):
                return
            yield from self._walk(display, os.path.realpath(path))
        elif self._explicit_excluded(path, is_dir=False):
            return
        else:
            yield Target(display=display, path=path, config=self.finder.for_file(path))

    def _explicit_excluded(self, path: str, is_dir: bool) -> bool:
        config = self.finder.for_directory(path) if is_dir else self.finder.for_file(path)
        return (self.force_exclude or config.force_exclude) and self.matcher(config).excludes(path)

    def _walk(self, display_root: str, root: str) -> Iterable[Target]:
        top = _work_tree(root)
        stack = [(display_root, root, top)]
        while stack:
            display_dir, folder, top = stack.pop()
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                self.errors.append(read_error(display_dir, exc))
                continue
            config = self.finder.for_directory(folder)
            matcher = self.matcher(config)
            included = self.includer(config)
            ignored = self._git.for_tree(top) if top is not None and config.respect_gitignore else frozenset()
            subfolders = []
            for entry in entries:
                full = os.path.join(folder, entry.name)
                shown = os.path.join(display_dir, entry.name) if display_dir != os.curdir else entry.name
                try:
                    if entry.is_symlink():  # never follow: loops, and files reached twice
                        continue
                    is_dir = entry.is_dir()
                    if not is_dir and (not entry.is_file() or not included.matches(full)):
                        continue
                except OSError:
                    continue
                if full in ignored or matcher.matches(full):
                    continue
                if is_dir:
                    if not _is_virtualenv(full):
                        subtop = full if os.path.exists(os.path.join(full, ".git")) else top
                        subfolders.append((shown, full, subtop))
                else:
                    yield Target(display=shown, path=full, config=config)
            stack.extend(reversed(subfolders))


def discover(
    paths: Sequence[str], finder: ConfigFinder, *, force_exclude: bool = False
) -> tuple[list[Target], list[FileError]]:
    """The files to check under ``paths`` and the paths that could not be read."""
    discovery = Discovery(finder, force_exclude=force_exclude)
    targets = discovery.collect(paths)
    return targets, discovery.errors


__all__ = ["Discovery", "Target", "discover"]
