"""The rewriting half of the engine: LibCST, touched only for files with something to fix.

The analysis (``ast`` + :mod:`np2torch.resolve`) has already decided which
expressions to replace; here they are found again by position
(``PositionProvider``, 0-based character columns, like the findings) and
replaced by ``<alias>.<helper>``.  A ``from``-import the rewrite leaves unused
is removed, one ``import <runtime> as <alias>`` is added (LibCST's
``AddImportsVisitor``), and every other byte stays as it was.
"""

from __future__ import annotations

import ast
import os
import sys
import threading
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, TypeVar, Union

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor
from libcst.helpers import get_full_name_for_node
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from np2torch.resolve import bound_names

if TYPE_CHECKING:
    from np2torch.engine import Settings, _Planned

_Span = Tuple[int, int, int, int]
_Removals = Dict[Tuple[int, int], Set[Tuple[str, Optional[str]]]]


def apply_fixes(
    text: str,
    tree: ast.Module,
    fixes: List["_Planned"],
    import_froms: Mapping[int, ast.ImportFrom],
    alias: str,
    settings: "Settings",
    path: str,
) -> str:
    from np2torch.engine import FixError, _Lines

    replacements: Dict[_Span, str] = {
        (f.finding.line, f.finding.column - 1, f.finding.end_line, f.finding.end_column - 1): f.rule.helper
        for f in fixes
        if not f.rule.is_pattern
    }
    # Pattern rules (NPT9xx) replace a whole call: outer(reduce(inner(x), *rest)) -> alias.helper(x, *rest)
    calls: Dict[_Span, str] = {
        (f.finding.line, f.finding.column - 1, f.finding.end_line, f.finding.end_column - 1): f.rule.helper
        for f in fixes
        if f.rule.is_pattern
    }
    removals = _unused_imports(tree, fixes, import_froms, path, _Lines(text))
    try:
        module = cst.parse_module(text)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: B036 -- LibCST's native parser panics with a BaseException
        raise FixError(f"LibCST cannot parse this file: {' '.join(str(exc).split())}") from None
    try:
        return _with_deep_stack(_rewrite, text, module, replacements, removals, alias, settings.runtime_module, calls)
    except RecursionError:
        raise FixError("too deeply nested for LibCST's tree walk; left unchanged") from None


def _rewrite(
    text: str,
    module: cst.Module,
    replacements: Dict[_Span, str],
    removals: _Removals,
    alias: str,
    runtime_module: str,
    calls: Optional[Dict[_Span, str]] = None,
) -> str:
    from np2torch.engine import FixError

    # LibCST drops the last newline of a file whose newlines are a lone "\r" (old Mac
    # style); put it back, and refuse anything else that does not round-trip.
    suffix = ""
    if module.code != text:
        if text.endswith("\r") and module.code + "\r" == text:
            suffix = "\r"
        else:
            raise FixError("LibCST does not reproduce this file byte for byte; left unchanged")
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    rewriter = _Rewriter(wrapper.resolve(PositionProvider), dict(replacements), removals, alias, runtime_module)
    rewriter.calls = dict(calls or {})
    fixed = wrapper.module.visit(rewriter)
    if rewriter.replacements or rewriter.calls:
        left = [*rewriter.replacements, *rewriter.calls]
        missed = ", ".join(f"{line}:{col + 1}" for line, col, _l, _c in sorted(left))
        raise FixError(f"could not find the expressions at {missed} in LibCST's tree; left unchanged")
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, runtime_module, asname=alias)
    return fixed.visit(AddImportsVisitor(context)).code + suffix


_T = TypeVar("_T")


def _with_deep_stack(fn: Callable[..., _T], *args: object) -> _T:
    """``fn(*args)``; if it recurses too deep, again in a thread with a large stack.

    LibCST walks trees recursively, several frames per nesting level, so a long
    operator chain (``ast`` accepts ~3000 deep) exceeds the default recursion
    limit.  Raising the limit on the main thread could overflow its C stack;
    a fresh thread with a big stack can take it.
    """
    try:
        return fn(*args)
    except RecursionError:
        pass
    box: Dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: B036 -- handed back to the calling thread
            box["error"] = exc

    old_limit = sys.getrecursionlimit()
    try:
        old_size = threading.stack_size(512 * 2**20)
    except (ValueError, RuntimeError):
        raise RecursionError("no thread with a large stack available") from None
    sys.setrecursionlimit(max(old_limit, 200_000))
    try:
        thread = threading.Thread(target=run, name="np2torch-deep-fix")
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old_size)
        sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def _unused_imports(
    tree: ast.Module,
    fixes: List["_Planned"],
    import_froms: Mapping[int, ast.ImportFrom],
    path: str,
    lines,  # type: ignore[no-untyped-def]
) -> _Removals:
    """``from``-import aliases that bound only the replaced names and nothing else uses.

    Kept: everything in an ``__init__.py`` (re-exports), names listed as strings
    where the module has ``__all__``, names used or bound anywhere else (any
    scope; conservative), and ``import x`` statements (never removed).
    """
    if os.path.basename(path.replace("\\", "/")) == "__init__.py":
        return {}
    replaced: Dict[str, int] = {}
    aliases: Dict[str, List[Tuple[ast.alias, ast.ImportFrom]]] = {}
    for planned in fixes:
        ref = planned.ref
        if type(ref.node) is not ast.Name or not ref.imports:
            continue
        name = ref.node.id  # type: ignore[attr-defined]
        replaced[name] = replaced.get(name, 0) + 1
        for alias in ref.imports:
            stmt = import_froms.get(id(alias))
            if stmt is not None:
                aliases.setdefault(name, []).append((alias, stmt))
    if not replaced:
        return {}
    names = bound_names(tree)
    exported: Set[str] = set()
    if "__all__" in names:
        exported = {
            node.value for node in ast.walk(tree) if type(node) is ast.Constant and isinstance(node.value, str)
        }
    removals: _Removals = {}
    for name, count in replaced.items():
        kinds = names.get(name, [])
        qualnames = {k for k in kinds if k != "use"}
        if name in exported or kinds.count("use") != count or len(qualnames) != 1:
            continue
        if not next(iter(qualnames)).startswith("from "):
            continue
        for alias, stmt in aliases.get(name, []):
            key = (stmt.lineno, lines.char_col(stmt.lineno, stmt.col_offset))
            removals.setdefault(key, set()).add((alias.name, alias.asname))
    return removals


def _is_runtime_import(stmt: cst.CSTNode, module: str, alias: str) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    if not isinstance(small, cst.Import) or len(small.names) != 1:
        return False
    name = small.names[0]
    return (
        get_full_name_for_node(name.name) == module
        and name.asname is not None
        and isinstance(name.asname.name, cst.Name)
        and name.asname.name.value == alias
    )


def _is_single_import(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom))
    )


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.SimpleString)
    )


def _collapse(outer: cst.Call, func: cst.Attribute) -> cst.Call:
    """``outer(reduce(inner(x), *rest))`` or ``outer(inner(x).reduce(*rest))`` -> ``func(x, *rest)``,
    keeping the spelling of ``x`` and of the reduction's arguments (the engine checked the shape)."""
    reduction = outer.args[0].value
    assert isinstance(reduction, cst.Call)
    if isinstance(reduction.func, cst.Attribute) and isinstance(reduction.func.value, cst.Call):
        inner, rest = reduction.func.value, list(reduction.args)
        comma: Union[cst.Comma, cst.MaybeSentinel] = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    else:
        first = reduction.args[0].value
        assert isinstance(first, cst.Call)
        inner, rest, comma = first, list(reduction.args[1:]), reduction.args[0].comma
    x = inner.args[0].with_changes(comma=comma if rest else cst.MaybeSentinel.DEFAULT)
    return cst.Call(func=func, args=[x, *rest], lpar=outer.lpar, rpar=outer.rpar)


def _has_comment(lines: Union[List[cst.EmptyLine], Tuple[cst.EmptyLine, ...]]) -> bool:
    return any(line.comment is not None for line in lines)


class _Rewriter(cst.CSTTransformer):
    def __init__(
        self,
        positions: Mapping[cst.CSTNode, CodeRange],
        replacements: Dict[_Span, str],
        removals: _Removals,
        alias: str,
        runtime_module: str,
    ) -> None:
        super().__init__()
        self.positions = positions
        self.replacements = replacements
        self.removals = removals
        self.alias = alias
        self.runtime_module = runtime_module
        # lines whose every statement was removed, kept as `pass` until their block decides
        self.emptied: Dict[int, cst.SimpleStatementLine] = {}

    # -- replacing expressions ---------------------------------------------
    def _swap(self, original: cst.BaseExpression, updated: cst.BaseExpression) -> cst.BaseExpression:
        if not self.replacements:
            return updated
        span = self.positions.get(original)
        if span is None:
            return updated
        helper = self.replacements.pop((span.start.line, span.start.column, span.end.line, span.end.column), None)
        if helper is None:
            return updated
        return cst.Attribute(
            value=cst.Name(self.alias),
            attr=cst.Name(helper),
            lpar=updated.lpar,
            rpar=updated.rpar,
        )

    calls: Dict[_Span, str] = {}

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not self.calls:
            return updated_node
        span = self.positions.get(original_node)
        if span is None:
            return updated_node
        helper = self.calls.pop((span.start.line, span.start.column, span.end.line, span.end.column), None)
        if helper is None:
            return updated_node
        return _collapse(updated_node, cst.Attribute(value=cst.Name(self.alias), attr=cst.Name(helper)))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._swap(original_node, updated_node)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        return self._swap(original_node, updated_node)

    # -- removing imports ----------------------------------------------------
    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> Union[cst.ImportFrom, cst.RemovalSentinel]:
        span = self.positions.get(original_node)
        drop = self.removals.get((span.start.line, span.start.column)) if span else None
        if not drop or isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        names = list(updated_node.names)
        keep = [a for a in names if (_alias_name(a), _alias_asname(a)) not in drop]
        if len(keep) == len(names):
            return updated_node
        if not keep:
            return cst.RemovalSentinel.REMOVE
        if keep[-1] is not names[-1]:
            # the old last name carried the trailing comma (or none): hand it on
            keep[-1] = keep[-1].with_changes(comma=names[-1].comma)
        return updated_node.with_changes(names=keep)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if len(updated_node.body) == len(original_node.body):
            return updated_node
        if not updated_node.body:
            marker = updated_node.with_changes(body=[cst.Pass()])
            self.emptied[id(marker)] = marker
            return marker
        if isinstance(original_node.body[-1].semicolon, cst.MaybeSentinel):
            body = list(updated_node.body)
            body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            return updated_node.with_changes(body=body)
        return updated_node

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        if not self.emptied:
            return updated_node
        body, footer = self._settle(list(updated_node.body), list(updated_node.footer), top=())
        return updated_node.with_changes(body=body, footer=footer)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.emptied:
            return updated_node
        start = 1 if original_node.body and _is_docstring(original_node.body[0]) else 0
        end = start
        while end < len(original_node.body) and _is_single_import(original_node.body[end]):
            end += 1
        top = range(start, end)
        body, footer = self._settle(list(updated_node.body), list(updated_node.footer), top=top)
        return updated_node.with_changes(body=body, footer=footer)

    def _settle(self, body: List[cst.BaseStatement], footer: List[cst.EmptyLine], top) -> Tuple[list, list]:  # type: ignore[no-untyped-def]
        """Drop emptied lines; in the top import block the first becomes the runtime import.

        Replacing in place keeps the new import where the old one was (and its
        blank lines); AddImportsVisitor then finds it and adds nothing.  A
        dropped line's comments move to the next statement; its blank lines do
        too where that statement has none (they separated groups); a block that
        now starts later loses the blank lines at its new start.
        """
        has_runtime = any(_is_runtime_import(body[i], self.runtime_module, self.alias) for i in top)
        kept: List[cst.BaseStatement] = []
        comments: List[cst.EmptyLine] = []
        blanks: List[cst.EmptyLine] = []
        first_marker: Optional[cst.SimpleStatementLine] = None
        for i, stmt in enumerate(body):
            if id(stmt) not in self.emptied:
                leading = list(stmt.leading_lines)
                if not kept and first_marker is not None:
                    leading = _strip_blank_start(leading)
                elif not leading:
                    leading = blanks
                leading = [*comments, *leading]
                if leading != list(stmt.leading_lines):
                    stmt = stmt.with_changes(leading_lines=leading)
                comments, blanks = [], []
                kept.append(stmt)
                continue
            marker = self.emptied[id(stmt)]
            first_marker = first_marker or marker
            if i in top and not has_runtime:
                has_runtime = True
                statement = cst.parse_statement(f"import {self.runtime_module} as {self.alias}")
                assert isinstance(statement, cst.SimpleStatementLine)
                kept.append(marker.with_changes(body=statement.body, trailing_whitespace=cst.TrailingWhitespace()))
            elif _has_comment(marker.leading_lines):
                comments.extend(marker.leading_lines)
            elif not blanks:
                blanks = list(marker.leading_lines)
        if not kept and first_marker is not None:
            return [first_marker], footer  # a block cannot be empty: keep `pass`
        return kept, [*comments, *footer]


def _strip_blank_start(lines: Sequence[cst.EmptyLine]) -> List[cst.EmptyLine]:
    lines = list(lines)
    while lines and lines[0].comment is None:
        lines.pop(0)
    return lines


def _alias_name(alias: cst.ImportAlias) -> str:
    return get_full_name_for_node(alias.name) or ""


def _alias_asname(alias: cst.ImportAlias) -> Optional[str]:
    if alias.asname is None or not isinstance(alias.asname.name, cst.Name):
        return None
    return alias.asname.name.value
