"""Qualified-name resolution on Python's ``ast``: the one name analysis that check and fix share.

LibCST's ``QualifiedNameProvider`` answers the same question for every name in
a module and costs ~100x an ``ast.parse``; np2torch needs the answer only for
the few expressions that can reach a table name (``np.exp``, ``erf``, ...).
:func:`resolve` therefore

1. collects the import statements (a walk over statements only),
2. keeps the names those imports bind from the interesting modules (``np``,
   ``sc``, ``exp``; the "candidates"); with none it stops there,
3. walks, with Python's scoping rules, only the statements whose lines spell a
   candidate (a name can only be bound or read where it is written), and
4. resolves each candidate reference to a qualified name.

Scoping follows the language reference: module, function, lambda, class and
comprehension scopes; class scopes are invisible from nested scopes; ``global``
and ``nonlocal``; a name bound anywhere in a scope is local to all of it.

When in doubt a name resolves to nothing.  A name resolves only when every
binding of it in its scope is an import of the same thing; any other binding
(a parameter, an assignment, a ``for``/``with``/``except``/``match`` target,
``del``, a walrus, a ``def``/``class`` of that name) or imports of different
things make it unresolved.  Imports under ``if TYPE_CHECKING:`` do not exist at
run time: they count only beside a run-time import of the same thing.

Star imports: ``from numpy import *`` binds ``exp`` to ``numpy.exp`` for the
names in ``known``.  A name bound by no statement resolves through star imports
only when every star import in its scope provides it that way (``from math
import *`` beside it may bind ``exp`` too).  Which names any other star import
binds only the running program knows (NumPy's, SciPy's, ``math``'s and a
helper module's ``__all__`` change between versions; a static list would
drift), so it may bind any name: one that runs *after* an import binding a name
(``from numpy import exp`` then ``from math import *``) resolves the name still,
with :attr:`Ref.rebound_by` naming it (the engine reports such a reference
without a fix); one before every binding is overridden by them (``from pylab
import *`` then ``import numpy as np``).
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import unicodedata
from typing import Any, Callable, Collection, Iterable, Iterator, Optional, Sequence

from np2torch.lint.walk import every as walk_every
from np2torch.lint.walk import holds, line_numbers
from np2torch.lint.walk import nodes as walk_nodes

__all__ = [
    "WRITE_WORDS", "NamespaceWrites", "Ref", "Resolution", "bound_names", "namespace_writes", "pattern_or_type_binding",
    "resolve",
]

# A binding: (qualified name or None for "not an import", typing_only, alias node or None, line of an import)
_Binding = tuple[Optional[str], bool, Optional[ast.alias], int]
_OTHER: _Binding = (None, False, None, 0)
# A star import: (the module, None when relative, the line, how it is spelled)
_Star = tuple[Optional[str], int, str]
# What a name means in a scope: (qualified name or None, the import aliases binding it, what may rebind it or None)
_Meaning = tuple[Optional[str], tuple[ast.alias, ...], Optional[str]]

# An expression the walk has still to visit: (node, parent, grandparent, scope).  The node is Any: the hot loop
# dispatches on `type(node) is X` held in a variable, which mypy does not narrow.
_Pending = tuple[Any, Optional[ast.AST], Optional[ast.AST], "Scope"]
_FUNC_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_IMPORT = re.compile(r"import(?<!\wimport)(?!\w)")
_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_TRY = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)
_MATCH_NAMED = tuple(getattr(ast, n) for n in ("MatchAs", "MatchStar") if hasattr(ast, n))
_MATCH_MAPPING = getattr(ast, "MatchMapping", ())
# fields that never hold a name: contexts, operators, flags
_SKIP_FIELDS = {"ctx", "op", "ops", "type_comment", "kind", "is_async", "level", "conversion"}


class Scope:
    __slots__ = ("kind", "parent", "bindings", "globals", "nonlocals", "stars")

    def __init__(self, kind: str, parent: Scope | None) -> None:
        self.kind = kind  # "module", "function" (def and lambda), "class", "comprehension"
        self.parent = parent
        self.bindings: dict[str, list[_Binding]] = {}
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.stars: list[_Star] = []


class Ref:
    """An expression (``Name`` or ``Attribute``, load context) with a resolved qualified name.

    ``parent`` and ``grand`` are its syntactic parent and grandparent (for a
    keyword argument the parent is the ``keyword`` node); ``imports`` are the
    ``from``-import aliases that bind a bare name (empty for attribute chains);
    ``in_class`` says it is evaluated directly in a class body; ``bindings``
    are the import aliases that bind its first name, attribute chains included
    (``import numpy as np`` for ``np.exp``); ``rebound_by`` names the star import
    that may rebind that first name at run time (``from math import *`` after
    ``from numpy import exp``), or is None.
    """

    __slots__ = ("node", "qualname", "parent", "grand", "imports", "in_class", "bindings", "rebound_by")

    def __init__(
        self,
        node: ast.expr,
        qualname: str,
        parent: ast.AST | None,
        grand: ast.AST | None,
        imports: tuple[ast.alias, ...],
        in_class: bool = False,
        bindings: tuple[ast.alias, ...] = (),
        rebound_by: str | None = None,
    ) -> None:
        self.node = node
        self.qualname = qualname
        self.parent = parent
        self.grand = grand
        self.imports = imports
        self.in_class = in_class
        self.bindings = bindings
        self.rebound_by = rebound_by

    def __repr__(self) -> str:
        return f"Ref({self.qualname!r} at {self.node.lineno}:{self.node.col_offset})"


class Resolution:
    """The result of :func:`resolve`: every reference whose qualified name is in ``known``."""

    def __init__(
        self, refs: list[Ref], import_froms: dict[int, ast.ImportFrom], imports: Sequence[ast.Import | ast.ImportFrom] = ()
    ) -> None:
        self.refs = refs
        self.imports = imports
        """Every import statement of the module, in any scope (what a cheap first pass of the other analyses reads)."""
        self.by_node: dict[int, Ref] = {id(r.node): r for r in refs}
        # id(alias) -> the ImportFrom statement holding it (for unused-import removal)
        self.import_froms = import_froms

    def qualname(self, node: ast.AST) -> str | None:
        ref = self.by_node.get(id(node))
        return ref.qualname if ref is not None else None


def _import_meanings(stmt: ast.stmt) -> Iterator[tuple[str, str | None, ast.alias]]:
    """(bound name, what it means, alias) for each name an import statement binds; ``*`` for star."""
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                yield alias.asname, alias.name, alias
            else:
                root = alias.name.partition(".")[0]
                yield root, root, alias
    else:
        assert isinstance(stmt, ast.ImportFrom)
        module = stmt.module if not stmt.level else None  # relative imports: unknown target
        for alias in stmt.names:
            meaning = f"{module}.{alias.name}" if module else None
            yield alias.asname or alias.name, meaning, alias


def _iter_child_bodies(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        body = getattr(stmt, field, None)
        if body and isinstance(body, list) and isinstance(body[0], ast.stmt):
            yield body
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    for case in getattr(stmt, "cases", ()):
        yield case.body


def _collect_imports(body: list[ast.stmt], out: list[ast.Import | ast.ImportFrom], lines: list[int] | None) -> None:
    """The import statements in ``body`` at any depth (``lines``: only those holding one of these lines)."""
    for stmt in body:
        if lines is not None and not holds(stmt, lines):
            continue
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            out.append(stmt)
        else:
            for child in _iter_child_bodies(stmt):
                _collect_imports(child, out, lines)


def is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _interesting_lines(source: str, focus_names: Collection[str], candidates: Collection[str]) -> list[int]:
    """Sorted numbers of the lines a statement must touch to matter.

    Those spelling a focus name (``exp``: every reference to ``numpy.exp`` ends
    in it) and those spelling a candidate *not* followed by a dot (every
    binding of ``np``, and every bare use, is spelled so; ``np.sqrt(x)`` is not).
    """
    if "\r" in source:
        source = source.replace("\r\n", "\n").replace("\r", "\n")
    patterns = [_spelling(name, False) for name in focus_names if name in source]
    patterns += [_spelling(name, True) for name in candidates if name not in focus_names and name in source]
    return line_numbers(source, patterns)


@functools.lru_cache(maxsize=1024)
def _spelling(name: str, undotted: bool) -> re.Pattern[str]:
    """``name`` as a whole identifier (``undotted``: not followed by a dot)."""
    escaped = re.escape(name)  # literal first, so that `re` scans for it quickly
    return re.compile(rf"{escaped}(?!\w|[ \t]*\.)(?<!\w{escaped})" if undotted else rf"{escaped}(?!\w)(?<!\w{escaped})")


class _Walker:
    """Builds scopes and collects candidate references (see the module docstring)."""

    def __init__(self, candidates: set[str], last_names: set[str], lines: list[int] | None) -> None:
        self.cand = candidates
        self.last_names = last_names
        self.lines = lines
        self.module = Scope("module", None)
        self.scopes: list[Scope] = [self.module]
        # (node, parent, grand, scope) for candidate Names and Attribute chains rooted at one
        self.raw: list[tuple[ast.expr, ast.AST | None, ast.AST | None, Scope]] = []
        self.import_froms: dict[int, ast.ImportFrom] = {}

    # -- scopes and bindings -------------------------------------------------
    def new_scope(self, kind: str, parent: Scope) -> Scope:
        scope = Scope(kind, parent)
        self.scopes.append(scope)
        return scope

    def bind(self, scope: Scope, name: str, binding: _Binding = _OTHER) -> None:
        if name in self.cand:
            scope.bindings.setdefault(name, []).append(binding)

    def wanted(self, stmt: ast.stmt) -> bool:
        return self.lines is None or holds(stmt, self.lines)

    # -- statements ----------------------------------------------------------
    def stmts(self, body: Iterable[ast.stmt], scope: Scope, typing_only: bool) -> None:
        for stmt in body:
            if self.wanted(stmt):
                self.stmt(stmt, scope, typing_only)

    def stmt(self, stmt: ast.stmt, scope: Scope, typing_only: bool) -> None:
        expr = self.expr
        if isinstance(stmt, _FUNC_DEFS):
            for deco in stmt.decorator_list:
                expr(deco, stmt, None, scope)
            inner = self.new_scope("function", scope)
            self.arguments(stmt.args, stmt, scope, inner)
            if stmt.returns is not None:
                expr(stmt.returns, stmt, None, scope)
            self.type_params(stmt, inner)
            self.bind(scope, stmt.name)
            self.stmts(stmt.body, inner, False)
        elif isinstance(stmt, ast.ClassDef):
            for node in (*stmt.decorator_list, *stmt.bases, *stmt.keywords):
                expr(node, stmt, None, scope)
            inner = self.new_scope("class", scope)
            self.type_params(stmt, inner)
            self.bind(scope, stmt.name)
            self.stmts(stmt.body, inner, False)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for name, meaning, alias in _import_meanings(stmt):
                if name == "*":
                    assert isinstance(stmt, ast.ImportFrom)
                    module = meaning.rpartition(".")[0] if meaning is not None else None
                    spelled = f"from {'.' * stmt.level}{stmt.module or ''} import *"
                    scope.stars.append((module, stmt.lineno, spelled))
                    continue
                if isinstance(stmt, ast.ImportFrom):
                    self.import_froms[id(alias)] = stmt
                self.bind(scope, name, (meaning, typing_only, alias, stmt.lineno))
        elif isinstance(stmt, ast.Global):
            scope.globals.update(stmt.names)
        elif isinstance(stmt, ast.Nonlocal):
            scope.nonlocals.update(stmt.names)
        elif isinstance(stmt, ast.If):
            expr(stmt.test, stmt, None, scope)
            self.stmts(stmt.body, scope, typing_only or is_type_checking(stmt.test))
            self.stmts(stmt.orelse, scope, typing_only)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            expr(stmt.target, stmt, None, scope)
            expr(stmt.iter, stmt, None, scope)
            self.stmts(stmt.body, scope, typing_only)
            self.stmts(stmt.orelse, scope, typing_only)
        elif isinstance(stmt, ast.While):
            expr(stmt.test, stmt, None, scope)
            self.stmts(stmt.body, scope, typing_only)
            self.stmts(stmt.orelse, scope, typing_only)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                expr(item.context_expr, item, stmt, scope)
                if item.optional_vars is not None:
                    expr(item.optional_vars, item, stmt, scope)
            self.stmts(stmt.body, scope, typing_only)
        elif isinstance(stmt, _TRY):
            self.stmts(stmt.body, scope, typing_only)
            for handler in stmt.handlers:
                if handler.type is not None:
                    expr(handler.type, handler, stmt, scope)
                if handler.name:
                    self.bind(scope, handler.name)
                self.stmts(handler.body, scope, typing_only)
            self.stmts(stmt.orelse, scope, typing_only)
            self.stmts(stmt.finalbody, scope, typing_only)
        elif hasattr(ast, "Match") and isinstance(stmt, ast.Match):
            expr(stmt.subject, stmt, None, scope)
            for case in stmt.cases:
                expr(case.pattern, case, stmt, scope)
                if case.guard is not None:
                    expr(case.guard, case, stmt, scope)
                self.stmts(case.body, scope, typing_only)
        else:
            # simple statements: Assign, AugAssign, AnnAssign, Expr, Return, Delete, ...
            expr(stmt, None, None, scope)

    def arguments(self, args: ast.arguments, owner: ast.AST, outer: Scope, inner: Scope) -> None:
        """Defaults and annotations are evaluated outside; the parameters bind inside."""
        for default in (*args.defaults, *(d for d in args.kw_defaults if d is not None)):
            self.expr(default, args, owner, outer)
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if args.vararg:
            every.append(args.vararg)
        if args.kwarg:
            every.append(args.kwarg)
        for arg in every:
            if arg.annotation is not None:
                self.expr(arg.annotation, arg, args, outer)
            self.bind(inner, arg.arg)

    def type_params(self, node: ast.AST, inner: Scope) -> None:
        # Python 3.12 type parameters live in their own annotation scope; binding them
        # in the inner scope is conservative (they shadow outer names there).
        for param in getattr(node, "type_params", ()) or ():
            self.bind(inner, param.name)

    # -- expressions (iterative: long operator chains nest deeper than the recursion limit) --
    def expr(self, root: ast.AST, parent: ast.AST | None, grand: ast.AST | None, scope: Scope) -> None:
        cand = self.cand
        raw = self.raw
        stack: list[_Pending] = [(root, parent, grand, scope)]
        pop = stack.pop
        push = stack.append
        Name, Attribute, Constant, Load = ast.Name, ast.Attribute, ast.Constant, ast.Load
        while stack:
            node, parent, grand, scope = pop()
            t = type(node)
            if t is Name:
                if node.id in cand:
                    if type(node.ctx) is Load:
                        raw.append((node, parent, grand, scope))
                    else:
                        self.bind_target(scope, node.id)
                continue
            if t is Constant:
                continue
            if t is Attribute:
                if type(node.ctx) is Load and node.attr in self.last_names:
                    value = node.value
                    while type(value) is Attribute:
                        value = value.value
                    if type(value) is Name and value.id in cand:
                        raw.append((node, parent, grand, scope))
                push((node.value, node, parent, scope))
                continue
            if t is ast.Lambda:
                inner = self.new_scope("function", scope)
                self.arguments(node.args, node, scope, inner)
                push((node.body, node, parent, inner))
                continue
            if t in _COMPS:
                self.comprehension(node, parent, scope, push)
                continue
            if t is ast.NamedExpr:
                target_scope = scope
                while target_scope.kind == "comprehension" and target_scope.parent is not None:
                    target_scope = target_scope.parent
                self.bind(target_scope, node.target.id)
                push((node.value, node, parent, scope))
                continue
            if _MATCH_NAMED and isinstance(node, _MATCH_NAMED):
                if node.name:
                    self.bind(scope, node.name)
            elif _MATCH_MAPPING and t is _MATCH_MAPPING and node.rest:
                self.bind(scope, node.rest)
            for field in _fields(t):
                value = getattr(node, field)
                if type(value) is list:
                    for item in reversed(value):
                        if isinstance(item, ast.AST):
                            push((item, node, parent, scope))
                elif isinstance(value, ast.AST):
                    push((value, node, parent, scope))

    def bind_target(self, scope: Scope, name: str) -> None:
        self.bind(scope, name)

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                      parent: ast.AST | None, scope: Scope, push: Callable[[_Pending], None]) -> None:
        generators = node.generators
        inner = self.new_scope("comprehension", scope)
        # Pushed in reverse of evaluation order (the stack pops last-in first); order does
        # not matter for correctness, only the scope each part is evaluated in.
        if isinstance(node, ast.DictComp):
            push((node.key, node, parent, inner))
            push((node.value, node, parent, inner))
        else:
            push((node.elt, node, parent, inner))
        for i, gen in enumerate(generators):
            for cond in gen.ifs:
                push((cond, gen, node, inner))
            push((gen.target, gen, node, inner))
            # the first iterable is evaluated in the enclosing scope
            push((gen.iter, gen, node, scope if i == 0 else inner))

    # -- after the walk ------------------------------------------------------
    def apply_declarations(self) -> None:
        """Move bindings of ``global``/``nonlocal`` names to the scope they really bind in."""
        for scope in self.scopes:
            if scope.kind == "module":
                continue
            for name in scope.globals & scope.bindings.keys():
                self.module.bindings.setdefault(name, []).extend(scope.bindings.pop(name))
            for name in scope.nonlocals & scope.bindings.keys():
                owner = _enclosing_function_binding(scope, name)
                if owner is not None:
                    owner.bindings.setdefault(name, []).extend(scope.bindings.pop(name))
                else:  # a syntax error in Python; resolve nothing for it
                    scope.bindings[name].append(_OTHER)


_FIELDS_CACHE: dict[type[ast.AST], tuple[str, ...]] = {}


def _fields(t: type[ast.AST]) -> tuple[str, ...]:
    fields = _FIELDS_CACHE.get(t)
    if fields is None:
        fields = tuple(f for f in t._fields if f not in _SKIP_FIELDS)
        _FIELDS_CACHE[t] = fields
    return fields


def _enclosing_function_binding(scope: Scope, name: str) -> Scope | None:
    s = scope.parent
    first_function: Scope | None = None
    while s is not None and s.kind != "module":
        if s.kind != "class":
            if name in s.bindings:
                return s
            first_function = first_function or s
        s = s.parent
    return first_function


class _Lookup:
    def __init__(self, module: Scope, known: Collection[str]) -> None:
        self.module = module
        self.known = known
        self.cache: dict[tuple[int, str], _Meaning] = {}

    def meaning(self, scope: Scope, name: str) -> _Meaning:
        key = (id(scope), name)
        hit = self.cache.get(key)
        if hit is None:
            hit = self._meaning(scope, name)
            self.cache[key] = hit
        return hit

    def _meaning(self, scope: Scope, name: str) -> _Meaning:
        s: Scope | None = scope
        skip_classes = False
        if name in scope.globals:
            s = self.module
        elif name in scope.nonlocals:
            s, skip_classes = scope.parent, True
        while s is not None:
            if s.kind == "class" and skip_classes:
                s = s.parent
                continue
            skip_classes = True
            if name in s.bindings:
                return self._evaluate(s, name, s.bindings[name])
            if s.stars:
                return self._evaluate(s, name, [])
            s = s.parent
        return None, (), None

    def _evaluate(self, scope: Scope, name: str, bindings: list[_Binding]) -> _Meaning:
        meanings: set[str | None] = set()
        runtime = False
        lines = []  # where a run-time import binds it
        for meaning, typing_only, _alias, line in bindings:
            meanings.add(meaning)
            runtime = runtime or not typing_only
            if not typing_only:
                lines.append(line)
        unknown: list[_Star] = []
        for star in scope.stars:
            qualname = f"{star[0]}.{name}" if star[0] else None
            if qualname in self.known:
                meanings.add(qualname)
                runtime = True
                lines.append(star[1])
            elif not bindings:
                meanings.add(None)  # this star import may bind it too (`from math import *`)
            else:
                unknown.append(star)
        if len(meanings) != 1 or None in meanings or not runtime:
            return None, (), None
        aliases = tuple(alias for _m, _t, alias, _l in bindings if alias is not None)
        # A star import whose names only the running program knows may rebind it once it has been bound
        # (one before the binding is overridden by it: `from pylab import *` then `import numpy as np`)
        later = [spelled for _module, line, spelled in unknown if line > min(lines)]
        return meanings.pop(), aliases, (f"`{later[0]}`" if later else None)


def resolve(
    tree: ast.Module,
    known: Collection[str],
    source: str | None = None,
    *,
    focus: Collection[str] | None = None,
) -> Resolution:
    """``Name``/``Attribute`` loads in ``tree`` whose qualified name is in ``known``.

    ``known`` holds dotted qualified names (``numpy.exp``, ``numpy.pi``).
    Without ``source`` every statement is walked and every such reference is
    returned.  With ``source`` (the text ``tree`` was parsed from) only the
    statements that can matter to the ``focus`` names (default: all of
    ``known``) are walked: every reference to a focus name is still returned,
    and references to the other known names only inside those statements
    (enough to see the constants in a focus function's arguments).
    """
    known = frozenset(known)
    focus = known if focus is None else frozenset(focus)
    roots = {q.partition(".")[0] for q in known}
    on_the_way = _on_the_way(known)
    last_names = {q.rpartition(".")[2] for q in known}

    imports: list[ast.Import | ast.ImportFrom] = []
    # an import statement spells `import` (a keyword is ASCII: `ｉｍｐｏｒｔ` is a name)
    _collect_imports(tree.body, imports, line_numbers(source, [_IMPORT]) if source is not None else None)
    candidates: set[str] = set()
    reached: set[str] = set()  # what those imports bind: a qualified name resolves only as one of them + attributes
    import_lines: list[int] = []
    for stmt in imports:
        # imports are walked whatever they spell (`import np.linalg` binds np; a star
        # import binds names it does not spell)
        import_lines.append(stmt.lineno)
        for name, meaning, _alias in _import_meanings(stmt):
            if meaning is None or meaning.partition(".")[0] not in roots:
                continue
            if name == "*":
                star = meaning.rpartition(".")[0]
                candidates.update(q.rpartition(".")[2] for q in known if q.rpartition(".")[0] == star)
                reached.add(star)
            elif meaning in on_the_way:  # `from scipy.interpolate import CubicSpline` reaches no known name
                candidates.add(name)
                reached.add(meaning)
    if not candidates:
        return Resolution([], {}, imports)

    lines = None
    if source is not None and source.isascii():
        # Non-ASCII identifiers are NFKC-normalised by the parser, so spelling-based
        # pruning is only exact for ASCII text.
        focus_names = {q.rpartition(".")[2] for q in focus if _reachable(q, reached)}
        lines = sorted({*_interesting_lines(source, focus_names, candidates), *import_lines})
    walker = _Walker(candidates, last_names, lines)
    walker.stmts(tree.body, walker.module, False)
    walker.apply_declarations()

    lookup = _Lookup(walker.module, known)
    refs: list[Ref] = []
    for node, parent, grand, scope in walker.raw:
        attrs: list[str] = []
        value = node
        while type(value) is ast.Attribute:
            attrs.append(value.attr)
            value = value.value
        assert isinstance(value, ast.Name)  # what the walk collects starts at a candidate name
        meaning, aliases, rebound_by = lookup.meaning(scope, value.id)
        if meaning is None:
            continue
        qualname = meaning + "." + ".".join(reversed(attrs)) if attrs else meaning
        if qualname in known:
            binding = () if attrs else aliases
            refs.append(Ref(node, qualname, parent, grand, binding, scope.kind == "class", aliases, rebound_by))
    return Resolution(refs, walker.import_froms, imports)


@functools.lru_cache(maxsize=8)
def _on_the_way(known: frozenset[str]) -> frozenset[str]:
    """Each known name and each module on the way to one (``numpy``, ``scipy``, ``scipy.special``): the only
    meanings through which an imported name can reach a known name (a qualified name resolves as an import's
    meaning plus attributes)."""
    parts = [q.split(".") for q in known]
    return frozenset(".".join(p[:i]) for p in parts for i in range(1, len(p) + 1))


def _reachable(qualname: str, reached: Collection[str]) -> bool:
    """Whether ``qualname`` is one of ``reached`` or an attribute (of an attribute...) of one."""
    return any(qualname == name or qualname.startswith(name + ".") for name in reached)


def bound_names(tree: ast.Module) -> dict[str, list[str]]:
    """Every identifier in ``tree`` (any scope) -> how it occurs.

    Kinds, one entry per occurrence: ``"use"`` (a load), ``"import <module>"``
    (``import <module> as name``), ``"import"`` (``import name[.sub]``, binding its first part),
    ``"from <qualname>"`` (``from <module> import <name> [as name]``), ``"other"`` (any other binding
    or declaration).  Used to pick a free alias
    and to decide whether an import is still used; it ignores scopes on purpose
    (a name used anywhere counts as used).
    """
    names: dict[str, list[str]] = {}

    def add(name: str, kind: str) -> None:
        names.setdefault(name, []).append(kind)

    for node in walk_every(tree):
        if isinstance(node, ast.Name):
            add(node.id, "use" if type(node.ctx) is ast.Load else "other")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    add(alias.asname, f"import {alias.name}")
                else:
                    add(alias.name.partition(".")[0], "import")
        elif isinstance(node, ast.ImportFrom):
            module = node.module if not node.level else None
            for alias in node.names:
                add(alias.asname or alias.name, f"from {module}.{alias.name}" if module else "other")
        elif isinstance(node, ast.arg):
            add(node.arg, "other")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name, "other")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                add(name, "other")
        else:
            bound = pattern_or_type_binding(node) if isinstance(node, _OTHER_BINDERS) else None
            if bound:
                add(bound, "other")
    return names


# what binds a name besides assignments, imports, parameters, definitions and declarations: an `except`
# clause, a `match` pattern (Python >= 3.10), a type parameter (>= 3.12)
_OTHER_BINDERS: tuple[type, ...] = (ast.ExceptHandler, *(
    getattr(ast, name) for name in ("MatchAs", "MatchStar", "MatchMapping", "TypeVar", "ParamSpec", "TypeVarTuple")
    if hasattr(ast, name)
))


def pattern_or_type_binding(node: ast.AST) -> str | None:
    """The name an ``except ... as name``, a ``match`` pattern (``case [x, *rest]``, ``case {**rest}``) or a
    type parameter binds, if any."""
    if isinstance(node, ast.ExceptHandler):
        return node.name
    if sys.version_info >= (3, 10):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)):
            return node.name
        if isinstance(node, ast.MatchMapping):
            return node.rest
    if sys.version_info >= (3, 12) and isinstance(node, (ast.TypeVar, ast.ParamSpec, ast.TypeVarTuple)):
        return node.name
    return None


# --------------------------------------------------------------------------- writes no binding spells


class NamespaceWrites:
    """Writes to the module's namespace that no import or assignment spells (``globals()["exp"] = f``,
    ``globals().update(d)``, ``vars()`` at module level, ``sys.modules[__name__].exp = f``, ``setattr`` on
    it, a function's ``__globals__`` or a frame's ``f_globals``/``f_locals``, ``exec`` of a string at module
    level): any name they may write may mean something else at run time."""

    def __init__(self) -> None:
        self.every: str | None = None
        """A write that may bind any name (``globals().update(d)``): where it is."""
        self.names: dict[str, str] = {}
        """Names written by a write that spells them (``globals()["exp"] = f``) -> where."""

    def rebinding(self, name: str) -> str | None:
        """Where ``name`` may be rebound, or None."""
        return self.every or self.names.get(name)

    def add(self, node: ast.expr, names: Iterable[str] | None) -> None:
        where = f"`{_snippet(node)}` (line {node.lineno})"
        if names is None:
            self.every = self.every or where
        else:
            for name in names:
                self.names.setdefault(name, where)


# what must be spelled for a namespace write to exist: a call of a builtin that reaches the namespace
# (`globals()`, `exec(`), the modules table (`sys.modules[...]`), `__main__` or an attribute holding a module's
# namespace (`f.__globals__`, `sys._getframe().f_globals`); each word first, so that `re` scans for it quickly
_NAMESPACE_ATTRIBUTES = frozenset({"__globals__", "f_globals", "f_locals"})
"""Attributes that may be the module's namespace: a function's globals (any function may be one of the module's),
a frame's globals, a frame's locals (a frame of the module's own code: ``sys._getframe(1).f_locals``)."""
_DYNAMIC_WORDS = {
    **{word: re.compile(rf"{word}(?<!\w{word})[\s\\]*\(") for word in ("globals", "vars", "locals", "exec", "eval")},
    **{word: re.compile(rf"{word}(?<!\w{word})(?!\w)") for word in ("modules", "__main__", *_NAMESPACE_ATTRIBUTES)},
}
WRITE_WORDS: frozenset[str] = frozenset(_DYNAMIC_WORDS)
"""What a namespace write spells somewhere in its statement (:func:`namespace_writes` walks those only)."""
_READ_METHODS = frozenset({"get", "keys", "values", "items", "copy", "__getitem__", "__contains__", "__len__",
                           "__iter__"})
_READ_CALLS = frozenset({"len", "list", "dict", "sorted", "set", "tuple", "print", "repr", "str", "iter", "id"})
_NAMESPACE_BUILTINS = frozenset({"globals", "vars", "locals"})


def namespace_writes(tree: ast.Module, source: str) -> NamespaceWrites | None:
    """The module's :class:`NamespaceWrites`, or None when it has none.

    ``globals()`` counts in any scope (it is the module's namespace everywhere), so does ``exec`` without a
    namespace (its code may say ``global``); ``vars()``, ``locals()`` and ``eval`` only at module level (in
    a function they are its own).
    Reading (``globals()["x"]``, ``globals().get``, ``"x" in globals()``) is no write; handing the namespace
    to anything else (``exec(code, globals())``, ``g = globals()``) may write any name.
    """
    # only the statements spelling one are walked (np2torch.lint.walk)
    spelled = source if source.isascii() else unicodedata.normalize("NFKC", source)
    lines = line_numbers(spelled, [pattern for word, pattern in _DYNAMIC_WORDS.items() if word in spelled])
    writes = NamespaceWrites()
    for node, parent, module_level in walk_nodes(tree, lines):
        if type(node) is ast.Call:
            _call_writes(node, parent, module_level, writes)
        elif type(node) is ast.Attribute and _is_this_module(node.value):
            if node.attr == "__dict__" or type(node.ctx) is not ast.Load:
                writes.add(node, None if node.attr == "__dict__" else [node.attr])
        elif type(node) is ast.Attribute and node.attr in _NAMESPACE_ATTRIBUTES:
            _namespace_use(node, parent, writes)  # `f.__globals__["exp"] = g`, `frame.f_globals.update(d)`
    return writes if writes.every or writes.names else None


def _call_writes(call: ast.Call, parent: ast.AST | None, module_level: bool, writes: NamespaceWrites) -> None:
    func = call.func
    if type(func) is not ast.Name:
        return
    name = func.id
    if name in _NAMESPACE_BUILTINS and not call.args and not call.keywords:
        if name == "globals" or module_level:
            _namespace_use(call, parent, writes)
    elif name == "vars" and len(call.args) == 1 and _is_this_module(call.args[0]):
        writes.add(call, None)
    elif name in ("exec", "eval") and (module_level or name == "exec") and len(call.args) == 1 and not call.keywords:
        # in a function, `exec` reaches the module only by a `global` statement in its code (any, unseen)
        code = call.args[0]
        if not (isinstance(code, ast.Constant) and isinstance(code.value, str)):
            writes.add(call, None)
        elif "import" in code.value and "*" in code.value:  # `exec("from math import *")`: any name
            writes.add(call, None)
        elif name == "exec" or ":=" in code.value:  # an expression binds a name only with `:=`
            writes.add(call, re.findall(r"[^\W\d]\w*", code.value))
    elif name == "setattr" and len(call.args) >= 2 and _is_this_module(call.args[0]):
        writes.add(call, _constant_names([call.args[1]]))


def _namespace_use(call: ast.expr, parent: ast.AST | None, writes: NamespaceWrites) -> None:
    """What is done with the module's namespace ``call`` returns (or an attribute holds): read, a spelled
    write, or anything."""
    if type(parent) is ast.Subscript and parent.value is call:
        if type(parent.ctx) is not ast.Load:
            writes.add(parent, _constant_names([parent.slice]))
        return
    if type(parent) is ast.Compare or (type(parent) is ast.Call and parent.func is not call
                                       and type(parent.func) is ast.Name and parent.func.id in _READ_CALLS):
        return
    if type(parent) is ast.Attribute and parent.value is call:
        if parent.attr in _READ_METHODS:
            return
        # the call of the method is the attribute's parent, which this walk does not keep: any name
        writes.add(parent, None)
        return
    if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is call:
        return
    writes.add(call, None)


def _constant_names(keys: Sequence[ast.expr]) -> list[str] | None:
    """The names string constants spell, or None (any name) when a key is not one."""
    names = []
    for key in keys:
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        names.append(key.value)
    return names


def _is_this_module(node: ast.expr) -> bool:
    """``sys.modules[...]``, ``sys.modules.get(...)`` or ``__main__``: possibly the module itself."""
    if type(node) is ast.Name:
        return node.id == "__main__"
    if type(node) is ast.Subscript:
        value = node.value
        return type(value) is ast.Attribute and value.attr == "modules"
    if type(node) is ast.Call and type(node.func) is ast.Attribute and node.func.attr == "get":
        holder = node.func.value
        return type(holder) is ast.Attribute and holder.attr == "modules"
    return False


def _snippet(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 40 else text[:37] + "..."
