"""The project index: which functions of a module other modules of its project hand to a compiler.

``check``, ``fix`` and ``np2torch run`` see the project, not only the file: a
function that any module compiles (``fast = numba.njit(kernel)`` after ``from
pkg.kernels import kernel``) is compiled, and its calls are reported without a
fix (:mod:`np2torch.lint.project` reads the modules, the engine takes each
file's answer as :attr:`~np2torch.lint.model.Settings.compiled_elsewhere`).
This module does the file work: one :class:`ProjectIndex` per run of ``check``/
``fix``/``run``, built for a project the first time a file of it may have a
finding, and not before.

A file's project is the nearest folder above it holding a ``pyproject.toml`` or
``.git`` (its own folder when there is none), as for ``np2torch run``, and the
paths given to the run are one project at least: ``fix .`` in a folder of
scripts (no ``pyproject.toml``, no ``.git``) indexes ``main.py`` together with
``pkg/kernels.py``, whose own folder is ``pkg/``; its files
are every ``.py`` and ``.ipynb`` (its Python cells, as ``check`` reads them: a
notebook compiles a function of the project too, but no import names one)
below that folder except in hidden folders, virtual
environments, folders named in :data:`~np2torch.cli.config.DEFAULT_EXCLUDE`
and through symbolic links.  The configuration's excludes do not apply: a
module left out of checking can still compile a function of one that is
checked.

Every file is read; only those that spell a compiler's package (``numba``,
``jax``, ``torch``, ``cupy``) in an import or as a string, and a compiler's name
(``njit``, ``compile``), are parsed, then those that spell a name such a
module binds to a compiler (``jit`` of ``def jit(f): return numba.njit(f)``),
and those a compiled name leads to (a re-export).  Each parse is cached in the folder's ``index/``, one JSON entry per
file (keyed by its path, holding the SHA-256 of its bytes and the tool's
fingerprint, as the lint cache's entries), so a warm run parses nothing.
Under ``np2torch run``, a module imported that the index has not seen (the
program wrote it after the index was built) is indexed then, with the modules
that already named it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path

from np2torch.cli.cache import CACHEDIR_TAG, GITIGNORE, digest, tool_fingerprint
from np2torch.cli.config import DEFAULT_EXCLUDE, RunSettings
from np2torch.cli.files import FileError, decode_notebook, decode_source, is_notebook, read_regular, replace_file
from np2torch.cli.projects import project_root
from np2torch.lint.compiled import may_name_a_compiler
from np2torch.lint.project import Answer, Summary, answers, compiler_names, may_hand, summarize

__all__ = ["ProjectIndex", "project_files", "project_root"]

_SKIPPED = frozenset(DEFAULT_EXCLUDE)
_SUFFIXES = (".py", ".ipynb")  # a notebook compiles a function of the project as a module does (not imported)


def project_files(root: str) -> list[str]:
    """The ``.py`` files and notebooks of the project at ``root`` (a folder, or one file), sorted."""
    if os.path.isfile(root):
        return [os.path.realpath(root)] if root.endswith(_SUFFIXES) else []
    found = []
    for top, dirs, files in os.walk(os.path.realpath(root)):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED
                         and not os.path.islink(os.path.join(top, d))
                         and not os.path.isfile(os.path.join(top, d, "pyvenv.cfg")))
        found += [os.path.join(top, name) for name in files
                  if name.endswith(_SUFFIXES) and not os.path.islink(os.path.join(top, name))]
    return sorted(found)


class ProjectIndex:
    """The index of every project a run touches, each built once, on first need.

    ``folder``: where parses are cached (None: nowhere); ``tag``: mark the folder as a cache
    (``CACHEDIR.TAG``, ``.gitignore``) when it is the lint cache's; ``roots``: the projects' folders (or files)
    to index instead of finding each file's project (``np2torch run``: its scope's roots and includes);
    ``given``: the paths given to the run, whose projects every file's project takes in."""

    def __init__(self, folder: Path | None = None, *, fingerprint: str | None = None, tag: bool = False,
                 roots: tuple[str, ...] | None = None, given: tuple[str, ...] = ()) -> None:
        self.folder = folder
        self.tag = tag
        self.roots = roots
        self._given = tuple(sorted({project_root(path if os.path.isdir(path) else os.path.dirname(path) or os.curdir)
                                    for path in given}))
        self.parsed = 0
        """Files parsed afresh (not taken from the cache)."""
        self._fingerprint = fingerprint
        self._built: dict[tuple[str, ...], dict[str, Answer]] = {}
        self._whole: dict[str, Answer] | None = None
        self._indexed: set[str] = set()  # the files of the builds so far
        self._late: set[str] = set()  # files asked about that no build had (a module the program wrote)
        self._texts: dict[str, str | None] = {}  # files read for a compiler's name, once a run
        self._files: dict[str, list[str]] = {}  # a root's files, listed once a run (roots given to a run overlap)
        self._hands: dict[str, bool] = {}
        self._summaries: dict[str, Summary | None] = {}

    def answer(self, path: str) -> Answer:
        """The functions of the file at ``path`` that other modules compile (see :data:`Answer`)."""
        real = os.path.realpath(path)
        if self.roots is not None:
            if self._whole is None or real not in self._indexed:
                # `np2torch run` of a program that writes a module and then imports it: the module is indexed
                # now, with what already named it (the summaries read so far are kept)
                self._late.add(real)
                self._whole = self._build(self.roots)
            return self._whole.get(real, ())
        own = project_root(os.path.dirname(real))
        # the outermost first: the reasons name files from it (`compiled by main.py`, not `../main.py`)
        roots = tuple(sorted({own, *self._given}, key=lambda root: (len(root), root)))
        if roots not in self._built:
            self._built[roots] = self._build(roots)
        return self._built[roots].get(real, ())

    def settings(self, path: str, settings: RunSettings) -> RunSettings:
        """``settings`` for the file at ``path``, with its answer (unchanged when it has none)."""
        answer = self.answer(path)
        if not answer or answer == settings.lint.compiled_elsewhere:
            return settings
        return dataclasses.replace(settings, lint=dataclasses.replace(settings.lint, compiled_elsewhere=answer))

    # -- building ------------------------------------------------------------------------------------

    def _build(self, roots: tuple[str, ...]) -> dict[str, Answer]:
        for root in roots:
            if root not in self._files or self.roots is not None:  # `np2torch run`: it may write a module
                self._files[root] = project_files(root)
        files = sorted({path for root in roots for path in self._files[root]} | self._late)
        self._indexed.update(files)
        summaries: dict[str, Summary] = {}
        others: list[str] = []
        for path in files:
            summary = self._summary(path) if self._may_hand(path) else None
            if summary is not None:
                summaries[path] = summary
            else:
                others.append(path)
        looked: set[str] = set()
        texts = self._texts
        while True:  # a module that imports a compiler (`from .util import jit`) need not spell numba
            names = sorted(compiler_names(summaries) - looked)
            if not names:
                break
            looked.update(names)
            spells = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, names)))
            for path in others:
                if path in summaries:
                    continue
                if path not in texts:
                    source = _source(path)
                    texts[path] = None if source is None else source[0]
                text = texts[path]
                if text is not None and spells.search(text):
                    summary = self._summary(path)
                    if summary is not None:
                        summaries[path] = summary
        if not any(summary.handed or summary.applied for summary in summaries.values()):
            return {}
        shown_from = os.path.realpath(roots[0]) if os.path.isdir(roots[0]) else os.path.dirname(roots[0])
        modules = [path for path in files if not is_notebook(path)]  # what an import can name
        return answers(summaries, modules, self._summary, lambda path: os.path.relpath(path, shown_from))

    def _may_hand(self, path: str) -> bool:
        """Whether the file at ``path`` may hand a function to a compiler (:func:`may_hand`, and it names one),
        read once a run: nested projects (folders without a ``pyproject.toml``, each its own) share their files."""
        if path not in self._hands:
            source = _source(path)
            self._hands[path] = source is not None and may_hand(source[0]) and may_name_a_compiler(source[0])
        return self._hands[path]

    def _summary(self, path: str) -> Summary | None:
        """The file's summary, parsed (or read from the cache) once a run; None when it cannot be read or parsed."""
        if path not in self._summaries:
            source = _source(path)
            self._summaries[path] = None if source is None else self._parse(path, source[0], digest(source[1]))
        return self._summaries[path]

    def _parse(self, path: str, text: str, content: str) -> Summary | None:
        cached = self._read(path, content)
        if cached is not None:
            return cached
        import ast

        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None  # its own check reports it; it hands nothing on that can be seen
        summary = summarize(tree, text)
        self.parsed += 1
        self._write(path, content, summary)
        return summary

    # -- the cache -------------------------------------------------------------------------------------

    def _entry(self, path: str) -> Path | None:
        if self.folder is None:
            return None
        key = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()
        return self.folder / "index" / key[:2] / f"{key[2:32]}.json"

    def _fingerprint_now(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = tool_fingerprint()
        return self._fingerprint

    def _read(self, path: str, content: str) -> Summary | None:
        entry = self._entry(path)
        if entry is None:
            return None
        try:
            raw, _ = read_regular(str(entry), "index entry")
            data: object = json.loads(raw)
        except (FileError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get("fingerprint") != self._fingerprint_now():
            return None
        if data.get("digest") != content:
            return None
        return Summary.from_json(data.get("summary"))

    def _write(self, path: str, content: str, summary: Summary) -> None:
        entry = self._entry(path)
        if entry is None or self.folder is None:
            return
        data = {"fingerprint": self._fingerprint_now(), "digest": content, "summary": summary.as_json()}
        try:
            if self.tag and not (self.folder / "CACHEDIR.TAG").exists():
                self.folder.mkdir(parents=True, exist_ok=True)
                for name, text in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", GITIGNORE)):
                    replace_file(self.folder / name, text.encode(), durable=False)
            entry.parent.mkdir(parents=True, exist_ok=True)
            replace_file(entry, json.dumps(data, separators=(",", ":")).encode(), durable=False)
        except OSError:
            pass  # a cache that cannot be written costs a parse next time, nothing else


def _source(path: str) -> tuple[str, bytes] | None:
    """The file's text (a notebook's: its Python cells as one module) and its bytes; None when it cannot be read
    or decoded."""
    try:
        raw, _ = read_regular(path, path)
        if not is_notebook(path):
            return decode_source(raw, path).text, raw
        from np2torch.lint.notebook import NotebookError, module_text  # the engine: only where a notebook is

        try:
            return module_text(decode_notebook(raw, path).text), raw
        except NotebookError:
            return None
    except FileError:
        return None
