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
an imported module (``k.kernel``, ``pkg.kernels.kernel``) or of a class of one,
or of an instance of it (``Kernels.rbf``, ``Kernels().rbf``, ``k = Kernels()``
then ``k.rbf``: every def named ``rbf`` in the module counts), ``partial``,
assignments and loops (``for f in (k.a, k.b): njit(f)``); ``getattr(k, name)``
may be any function of ``k``, and so may an item of a container ``k`` holds
(``njit(k.KERNELS[name])``, ``for f in k.KERNELS.values()``).  A module named in an import is every project file
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
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from np2torch.lint import compiled

__all__ = ["ANY", "Summary", "answers", "compiler_names", "may_hand", "summarize"]

ANY = "*"
"""A name that stands for every function of the module (``njit(getattr(k, name))``)."""


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
    compilers: tuple[tuple[str, str], ...] = ()
    """(name, family) of each name the module binds to a compiler (``from numba import njit``, ``def jit(f):
    return numba.njit(f)``): another module that imports it compiles what it applies it to."""
    applied: tuple[tuple[int, str, str], ...] = ()
    """(level, dotted name, function) where an imported name decorates one of the module's functions or,
    in a module-level statement, is called with one (``@jit`` on ``kernel`` after ``from .util import jit``:
    ``(1, "util.jit", "kernel")``): a compiler when the module it comes from binds it to one."""

    def as_json(self) -> dict[str, list[list[object]]]:
        return {name: [list(item) for item in getattr(self, name)] for name in _SHAPES}

    @classmethod
    def from_json(cls, data: object) -> Summary | None:
        """The summary ``data`` describes, or None when it is not one (a cache entry edited or torn)."""
        if not isinstance(data, dict) or set(data) != set(_SHAPES):
            return None
        for name, types in _SHAPES.items():
            items = data[name]
            if not (isinstance(items, list) and all(_shaped(item, types) for item in items)):
                return None
        return cls(**{name: tuple(tuple(item) for item in data[name]) for name in _SHAPES})


_SHAPES: dict[str, tuple[type, ...]] = {"handed": (int, str, str), "imports": (str, int, str), "compilers": (str, str),
                                        "applied": (int, str, str)}


def _shaped(item: object, types: tuple[type, ...]) -> bool:
    return (isinstance(item, list) and len(item) == len(types)
            and all(type(value) is kind for value, kind in zip(item, types)))


def may_hand(text: str) -> bool:
    """False only when the module can hand nothing to a compiler: every way to one starts at an import of its
    package or a call loading it by its name (:func:`np2torch.lint.compiled.may_import_a_compiler`; it spells
    the compiler's name too: :func:`np2torch.lint.compiled.may_name_a_compiler`)."""
    return compiled.may_import_a_compiler(text)


def summarize(tree: ast.Module, text: str) -> Summary:
    """The module's :class:`Summary` (``text``: its source, ``tree``: its ``ast``)."""
    statements = _Statements(tree)
    handed: set[tuple[int, str, str]] = set()
    calls, compilers = compiled.handed_to_compilers(tree, text, statements.imports)
    if calls and statements.bindings:
        sources = _sources(tree)  # a walk of every expression, only where a compiler is called
        for expr, family in calls:
            for level, dotted in _refs(expr, statements.bindings, sources, set()):
                handed.add((level, dotted, family))
    imports = [(name, level, dotted) for stmt in _module_level(tree.body) if type(stmt) is ast.ImportFrom
               for name, (level, dotted) in _bound(stmt)]
    return Summary(tuple(sorted(handed)), tuple(imports), tuple(compilers.items()),
                   tuple(sorted(_applied(tree, statements))))


class _Statements:
    """What a walk over the module's statements (any scope, no expressions) finds: every import statement,
    every name one binds (scopes ignored) -> what it may name (:data:`ANY` -> the star imports), the decorated
    definitions."""

    def __init__(self, tree: ast.Module) -> None:
        self.imports: list[ast.Import | ast.ImportFrom] = []
        self.bindings: dict[str, list[Ref]] = {}
        self.decorated: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = []
        todo: list[list[ast.stmt]] = [tree.body]
        while todo:
            for stmt in todo.pop():
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    self.imports.append(stmt)
                    for name, ref in _bound(stmt):  # a star import's module under ANY (see _dotted)
                        self.bindings.setdefault(name, []).append(ref)
                    continue
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.decorator_list:
                    self.decorated.append(stmt)
                todo.extend(_blocks(stmt))


def _blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists ``stmt`` holds (a body, ``else``, ``finally``, each handler's and case's body)."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if type(block) is list and block and isinstance(block[0], ast.stmt):
            yield block
    for holder in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
        yield holder.body


def _sources(tree: ast.Module) -> dict[str, list[tuple[ast.expr, bool]]]:
    """Every name's sources, scopes ignored: what it is assigned, what it loops over (``True``)."""
    sources: dict[str, list[tuple[ast.expr, bool]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    sources.setdefault(target.id, []).append((node.value, False))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
            if isinstance(node.target, ast.Name) and node.value is not None:
                sources.setdefault(node.target.id, []).append((node.value, False))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            if isinstance(node.target, ast.Name):
                sources.setdefault(node.target.id, []).append((node.iter, True))
    return sources


def _applied(tree: ast.Module, walk: _Statements) -> set[tuple[int, str, str]]:
    """Where an imported name decorates a function of the module, or is called with one in a module-level
    statement (``fast = jit(kernel)``, ``jit(cache=True)(kernel)``): (level, what the name names, function)."""
    bindings = walk.bindings
    if not bindings:
        return set()
    found: set[tuple[int, str, str]] = set()
    for definition in walk.decorated:
        for decorator in definition.decorator_list:
            found.update((level, dotted, definition.name) for level, dotted in _dotted(_callee(decorator), bindings))
    for stmt in _module_level(tree.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in _expressions(stmt):
            if type(node) is ast.Call and node.args and type(node.args[0]) is ast.Name:
                found.update((level, dotted, node.args[0].id) for level, dotted in _dotted(_callee(node.func), bindings)
                             if node.args[0].id not in bindings)
    return found


def _callee(expr: ast.expr) -> ast.expr:
    """``jit`` in ``jit``, ``jit(cache=True)``, ``jit(cache=True)(...)``: the name that makes the compiler."""
    while type(expr) is ast.Call:
        expr = expr.func
    return expr


def _expressions(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a module-level statement's own expressions (not those of the statements it holds)."""
    for field, value in ast.iter_fields(stmt):
        if field in ("body", "orelse", "finalbody", "handlers"):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.AST):
                yield from ast.walk(item)


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


def _refs(expr: ast.expr, bindings: Mapping[str, list[Ref]], sources: Mapping[str, list[tuple[ast.expr, bool]]],
          seen: set[str], elements: bool = False) -> Iterator[Ref]:
    """The functions of other modules ``expr`` may evaluate to (``elements``: the items of the iterable ``expr``)."""
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        for element in expr.elts:
            yield from _refs(element, bindings, sources, seen)
        return
    if type(expr) is ast.Subscript and not elements:  # `k.KERNELS["rbf"]`: any function of the container's module
        yield from _contents(expr.value, bindings)
        return
    if type(expr) is ast.Call:
        func, args = expr.func, expr.args
        if type(func) is ast.Name and func.id == "getattr" and args and not elements:  # `getattr(k, name)`
            yield from _contents(args[0], bindings)
        elif _is_partial(func) and args and not elements:  # `partial(k.f, a)`
            yield from _refs(args[0], bindings, sources, seen)
        elif elements:  # `for f in k.KERNELS.values()`
            yield from _contents(func, bindings)
        return
    if type(expr) is ast.Name and expr.id not in seen:  # a name assigned or looped over: what it holds
        seen.add(expr.id)
        for value, over in sources.get(expr.id, ()):
            yield from _refs(value, bindings, sources, seen, over)
    if elements:  # `for f in KERNELS` (imported): any function of its module
        yield from _contents(expr, bindings)
    else:
        yield from _dotted(expr, bindings)
        yield from _attribute_of_a_name(expr, bindings, sources, seen)


def _contents(expr: ast.expr, bindings: Mapping[str, list[Ref]]) -> Iterator[Ref]:
    """What an item of an imported container (or any attribute of an imported module) may be: any function of
    the module it comes from (``k.KERNELS`` -> ``(0, "pkg.k.KERNELS.*")``)."""
    for level, dotted in _dotted(expr, bindings):
        yield level, f"{dotted}.{ANY}"


def _attribute_of_a_name(expr: ast.expr, bindings: Mapping[str, list[Ref]],
                         sources: Mapping[str, list[tuple[ast.expr, bool]]], seen: set[str]) -> Iterator[Ref]:
    """What an attribute of a name the module assigns names (``k = Kernels()`` or ``k = Kernels``, then
    ``k.rbf``): the attribute of what the name holds (``Kernels.rbf``)."""
    root, parts = _attribute_path(expr)
    if not parts or type(root) is not ast.Name or root.id in seen:
        return
    for value, over in sources.get(root.id, ()):
        if over:
            continue
        while type(value) is ast.Call:  # an instance of a class (or what a factory returns)
            value = value.func
        for level, dotted in _refs(value, bindings, sources, seen | {root.id}):
            yield level, ".".join([dotted, *reversed(parts)])


def _attribute_path(expr: ast.expr) -> tuple[ast.expr, list[str]]:
    """``Kernels().rbf`` -> (``Kernels``, ``["rbf"]``): the attributes read, last first, off what a name (or a
    call of one: an instance of a class) holds."""
    parts: list[str] = []
    while type(expr) is ast.Attribute or (type(expr) is ast.Call and parts):
        if type(expr) is ast.Attribute:
            parts.append(expr.attr)
            expr = expr.value
        else:
            assert type(expr) is ast.Call
            expr = expr.func
    return expr, parts


def _dotted(expr: ast.expr, bindings: Mapping[str, list[Ref]]) -> Iterator[Ref]:
    """What an imported name or an attribute of one names: ``k.kernel`` -> ``(0, "pkg.kernels.kernel")``,
    ``Kernels().rbf`` -> ``(0, "pkg.kernels.Kernels.rbf")``."""
    expr, parts = _attribute_path(expr)
    if type(expr) is ast.Name:
        refs = bindings.get(expr.id) or [(level, star[:-1] + expr.id) for level, star in bindings.get(ANY, ())]
        for level, dotted in refs:  # a name no import binds may come from a star import (`from .util import *`)
            yield level, ".".join([dotted, *reversed(parts)]) if dotted else ".".join(reversed(parts))


def _is_partial(func: ast.expr) -> bool:
    return (type(func) is ast.Name and func.id == "partial") or (type(func) is ast.Attribute and func.attr == "partial")


# --------------------------------------------------------------------------- joining the summaries


Answer = tuple[tuple[str, str, str], ...]
"""(function name, family, what compiles it: the module that does, or a compiler and the module it is from) for
each function of a module that another module compiles, sorted: what
:attr:`np2torch.lint.model.Settings.compiled_elsewhere` takes."""


def answers(summaries: Mapping[str, Summary], files: Sequence[str], summary_of: Callable[[str], Summary | None],
            shown: Callable[[str], str]) -> dict[str, Answer]:
    """Each file's :data:`Answer` (only files that have one).

    ``summaries``: the summaries read so far (by path): every file that may hand a function to a compiler
    or import a compiler from a module of the project must be among them; ``files``: every file of the
    project (paths); ``summary_of(path)``: any other file's summary, asked only for files a compiled name
    leads to (to follow its imports), None when it cannot be read; ``shown(path)``: how the reason names a
    file.
    """
    modules = _Modules(files)
    found: dict[str, set[tuple[str, str, str]]] = {}
    todo: list[tuple[str, str, str, str, str]] = []  # (path, name looked up there, function, family, by)
    compilers = compiler_names(summaries)
    for path, summary in sorted(summaries.items()):
        for level, dotted, family in summary.handed:
            for target, name, function in modules.split(path, level, dotted):
                if target != path:  # its own functions: its own analysis finds them
                    todo.append((target, name, function, family, shown(path)))
        for level, dotted, function in summary.applied:  # `@jit` imported from a module that binds it to a compiler
            module, _, name = dotted.rpartition(".")
            if name not in compilers:
                continue
            for target in modules.named(path, level, module):
                compiler = _compiler(modules, target, name, summaries, summary_of, set())
                if compiler is not None and target != path:
                    todo.append((path, function, function, compiler, f"`{name}` from {shown(target)}"))
    seen: set[tuple[str, str, str]] = set()
    while todo:
        path, name, function, family, by = todo.pop()
        found.setdefault(path, set()).add((function, family, by))
        if (path, name, function) in seen:
            continue
        seen.add((path, name, function))
        read = summaries.get(path) or summary_of(path)
        for bound, level, dotted in read.imports if read else ():
            if bound == ANY or (bound == name or name == ANY):  # re-exported: followed to where it is defined
                module, _, original = dotted.rpartition(".")
                original = name if original == ANY else original
                # the function itself re-exported under another name (`step` for `step_impl`), or what holds it
                renamed = original if function == name else function
                for target in modules.named(path, level, module):
                    if target != path:
                        todo.append((target, original, renamed, family, by))
    return {path: tuple(sorted(names)) for path, names in sorted(found.items())}


def compiler_names(summaries: Mapping[str, Summary]) -> set[str]:
    """Every name a module binds to a compiler, and every name a module imports one of them as
    (``from .util import njit as fast``): the only names an imported compiler can be applied by."""
    names = {name for summary in summaries.values() for name, _family in summary.compilers}
    while True:
        more = {bound for summary in summaries.values() for bound, _level, dotted in summary.imports
                if bound != ANY and dotted.rpartition(".")[2] in names} - names
        if not more:
            return names
        names |= more


def _compiler(modules: _Modules, path: str, name: str, summaries: Mapping[str, Summary],
              summary_of: Callable[[str], Summary | None], seen: set[tuple[str, str]]) -> str | None:
    """The family of the compiler the module at ``path`` binds ``name`` to (itself, or a module it imports
    the name from), or None."""
    if (path, name) in seen:
        return None
    seen.add((path, name))
    summary = summaries.get(path) or summary_of(path)
    if summary is None:
        return None
    family = dict(summary.compilers).get(name)
    if family is not None:
        return family
    for bound, level, dotted in summary.imports:
        if bound in (name, ANY):
            module, _, original = dotted.rpartition(".")
            for target in modules.named(path, level, module):
                family = _compiler(modules, target, name if original == ANY else original, summaries, summary_of, seen)
                if family is not None:
                    return family
    return None


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

    def split(self, importer: str, level: int, dotted: str) -> Iterator[tuple[str, str, str]]:
        """(file, name looked up in it, function) for what ``dotted`` names: the longest part of it that names
        a module (``pkg.kernels.Kernels.rbf``: ``pkg.kernels``), the name after it (``Kernels``) and the last
        (``rbf``: every def of that name in the file counts, a method of a class as a function)."""
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, -1 if level else 0, -1):
            targets = self.named(importer, level, ".".join(parts[:cut]))
            if targets:
                for target in targets:
                    yield target, parts[cut], parts[-1]
                return

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
