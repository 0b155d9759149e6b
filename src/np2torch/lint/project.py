"""Functions that another module of the project hands to a compiler: the text-in part of the project index.

A module may compile a function that another module defines::

    from pkg.kernels import kernel          # or: import pkg.kernels as k; numba.njit(k.kernel)
    fast = numba.njit(kernel)

``kernel`` is then as compiled as a function its own module decorates, and a fix
inside it makes numba raise ``TypingError``.  No single file shows that, so the
command line and ``np2torch run`` build an index of the project
(:mod:`np2torch.cli.index`): :func:`summarize` reads one module (what it hands to
a compiler from other modules, and which names it imports, so re-exports are
followed), :func:`answers` joins the summaries into, for each module, the
functions of it that some module compiles.  The engine takes that answer as
:attr:`np2torch.lint.model.Settings.compiled_elsewhere` and reports their calls
without a fix, as it does for the functions its own module compiles.

A function handed to a compiler is followed as :mod:`np2torch.lint.compiled`
follows one in its own module: through a name imported from a module
(``from pkg.kernels import kernel``, ``from . import kernels``), an attribute of
an imported module (``k.kernel``, ``pkg.kernels.kernel``), ``partial``,
assignments and loops (``for f in (k.a, k.b): njit(f)``); ``getattr(k, name)``
may be any function of ``k``.  A module named in an import is every project file
whose path ends with its name (``pkg.kernels``: ``src/pkg/kernels.py``,
``pkg/kernels/__init__.py``): where a name could mean two files, both count.
A relative import names exactly one.  A name a module imports from another
(``from .kernels import kernel`` in ``pkg/__init__.py``, or a star import) is
followed there.  Positions, scopes and control flow are ignored: a function
handed to a compiler anywhere in the project counts.
"""

from __future__ import annotations

import ast
import os
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from np2torch.lint import compiled

__all__ = ["ANY", "Summary", "answers", "may_hand", "summarize"]

ANY = "*"
"""A name that stands for every function of the module (``njit(getattr(k, name))``)."""

_ROOTS = tuple(sorted({q.partition(".")[0] for q in {**compiled.COMPILERS, **compiled.MODULE_COMPILERS}}))

Ref = tuple[int, str]
"""(level, dotted name) as an import spells it: ``(0, "pkg.kernels.kernel")``, ``(1, "kernels")`` for
``from . import kernels``."""


@dataclass(frozen=True)
class Summary:
    """What one module tells the index, independent of where the file lies."""

    handed: tuple[tuple[int, str, str], ...] = ()
    """(level, dotted name, family) of each function of another module it hands to a compiler:
    ``(0, "pkg.kernels.kernel", "numba")``; the last part :data:`ANY` for any function of the module."""
    imports: tuple[tuple[str, int, str], ...] = ()
    """(bound name, level, dotted name) of each name a module-level ``from``-import binds:
    ``("kernel", 1, "kernels.kernel")`` for ``from .kernels import kernel``; a star import binds :data:`ANY`."""

    def as_json(self) -> dict[str, Any]:
        return {"handed": [list(item) for item in self.handed], "imports": [list(item) for item in self.imports]}

    @classmethod
    def from_json(cls, data: object) -> Summary | None:
        """The summary ``data`` describes, or None when it is not one (a cache entry edited or torn)."""
        if not isinstance(data, dict) or set(data) != {"handed", "imports"}:
            return None
        handed, imports = data["handed"], data["imports"]
        if not (isinstance(handed, list) and all(_shaped(item, (int, str, str)) for item in handed)):
            return None
        if not (isinstance(imports, list) and all(_shaped(item, (str, int, str)) for item in imports)):
            return None
        return cls(tuple(tuple(item) for item in handed), tuple(tuple(item) for item in imports))


def _shaped(item: object, types: tuple[type, ...]) -> bool:
    return (isinstance(item, list) and len(item) == len(types)
            and all(type(value) is kind for value, kind in zip(item, types)))


def may_hand(text: str) -> bool:
    """False only when the module can hand nothing to a compiler (every way spells a compiler's package)."""
    spelled = text if text.isascii() else unicodedata.normalize("NFKC", text)  # as the parser reads names
    return any(root in spelled for root in _ROOTS)


def summarize(tree: ast.Module, text: str) -> Summary:
    """The module's :class:`Summary` (``text``: its source, ``tree``: its ``ast``)."""
    bindings = _import_bindings(tree)
    handed: set[tuple[int, str, str]] = set()
    if bindings and may_hand(text):
        sources = _sources(tree)
        for expr, family in compiled.handed_to_compilers(tree, text):
            for level, dotted in _refs(expr, bindings, sources, set()):
                handed.add((level, dotted, family))
    imports = [(name, level, dotted) for stmt in _module_level(tree.body) if type(stmt) is ast.ImportFrom
               for name, (level, dotted) in _bound(stmt)]
    return Summary(tuple(sorted(handed)), tuple(imports))


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run in the module's namespace (inside ``if``/``try``/``with``, not in a def or class)."""
    for stmt in body:
        yield stmt
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                yield from _module_level(getattr(stmt, field, []))
            for handler in getattr(stmt, "handlers", []):
                yield from _module_level(handler.body)


def _bound(stmt: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, Ref]]:
    """(name, what it names) for each name an import binds; a star import binds :data:`ANY`."""
    if type(stmt) is ast.Import:
        for alias in stmt.names:
            if alias.asname:
                yield alias.asname, (0, alias.name)
            else:
                root = alias.name.partition(".")[0]
                yield root, (0, root)
        return
    assert type(stmt) is ast.ImportFrom
    for alias in stmt.names:
        dotted = f"{stmt.module}.{alias.name}" if stmt.module else alias.name
        yield alias.asname or alias.name, (stmt.level, dotted)


def _import_bindings(tree: ast.Module) -> dict[str, list[Ref]]:
    """Every name any import binds (scopes ignored) -> what it may name."""
    bindings: dict[str, list[Ref]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name, ref in _bound(node):
                if name != ANY:
                    bindings.setdefault(name, []).append(ref)
    return bindings


def _sources(tree: ast.Module) -> dict[str, list[tuple[ast.expr, bool]]]:
    """Name -> (what it is assigned, False) and (what it loops over, True), scopes ignored."""
    sources: dict[str, list[tuple[ast.expr, bool]]] = {}
    for node in ast.walk(tree):
        if type(node) is ast.Assign:
            for target in node.targets:
                if type(target) is ast.Name:
                    sources.setdefault(target.id, []).append((node.value, False))
        elif type(node) in (ast.AnnAssign, ast.NamedExpr):
            target, value = node.target, node.value  # type: ignore[attr-defined]
            if type(target) is ast.Name and value is not None:
                sources.setdefault(target.id, []).append((value, False))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and type(node.target) is ast.Name:
            sources.setdefault(node.target.id, []).append((node.iter, True))
    return sources


def _refs(expr: ast.expr, bindings: Mapping[str, list[Ref]], sources: Mapping[str, list[tuple[ast.expr, bool]]],
          seen: set[str], elements: bool = False) -> Iterator[Ref]:
    """The functions of other modules ``expr`` may evaluate to (``elements``: the items of the iterable ``expr``)."""
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        for element in expr.elts:
            yield from _refs(element, bindings, sources, seen)
        return
    if type(expr) is ast.Call:
        func, args = expr.func, expr.args
        if type(func) is ast.Name and func.id == "getattr" and args and not elements:  # `getattr(k, name)`
            for level, dotted in _dotted(args[0], bindings):
                yield level, f"{dotted}.{ANY}"
        elif _is_partial(func) and args and not elements:  # `partial(k.f, a)`
            yield from _refs(args[0], bindings, sources, seen)
        return
    if type(expr) is ast.Name and expr.id not in seen:  # a name assigned or looped over: what it holds
        seen.add(expr.id)
        for value, over in sources.get(expr.id, ()):
            yield from _refs(value, bindings, sources, seen, over)
    if not elements:
        yield from _dotted(expr, bindings)


def _dotted(expr: ast.expr, bindings: Mapping[str, list[Ref]]) -> Iterator[Ref]:
    """What an imported name or an attribute of one names: ``k.kernel`` -> ``(0, "pkg.kernels.kernel")``."""
    parts: list[str] = []
    while type(expr) is ast.Attribute:
        parts.append(expr.attr)
        expr = expr.value
    if type(expr) is ast.Name:
        for level, dotted in bindings.get(expr.id, ()):
            yield level, ".".join([dotted, *reversed(parts)]) if dotted else ".".join(reversed(parts))


def _is_partial(func: ast.expr) -> bool:
    return (type(func) is ast.Name and func.id == "partial") or (type(func) is ast.Attribute and func.attr == "partial")


# --------------------------------------------------------------------------- joining the summaries


Answer = tuple[tuple[str, str, str], ...]
"""(function name, family, the compiling module's path as shown) for each function of a module that another
module compiles, sorted: what :attr:`np2torch.lint.model.Settings.compiled_elsewhere` takes."""


def answers(handing: Mapping[str, Summary], files: Sequence[str], summary_of: Callable[[str], Summary | None],
            shown: Callable[[str], str]) -> dict[str, Answer]:
    """Each file's :data:`Answer` (only files that have one).

    ``handing``: the summaries of the files that may hand a function to a compiler (by path); ``files``:
    every file of the project (paths); ``summary_of(path)``: any file's summary, asked only for files a
    compiled name leads to (to follow its imports), None when it cannot be read; ``shown(path)``: how the
    reason names the compiling file.
    """
    modules = _Modules(files)
    found: dict[str, set[tuple[str, str, str]]] = {}
    todo: list[tuple[str, str, str, str]] = []  # (path, name, family, by)
    for path, summary in sorted(handing.items()):
        for level, dotted, family in summary.handed:
            module, _, name = dotted.rpartition(".")
            for target in modules.named(path, level, module):
                if target != path:  # its own functions: its own analysis finds them
                    todo.append((target, name, family, shown(path)))
    seen: set[tuple[str, str]] = set()
    while todo:
        path, name, family, by = todo.pop()
        found.setdefault(path, set()).add((name, family, by))
        if (path, name) in seen:
            continue
        seen.add((path, name))
        read = handing.get(path) or summary_of(path)
        for bound, level, dotted in read.imports if read else ():
            if bound == ANY or (bound == name or name == ANY):  # re-exported: followed to where it is defined
                module, _, original = dotted.rpartition(".")
                original = name if original == ANY else original
                for target in modules.named(path, level, module):
                    if target != path:
                        todo.append((target, original, family, by))
    return {path: tuple(sorted(names)) for path, names in sorted(found.items())}


class _Modules:
    """The project's files by the module names they can be imported as."""

    def __init__(self, files: Iterable[str]) -> None:
        self._by_suffix: dict[tuple[str, ...], list[str]] = {}
        self._by_parts: dict[tuple[str, ...], str] = {}
        for path in files:
            parts = _parts(path)
            self._by_parts[parts] = path
            for start in range(len(parts)):
                self._by_suffix.setdefault(parts[start:], []).append(path)

    def named(self, importer: str, level: int, module: str) -> list[str]:
        """The files ``module`` (``level`` dots before it, in the file ``importer``) may be."""
        wanted = tuple(module.split(".")) if module else ()
        if level == 0:
            return list(self._by_suffix.get(wanted, ())) if wanted else []
        package = _parts(importer)[:-1] if not _is_package(importer) else _parts(importer)
        if level - 1 > len(package):
            return []
        found = self._by_parts.get(package[:len(package) - (level - 1)] + wanted)
        return [found] if found is not None else []


def _is_package(path: str) -> bool:
    return os.path.basename(path) == "__init__.py"


def _parts(path: str) -> tuple[str, ...]:
    """The module name a file's path spells, part by part: ``/p/pkg/kernels.py`` -> ``(..., "p", "pkg", "kernels")``
    (a package's ``__init__.py`` is its folder)."""
    folder, name = os.path.split(os.path.normpath(path))
    parts = [part for part in folder.replace("\\", "/").split("/") if part]
    if name != "__init__.py":
        parts.append(os.path.splitext(name)[0])
    return tuple(parts)
