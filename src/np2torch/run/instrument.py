"""The rewrite ``np2torch fix`` would make, made on the ``ast`` tree of a module instead of its text.

Text in, code object out, and nothing moves: each reference the fix would
replace (``np.exp`` in ``np.exp(x)``) becomes ``<sites>[<file>][i][np.exp]``, where
``<sites>`` is a name no source text can spell, bound in :mod:`builtins` (the
module's own namespace, ``globals()``, stays as the program made it): the
reference, evaluated as the program wrote it, picks the site when it names the
original and itself otherwise (a patched ``numpy.exp``,
:class:`np2torch.runtime.sites.Pick`); a pattern rule's whole expression
becomes ``<sites>[<file>][i](x, ...)``.  The new
nodes carry the replaced node's line and columns, so tracebacks (with their
``^^^^`` markers), warnings, ``inspect``, coverage and pdb see the file on
disk.  One expression statement placed before the module's first statement
(after its docstring and ``__future__`` imports), with that statement's
position, so no line is added, registers the file's call sites with
:func:`np2torch.runtime.sites.register`, which makes them (importing the
helpers, and NumPy) only when the program first reaches one: they count, sample
and call the helpers.
Because the module registers them itself, the code runs the same wherever it
is executed: imported, run as ``__main__``, re-run by ``runpy`` in a
``multiprocessing`` child.

:func:`instrument_tree` makes the same rewrite on a tree someone else parsed
(an IPython cell's): it analyses a text that parses to that tree, after a
prefix of code run before it (the cells before), and rewrites the given tree's
nodes, which keep their positions; registering the sites is the caller's.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import types
from dataclasses import dataclass
from typing import Dict, Sequence, Tuple

from np2torch.lint.engine import plan_source
from np2torch.lint.model import Finding, Lines, Planned, Settings
from np2torch.lint.rules import Rule

SITES = "@np2torch_sites"
"""The builtin holding every instrumented file's call sites (:data:`np2torch.runtime.sites.BUILTIN`): ``@`` keeps
it apart from every name a program can bind."""

SITES_MODULE = "np2torch.runtime.sites"

Spec = Tuple[int, int, str, str, str, Tuple[str, ...]]
"""A site as :func:`np2torch.runtime.sites.table` takes it: ``(line, column, helper, function, code, pattern)``."""


@dataclass(frozen=True)
class Instrumented:
    """A module's code with its sites (``code`` None: nothing to rewrite), and the findings left as they are."""

    code: types.CodeType | None
    sites: Tuple[Spec, ...]
    not_rewritten: Tuple[Finding, ...]


def instrument(source: str, path: str, settings: Settings, *, optimize: int = -1,
               filename: str | None = None) -> Instrumented:
    """``source`` (the text of the file at ``path``) compiled, as ``filename`` (default ``path``: what the
    code's frames and tracebacks name), with its fixable findings' calls going through call sites.  Raises :class:`np2torch.lint.model.SourceError` when it cannot be analysed."""
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
    code = compile(tree, path if filename is None else filename, "exec", dont_inherit=True, optimize=optimize)
    return Instrumented(code, specs, skipped)


class TreeMismatch(ValueError):
    """The text analysed does not parse to the tree to rewrite."""


def instrument_tree(tree: ast.Module, text: str, path: str, settings: Settings, *, key: str,
                    prefix: str = "") -> Instrumented:
    """Rewrite ``tree`` in place, its sites read from ``<sites>[key]`` (which the caller registers:
    ``table(key, path, sites)``); ``code`` is None.  ``text`` parses to ``tree`` (but for positions when ``tree``
    was not parsed from it: ``ast.unparse(tree)``); it is analysed after ``prefix``, complete statements
    run before it (whose imports and assignments name what ``text`` calls), and only ``text``'s findings
    count.  Sites and findings carry the positions of ``tree``'s nodes.  Raises :class:`TreeMismatch` when
    ``text`` does not parse to ``tree``, :class:`np2torch.lint.model.SourceError` when it cannot be analysed."""
    if prefix and not prefix.endswith("\n"):
        prefix += "\n"
    plan = plan_source(prefix + text, path, settings=settings)
    if plan.tree is None:
        return Instrumented(None, (), ())
    skip = prefix.count("\n")
    ours = [statement for statement in plan.tree.body if statement.lineno > skip]
    if [ast.dump(statement) for statement in ours] != [ast.dump(statement) for statement in tree.body]:
        raise TreeMismatch("the text analysed does not parse to the tree")
    pairs = _pairs(ours, tree.body)
    where = _Where(pairs, Lines(prefix + text), Lines(text) if _same_positions(ours, tree.body, skip) else None)
    fixes = [fix for fix in _surviving(plan.fixes) if fix.finding.line > skip]
    specs = tuple(where.spec(fix) for fix in fixes)
    targets = {id(where.given[id(fix.ref.node)]): (index, fix) for index, fix in enumerate(fixes)}
    _Replace(key, targets).visit(tree)
    skipped = (where.finding(finding) for finding in plan.findings if not finding.fixable and finding.line > skip)
    return Instrumented(None, specs, tuple(finding for finding in skipped if finding is not None))


def _pairs(analysed: Sequence[ast.stmt], given: Sequence[ast.stmt]) -> list[tuple[ast.AST, ast.AST]]:
    """Each node of the analysed statements with the node of the given ones in its place (the same structure)."""
    return [pair for mine, theirs in zip(analysed, given) for pair in zip(ast.walk(mine), ast.walk(theirs))]


def _same_positions(analysed: Sequence[ast.stmt], given: Sequence[ast.stmt], skip: int) -> bool:
    """Whether the given statements were parsed from the text analysed (each ``skip`` lines higher)."""
    return all((a.lineno - skip, a.col_offset, (a.end_lineno or 0) - skip, a.end_col_offset)
               == (b.lineno, b.col_offset, b.end_lineno or 0, b.end_col_offset) for a, b in zip(analysed, given))


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    line: int = getattr(node, "lineno", 1)
    end_line: int | None = getattr(node, "end_lineno", None)
    end: int | None = getattr(node, "end_col_offset", None)
    return line, getattr(node, "col_offset", 0), end_line or line, end or 0


class _Where:
    """Where the analysed text's nodes are in the given tree, in the linter's 1-based character columns."""

    def __init__(self, pairs: Sequence[tuple[ast.AST, ast.AST]], analysed: Lines, given: Lines | None) -> None:
        self.given = {id(mine): theirs for mine, theirs in pairs}
        self.at: Dict[tuple[int, int, int, int], ast.AST] = {}
        """An expression's span in the analysed text -> the given node (the outermost expression of a span)."""
        for mine, theirs in reversed(pairs):
            if isinstance(mine, ast.expr):
                self.at[_span(mine)] = theirs
        self.analysed = analysed
        self.text = given
        """The given tree's text when it is the text analysed; None: the given columns are counted in bytes."""

    def _column(self, line: int, byte: int) -> int:
        return (self.text.char_col(line, byte) if self.text is not None else byte) + 1

    def spec(self, fix: Planned) -> Spec:
        line, column, _end_line, _end = _span(self.given[id(fix.ref.node)])
        return (line, self._column(line, column)) + _spec(fix)[2:]

    def finding(self, finding: Finding) -> Finding | None:
        """``finding`` at the position of its node in the given tree (None: not at an expression's span)."""
        def byte(line: int, column: int) -> int:
            return len(self.analysed[line][: column - 1].encode("utf-8"))

        span = (finding.line, byte(finding.line, finding.column),
                finding.end_line, byte(finding.end_line, finding.end_column))
        node = self.at.get(span)
        if node is None:
            return None
        line, column, end_line, end = _span(node)
        return dataclasses.replace(finding, line=line, column=self._column(line, column), end_line=end_line,
                                   end_column=self._column(end_line, end))


def _surviving(fixes: Sequence[Planned]) -> list[Planned]:
    """The fixes whose node a pattern's collapse keeps: ``np.log`` in ``np.log(np.sum(np.exp(x)))`` goes with
    the call it names when the pattern rule rewrites the whole call."""
    dropped: set[int] = set()
    for fix in fixes:
        if fix.rule.is_pattern:
            x, rest, keywords = _parts(fix.ref.node)
            kept = {id(node) for part in (x, *rest, *keywords) for node in ast.walk(part)}
            dropped |= {id(node) for node in ast.walk(fix.ref.node) if id(node) not in kept}
    return [fix for fix in fixes if fix.rule.is_pattern or id(fix.ref.node) not in dropped]


def _spec(fix: Planned) -> Spec:
    finding, rule = fix.finding, fix.rule
    return finding.line, finding.column, rule.helper, _function(rule, fix.ref.node), finding.code, tuple(rule.pattern)


def _function(rule: Rule, node: ast.AST) -> str:
    """What the site replaces, in words: the original's name, or the pattern's shape (rules.Rule.form)."""
    if not rule.is_pattern:
        return rule.qualname
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        return f"x - {rule.pattern[0]}(x, ...)"
    if isinstance(node, ast.BinOp):
        inner, reduction = rule.pattern
        return f"{inner}(x) / {reduction}({inner}(x), ...)"
    return "(".join(rule.pattern) + "(...)" + ")" * (len(rule.pattern) - 1)


def _site(key: str, index: int, where: ast.AST) -> ast.expr:
    """``<sites>[key][index]`` at ``where``'s position."""
    table = ast.Subscript(value=ast.Name(SITES, ast.Load()), slice=ast.Constant(key), ctx=ast.Load())
    node = ast.Subscript(value=table, slice=ast.Constant(index), ctx=ast.Load())
    for part in ast.walk(node):
        ast.copy_location(part, where)
    return node


def _picked(site: ast.expr, reference: ast.AST) -> ast.expr:
    """``<sites>[key][index][reference]``: the reference, evaluated as the program wrote it, picks the site's call
    when it is the original and itself otherwise (:class:`np2torch.runtime.sites.Pick`), at its position."""
    assert isinstance(reference, ast.expr)
    return ast.copy_location(ast.Subscript(value=site, slice=reference, ctx=ast.Load()), reference)


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
            return _picked(_site(self.key, index, node), self.generic_visit(node))
        assert isinstance(node, (ast.Call, ast.BinOp))
        where = node.func if isinstance(node, ast.Call) else node
        return _collapse(self.generic_visit(node), _site(self.key, index, where))


def _collapse(matched: ast.AST, site: ast.expr) -> ast.Call:
    """A pattern rule's match -> ``site(x, *rest, **kw)`` (the shapes the engine matched: rules.Rule.form)."""
    x, rest, keywords = _parts(matched)
    call = ast.Call(func=site, args=[x, *rest], keywords=keywords)
    return ast.copy_location(call, matched)


def _parts(matched: ast.AST) -> tuple[ast.expr, list[ast.expr], list[ast.keyword]]:
    """``(x, rest, keywords)`` of an expression a pattern rule matched: ``outer(reduce(inner(x), *rest, **kw))``
    or ``outer(inner(x).reduce(*rest, **kw))``; ``inner(x) / reduce(inner(x), *rest, **kw)`` (or
    ``inner(x).reduce(...)``) and ``x - reduce(x, *rest, **kw)`` without their ``keepdims``, which the
    helper (softmax, log_softmax) does not take."""
    if isinstance(matched, ast.BinOp):
        reduction = matched.right
        assert isinstance(reduction, ast.Call)
        keywords = [k for k in reduction.keywords if k.arg != "keepdims"]
        if isinstance(matched.op, ast.Sub):
            return matched.left, list(reduction.args[1:]), keywords
        if isinstance(reduction.func, ast.Attribute) and isinstance(reduction.func.value, ast.Call):
            return reduction.func.value.args[0], list(reduction.args), keywords
        first = reduction.args[0]
        assert isinstance(first, ast.Call)
        return first.args[0], list(reduction.args[1:]), keywords
    assert isinstance(matched, ast.Call)
    reduction = matched.args[0]
    assert isinstance(reduction, ast.Call)
    if isinstance(reduction.func, ast.Attribute) and isinstance(reduction.func.value, ast.Call):
        return reduction.func.value.args[0], list(reduction.args), list(reduction.keywords)
    first = reduction.args[0]
    assert isinstance(first, ast.Call)
    return first.args[0], list(reduction.args[1:]), list(reduction.keywords)


def _is_future(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__"


def _register_sites(tree: ast.Module, key: str, path: str, specs: Sequence[Spec]) -> None:
    """``__import__(SITES_MODULE, fromlist=["register"]).register(key, path, specs)`` before the first statement
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
                           keywords=[ast.keyword("fromlist", ast.List([ast.Constant("register")], ast.Load()))]),
            attr="register", ctx=ast.Load()),
        args=[ast.Constant(key), ast.Constant(path),
              ast.Constant(tuple(specs))],  # type: ignore[arg-type]  # compile() takes a tuple of constants
        keywords=[])
    statement = ast.Expr(register)
    for node in ast.walk(statement):
        if isinstance(node, (ast.expr, ast.stmt, ast.keyword)):
            ast.copy_location(node, where)
            node.end_lineno, node.end_col_offset = where.lineno, where.col_offset
    body.insert(index, statement)
