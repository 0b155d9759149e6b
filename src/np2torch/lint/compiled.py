"""Functions that a compiler (numba, JAX, torch, CuPy) takes over: no fix may go inside them.

``@numba.njit def sp(x): return np.log(1.0 + np.exp(x))`` runs before a fix
and raises numba's ``TypingError`` after it: numba compiles ``np.exp`` itself
but cannot compile a call of ``np2torch.runtime.exp``, a plain Python
function.  JAX traces, TorchScript/``torch.compile`` and ``cupy.fuse`` have
the same problem.  A finding inside such a function is reported without a fix.

What counts as a compiler is decided from every binding of a name, in any scope
(a name is a compiler if *any* of its bindings can be one):

* an import of one (:data:`COMPILERS`: ``from numba import njit``, ``import numba as nb``
  then ``nb.njit``, ``from numba import *`` then ``njit``; a package loaded by its name counts as imported:
  ``numba = import_optional_dependency("numba")``, ``importlib.import_module("numba")``),
  whatever else the name is bound to (the optional-numba idiom
  ``try: from numba import njit`` / ``except ImportError: def njit(*a, **k): ...``);
* an assignment of a compiler, of a call of one or of ``partial`` over one
  (``fastjit = numba.njit(cache=True)``, ``jit = functools.partial(jax.jit, static_argnums=0)``,
  ``njit = numba.njit if HAVE_NUMBA else identity``, ``jit = lambda f: numba.njit(f)``,
  ``jit = getattr(numba, "njit")``),
  followed through further assignments;
* a function that returns one (or a call of one) or hands it one of its parameters
  (``def jit(*args, **kwargs): return numba.njit(*args, **kwargs)``).

A function is compiled when a compiler decorates it (``@fastjit``,
``@nb.jit(nopython=True)``) or is applied to it by call (``numba.jit(f)``,
``njit(cache=True)(f)``, ``return njit(kernel)`` on a nested function,
``torch.compile(self.forward)``, ``torch.jit.script(Net())``, ``jax.jit(partial(f, a))``):
every ``def`` or ``class`` of that name, in any scope, counts; a lambda passed to it
counts; a name is followed through what it is assigned and what it loops over
(``model = Net()`` then ``torch.compile(model)``, ``for k in (f, g): njit(k)``,
``kernels = [f, g]`` then ``[jax.jit(k) for k in kernels]``); a function taken from a
container or by name (``njit(funcs[k])``, ``njit(getattr(module, name))``, a loop over
anything but a name or a literal: ``for fn in KERNELS.values()``, a name bound by unpacking:
``{k: njit(v) for k, v in KERNELS.items()}``) may be any of them, so every function of
the module counts; so it does when a compiler is handed on as a value (``map(numba.njit, fs)``,
``[numba.njit][0](f)``, ``{"fast": numba.njit}``), other than as the function ``partial`` wraps.  A function reached otherwise (returned by a call, read from another module's
attribute) is not followed here: the rule pages say so.  A function that another module of the project
hands to a compiler (``numba.njit(kernels.kernel)``) is found by the project index
(:mod:`np2torch.lint.project`), and :func:`compiled_elsewhere` gives its body.
:data:`MODULE_COMPILERS` called anywhere (``numba.jit_module(nopython=True)``)
compile every function of the module.  Everything inside a compiled body
counts, nested functions included; decorators and defaults are evaluated
outside it.
"""

from __future__ import annotations

import ast
import functools
import re
import unicodedata
from bisect import bisect_right
from collections import deque
from typing import Iterable, Iterator, Sequence

from np2torch.lint import walk

__all__ = ["COMPILERS", "MODULE_COMPILERS", "compiled_elsewhere", "compiled_regions", "handed_to_compilers",
           "PACKAGE_ROOTS", "inside", "may_compile", "may_import_a_compiler", "may_name_a_compiler", "reason",
           "starts_a_compiler"]

_NUMBA = "numba"
_JAX = "jax"
_TORCH = "torch"
_CUPY = "cupy"

COMPILERS: dict[str, str] = {
    **{
        f"numba.{name}": _NUMBA
        for name in ("jit", "njit", "vectorize", "guvectorize", "cfunc", "stencil", "generated_jit", "jitclass")
    },
    # where numba defines what it re-exports at the top (`from numba.np.ufunc import vectorize`)
    **{f"numba.core.decorators.{name}": _NUMBA for name in ("jit", "njit", "cfunc", "generated_jit")},
    **{f"numba.np.ufunc.{name}": _NUMBA for name in ("vectorize", "guvectorize")},
    "numba.cuda.jit": _NUMBA,
    "numba.experimental.jitclass": _NUMBA,
    "numba.extending.overload": _NUMBA,  # the implementation it returns (nested) is compiled
    "numba.extending.overload_method": _NUMBA,
    "numba.extending.register_jitable": _NUMBA,
    # JAX traces the function it transforms (jit, and the transformations that trace too)
    **{f"jax.{name}": _JAX for name in ("jit", "pmap", "vmap", "grad", "value_and_grad", "jacfwd", "jacrev",
                                          "hessian", "checkpoint", "remat")},
    "torch.jit.script": _TORCH,
    "torch.jit.trace": _TORCH,
    "torch.compile": _TORCH,
    "cupy.fuse": _CUPY,
    "cupyx.jit.rawkernel": _CUPY,
}
"""Qualified name of a compiler -> the family named in the reason."""

MODULE_COMPILERS: dict[str, str] = {"numba.jit_module": _NUMBA}
"""Called in a module, they compile every function of it."""

_ALL = {**COMPILERS, **MODULE_COMPILERS}
# the modules on the way to a compiler (`numba`, `numba.cuda`, `torch.jit`): `import numba as nb` binds one
_PACKAGES = frozenset(q.rsplit(".", i)[0] for q in _ALL for i in range(1, q.count(".") + 1))
_ROOTS = frozenset(q.partition(".")[0] for q in _ALL)
PACKAGE_ROOTS: frozenset[str] = _ROOTS
"""The roots of the compilers' packages (``numba``, ``jax``, ``torch``, ``cupy``, ``cupyx``)."""
# a package's name as a whole string literal (`"numba"`, `'torch.jit'`, `r"jax"`): what loading it by name spells
_QUOTED_PACKAGE = re.compile("[\"']({})[\"']".format("|".join(sorted(map(re.escape, _PACKAGES), key=len, reverse=True))))
# a package's root as a whole name (not an attribute: `a.numba`), and the words an import statement starts with;
# the literal first, so that `re` scans for it quickly (an alternation or a look-behind first it cannot)
_ROOT_NAMES = {root: re.compile(rf"{re.escape(root)}(?!\w)(?<![\w.]{re.escape(root)})") for root in sorted(_ROOTS)}
# each compiler's own name, a whole word: every way to one spells it (`njit`, `nb.njit`, `getattr(numba, "njit")`)
_COMPILER_NAMES = {name: re.compile(rf"{re.escape(name)}(?!\w)(?<!\w{re.escape(name)})")
                   for name in sorted({q.rpartition(".")[2] for q in _ALL})}
_STAR_IMPORT = re.compile(r"import(?<!\wimport)[\s\\(]*\*")
_IMPORT_WORDS = (re.compile(r"import(?!\w)(?<!\wimport)"), re.compile(r"from(?!\w)(?<!\wfrom)"))
# what may stand between `import` (or `from`) and a name the statement imports: names, dots, commas, whitespace
# and line continuations (an import outside parentheses holds no comment; `from` is followed by its module)
_IMPORTED_NAMES = re.compile(r"[\w\s.,\\]*")

_REASONS = {
    _NUMBA: "inside a numba-compiled function: np2torch.runtime helpers cannot be compiled by numba",
    _JAX: "inside a JAX-compiled function: np2torch.runtime helpers cannot be traced by jax.jit",
    _TORCH: "inside a torch-compiled function: np2torch.runtime helpers cannot be compiled by TorchScript",
    _CUPY: "inside a cupy.fuse function: np2torch.runtime helpers cannot be fused by CuPy",
}

_Pos = tuple[int, int]
Region = tuple[_Pos, _Pos, str]
"""(start, end, family): a compiled body, positions as ``ast`` gives them (line, byte column); the family of a
function another module compiles names that module too (:func:`compiled_elsewhere`)."""

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFS = (*_FUNCTIONS, ast.ClassDef)


def reason(family: str) -> str:
    """Why a call inside a compiled function is not fixed (``family``: as :func:`inside` gives it)."""
    family, _, by = family.partition(_BY)
    if not by:
        return _REASONS[family]
    where, colon, why = _REASONS[family].partition(": ")
    return f"{where} (compiled by {by}){colon}{why}"


def compiled_regions(
    tree: ast.Module, text: str, imports: Sequence[ast.Import | ast.ImportFrom] | None = None
) -> list[Region]:
    """The bodies of the functions (and jitclasses, lambdas) that a compiler takes over (``text``: the source;
    ``imports``: every import statement of ``tree``, when the caller has them: :attr:`Resolution.imports`)."""
    found = _compilers_of(tree, text, imports)
    if found is None:
        return []
    every, names = found
    regions: list[Region] = []
    by_name: dict[str, str] = {}
    everything: str | None = None
    for node in every:
        if isinstance(node, _DEFS):
            family = next(filter(None, map(names.family, node.decorator_list)), None)
            if family is not None:
                regions.append(_body_region(node, family))
        elif isinstance(node, _HOLDERS):
            # a compiler handed on as a value (`map(numba.njit, fs)`, `[numba.njit][0](f)`) may be applied
            # to any function
            handed = next(filter(None, map(names.handed, _values(node))), None)
            everything = everything or handed
            if type(node) is not ast.Call:
                continue
            family = names.family(node.func)
            if family is None:
                continue
            if names.compiles_module(node.func):
                everything = family
            for target in _applied_to(node):
                if isinstance(target, ast.Lambda):
                    regions.append(_body_region(target, family))
                elif target == _UNKNOWN:
                    everything = everything or family  # `njit(funcs[k])`: any function may be the one
                else:
                    by_name.setdefault(target, family)
    return _named_regions(every, by_name, everything, regions)


def may_import_a_compiler(text: str) -> bool:
    """False only when no way to a compiler can start in ``text``: every one starts at an import of its
    package (``import numba``, ``from jax import jit``) or at a call loading the package by its name as a
    string literal (``importlib.import_module("numba")``), and either spells the package's name so."""
    spelled = _spelled(text)
    roots = [pattern for root, pattern in _ROOT_NAMES.items() if root in spelled]
    return bool(roots) and _imports_or_loads(spelled, roots)


def may_name_a_compiler(text: str) -> bool:
    """False only when ``text`` names no compiler: every way to one spells the compiler's own name (``njit``,
    ``compile``) as a name, an attribute or ``getattr``'s string, or is a star import (``from numba import *``
    binds ``njit`` for a module that star-imports this one)."""
    spelled = _spelled(text)
    if "*" in spelled and _STAR_IMPORT.search(spelled):
        return True
    return any(name in spelled and pattern.search(spelled) for name, pattern in _COMPILER_NAMES.items())


def starts_a_compiler(tree: ast.Module, text: str, imports: Sequence[ast.Import | ast.ImportFrom]) -> bool:
    """Whether a way to a compiler starts in ``tree`` (``imports``: its import statements, in any scope): an
    import binding a compiler's package, or a call loading one by its name that can name a compiler
    (:func:`_loads`); each spells the package's root (:data:`PACKAGE_ROOTS`).  Where none does,
    :func:`compiled_regions` finds nothing."""
    spelled = _spelled(text)
    return may_compile(spelled) and _starts_a_compiler(tree, spelled, imports)


def _starts_a_compiler(tree: ast.Module, spelled: str, imports: Sequence[ast.Import | ast.ImportFrom]) -> bool:
    # every way to a compiler starts at an import of its package or a call loading it by name
    return any(map(_binds_a_compiler, imports)) or _loads(tree, spelled)


@functools.lru_cache(maxsize=4)  # the engine asks before the parse and the compiled regions after it
def may_compile(text: str) -> bool:
    """False only when nothing in ``text`` can be compiled: no way to a compiler starts in it
    (:func:`may_import_a_compiler`) or none is named (:func:`may_name_a_compiler`)."""
    spelled = _spelled(text)
    return may_import_a_compiler(spelled) and may_name_a_compiler(spelled)


def _spelled(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFKC", text)  # as the parser reads names


def _imports_or_loads(spelled: str, roots: list[re.Pattern[str]]) -> bool:
    """Whether a package's root (``roots``: the patterns of those spelled) stands in an import statement or
    as a string literal of a compiler's package."""
    import_ends: list[int] | None = None
    for match in (match for pattern in roots for match in pattern.finditer(spelled)):
        start = match.start()
        if start and spelled[start - 1] in "\"'" and _QUOTED_PACKAGE.match(spelled, start - 1):
            return True  # `import_module("numba")`
        if import_ends is None:
            import_ends = sorted(word.end() for pattern in _IMPORT_WORDS for word in pattern.finditer(spelled))
        # `import os, numba.cuda as nc`, `from jax import jit`: the nearest `import` or `from` before the name,
        # and only names, dots, commas and whitespace between (an earlier one has that stretch between too)
        i = bisect_right(import_ends, start)
        if i and _IMPORTED_NAMES.fullmatch(spelled, import_ends[i - 1], start):
            return True
    return False


def _compilers_of(
    tree: ast.Module, text: str, imports: Sequence[ast.Import | ast.ImportFrom] | None = None
) -> tuple[list[ast.AST], _Compilers] | None:
    """Every node of ``tree`` (the one walk the passes share) and the names its bindings make compilers; None
    where no way to a compiler can start (``imports``: the module's imports, when the caller has them)."""
    spelled = _spelled(text)
    if not may_compile(spelled):
        return None  # every way to a compiler spells its package and its name so
    if imports is not None and not _starts_a_compiler(tree, spelled, imports):
        return None
    every, within = _walk(tree)
    found: list[ast.Import | ast.ImportFrom] = []
    loads = False  # a call loading a compiler's package by its name (`importlib.import_module("numba")`)
    for node in every:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif type(node) is ast.Call and not loads:
            loads = _loaded(node) is not None
    if not loads and not any(_binds_a_compiler(stmt) for stmt in found):
        return None  # every way to a compiler starts at an import of its package
    return every, _Compilers(found, every, within, _loaded_by_name(every))


def _walk(tree: ast.Module) -> tuple[list[ast.AST], dict[int, list[ast.Return | ast.Call]]]:
    """Every node in ``ast.walk``'s order, and for each function (by id) the returns and calls inside it
    (nested functions' included, its decorators' and defaults' too, as ``ast.walk(function)`` gives them)."""
    every: list[ast.AST] = []
    within: dict[int, list[ast.Return | ast.Call]] = {}
    queue: deque[tuple[ast.AST, tuple[int, ...]]] = deque([(tree, ())])
    while queue:
        node, functions = queue.popleft()
        every.append(node)
        if isinstance(node, _FUNCTIONS):
            functions = (*functions, id(node))
            within[id(node)] = []
        if functions and isinstance(node, (ast.Return, ast.Call)):
            for function in functions:
                within[function].append(node)
        queue.extend((child, functions) for child in walk.children(node))
    return every, within


def _loads(tree: ast.Module, spelled: str) -> bool:
    """A compiler's package loaded by its name can name a compiler: assigned to a name
    (``numba = import_optional_dependency("numba")``), an attribute read off it
    (``importlib.import_module("numba").njit``) or handed to ``getattr`` (``getattr(import_module("numba"),
    "njit")``).  Such a call spells the package as a string literal, so only the statements spelling one are
    walked (:mod:`np2torch.lint.walk`); a call that does none of these (``skip_backend("torch")``) names none."""
    if not any(package in spelled for package in _PACKAGES):
        return False
    lines = walk.line_numbers(spelled, [_QUOTED_PACKAGE])
    for node, parent, _module_level in walk.nodes(tree, lines):
        if type(node) is ast.Call and _loaded(node) is not None and _names_a_compiler(node, parent):
            return True
    return False


def _names_a_compiler(call: ast.Call, parent: ast.AST | None) -> bool:
    """Whether what ``call`` loads can become a compiler where it stands (see :func:`_loads`)."""
    if isinstance(parent, ast.Attribute):
        return parent.value is call
    if isinstance(parent, ast.Call):
        return _getattr_name(parent) is not None and parent.args[0] is call
    if isinstance(parent, ast.Assign):
        return parent.value is call and any(type(target) is ast.Name for target in parent.targets)
    if isinstance(parent, (ast.AnnAssign, ast.NamedExpr)):
        return parent.value is call and type(parent.target) is ast.Name
    return False


def inside(node: ast.expr, regions: list[Region]) -> str | None:
    """The family of the compiled region holding ``node``, or None."""
    pos = (node.lineno, node.col_offset)
    for start, end, family in regions:
        if start <= pos < end:
            return family
    return None


def _binds_a_compiler(stmt: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(stmt, ast.Import):
        return any(alias.name.partition(".")[0] in _ROOTS for alias in stmt.names)
    return not stmt.level and (stmt.module or "").partition(".")[0] in _ROOTS


class _Compilers:
    """Every name that any binding makes a compiler (or a package holding one), scopes ignored."""

    def __init__(
        self, imports: Iterable[ast.Import | ast.ImportFrom], every: Sequence[ast.AST],
        within: dict[int, list[ast.Return | ast.Call]], loaded: Iterable[tuple[str, str]] = (),
    ) -> None:
        self._within = within
        self.packages: dict[str, str] = {}  # name -> the package it is bound to (`nb` -> `numba`)
        self.compilers: dict[str, str] = {}  # name -> the compiler's qualified name
        for name, qualname in [*(pair for stmt in imports for pair in _bound(stmt)), *loaded]:
            if qualname in _ALL:
                self.compilers.setdefault(name, qualname)
            elif qualname in _PACKAGES:
                self.packages.setdefault(name, qualname)
        assignments = list(_assignments(every))
        wrappers = [node for node in every if isinstance(node, _FUNCTIONS)]
        changed = True
        while changed:  # `a = njit(cache=True)`, `b = a`, `def jit(f): return a(f)`: until nothing new
            changed = False
            for target, value in assignments:
                if target not in self.compilers:
                    found = self.qualname(value)
                    if found is not None:
                        self.compilers[target] = found
                        changed = True
            for wrapper in wrappers:
                if wrapper.name not in self.compilers:
                    found = self._wrapped(wrapper)
                    if found is not None:
                        self.compilers[wrapper.name] = found
                        changed = True

    def _wrapped(self, wrapper: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
        """The compiler a function wraps: it returns one (or a call of one), or hands it a parameter
        (``def jit(f, **kw): return numba.njit(**kw)(f)``, ``def register(f): KERNELS.append(njit(f))``)."""
        args = wrapper.args
        params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
        for node in self._within.get(id(wrapper), ()):
            if type(node) is ast.Return and node.value is not None:
                found = self.qualname(node.value)
                if found is not None:
                    return found
            elif type(node) is ast.Call:
                found = self.qualname(node.func)
                handed = [a.value if type(a) is ast.Starred else a for a in node.args]
                if found is not None and any(type(a) is ast.Name and a.id in params for a in handed):
                    return found
        return None

    def qualname(self, expr: ast.expr) -> str | None:
        """The compiler ``expr`` is, makes (a call of one: ``njit(cache=True)``) or wraps (``partial(jit, ...)``)."""
        if isinstance(expr, ast.Name):
            return self.compilers.get(expr.id)
        if isinstance(expr, ast.Attribute):
            parts: list[str] = []
            node: ast.expr = expr
            while type(node) is ast.Attribute:
                parts.append(node.attr)
                node = node.value
            package = self.packages.get(node.id) if type(node) is ast.Name else _loaded(node)
            qualname = ".".join([package, *reversed(parts)]) if package else None
            return qualname if qualname in _ALL else None
        if isinstance(expr, ast.Call):
            call = expr
            name = _getattr_name(call)
            if name is not None:  # `getattr(numba, "njit")`
                return self.qualname(ast.Attribute(value=call.args[0], attr=name))
            own = self.qualname(call.func)
            if own is None and _is_partial(call.func) and call.args:
                own = self.qualname(call.args[0])
            return own
        if isinstance(expr, ast.IfExp):
            return self.qualname(expr.body) or self.qualname(expr.orelse)
        if isinstance(expr, ast.Lambda):  # `jit = lambda f: numba.njit(f)`
            return self.qualname(expr.body)
        if isinstance(expr, ast.BoolOp):
            return next(filter(None, map(self.qualname, expr.values)), None)
        return None

    def handed(self, expr: ast.expr) -> str | None:
        """The family of the compiler ``expr`` names, when it is a name or attribute (not a call of one)."""
        return self.family(expr) if type(expr) in (ast.Name, ast.Attribute) else None

    def family(self, expr: ast.expr) -> str | None:
        qualname = self.qualname(expr)
        return None if qualname is None else _ALL[qualname]

    def compiles_module(self, func: ast.expr) -> bool:
        return self.qualname(func) in MODULE_COMPILERS


def _bound(stmt: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    """(name, qualified name) for each name an import binds."""
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                root = alias.name.partition(".")[0]
                yield root, root
    elif not stmt.level and stmt.module:
        for alias in stmt.names:
            if alias.name == "*":  # `from numba import *`: every compiler (and package) it may bind
                yield from _star_bound(stmt.module)
            else:
                yield alias.asname or alias.name, f"{stmt.module}.{alias.name}"


def _star_bound(module: str) -> Iterator[tuple[str, str]]:
    """(name, qualified name) of each compiler or compilers' package directly in ``module`` that
    ``from module import *`` may bind (``njit``, ``experimental``: numba's ``__all__`` holds them; a name
    it leaves out is counted too, which only leaves a fix out)."""
    for qualname in sorted(_ALL.keys() | _PACKAGES):
        parent, _, name = qualname.rpartition(".")
        if parent == module:
            yield name, qualname


def _loaded_by_name(every: Sequence[ast.AST]) -> Iterator[tuple[str, str]]:
    """(name, module) for a name assigned a module loaded by its name in a string
    (``numba = import_optional_dependency("numba")``, ``importlib.import_module("numba")``,
    ``pytest.importorskip("numba")``, ``__import__("numba")``): what an import of it binds."""
    for name, value in _assignments(every):
        module = _loaded(value)
        if module is not None:
            yield name, module


def _loaded(value: ast.expr) -> str | None:
    """The compiler package a call loads by its name (``importlib.import_module("numba")``), or None."""
    if type(value) is ast.Call and value.args:
        first = value.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value in _PACKAGES:
            return first.value
    return None


def _assignments(every: Sequence[ast.AST]) -> Iterator[tuple[str, ast.expr]]:
    for node in every:
        if type(node) is ast.Assign:
            for target in node.targets:
                if type(target) is ast.Name:
                    yield target.id, node.value
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
            if type(node.target) is ast.Name and node.value is not None:
                yield node.target.id, node.value


def _getattr_name(call: ast.Call) -> str | None:
    """The attribute ``getattr(x, "name")`` reads (a constant identifier), or None for any other call."""
    second = call.args[1] if len(call.args) >= 2 else None
    if (type(call.func) is ast.Name and call.func.id == "getattr"
            and isinstance(second, ast.Constant) and isinstance(second.value, str) and second.value.isidentifier()):
        return second.value
    return None


def _is_partial(func: ast.expr) -> bool:
    return (type(func) is ast.Name and func.id == "partial") or (
        type(func) is ast.Attribute and func.attr == "partial"
    )


_UNKNOWN = "<unknown>"


def _applied_to(call: ast.Call) -> Iterator[str | ast.Lambda]:
    """What a compiler called with ``call``'s arguments compiles: a lambda, the name of a def or class
    (``f``, ``self.forward`` -> ``forward``, ``Net()`` -> ``Net``, ``partial(f, a)`` -> ``f``), or
    :data:`_UNKNOWN` for a function taken from a container (``njit(funcs[k])``)."""
    for arg in [*call.args[:1], *(k.value for k in call.keywords if k.arg in _FUNCTION_KEYWORDS)]:
        yield from _held(arg)


def _follow(every: Sequence[ast.AST], by_name: dict[str, str], regions: list[Region]) -> str | None:
    """Adds to ``by_name`` what the compiled names may hold: ``model = Net()`` then ``torch.compile(model)``,
    ``for fn in (f, g): njit(fn)``, ``kernels = [f, g]`` then ``for k in kernels: njit(k)``; returns the
    family of a compiled name that may hold a function taken from a container (every function then counts)."""
    sources: dict[str, list[tuple[ast.expr, bool]]] = {}  # name -> (what it is assigned, or iterates over)
    for assigned, value in _assignments(every):
        sources.setdefault(assigned, []).append((value, False))
    unpacked: set[str] = set()  # bound by unpacking (`for name, fn in KERNELS.items()`, `f, g = pair`): any item
    for node in every:
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            if type(node.target) is ast.Name:
                sources.setdefault(node.target.id, []).append((node.iter, True))
            else:
                unpacked.update(_stored_names(node.target))
        elif type(node) is ast.Assign:
            unpacked.update(name for target in node.targets if type(target) is not ast.Name
                            for name in _stored_names(target))
    everything = None
    todo = list(by_name)
    while todo:
        name = todo.pop()
        family = by_name[name]
        if name in unpacked:
            everything = everything or family
        for value, elements in sources.get(name, ()):
            for target in _held(value, elements):
                if isinstance(target, ast.Lambda):
                    regions.append(_body_region(target, family))
                elif target == _UNKNOWN:
                    everything = everything or family
                elif target not in by_name:
                    by_name[target] = family
                    todo.append(target)
    return everything


def _held(value: ast.expr, elements: bool = False) -> Iterator[str | ast.Lambda]:
    """The names (and lambdas) ``value`` may evaluate to (``elements``: the items of the iterable ``value``);
    :data:`_UNKNOWN` for an item of a container."""
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        for element in value.elts:
            yield from _held(element)
        return
    if elements:
        if type(value) is ast.Name:  # `for k in kernels`: what `kernels` holds, item by item
            yield value.id
        elif not isinstance(value, ast.Constant):  # `for fn in KERNELS.values()`, `for fn in self.kernels`
            yield _UNKNOWN
        return
    if type(value) is ast.Call:
        if type(value.func) is ast.Name and value.func.id == "getattr":  # `njit(getattr(mod, name))`
            yield _UNKNOWN
            return
        value = value.args[0] if _is_partial(value.func) and value.args else value.func
    if type(value) is ast.Lambda:
        yield value
    elif type(value) is ast.Name:
        yield value.id
    elif type(value) is ast.Attribute:
        yield value.attr
    elif type(value) is ast.Subscript:
        yield _UNKNOWN


_HOLDERS = (ast.Call, ast.List, ast.Tuple, ast.Set, ast.Dict)


def _values(node: ast.AST) -> list[ast.expr]:
    """The values ``node`` hands on: a call's arguments, a container's items (a dict's values)."""
    if type(node) is ast.Call:
        args = node.args[1:] if _is_partial(node.func) else node.args  # `partial(njit, ...)` makes a compiler
        return [a.value if type(a) is ast.Starred else a for a in args] + [k.value for k in node.keywords]
    if type(node) is ast.Dict:
        return list(node.values)
    assert isinstance(node, (ast.List, ast.Tuple, ast.Set))
    return [e.value if type(e) is ast.Starred else e for e in node.elts]


def _stored_names(target: ast.expr) -> Iterator[str]:
    """The names an unpacking target binds (``name, fn``, ``(a, *rest)``)."""
    for node in ast.walk(target):
        if type(node) is ast.Name:
            yield node.id


# the keyword a compiler takes its function by (`jax.jit(fun=f)`, `torch.compile(model=m)`, `numba.njit(pyfunc=f)`)
_FUNCTION_KEYWORDS = frozenset({"fun", "f", "func", "fn", "function", "pyfunc", "model", "obj"})


def _body_region(target: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda, family: str) -> Region:
    if isinstance(target, ast.Lambda):
        body = target.body
        return (body.lineno, body.col_offset), (body.end_lineno or body.lineno, body.end_col_offset or 0), family
    first = target.body[0]
    end = (target.end_lineno or target.lineno, target.end_col_offset or 0)
    return (first.lineno, first.col_offset), end, family


# --------------------------------------------------------------------------- across modules (np2torch.lint.project)


def handed_to_compilers(
    tree: ast.Module, text: str, imports: Sequence[ast.Import | ast.ImportFrom] | None = None
) -> tuple[list[tuple[ast.expr, str]], dict[str, str]]:
    """What each call of a compiler is applied to (``numba.njit(k.kernel)``: ``k.kernel``), with the compiler's
    family, and the names the module binds to a compiler, scopes ignored (``from numba import njit``,
    ``jit = numba.njit(cache=True)``, ``def jit(f): return numba.njit(f)``) with theirs: what
    :mod:`np2torch.lint.project` follows into other modules (``imports``: every import statement of the
    module, when the caller has them)."""
    found = _compilers_of(tree, text, imports)
    if found is None:
        return [], {}
    every, names = found
    handed: list[tuple[ast.expr, str]] = []
    for node in every:
        if type(node) is ast.Call:
            family = names.family(node.func)
            if family is not None:
                arguments = [*node.args[:1], *(k.value for k in node.keywords if k.arg in _FUNCTION_KEYWORDS)]
                handed.extend((argument, family) for argument in arguments)
    return handed, {name: _ALL[qualname] for name, qualname in sorted(names.compilers.items())}


def compiled_elsewhere(tree: ast.Module, elsewhere: Iterable[tuple[str, str, str]]) -> list[Region]:
    """The bodies of the functions of this module that other modules compile: ``elsewhere`` holds
    (name, family, what compiles it: a module, or a compiler from one) for each (:attr:`np2torch.lint.model.Settings.compiled_elsewhere`;
    the name ``*``: any function).  Every def or class of the name counts, and what the name is assigned,
    as for a name compiled in the module."""
    by_name: dict[str, str] = {}
    everything: str | None = None
    for name, family, by in elsewhere:
        key = f"{family}{_BY}{by}"
        if name == "*":
            everything = everything or key
        else:
            by_name.setdefault(name, key)
    regions: list[Region] = []
    every = list(walk.every(tree)) if by_name or everything is not None else []
    return _named_regions(every, by_name, everything, regions)


_BY = " by "
"""Between a family and what compiles the function, in a region's family (``numba by main.py``)."""


def _named_regions(every: list[ast.AST], by_name: dict[str, str], everything: str | None,
                   regions: list[Region]) -> list[Region]:
    """``regions`` and the bodies of the functions compiled by name (``by_name``: name -> family), followed
    through assignments, or of every function (``everything``: the family, when any function may be compiled)."""
    if by_name:
        everything = _follow(every, by_name, regions) or everything
    if everything is not None or by_name:
        for node in every:
            if everything is not None and isinstance(node, (*_DEFS, ast.Lambda)):
                regions.append(_body_region(node, everything))
            elif isinstance(node, _DEFS) and node.name in by_name:
                regions.append(_body_region(node, by_name[node.name]))
    return regions
