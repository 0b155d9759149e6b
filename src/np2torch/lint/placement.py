"""Where a fix puts ``import <runtime> as <alias>``: text in, a line out, no LibCST.

The alias must be bound before the first statement that can execute a rewritten
call, and after whatever the runtime's import itself needs (``sys.path.insert``
making a vendored runtime importable, ``os.environ`` settings read when NumPy
loads).  Top-level code runs in order; a function body runs when the function
is called, not when it is defined.  So:

* The **deadline** is the first top-level statement (a :class:`Unit`) that can
  run a rewritten call: one that evaluates a fix when the module is imported
  (outside any ``def`` or ``lambda`` body), or one that can call code once a
  function holding a fix exists (a call, a decorator, a class statement with
  bases (its metaclass), ``with``, ``raise``, ``await``, a subscript of a class
  the module defines (its ``__class_getitem__``): operators, attribute reads
  and iteration run user code only on objects a call made first).  A
  statement that defines such a function and can call code is the deadline
  itself (``if __name__ == "__main__": def main(): ...; main()``).
* The import goes right after the last module-level import that the findings
  resolve through and that runs before the deadline: whatever that import
  needed ran before it; and after every star import and every statement that
  changes what an import finds or reads (``sys.path``, ``os.environ``: the
  runtime reads ``NP2TORCH_*`` when it loads) before the deadline.
* With none before the deadline but one inside the deadline statement
  (``if __name__ == "__main__": import numpy as np; main()``, a module-level
  ``try:``), or set-up code there (``sys.path.insert``), right after the last
  of those in its block, when that is sound: nothing on the way there
  (headers, earlier statements, other branches, that statement itself) and
  nothing after the deadline statement can run a rewritten call, and it has
  its lines to itself.  Otherwise right before the deadline statement, if
  those are imports and nothing on the way to them could be set-up code
  (calls, item and attribute writes); otherwise there is no place
  (:data:`NO_PLACE`).
* With no such import at all (NumPy imported inside functions only): after the
  last top-level statement before the deadline that is not a ``def`` or
  ``class`` (the set-up code), and not before the docstring, ``__future__``
  imports and the first block of imports.
* A fix that a statement can run before the module-level import its name resolves through (a function
  called above ``import numpy as np``) has no place (:func:`before_their_import`): the original raises
  NameError there, and the runtime import, before that statement, would make the call succeed.
* A star import that runs after the import may rebind the alias (a module's
  names are known only at run time): then there is no place (:data:`STAR_AFTER`).

A module that already imports the runtime under the alias at top level before
the deadline gets no second import.  Notebooks are one module, cells in order
(:mod:`np2torch.lint.notebook`): the import lands in a cell that runs before the
first cell that can run a rewritten call.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Collection, Iterable, Iterator, Mapping, Optional, Sequence, Union

from np2torch.lint.isort import ImportOrder
from np2torch.lint.model import Lines
from np2torch.lint.resolve import Ref, bound_names, is_type_checking, pattern_or_type_binding
from np2torch.lint.walk import children, every

__all__ = [
    "NO_PLACE", "STAR_AFTER", "ImportPlace", "Layout", "Unit", "Units", "before_their_import", "import_place",
    "function_body_words", "statements", "units_of",
]

NO_PLACE = "no place"
"""No line runs before every rewritten call and after the set-up the import may need."""
STAR_AFTER = "star import after"
"""A star import runs after every possible place and may rebind the alias."""

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*_DEFS, ast.ClassDef)
_Pos = tuple[int, int]
if TYPE_CHECKING:
    _Located = Union[ast.stmt, ast.expr, ast.pattern]
    """A node with a position (a statement, an expression, a ``match`` pattern)."""


# --------------------------------------------------------------------------- top-level statements


class Unit:
    """Top-level statements sharing lines (``import os; y = 1`` is one unit): lines ``first``..``last``."""

    __slots__ = ("first", "last", "stmts")

    def __init__(self, stmt: ast.stmt) -> None:
        self.first = first_line(stmt)
        self.last = stmt.end_lineno or stmt.lineno
        self.stmts = [stmt]


def first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return min([stmt.lineno, *(d.lineno for d in decorators)]) if decorators else stmt.lineno


class Units(list[Unit]):
    """The units of a module, in order, with their first lines for bisection."""

    def __init__(self, units: list[Unit]) -> None:
        super().__init__(units)
        self.firsts = [unit.first for unit in units]

    def index_of(self, line: int) -> int | None:
        """The index of the unit holding ``line``, or None."""
        index = bisect_right(self.firsts, line) - 1
        return None if index < 0 or line > self[index].last else index


def units_of(tree: ast.Module) -> Units:
    units: list[Unit] = []
    for stmt in tree.body:
        if units and first_line(stmt) <= units[-1].last:
            units[-1].last = max(units[-1].last, stmt.end_lineno or stmt.lineno)
            units[-1].stmts.append(stmt)
        else:
            units.append(Unit(stmt))
    return Units(units)


def statements(stmts: Sequence[ast.stmt], stop: tuple[type, ...], run_time: bool = False) -> Iterator[ast.stmt]:
    """``stmts`` and the statements nested in their blocks, not looking inside the ``stop`` kinds
    (nor, with ``run_time``, inside ``if TYPE_CHECKING:``)."""
    stack = list(stmts)
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, stop):
            continue
        for block in _blocks(stmt, run_time):
            stack.extend(block)


def _blocks(stmt: ast.stmt, run_time: bool = False) -> Iterator[list[ast.stmt]]:
    """The statement lists a compound statement holds (not a def's or class's body)."""
    if isinstance(stmt, _SCOPES):
        return
    if not (run_time and isinstance(stmt, ast.If) and is_type_checking(stmt.test)):
        body = getattr(stmt, "body", None)
        if body:
            yield body
    for field in ("orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if block:
            yield block
    for holder in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
        yield holder.body


# --------------------------------------------------------------------------- what a statement does on import


def _import_time_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and what it evaluates when it runs: not the bodies of the functions and lambdas it defines
    (their decorators, defaults and annotations are evaluated)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, _DEFS):
            stack.extend([*current.decorator_list, current.args])
            if current.returns is not None:
                stack.append(current.returns)
        elif isinstance(current, ast.Lambda):
            stack.append(current.args)
        else:
            stack.extend(children(current))


_CALLING = (ast.Call, ast.Await, ast.Raise, ast.With, ast.AsyncWith, ast.AsyncFor)


def _hands_itself_on(node: ast.AST) -> bool:
    """A definition that hands what it defines to code as it runs: a decorator, or a class statement with
    bases or keywords (its metaclass, ``__init_subclass__``)."""
    if isinstance(node, _DEFS):
        return bool(node.decorator_list)
    if isinstance(node, ast.ClassDef):
        return bool(node.decorator_list or node.bases or node.keywords)
    return False


def _can_call(node: ast.AST) -> bool:
    """Whether evaluating ``node`` itself may run code (a call, ``with``, ``raise``, ``await``, a decorator)."""
    return isinstance(node, _CALLING) or _hands_itself_on(node)


def _writes_something(node: ast.AST) -> bool:
    """Set-up code: a call, or a write of an item or attribute (``os.environ["X"] = "1"``, ``sys.path[:0] = ...``)."""
    if _can_call(node):
        return True
    return isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load)


class _Fixes:
    """The rewritten expressions, by position."""

    def __init__(self, refs: Iterable[Ref], layout: Layout) -> None:
        found = sorted(((ref.node.lineno, ref.node.col_offset), id(ref.node)) for ref in refs)
        self.positions = [pos for pos, _id in found]
        self.ids = [node_id for _pos, node_id in found]
        self.layout = layout
        self.classes = layout.classes
        """The names the module's class statements bind: subscripting one runs its ``__class_getitem__``."""

    def within(self, nodes: Sequence[_Located]) -> bool:
        """Whether a rewritten expression lies within ``nodes``."""
        for node in nodes:
            start, end = _span(node)
            if bisect_left(self.positions, start) < bisect_left(self.positions, end):
                return True
        return False

    def effects(self, nodes: Sequence[_Located], calls: bool = False) -> tuple[bool, bool, bool]:
        """(runs a fix on import, defines a function holding one, can call this module's code on import)
        for ``nodes`` (``calls``: evaluating them calls code besides, as entering a ``with`` does).

        Code reaches a function of this module only through a name this module binds (``main()``,
        ``print(obj)``, ``Thread(target=f)``, ``sys.excepthook = hook``), or by a decorator or metaclass
        handed it: a call or write that spells none (``sys.path.insert(0, "vendor")``, ``np.zeros(3)``)
        runs no rewritten call.
        """
        runs = creates = False
        for root in nodes:
            start, end = _span(root)
            inside = set(self.ids[bisect_left(self.positions, start):bisect_left(self.positions, end)])
            calling = False
            names: set[str] = set()
            for node in _import_time_nodes(root):
                if type(node) is ast.Name:
                    names.add(node.id)
                elif isinstance(node, _CALLING) or (
                    isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load)
                ):  # a write into another object may hand it a function to call later (`sys.excepthook = hook`)
                    calling = True
                elif type(node) is ast.Subscript and type(node.value) is ast.Name and node.value.id in self.classes:
                    calling = True  # `Grid[1.0]` calls `Grid.__class_getitem__`, a class made without a call
                elif _hands_itself_on(node) or (isinstance(node, ast.ImportFrom) and node.level):
                    calls = True  # a relative import may import this module back and call it
                if id(node) in inside:
                    inside.discard(id(node))
                    runs = True
            calls = calls or (calling and self.layout.owns_any(names))
            creates = creates or bool(inside)
        return runs, creates, calls


def _span(node: _Located) -> tuple[_Pos, _Pos]:
    """Where ``node`` starts (its first decorator's line) and ends."""
    first = first_line(node) if isinstance(node, ast.stmt) else node.lineno
    begin = (first, 0 if first < node.lineno else node.col_offset)
    return begin, (node.end_lineno or node.lineno, node.end_col_offset or 0)


def _within(node: _Located, holder: _Located) -> bool:
    start, end = _span(holder)
    return start <= (node.lineno, node.col_offset) < end


class _Runner:
    """Walks statements in the order they run, remembering whether a function holding a fix exists yet."""

    def __init__(self, fixes: _Fixes, holder: bool = False) -> None:
        self.fixes = fixes
        self.holder = holder

    def may_run(self, stmts: Sequence[_Located], calls: bool = False) -> bool:
        """Whether running ``stmts`` (next, in order) can run a rewritten call."""
        if not self.holder and not self.fixes.within(stmts):
            return False  # no fix in them and none defined yet: whatever they call runs no rewritten call
        runs, creates, calls = self.fixes.effects(stmts, calls)
        if runs or (calls and (creates or self.holder)):
            return True
        self.holder = self.holder or creates
        return False


# --------------------------------------------------------------------------- the place


@dataclass(frozen=True)
class ImportPlace:
    """The runtime import goes right after line ``after`` (0: first) with ``indent``; ``existing``: the
    module imports it already where it is needed, and nothing is added."""

    after: int
    indent: str = ""
    existing: bool = False
    blank_before: bool = False
    """A blank line goes before the import: it starts a section of its own after another (isort's order)."""
    blank_after: bool = False
    """A blank line goes after it: another section follows."""


class Layout:
    """What placement reads of a module, computed once for :func:`before_their_import` and :func:`import_place`."""

    def __init__(self, tree: ast.Module, lines: Lines, whole: Callable[[], ast.Module] | None = None) -> None:
        self.tree = tree
        self.lines = lines
        self.units = units_of(tree)
        self.owners = _module_level_imports(self.units)
        self.stars = _star_imports(self.units)
        self.classes = _class_names(tree, lines)
        self._whole = whole
        """The whole module's tree, where ``tree`` has function bodies replaced by ``pass``
        (:mod:`np2torch.lint.skim`, :func:`function_body_words`), parsed when first needed."""
        self._own: set[str] | None = None
        self._own_whole: set[str] | None = None
        self._deadlines: dict[frozenset[int], int] = {}

    @property
    def own(self) -> set[str]:
        """The module-level names the module binds other than by absolute imports (:func:`_own_names`),
        computed when a statement that can call code first needs them."""
        if self._own is None:
            self._own = _own_names(self.tree, self.lines)
        return self._own

    def owns_any(self, names: Collection[str]) -> bool:
        """Whether one of ``names`` is one of :attr:`own`.  Where :func:`_own_names` reads every scope and the
        tree has bodies replaced, a name none of the tree's bindings has may be bound in one of them: the
        whole module's names answer then (a superset of the tree's)."""
        if not self.own.isdisjoint(names):
            return True
        if self._whole is None or not _binds_from_inside(self.lines):
            return False
        if self._own_whole is None:
            self._own_whole = _own_names(self._whole(), self.lines)
        return not self._own_whole.isdisjoint(names)

    def fixes(self, refs: Iterable[Ref]) -> _Fixes:
        return _Fixes(refs, self)

    def deadline(self, refs: Collection[Ref]) -> int:
        """The index of the first unit that can run a rewritten call of ``refs`` (:func:`_deadline`), computed
        once for each set of refs (:func:`before_their_import` and :func:`import_place` ask for the same)."""
        key = frozenset(id(ref.node) for ref in refs)
        found = self._deadlines.get(key)
        if found is None:
            found = self._deadlines[key] = _deadline(self.units, self.fixes(refs))
        return found


def import_place(layout: Layout, refs: Sequence[Ref], runtime_module: str, alias: str,
                 order: ImportOrder = ImportOrder()) -> ImportPlace | str:
    """Where the runtime import goes for the fixes of ``refs``, or why nowhere (:data:`NO_PLACE`,
    :data:`STAR_AFTER`); see the module docstring.  In a block of plain imports, where isort (``order``)
    puts it among the positions as sound as the one found (:func:`_in_isort_order`)."""
    units, owners, stars, lines = layout.units, layout.owners, layout.stars, layout.lines
    fixes = layout.fixes(refs)
    deadline = layout.deadline(refs)
    for unit in units[:deadline]:
        if any(_is_runtime_import(stmt, runtime_module, alias) for stmt in unit.stmts):
            return ImportPlace(unit.last, existing=True)
    anchors = {owners[id(a)] for ref in refs for a in _binding_aliases(ref, owners, stars)}
    before = [units.index_of(stmt.lineno) for stmt in anchors]
    before_deadline = [i for i in before if i is not None and i < deadline]
    if before_deadline:
        star_units = [units.index_of(star.lineno) for found in stars.values() for star in found]
        set_up = [i for i in range(max(before_deadline) + 1, deadline) if _sets_up_imports(units[i])]
        last = max([*before_deadline, *set_up, *(i for i in star_units if i is not None and i < deadline)])
        place: ImportPlace | str = ImportPlace(units[last].last)
    elif deadline < len(units) and (inside := _to_follow(units[deadline], anchors)):
        place = _inside_deadline(units, deadline, inside, anchors, fixes, lines)
    else:
        place = _after_set_up(units, deadline)
    if isinstance(place, ImportPlace) and any(
        star.lineno > place.after for found in stars.values() for star in found
    ):
        return STAR_AFTER
    if isinstance(place, ImportPlace):
        return _in_isort_order(layout, place, deadline, order, ast.Import([ast.alias(runtime_module, alias)]))
    return place


def before_their_import(layout: Layout, refs: Sequence[Ref]) -> list[Ref]:
    """The refs that a top-level statement may run before the first module-level import binding their name
    has run (``def f(x): return np.exp(x)``, then ``f(1.0)``, then ``import numpy as np``), those whose
    name another function's ``global`` import binds (whenever that function happens to run), and those
    above every import binding their name in their own function (:meth:`_Functions.binds_later`).

    There the original raises NameError, while the runtime import, which must come before that statement
    (the deadline), would make the rewritten call succeed: no place serves them.  A ref whose import is
    inside its deadline statement is left to :func:`import_place` (it follows the import, or there is none).
    """
    units, owners, stars = layout.units, layout.owners, layout.stars
    deadline = layout.deadline(refs)
    early = []
    functions: _Functions | None = None
    for ref in refs:
        aliases = _binding_aliases(ref, owners, stars)
        if not aliases and ref.bindings:  # imports in functions
            functions = _Functions(layout.tree) if functions is None else functions
            if functions.binds_later(ref):
                early.append(ref)
            continue
        found = [units.index_of(owners[id(a)].lineno) for a in aliases]
        first = min((i for i in found if i is not None), default=None)
        # the deadline of all refs comes no later than any one's: only a first import after it needs a look
        if first is not None and first > deadline and layout.deadline([ref]) < first:
            early.append(ref)
    return early


_Function = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]


class _Functions:
    """Which function holds each import and each name or attribute: where a function's import binds."""

    def __init__(self, tree: ast.Module) -> None:
        self.imports: dict[int, tuple[_Function, ast.stmt]] = {}  # id(alias) -> (its function, its import)
        self.holder: dict[int, _Function | None] = {}  # id(expression) -> its innermost function
        stack: list[tuple[ast.AST, _Function | None]] = [(tree, None)]
        while stack:
            node, function = stack.pop()
            if isinstance(node, (ast.Import, ast.ImportFrom)) and function is not None:
                self.imports.update((id(alias), (function, node)) for alias in node.names)
            elif isinstance(node, (ast.Name, ast.Attribute)):
                self.holder[id(node)] = function
            inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else function
            stack.extend((child, inner) for child in children(node))

    def binds_later(self, ref: Ref) -> bool:
        """Whether a function import may not have bound the ref's name when the ref runs: a ``global`` one in
        another function (it binds when that function runs), or one further down the ref's own function
        (``y = np.exp(x)`` then ``import numpy as np``: UnboundLocalError)."""
        found = [self.imports[id(alias)] for alias in ref.bindings if id(alias) in self.imports]
        if any(not _within(ref.node, function) for function, _stmt in found):
            return True
        where = (ref.node.lineno, ref.node.col_offset)
        own = [stmt for function, stmt in found if self.holder.get(id(ref.node)) is function]
        return bool(own) and all((stmt.lineno, stmt.col_offset) > where for stmt in own)


_NESTED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# what binds a name besides assignments, imports and definitions at module level: `except ... as`, `match` patterns
_OTHER_BINDERS: tuple[type, ...] = (ast.ExceptHandler, *(
    getattr(ast, name) for name in ("MatchAs", "MatchStar", "MatchMapping") if hasattr(ast, name)))

_GLOBAL = re.compile(r"global(?!\w)(?<!\wglobal)")  # the literal first, so that `re` scans for it quickly


def _may_be_global(text: str) -> bool:
    """Whether a ``global`` statement may stand in ``text``: the keyword at a line's start (after its
    indentation), after a ``;`` or a compound statement's ``:`` (a keyword is ASCII: ``ｇｌｏｂａｌ`` is a name)."""
    for match in _GLOBAL.finditer(text):
        i = match.start() - 1
        while i >= 0 and text[i] in " \t\f":
            i -= 1
        if i < 0 or text[i] in "\n\r;:":
            return True
    return False


_WALRUS = ":="
_CLASS_GETITEM = "__class_getitem__"


def function_body_words(text: str) -> frozenset[str]:
    """What a function's body must spell for placement to read it from a tree whose other bodies are ``pass``
    (:mod:`np2torch.lint.skim`): ``class`` where the module defines ``__class_getitem__``
    (:func:`_class_names` reads the class statements of every scope).  Otherwise it reads a function's header
    only (decorators, defaults, annotations: what runs when the module is imported) and the class bodies;
    but for the module's own names where a ``global`` statement or ``:=`` may bind one from inside a function
    (:func:`_own_names` reads every binding of every scope then), which :meth:`Layout.owns_any` asks of the
    whole module when the tree's names do not answer."""
    return frozenset({"class"}) if _CLASS_GETITEM in text else frozenset()


def _binds_from_inside(lines: Lines) -> bool:
    """A ``global`` statement or ``:=`` may bind a module-level name from inside a function."""
    return _may_be_global(lines.text) or lines.spells(_WALRUS)


def _own_names(tree: ast.Module, lines: Lines) -> set[str]:
    """The module-level names the module binds other than by absolute imports: code that runs on import
    reads module-level names only, so these are the ones through which it can reach the module's own
    functions.  A relative import may import this module back, so it counts as the module's own.

    Nested scopes are not entered (their bindings are theirs), except for what can bind a module-level
    name from inside one -- ``global``, and ``:=`` in a comprehension -- for which every binding of any
    scope counts (:func:`bound_names`, a walk of the whole tree).
    """
    if _binds_from_inside(lines):
        return {name for name, kinds in bound_names(tree).items() if "other" in kinds}
    names: set[str] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            if type(node.ctx) is not ast.Load:
                names.add(node.id)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
            stack.extend([*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)])
            continue
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
            stack.extend([*node.decorator_list, *node.bases, *node.keywords])
            continue
        if isinstance(node, _NESTED):
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, _OTHER_BINDERS):
            bound = pattern_or_type_binding(node)
            if bound:
                names.add(bound)
        stack.extend(children(node))
    return names


def _class_names(tree: ast.Module, lines: Lines) -> set[str]:
    """The names class statements bind, in any scope (conservative: a class may be returned or stored), when
    the module defines a ``__class_getitem__`` (else subscripting its classes runs none of its code)."""
    if not lines.spells(_CLASS_GETITEM):
        return set()
    return {node.name for node in every(tree) if type(node) is ast.ClassDef}


# What the runtime's import reads: the environment (NP2TORCH_DEVICE and NP2TORCH_MIN_SIZE when it loads;
# NumPy and torch their thread settings) and where modules are found (sys.path, sys.meta_path, sys.modules).
_ENVIRONMENT = frozenset({"environ", "putenv", "unsetenv", "load_dotenv", "addsitedir"})
_SYS_STATE = frozenset({"path", "meta_path", "path_hooks", "modules"})


def _sets_up_imports(unit: Unit) -> bool:
    """The unit may change what an import finds or reads (``os.environ[...] = ...``, ``sys.path.insert``)."""
    return any(_touches_import_state(stmt) for stmt in unit.stmts)


def _touches_import_state(stmt: ast.AST) -> bool:
    for node in _import_time_nodes(stmt):
        if isinstance(node, ast.Name) and node.id in _ENVIRONMENT:
            return True
        if isinstance(node, ast.Attribute) and (node.attr in _ENVIRONMENT or (
            node.attr in _SYS_STATE and isinstance(node.value, ast.Name) and node.value.id == "sys"
        )):
            return True
    return False


def _deadline(units: Units, fixes: _Fixes) -> int:
    """The index of the first unit that can run a rewritten call; ``len(units)`` when none can."""
    runner = _Runner(fixes)
    for index, unit in enumerate(units):
        if runner.may_run(unit.stmts):
            return index
    return len(units)


def _is_runtime_import(stmt: ast.stmt, runtime_module: str, alias: str) -> bool:
    return isinstance(stmt, ast.Import) and any(a.name == runtime_module and a.asname == alias for a in stmt.names)


def _module_level_imports(units: Units) -> dict[int, ast.stmt]:
    """id(alias) -> its import statement, for every run-time import outside functions and classes
    (imports under ``if TYPE_CHECKING:`` do not run: they are nothing to follow)."""
    owners: dict[int, ast.stmt] = {}
    for unit in units:
        for stmt in statements(unit.stmts, _SCOPES, run_time=True):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                owners.update((id(alias), stmt) for alias in stmt.names)
    return owners


def _star_imports(units: Units) -> dict[str, list[ast.ImportFrom]]:
    """Module ("" when relative) -> the module-level star imports of it."""
    stars: dict[str, list[ast.ImportFrom]] = {}
    for unit in units:
        for stmt in statements(unit.stmts, _SCOPES, run_time=True):
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                stars.setdefault("" if stmt.level else stmt.module or "", []).append(stmt)
    return stars


def _binding_aliases(
    ref: Ref, owners: Mapping[int, ast.stmt], stars: Mapping[str, list[ast.ImportFrom]]
) -> list[ast.alias]:
    """The module-level import aliases binding the name the fix resolves through (star imports too)."""
    found = [alias for alias in ref.bindings if id(alias) in owners]
    if found or ref.bindings:
        return found
    module = ref.qualname.rpartition(".")[0]
    return [alias for star in stars.get(module, ()) for alias in star.names]


def _after_set_up(units: Units, deadline: int) -> ImportPlace | str:
    """No import to follow: after the set-up code before the deadline (what is not a def or class, nor a
    constant, which runs no code and so cannot change what the import finds: ruff's E402 would flag an
    import below it), not before the docstring, ``__future__`` imports and the first block of imports."""
    set_up = [i for i in range(deadline) if not all(isinstance(s, _SCOPES) or _constant(s) for s in units[i].stmts)]
    index = max([*set_up, _default_index(units)])
    if index >= deadline:
        index = deadline - 1
    if index < 0:
        return ImportPlace(units[0].first - 1) if units else ImportPlace(0)
    return ImportPlace(units[index].last)


_LITERALS = (ast.Constant, ast.Name, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp, ast.operator,
             ast.unaryop, ast.expr_context, ast.Starred)


_ANNOTATIONS = (ast.Constant, ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.BinOp, ast.BitOr, ast.Load)


def _constant(stmt: ast.stmt) -> bool:
    """``NAME = <literal>`` (annotated too, targets plain names): binding it runs no code (an operator on
    literals of built-in types runs none the import could see)."""
    if isinstance(stmt, ast.Assign):
        targets, value = stmt.targets, stmt.value
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and stmt.simple:
        targets, value = [stmt.target], stmt.value
    else:
        return False
    if not all(isinstance(target, ast.Name) for target in targets):
        return False
    annotation = stmt.annotation if isinstance(stmt, ast.AnnAssign) else None
    if annotation is not None and not all(isinstance(node, _ANNOTATIONS) for node in ast.walk(annotation)):
        return False
    return all(isinstance(node, _LITERALS) and not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load))
               for node in ast.walk(value))


def _default_index(units: Units) -> int:
    """The last unit of the docstring, ``__future__`` imports and first block of imports (-1: none)."""
    index = 1 if units and len(units[0].stmts) == 1 and _is_docstring(units[0].stmts[0]) else 0
    while index < len(units) and all(_is_future(stmt) for stmt in units[index].stmts):
        index += 1
    while index < len(units) and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in units[index].stmts):
        index += 1
    return index - 1


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _is_future(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"


# --------------------------------------------------------------------------- inside the deadline statement


def _to_follow(unit: Unit, anchors: Collection[ast.stmt]) -> list[ast.stmt]:
    """The statements inside ``unit`` the import should follow: the imports the findings resolve through and
    what changes what an import finds or reads, last first."""
    inside = [stmt for stmt in statements(unit.stmts, _SCOPES, run_time=True)
              if stmt in anchors or (not _blocks_of(stmt) and _touches_import_state(stmt))]
    return sorted(inside, key=lambda stmt: (stmt.lineno, stmt.col_offset), reverse=True)


def _blocks_of(stmt: ast.stmt) -> bool:
    return any(True for _block in _blocks(stmt))


def _inside_deadline(
    units: Units, deadline: int, candidates: Sequence[ast.stmt], anchors: Collection[ast.stmt], fixes: _Fixes,
    lines: Lines,
) -> ImportPlace | str:
    """Right after the last statement to follow inside the deadline statement when that is sound (nothing
    that can run a rewritten call comes before it), else before the statement when those are imports only
    and nothing on the way to the first of them can be set-up code, else nowhere."""
    holder = _Runner(fixes)
    for unit in units[:deadline]:
        holder.may_run(unit.stmts)
    later = _Runner(fixes, holder=True)
    nothing_later = not any(later.may_run(unit.stmts) for unit in units[deadline + 1:])
    unit = units[deadline]
    paths = [(stmt, _path(unit.stmts, stmt)) for stmt in candidates]
    for stmt, path in paths:
        if path is not None and nothing_later and _alone(stmt, lines) and _runs_first(path, _Runner(fixes, holder.holder)):
            return ImportPlace(stmt.end_lineno or stmt.lineno, _indent(lines[stmt.lineno]))
    first = paths[-1][1]
    if all(stmt in anchors for stmt in candidates) and first is not None and not _set_up_before(first):
        return ImportPlace(unit.first - 1)
    return NO_PLACE


_Level = tuple[Optional[ast.stmt], list[ast.stmt], int]
"""(the compound statement, or None for the unit; the block holding the next step; its index there)"""


def _path(block: list[ast.stmt], target: ast.stmt, owner: ast.stmt | None = None) -> list[_Level] | None:
    """The blocks from ``block`` down to ``target``, each with the index of the statement leading on."""
    for index, stmt in enumerate(block):
        if stmt is target:
            return [(owner, block, index)]
        if _within(target, stmt):
            for inner in _blocks(stmt, run_time=True):
                rest = _path(inner, target, stmt)
                if rest is not None:
                    return [(owner, block, index), *rest]
            return None
    return None


def _runs_first(path: list[_Level], runner: _Runner) -> bool:
    """Nothing on the way to the statement, nor the statement itself, can run a rewritten call: the headers
    of the statements holding it, the statements before it in each block, and the other blocks of each
    statement (``else``, handlers)."""
    for level, (owner, block, index) in enumerate(path):
        if owner is not None:
            others = [stmt for other in _blocks(owner, run_time=True) if other is not block for stmt in other]
            if runner.may_run(_headers(owner), _enters(owner)) or _Runner(runner.fixes, holder=True).may_run(others):
                return False
        if runner.may_run(block[:index + 1] if level == len(path) - 1 else block[:index]):
            return False
    return True


def _headers(stmt: ast.stmt) -> list[_Located]:
    """What a compound statement evaluates before its blocks: a test, an iterable, context managers, a subject."""
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.iter, stmt.target]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [node for item in stmt.items for node in (item.context_expr, item.optional_vars) if node is not None]
    if hasattr(ast, "Match") and isinstance(stmt, ast.Match):
        return [stmt.subject, *(case.pattern for case in stmt.cases), *(c.guard for c in stmt.cases if c.guard)]
    return []


def _enters(stmt: ast.stmt) -> bool:
    """Running the statement's header calls code besides its expressions (``__enter__``, ``__aiter__``)."""
    return isinstance(stmt, (ast.With, ast.AsyncWith, ast.AsyncFor))


def _set_up_before(path: list[_Level]) -> bool:
    """Whether anything on the way to the import could be set-up code the runtime's import needs."""
    for owner, block, index in path:
        if owner is not None and _enters(owner):
            return True
        nodes: list[ast.AST] = [*(_headers(owner) if owner is not None else ()), *block[:index]]
        if any(_writes_something(node) for root in nodes for node in _import_time_nodes(root)):
            return True
    return False


def _alone(stmt: ast.stmt, lines: Lines) -> bool:
    """The statement has its lines to itself: a line can be put right after it at its indentation."""
    first, last = lines[stmt.lineno], lines[stmt.end_lineno or stmt.lineno]
    before = first.encode("utf-8")[: stmt.col_offset]
    after = last.encode("utf-8")[stmt.end_col_offset or 0:].decode("utf-8", errors="replace").strip()
    return not before.strip() and (not after or after.startswith("#"))


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


# --------------------------------------------------------------------------- isort's order in a block of imports


_ISORT_DIRECTIVE = re.compile(r"#\s*(?:ruff\s*:\s*)?isort\s*:", re.IGNORECASE)
"""``# isort: skip``, ``split``, ``off``, ``skip_file`` (and ruff's spellings): the order is the author's."""

_Import = (ast.Import, ast.ImportFrom)


_Item = tuple[int, int, Union[ast.Import, ast.ImportFrom]]
"""An import of a block: its first and last lines, and the statement."""


def _in_isort_order(layout: Layout, place: ImportPlace, deadline: int, order: ImportOrder, runtime: ast.Import) -> ImportPlace:
    """``place`` moved to where isort (``order``) puts ``runtime`` in the block of plain imports that
    ``place`` lies in or next to, when that is as sound: going up, no star import is passed (it may rebind
    the alias); going down (at module level only), every import passed runs before the deadline.
    Otherwise, or with no such block, ``place`` as it was.  A blank line separates the import from a
    neighbouring section and from a comment below it (isort's layout), none from its section's imports;
    the comments right above an import stay with it."""
    found = _block_in(layout, place) if place.indent else _module_block(layout.units, place, deadline)
    if found is None or layout.lines.matches(_ISORT_DIRECTIVE):
        return place
    items, position, highest = found
    wanted = next((i for i, (_f, _l, stmt) in enumerate(items) if order.key(stmt) > order.key(runtime)), len(items))
    lowest = position
    while lowest > 0 and not any(alias.name == "*" for alias in items[lowest - 1][2].names):
        lowest -= 1
    if not lowest <= wanted <= highest:
        return place
    lines, section = layout.lines, order.section(runtime)
    previous = items[wanted - 1] if wanted else None
    following = items[wanted] if wanted < len(items) else None
    if previous is not None and (following is None or order.section(previous[2]) == section):
        last, next_line = previous[1], lines[previous[1] + 1].strip()
        separate = following is not None and (next_line.startswith("#") or order.section(following[2]) != section)
        return ImportPlace(last, place.indent, blank_before=order.section(previous[2]) != section,
                           blank_after=separate and bool(next_line))
    assert following is not None
    above = following[0] if previous is None else _above_its_comments(following[0], previous[1], lines)
    return ImportPlace(above - 1, place.indent,
                       blank_after=order.section(following[2]) != section or above < following[0])


def _module_block(units: Units, place: ImportPlace, deadline: int) -> tuple[list[_Item], int, int] | None:
    """The block of plain top-level imports holding the unit the place follows, or the next one: its
    imports, the place's position among them, and the last position that still runs before the deadline."""
    before = bisect_right(units.firsts, place.after) - 1  # the last unit starting at or before the place

    def plain(index: int) -> bool:
        return 0 <= index < len(units) and len(units[index].stmts) == 1 and isinstance(units[index].stmts[0], _Import)

    if not plain(before):
        if not plain(before + 1):
            return None
        before += 1
    start = stop = before
    while plain(start - 1):
        start -= 1
    while plain(stop):
        stop += 1
    position = min(max(bisect_right(units.firsts, place.after) - start, 0), stop - start)
    highest = position
    while start + highest < min(stop, deadline):
        highest += 1
    items = [(unit.first, unit.last, stmt) for unit in units[start:stop] for stmt in unit.stmts if isinstance(stmt, _Import)]
    return items, position, highest


def _block_in(layout: Layout, place: ImportPlace) -> tuple[list[_Item], int, int] | None:
    """The run of plain imports, each on lines of its own, in the block whose import ``place`` follows
    (an ``if __name__ == "__main__":`` body, a ``try:``): the place stays the last position (what follows
    it in the block was not checked to run no rewritten call)."""
    for holder in statements(layout.tree.body, _SCOPES, run_time=True):
        for block in _blocks(holder, run_time=True):
            index = next((i for i, stmt in enumerate(block) if isinstance(stmt, _Import)
                          and (stmt.end_lineno or stmt.lineno) == place.after), None)
            if index is None:
                continue
            start = stop = index
            while start > 0 and isinstance(block[start - 1], _Import):
                start -= 1
            while stop < len(block) and isinstance(block[stop], _Import):
                stop += 1
            run = block[start:stop]
            if not all(_alone(stmt, layout.lines) for stmt in run):
                return None
            items = [(stmt.lineno, stmt.end_lineno or stmt.lineno, stmt) for stmt in run if isinstance(stmt, _Import)]
            return items, index + 1 - start, index + 1 - start
    return None


def _above_its_comments(first: int, previous_last: int, lines: Lines) -> int:
    """The first line of an import with the comment lines right above it (isort moves them with it), below
    the import before it."""
    while first - 1 > previous_last and lines[first - 1].lstrip().startswith("#"):
        first -= 1
    return first
