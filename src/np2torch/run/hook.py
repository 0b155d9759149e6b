"""The import hook of ``np2torch run``: modules of the program are compiled with their call sites, in memory.

A :class:`Finder` first on ``sys.meta_path`` asks the finders after it, in
order, for each module -- the spec Python would have found -- and when that is
a source file the :class:`Scope` covers, swaps its loader for a
:class:`RewritingLoader`.  That loader's ``get_code`` compiles the instrumented
module (:mod:`.instrument`) instead of reading ``__pycache__``, and writes
nothing there: the user's bytecode cache only ever holds the original code.
Compiled rewrites are kept in np2torch's own cache folder, keyed by the file's
path and bytes, np2torch, Python and the settings, so a second run parses
nothing.  Everything else about the module (``__spec__``, ``__file__``,
``get_source``, ``inspect``, resources) is the original loader's.

A file that cannot be analysed is imported unchanged, with one line on stderr.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import marshal
import os
import sys
import sysconfig
import tempfile
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, TypedDict

from np2torch.cli.cache import settings_key, tool_fingerprint
from np2torch.cli.config import ConfigFinder, Overrides, RunSettings, run_settings, settings_for_file
from np2torch.cli.index import ProjectIndex
from np2torch.lint.engine import may_contain
from np2torch.lint.forks import NOTICE, forks_with_torch, might_fork_with_torch
from np2torch.lint.model import SourceError
from np2torch.lint.rules import RULES_BY_CODE
from np2torch.run.instrument import instrument
from np2torch.runtime.sites import cache_dir

_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
"""np2torch itself: never rewritten."""

_CACHE_FORMAT = 5

_STDLIB_NAMES = frozenset(getattr(sys, "stdlib_module_names", ()))
"""Top-level names the standard library holds (Python >= 3.10): never looked at."""


class ScopeError(Exception):
    """An ``--include``/``--exclude`` that names nothing rewritable; one line."""


@functools.lru_cache(maxsize=4096)
def _real_folder(folder: str) -> str:
    """``os.path.realpath`` of a folder, once per folder (a program imports hundreds of modules from a few)."""
    return os.path.realpath(folder)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _stdlib_folders() -> Tuple[str, ...]:
    """The standard library's folders (installed packages may lie inside them: :func:`_site_folders` wins)."""
    paths = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    folders = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib") if key in paths}
    folders.add(os.path.realpath(os.path.dirname(os.__file__)))
    return tuple(sorted(folders))


def _site_folders() -> Tuple[str, ...]:
    """Where installed packages live: rewritten only when ``--include`` names them."""
    folders = set()
    for entry in sys.path:
        real = os.path.realpath(entry or os.curdir)
        parts = real.split(os.sep)
        if "site-packages" in parts or "dist-packages" in parts:
            index = max(i for i, part in enumerate(parts) if part in ("site-packages", "dist-packages"))
            folders.add(os.sep.join(parts[: index + 1]))
    return tuple(sorted(folders))


def _locate(name_or_path: str) -> str:
    """The file or folder an ``--include``/``--exclude`` names: a path, or an importable module's source."""
    if os.path.exists(name_or_path):
        return os.path.realpath(name_or_path)
    try:
        spec = importlib.util.find_spec(name_or_path)
    except (ImportError, ValueError) as exc:
        raise ScopeError(f"{name_or_path}: not a path, and not an importable module ({exc})") from None
    if spec is None:
        raise ScopeError(f"{name_or_path}: not a path, and not an importable module")
    if spec.submodule_search_locations:
        return os.path.realpath(list(spec.submodule_search_locations)[0])
    if spec.origin and os.path.isfile(spec.origin):
        return os.path.realpath(spec.origin)
    raise ScopeError(f"{name_or_path}: a built-in or compiled module, no Python source to rewrite")


@dataclass(frozen=True)
class Scope:
    """Which files are the program's: under a project root or an included path, not excluded, never the
    standard library or np2torch, installed packages only when included."""

    roots: Tuple[str, ...]
    includes: Tuple[str, ...] = ()
    excludes: Tuple[str, ...] = ()
    stdlib: Tuple[str, ...] = field(default_factory=_stdlib_folders)
    installed: Tuple[str, ...] = field(default_factory=_site_folders)

    @classmethod
    def build(cls, roots: Sequence[str], include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Scope:
        scope = cls(tuple(os.path.realpath(root) for root in roots))
        includes = tuple(_locate(item) for item in include)
        for item, where in zip(include, includes):
            if scope._never(where):
                raise ScopeError(f"{item}: the standard library and np2torch itself are never rewritten")
        return cls(scope.roots, includes, tuple(_locate(item) for item in exclude), scope.stdlib, scope.installed)

    def _installed(self, real: str) -> bool:
        return any(_within(real, folder) for folder in self.installed)

    def _never(self, real: str) -> bool:
        return _within(real, _PACKAGE) or (any(_within(real, folder) for folder in self.stdlib)
                                           and not self._installed(real))

    def covers(self, path: str) -> bool | None:
        """Whether ``path`` is rewritten: None no, False yes (a project file), True yes (an included one)."""
        folder, name = os.path.split(os.path.abspath(path))
        real = os.path.join(_real_folder(folder), name)
        if self._never(real) or any(_within(real, folder) for folder in self.excludes):
            return None
        if any(_within(real, folder) for folder in self.includes):
            return True
        if self._installed(real):
            return None
        if any(_within(real, folder) for folder in self.roots):
            return False
        return None

    def as_dict(self) -> ScopeRecord:
        return {"roots": list(self.roots), "includes": list(self.includes), "excludes": list(self.excludes)}

    @classmethod
    def from_dict(cls, data: ScopeRecord) -> Scope:
        return cls(tuple(data["roots"]), tuple(data["includes"]), tuple(data["excludes"]))


class ScopeRecord(TypedDict):
    """A :class:`Scope` as plain data (JSON: a child process reads its parent's)."""

    roots: List[str]
    includes: List[str]
    excludes: List[str]


class SkippedRecord(TypedDict):
    """A :class:`Skipped` as plain data (JSON: the report's ``not_rewritten``)."""

    path: str
    line: int
    col: int
    code: str
    function: str
    reason: str


_Compiled = Tuple[Optional[types.CodeType], Tuple[Tuple[int, int, str, str], ...]]
"""A compile as the cache keeps it: ``(code or None, skipped findings as (line, column, code, reason))``."""


@dataclass(frozen=True)
class Skipped:
    """A finding left as it is: where, the function and why."""

    path: str
    line: int
    column: int
    code: str
    reason: str

    def as_dict(self) -> SkippedRecord:
        rule = RULES_BY_CODE.get(self.code)
        return {"path": self.path, "line": self.line, "col": self.column, "code": self.code,
                "function": rule.qualname if rule else self.code, "reason": self.reason}


class Rewriter:
    """Compiles a file's instrumented code: settings from the ``[tool.np2torch]`` that governs it (with the
    command line's overrides), the code from np2torch's cache when it is there."""

    def __init__(self, scope: Scope, overrides: Overrides, config_path: str | None = None,
                 warn: Callable[[str], None] | None = None, cache: bool = True) -> None:
        from np2torch.cli.config import load_explicit_config

        self.scope = scope
        self.overrides = overrides
        self.config_path = config_path
        self.configs = ConfigFinder(load_explicit_config(config_path) if config_path else None)
        self.warn = warn or _stderr
        self.cache_folder = os.path.join(cache_dir(), "run") if cache else None
        self.skipped: List[Skipped] = []
        self.digests: Dict[str, str] = {}
        """Path -> SHA-256 of the bytes analysed, for every file with a finding (``fix --from-run`` checks it)."""
        self.cache_hits = 0
        """Files whose instrumented code came from the cache."""
        self.compiled = 0
        """Files instrumented and compiled afresh in this process."""
        self.notify = True
        """Whether this process says what applies to a file (the run's own process: not each child again)."""
        self._noticed: set[str] = set()
        self._fingerprint: str | None = None
        self._lock = threading.Lock()
        self.index = ProjectIndex(None if self.cache_folder is None else Path(self.cache_folder),
                                  roots=scope.roots + scope.includes)
        """Which functions other modules of the program's project compile (np2torch.cli.index), built on
        first need."""

    def after_fork_in_child(self) -> None:
        """A forked child reports only what it finds itself; its lock starts free."""
        self._lock = threading.Lock()
        self.notify = False
        self.skipped = []
        self.digests = {}
        self.cache_hits = self.compiled = 0

    def settings_for(self, path: str, included: bool) -> RunSettings | None:
        """The settings of ``path``, None when its config excludes it (an included package's files are
        governed by their own config's rules, never excluded by it)."""
        path = os.path.abspath(path)
        if not included:
            return settings_for_file(path, self.overrides, self.configs)
        return run_settings(self.configs.for_file(path), self.overrides, path)

    def code_for(self, path: str, source: bytes, included: bool, optimize: int = -1,
                 filename: str | None = None) -> types.CodeType | None:
        """The instrumented code of the file at ``path`` holding ``source``, compiled as ``filename`` (default
        ``path``: ``runpy.run_path`` names a file as its caller spelled it); None: import it unchanged."""
        settings = self.settings_for(path, included)
        if settings is None:
            return None
        try:
            text = importlib.util.decode_source(source)
        except (SyntaxError, UnicodeDecodeError, LookupError):
            return None  # Python reports a bad encoding when it reads the file itself
        if self.notify and might_fork_with_torch(text):
            self._notice_forks(path, text)
        if not may_contain(text, settings.lint.rules):
            return None  # no finding possible (the engine's own prefilter): the original loader, as fast
        settings = self.index.settings(path, settings)  # what other modules hand to a compiler stays as it is
        key = self._key(path, source, settings, optimize, filename)
        cached = self._read(key)
        if cached is not None:
            code, skipped = cached
            self.cache_hits += code is not None
        else:
            try:
                result = instrument(text, path, settings.lint, optimize=optimize, filename=filename)
            except SyntaxError:
                return None  # Python reports it when it compiles the file itself, as it would without np2torch
            except SourceError:
                return None  # Python cannot compile it either (this Python's grammar): it reports it itself
            except Exception as exc:  # a bug in np2torch must not change the program: run the original
                self.warn(f"np2torch run: {path}: cannot rewrite ({type(exc).__name__}: {exc}); imported unchanged")
                return None
            code = result.code
            self.compiled += code is not None
            skipped = tuple((f.line, f.column, f.code, f.reason or "") for f in result.not_rewritten)
            self._write(key, (code, skipped))
        with self._lock:
            self.skipped.extend(Skipped(path, *item) for item in skipped)
            if code is not None or skipped:
                self.digests[os.path.abspath(path)] = hashlib.sha256(source).hexdigest()
        return code

    def _notice_forks(self, path: str, text: str) -> None:
        """One line, once per file: the program's own torch runs on one thread in a child this file forks (the
        runtime's fork hook is in every process of the run)."""
        how = forks_with_torch(text)
        with self._lock:
            if how is None or path in self._noticed:
                return
            self._noticed.add(path)
        self.warn(f"np2torch run: {path}: {NOTICE.format(how=how)}")

    # -- the cache -------------------------------------------------------------------------------------

    def _key(self, path: str, source: bytes, settings: RunSettings, optimize: int, filename: str | None) -> str:
        if self._fingerprint is None:
            self._fingerprint = tool_fingerprint()
        digest = hashlib.sha256()
        for part in (self._fingerprint, importlib.util.MAGIC_NUMBER.hex(), str(optimize if optimize >= 0
                     else sys.flags.optimize), settings_key(settings), os.path.realpath(path),
                     "" if filename is None else "as " + filename):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(source)
        return digest.hexdigest()

    def _read(self, key: str) -> _Compiled | None:
        """``(code or None, skipped findings)`` of a cached compile, or None."""
        if self.cache_folder is None:
            return None
        try:
            with open(os.path.join(self.cache_folder, key[:2], key), "rb") as file:
                data = marshal.load(file)
        except (OSError, EOFError, ValueError, TypeError):
            return None
        if type(data) is not tuple or len(data) != 3 or data[0] != _CACHE_FORMAT:
            return None
        return data[1], data[2]

    def _write(self, key: str, entry: _Compiled) -> None:
        if self.cache_folder is None:
            return
        folder = os.path.join(self.cache_folder, key[:2])
        try:
            os.makedirs(folder, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            try:
                with os.fdopen(handle, "wb") as file:
                    marshal.dump((_CACHE_FORMAT, *entry), file)
                os.replace(temporary, os.path.join(folder, key))
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError:
            pass  # a cache that cannot be written costs a parse next time, nothing else


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class RewritingLoader(importlib.machinery.SourceFileLoader):
    """The original source loader, except that ``get_code`` returns the instrumented code (and caches
    none of it in ``__pycache__``) when the file has sites.

    It is the spec's loader only until its code is asked for: then the spec and the module (``__loader__``)
    get the plain :class:`~importlib.machinery.SourceFileLoader` Python would have given them, so the
    program sees its own loader (its type, its ``repr`` in ``__spec__``, its ``get_code``)."""

    def __init__(self, fullname: str, path: str, rewriter: Rewriter, included: bool,
                 spec: importlib.machinery.ModuleSpec | None = None) -> None:
        super().__init__(fullname, path)
        self.rewriter = rewriter
        self.included = included
        self.spec = spec
        self.plain = importlib.machinery.SourceFileLoader(fullname, path)

    def get_code(self, fullname: str) -> types.CodeType | None:
        _hand_back(self, self.plain, self.spec, sys.modules.get(fullname))
        path = self.get_filename(fullname)
        try:
            code = self.rewriter.code_for(path, self.get_data(path), self.included)
        except OSError:
            code = None
        if code is not None:
            return code
        try:
            return super().get_code(fullname)
        except BaseException as exc:  # a syntax error in the file: the traceback python shows, without this frame
            _without_own_frame(exc)
            raise


def _without_own_frame(exc: BaseException) -> None:
    """``exc`` re-raised by a bare ``raise`` without the frame that raises it (Python 3.11 and later: before,
    ``raise`` puts it back).  Between the import system's own frames, it would keep them from being trimmed
    as python trims them (the chunk of ``<frozen importlib...>`` frames ending in ``_call_with_frames_removed``):
    the traceback of a syntax error in a module the program imports would gain seven frames."""
    tb = exc.__traceback__
    if sys.version_info >= (3, 11) and tb is not None:
        exc.__traceback__ = tb.tb_next


class Finder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: the spec the finders after it give, with the rewriting loader for the
    program's source files."""

    def __init__(self, rewriter: Rewriter) -> None:
        self.rewriter = rewriter
        self._busy = threading.local()
        self.after_import: Dict[str, Callable[[types.ModuleType], None]] = {}
        """Module name -> called with the module once it has been executed (once)."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if path is None and fullname in _STDLIB_NAMES or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            spec = self._others(fullname, path, target)
        finally:
            self._busy.on = False
        if spec is not None and fullname in self.after_import and spec.loader is not None:
            spec.loader = _AfterExec(spec.loader, self.after_import.pop(fullname))
            return spec
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader or not spec.origin:
            return spec
        included = self.rewriter.scope.covers(spec.origin)
        if included is None:
            return spec
        spec.loader = RewritingLoader(fullname, spec.origin, self.rewriter, included, spec)
        return spec

    def _others(self, fullname: str, path: Optional[Sequence[str]],
                target: types.ModuleType | None) -> importlib.machinery.ModuleSpec | None:
        for finder in list(sys.meta_path):
            if finder is self or isinstance(finder, Finder):
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def invalidate_caches(self) -> None:
        pass


class _AfterExec(importlib.abc.Loader):
    """Another loader, and a call with the module once it has run (``multiprocessing.pool``: see
    :func:`np2torch.run.children.patch_pool`)."""

    def __init__(self, loader: importlib.abc.Loader, then: Callable[[types.ModuleType], None]) -> None:
        self.loader = loader
        self.then = then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        _hand_back(self, self.loader, getattr(module, "__spec__", None), module)
        self.loader.exec_module(module)
        self.then(module)

    def __getattr__(self, name: str) -> object:  # get_source, get_code, is_package, ... of the real loader
        return getattr(self.loader, name)


def _hand_back(ours: importlib.abc.Loader, theirs: importlib.abc.Loader, spec: importlib.machinery.ModuleSpec | None,
               module: types.ModuleType | None) -> None:
    """``spec``'s and ``module``'s loader ``theirs`` where it is ``ours`` (the import system took ``ours``
    from the spec already: ``runpy`` and ``importlib`` then give the module the one it would have had)."""
    if spec is not None and spec.loader is ours:
        spec.loader = theirs
    if module is not None and getattr(module, "__loader__", None) is ours:
        module.__loader__ = theirs


def install(rewriter: Rewriter) -> Finder:
    """Put a :class:`Finder` for ``rewriter`` first on ``sys.meta_path``."""
    finder = Finder(rewriter)
    sys.meta_path.insert(0, finder)
    return finder
