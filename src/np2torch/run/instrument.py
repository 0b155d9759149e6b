"""The rewrite ``np2torch fix`` would make, made on the ``ast`` tree of a module instead of its text.

Text in, code object out, and nothing moves: each reference the fix would
replace (``np.exp`` in ``np.exp(x)``) becomes ``<sites>[<file>][i]``, where
``<sites>`` is a name no source text can spell, bound in :mod:`builtins` (the
module's own namespace, ``globals()``, stays as the program made it).  The new
nodes carry the replaced node's line and columns, so tracebacks (with their
``^^^^`` markers), warnings, ``inspect``, coverage and pdb see the file on
disk.  One expression statement placed before the module's first statement
(after its docstring and ``__future__`` imports), with that statement's
position, so no line is added, registers the file's call sites with
:func:`np2torch.runtime.sites.table`; they count, sample and call the helpers.
Because the module registers them itself, the code runs the same wherever it
is executed: imported, run as ``__main__``, re-run by ``runpy`` in a
``multiprocessing`` child.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from typing import Sequence, Tuple

from np2torch.lint.engine import plan_source
from np2torch.lint.model import Finding, Planned, Settings

SITES = "@np2torch_sites"
"""The builtin holding every instrumented file's call sites (:data:`np2torch.runtime.sites.BUILTIN`): ``@`` keeps
it apart from every name a program can bind."""

SITES_MODULE = "np2torch.runtime.sites"

Spec = Tuple[int, int, str, str, str, Tuple[str, ...]]
"""A site as :func:`np2torch.runtime.sites.table` takes it: ``(line, column, helper, function, code, pattern)``."""


@dataclass(frozen=True)
class Instrumented:
    """A module's code with its sites (``code`` None: nothing to rewrite), and the findings left as they are."""

    code: object | None
    sites: Tuple[Spec, ...]
    not_rewritten: Tuple[Finding, ...]


def instrument(source: str, path: str, settings: Settings, *, optimize: int = -1) -> Instrumented:
    """``source`` (the text of the file at ``path``) compiled with its fixable findings' calls going through
    call sites.  Raises :class:`np2torch.lint.model.SourceError` when it cannot be analysed."""
    plan = plan_source(source, path, settings=settings)
    skipped = tuple(finding for finding in plan.findings if not finding.fixable)
    if not plan.fixes or plan.tree is None:
        return Instrumented(None, (), skipped)
    tree = plan.tree
    fixes = _surviving(plan.fixes)
    specs = tuple(_spec(fix) for fix in fixes)
    key = f"{path}#{hashlib.sha256(repr(specs).encode()).hexdigest()[:12]}"
    _Replace(key, {id(fix.ref.node): (index, fix) for index, fix in enumerate(fixes)}).visit(tree)
    _register_sites(tree, key, path, specs)
    code = compile(tree, path, "exec", dont_inherit=True, optimize=optimize)
    return Instrumented(code, specs, skipped)


def _surviving(fixes: Sequence[Planned]) -> list[Planned]:
    """The fixes whose node a pattern's collapse keeps: ``np.log`` in ``np.log(np.sum(np.exp(x)))`` goes with
    the call it names when the pattern rule rewrites the whole call."""
    dropped: set[int] = set()
    for fix in fixes:
        if fix.rule.is_pattern:
            inner, rest, keywords = _parts(fix.ref.node)
            kept = {id(node) for part in (inner.args[0], *rest, *keywords) for node in ast.walk(part)}
            dropped |= {id(node) for node in ast.walk(fix.ref.node) if id(node) not in kept}
    return [fix for fix in fixes if fix.rule.is_pattern or id(fix.ref.node) not in dropped]


def _spec(fix: Planned) -> Spec:
    finding, rule = fix.finding, fix.rule
    function = "(".join(rule.pattern) + "(...)" + ")" * (len(rule.pattern) - 1) if rule.is_pattern else rule.qualname
    return finding.line, finding.column, rule.helper, function, finding.code, tuple(rule.pattern)


def _site(key: str, index: int, where: ast.AST) -> ast.expr:
    """``<sites>[key][index]`` at ``where``'s position."""
    table = ast.Subscript(value=ast.Name(SITES, ast.Load()), slice=ast.Constant(key), ctx=ast.Load())
    node = ast.Subscript(value=table, slice=ast.Constant(index), ctx=ast.Load())
    for part in ast.walk(node):
        ast.copy_location(part, where)
    return node


class _Replace(ast.NodeTransformer):
    def __init__(self, key: str, targets: dict[int, tuple[int, Planned]]) -> None:
        self.key = key
        self.targets = targets

    def visit(self, node: ast.AST) -> ast.AST:
        target = self.targets.get(id(node))
        if target is None:
            return self.generic_visit(node)
        index, fix = target
        if not fix.rule.is_pattern:
            return _site(self.key, index, node)
        assert isinstance(node, ast.Call)
        return _collapse(self.generic_visit(node), _site(self.key, index, node.func))


def _collapse(outer: ast.AST, site: ast.expr) -> ast.Call:
    """``outer(reduce(inner(x), *rest, **kw))`` or ``outer(inner(x).reduce(*rest, **kw))`` -> ``site(x, *rest, **kw)``
    (the shapes the engine matched for a pattern rule)."""
    assert isinstance(outer, ast.Call)
    inner, rest, keywords = _parts(outer)
    call = ast.Call(func=site, args=[inner.args[0], *rest], keywords=keywords)
    return ast.copy_location(call, outer)


def _parts(outer: ast.AST) -> tuple[ast.Call, list[ast.expr], list[ast.keyword]]:
    """``(inner(x), rest, keywords)`` of a call a pattern rule matched."""
    assert isinstance(outer, ast.Call)
    reduction = outer.args[0]
    assert isinstance(reduction, ast.Call)
    if isinstance(reduction.func, ast.Attribute) and isinstance(reduction.func.value, ast.Call):
        return reduction.func.value, list(reduction.args), list(reduction.keywords)
    first = reduction.args[0]
    assert isinstance(first, ast.Call)
    return first, list(reduction.args[1:]), list(reduction.keywords)


def _is_future(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__"


def _register_sites(tree: ast.Module, key: str, path: str, specs: Sequence[Spec]) -> None:
    """``__import__(SITES_MODULE, fromlist=["table"]).table(key, path, specs)`` before the first statement
    that is neither the docstring nor a ``__future__`` import, at that statement's position."""
    body = tree.body
    index = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        index = 1
    while index < len(body) and _is_future(body[index]):
        index += 1
    where = body[index] if index < len(body) else body[-1]
    register = ast.Call(
        func=ast.Attribute(
            value=ast.Call(func=ast.Name("__import__", ast.Load()), args=[ast.Constant(SITES_MODULE)],
                           keywords=[ast.keyword("fromlist", ast.List([ast.Constant("table")], ast.Load()))]),
            attr="table", ctx=ast.Load()),
        args=[ast.Constant(key), ast.Constant(path),
              ast.Constant(tuple(specs))],  # type: ignore[arg-type]  # compile() takes a tuple of constants
        keywords=[])
    statement = ast.Expr(register)
    for node in ast.walk(statement):
        if isinstance(node, (ast.expr, ast.stmt, ast.keyword)):
            ast.copy_location(node, where)
            node.end_lineno, node.end_col_offset = where.lineno, where.col_offset
    body.insert(index, statement)
