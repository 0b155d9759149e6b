"""The rewriting half of the engine: LibCST, touched only for files with something to fix.

The analysis (``ast`` + :mod:`np2torch.lint.resolve`) has already decided which
expressions to replace; here they are found again by position
(``PositionProvider``, 0-based character columns, like the findings) and
replaced by ``<alias>.<helper>``.  Only the top-level statements that hold a
fix are parsed by LibCST; the rest of the text is spliced through unchanged.
A function-local ``from``-import the rewrite leaves unused is removed (a
module-level one only with ``--unsafe-fixes``: it may be someone else's
import), comments always stay, and one ``import <runtime> as <alias>`` line
goes where the analysis placed it (:mod:`np2torch.lint.placement`).
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import sys
import threading
from bisect import bisect_right
from collections import Counter
from typing import Callable, Mapping, Optional, Sequence, TypeVar

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from np2torch.lint.model import FixError, Lines, Planned, Settings
from np2torch.lint.placement import ImportPlace, Unit, Units, statements, units_of
from np2torch.lint.resolve import bound_names

_Span = tuple[int, int, int, int]
_TRY = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_Removals = dict[tuple[int, int], set[tuple[str, Optional[str]]]]


def apply_fixes(
    text: str,
    tree: ast.Module,
    fixes: list[Planned],
    import_froms: Mapping[int, ast.ImportFrom],
    alias: str,
    settings: Settings,
    path: str,
    place: ImportPlace,
) -> str:
    """``text`` with ``fixes`` applied: only the top-level statements holding a fix go through LibCST.

    Every other byte is spliced through as it was, so a one-finding fix of a
    50,000-line file costs one small LibCST parse, not a transform of the
    whole module.  The runtime import is a line of text put where ``place``
    (:func:`np2torch.lint.placement.import_place`) says; inside a statement that
    LibCST rewrites, it is put into that statement's text first.
    """

    lines = Lines(text)
    replacements = _spans(fixes, pattern=False)
    calls = _spans(fixes, pattern=True)  # NPT9xx: outer(reduce(inner(x), *rest)) -> alias.helper(x, *rest)
    removals = _unused_imports(tree, fixes, import_froms, path, lines, settings.unsafe_fixes)
    units = units_of(tree)
    chunks = _split_lines(text)
    touched = _touched_units(units, [*replacements, *calls], removals)
    line = f"import {settings.runtime_module} as {alias}"
    pieces: dict[int, str] = {}
    for index in touched:
        first, last = units[index].first, units[index].last
        segment = chunks[first - 1 : last]
        if not place.existing and first <= place.after < last:  # inside this unit: the line goes in first
            at = place.after - first  # the line it follows, in the segment (never the unit's last)
            ending = _ending(segment[at])
            added = [ending] * place.blank_before + [place.indent + line + ending] + [ending] * place.blank_after
            segment[at + 1:at + 1] = added
            by = len(added)
            replacements, calls, removals = (_moved_down(replacements, place.after, last, by),
                                             _moved_down(calls, place.after, last, by),
                                             _moved_down(removals, place.after, last, by))
            last += by
            place = ImportPlace(place.after, existing=True)
        pieces[index] = _rewrite_segment("".join(segment), first - 1, last, replacements, calls, removals, alias)
    return _assemble(chunks, units, pieces, place, line)


_K = TypeVar("_K", _Span, tuple[int, int])
ImportT = TypeVar("ImportT", cst.Import, cst.ImportFrom)
_V = TypeVar("_V")


def _moved_down(spans: Mapping[_K, _V], after: int, last: int, by: int = 1) -> dict[_K, _V]:
    """``spans`` (keys starting with a line, and ending with one when they are spans) with those on lines
    ``after + 1``..``last`` ``by`` lines further down: lines were put into that unit's text after line
    ``after`` (the other units keep their own lines)."""
    moved: dict[_K, _V] = {}
    for key, value in spans.items():
        if after < key[0] <= last:
            key = (key[0] + by, key[1], key[2] + by, key[3]) if len(key) == 4 else (key[0] + by, key[1])
        moved[key] = value
    return moved


def _unit_of(units: Units, line: int) -> int:
    """The index of the unit holding ``line`` (every finding and import lies inside one)."""
    index = units.index_of(line)
    if index is None:
        raise FixError(f"line {line} lies outside every top-level statement; left unchanged")
    return index


def _touched_units(units: Units, spans: Sequence[_Span], removals: _Removals) -> list[int]:
    lines = [span[0] for span in spans] + [line for line, _col in removals]
    return sorted({_unit_of(units, line) for line in lines})


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _split_lines(text: str) -> list[str]:
    """Lines with their endings, split where the tokenizer splits them (not at form feeds, as splitlines does)."""
    return _LINE.findall(text)


def _spans(fixes: list[Planned], *, pattern: bool) -> dict[_Span, str]:
    return {
        (f.finding.line, f.finding.column - 1, f.finding.end_line, f.finding.end_column - 1): f.rule.helper
        for f in fixes
        if f.rule.is_pattern == pattern
    }


def _shift(spans: Mapping[_Span, str], offset: int, last: int) -> dict[_Span, str]:
    """The spans on lines ``offset + 1``..``last``, renumbered from 1."""
    return {
        (line - offset, col, end_line - offset, end_col): helper
        for (line, col, end_line, end_col), helper in spans.items()
        if offset < line <= last
    }


def _rewrite_segment(
    segment: str,
    offset: int,
    last: int,
    replacements: Mapping[_Span, str],
    calls: Mapping[_Span, str],
    removals: _Removals,
    alias: str,
) -> str:
    """One unit's text rewritten by LibCST; every failure is a one-line :class:`FixError` naming the lines."""

    where = f"lines {offset + 1}-{last}"
    local_removals = {(line - offset, col): names for (line, col), names in removals.items() if offset < line <= last}
    try:
        module = cst.parse_module(segment)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: B036 -- LibCST's native parser panics with a BaseException
        raise FixError(f"LibCST cannot parse {where}: {' '.join(str(exc).split())}") from None
    args = (segment, module, _shift(replacements, offset, last), local_removals, alias, _shift(calls, offset, last))
    try:
        return _with_deep_stack(_rewrite, *args)
    except FixError as exc:
        raise FixError(f"{where}: {exc}") from None
    except RecursionError:
        raise FixError(f"{where} are too deeply nested for LibCST's tree walk; left unchanged") from None
    except (ValueError, TypeError, AttributeError, AssertionError) as exc:
        # LibCST rejects some valid text late, e.g. a form feed inside indentation
        # ("invalid value for default_indent"): one line for the file, never a traceback.
        raise FixError(f"LibCST cannot rewrite {where} ({type(exc).__name__}: {' '.join(str(exc).split())}); left unchanged") from None


def _rewrite(
    text: str,
    module: cst.Module,
    replacements: dict[_Span, str],
    removals: _Removals,
    alias: str,
    calls: dict[_Span, str] | None = None,
) -> str:

    # LibCST drops the last newline of a file whose newlines are a lone "\r" (old Mac
    # style); put it back, and refuse anything else that does not round-trip.
    suffix = ""
    if module.code != text:
        if text.endswith("\r") and module.code + "\r" == text:
            suffix = "\r"
        else:
            raise FixError("LibCST does not reproduce this text byte for byte; left unchanged")
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    rewriter = _Rewriter(wrapper.resolve(PositionProvider), dict(replacements), removals, alias)
    rewriter.calls = dict(calls or {})
    fixed = wrapper.module.visit(rewriter)
    if rewriter.replacements or rewriter.calls:
        left = [*rewriter.replacements, *rewriter.calls]
        missed = ", ".join(f"{line}:{col + 1}" for line, col, _l, _c in sorted(left))
        raise FixError(f"could not find the expressions at {missed} (relative lines) in LibCST's tree; left unchanged")
    if not fixed.body and not fixed.header and not fixed.footer:
        return ""  # every statement of the unit was removed (LibCST would print an empty module as "\n")
    return fixed.code + suffix


# --------------------------------------------------------------------------- the import line


def _all_imports(unit: Unit) -> bool:
    return all(isinstance(stmt, (ast.Import, ast.ImportFrom)) for stmt in unit.stmts)


def _assemble(chunks: list[str], units: Units, pieces: Mapping[int, str], place: ImportPlace, line: str) -> str:
    """The unchanged lines, the rewritten units and the import line, in order."""
    events: list[tuple[int, int, str | None]] = [(units[i].first - 1, units[i].last, p) for i, p in pieces.items()]
    blank = 0
    if not place.existing:
        at = place.after
        events.append((at, at, None))  # sorts before a rewritten unit starting there
        following = bisect_right(units.firsts, at)
        blank = int(place.blank_after)
        if not place.indent and following < len(units) and not _all_imports(units[following]):
            blank = max(blank, _blank_lines_wanted(units[following], chunks, at))
    out: list[str] = []
    cursor = 0  # the next chunk not yet copied
    for start, end, piece in sorted(events, key=lambda event: (event[0], event[1])):
        out.extend(chunks[cursor:start])
        out.append(_import_text(out, chunks, place.indent + line, blank, place.blank_before) if piece is None else piece)
        cursor = end
    out.extend(chunks[cursor:])
    return "".join(out)


def _blank_lines_wanted(unit: Unit, chunks: list[str], at: int) -> int:
    """The blank lines to add after a module-level import put after line ``at`` that ``unit`` (no import)
    follows: isort's (ruff's ``lines-after-imports`` default), two before a ``def`` or ``class`` (its
    decorators and the comments above it too), one before other code, less those already there."""
    there = 0
    while at + there < len(chunks) and not chunks[at + there].strip():
        there += 1
    if at + there >= len(chunks):
        return 0
    wanted = 2 if isinstance(unit.stmts[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else 1
    return max(wanted - there, 0)


def _import_text(before: list[str], chunks: list[str], line: str, blank: int, blank_before: bool = False) -> str:
    """The import line ended like the line before it; after a last line without a newline, it starts one.

    ``blank``: the blank lines that separate it from what follows (code, a comment, or another section of
    imports), as isort does; ``blank_before``: a blank line separates it from the section before.
    """
    previous = next((chunk for chunk in reversed(before) if chunk), "")
    newline = _ending(previous) or next((_ending(c) for c in chunks if _ending(c)), "\n")
    lead = newline if blank_before else ""
    if previous and not _ending(previous):
        return newline + lead + line
    return lead + line + newline * (1 + blank)


def _ending(chunk: str) -> str:
    if chunk.endswith("\r\n"):
        return "\r\n"
    if chunk.endswith(("\r", "\n")):
        return chunk[-1]
    return ""


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
    values: list[_T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            values.append(fn(*args))
        except BaseException as exc:  # noqa: B036 -- handed back to the calling thread
            errors.append(exc)

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
    if errors:
        raise errors[0]
    return values[0]


# Builtins that reach names through strings or namespaces: a module using one may use any import.
_DYNAMIC_LOOKUPS = ("eval", "exec", "globals", "locals", "vars")
# What reads a function's locals through its frame (`sys._getframe().f_locals`, `inspect.getargvalues(frame)`).
_FRAME_LOOKUPS = ("f_locals", "getargvalues")


def _unused_imports(
    tree: ast.Module,
    fixes: list[Planned],
    import_froms: Mapping[int, ast.ImportFrom],
    path: str,
    lines: Lines,
    unsafe: bool = False,
) -> _Removals:
    """Import aliases that bound only the replaced names and nothing else uses: ``from numpy import exp``
    for ``exp(x)``, ``import numpy as np`` for ``np.exp(x)`` (the first name of every replaced attribute
    chain).

    Only imports inside a function are removed by default: no one else can
    import a function's local.  A module-level (or class-level) name may be
    someone else's import (``from mu import exp``, ``from mu import np``), so those are removed only
    with ``unsafe`` (``--unsafe-fixes``).  Kept always: everything in an
    ``__init__.py`` (re-exports), names listed as strings where the module has
    ``__all__``, names used or bound anywhere else (any scope; conservative),
    every import of a module that calls ``eval``/``exec``/``globals``/...
    (a string may name it) or reads a frame's locals (``sys._getframe().f_locals``), a multi-line import holding a comment, an import
    inside a ``try`` whose handlers may catch ``ImportError`` (feature detection:
    ``try: from scipy.special import erf`` / ``except ImportError: return fallback``
    falls back only while the import is there), and a name a pattern fix
    (NPT9xx) replaced (its count of uses is not kept here).
    """
    if os.path.basename(path.replace("\\", "/")) == "__init__.py":
        return {}
    replaced: dict[str, int] = {}
    aliases: dict[str, list[tuple[ast.alias, ast.Import | ast.ImportFrom]]] = {}
    plain: dict[int, ast.Import] | None = None
    for planned in fixes:
        ref = planned.ref
        if type(ref.node) is ast.Name and ref.imports:
            name = ref.node.id
            found: list[tuple[ast.alias, ast.Import | ast.ImportFrom]] = [
                (alias, import_froms[id(alias)]) for alias in ref.imports if id(alias) in import_froms]
        elif type(ref.node) is ast.Attribute and not planned.rule.is_pattern and ref.bindings:
            name = _root_name(ref.node)
            plain = _plain_imports(tree) if plain is None else plain
            found = [(alias, plain[id(alias)]) for alias in ref.bindings if id(alias) in plain]
        else:
            continue
        replaced[name] = replaced.get(name, 0) + 1
        aliases.setdefault(name, []).extend(found)
    if not replaced:
        return {}
    names = bound_names(tree)
    if any("use" in names.get(builtin, ()) for builtin in _DYNAMIC_LOOKUPS) or any(map(lines.spells, _FRAME_LOOKUPS)):
        return {}
    # the statements of the module and of its classes, at any block depth, that no function holds
    visible = set() if unsafe else {id(stmt) for stmt in statements(tree.body, (ast.FunctionDef, ast.AsyncFunctionDef))}
    exported: set[str] = set()
    if "__all__" in names:
        exported = {
            node.value for node in ast.walk(tree) if type(node) is ast.Constant and isinstance(node.value, str)
        }
    guarded = _guarded_imports(tree)
    removals: _Removals = {}
    for name, count in replaced.items():
        kinds = names.get(name, [])
        qualnames = {k for k in kinds if k != "use"}
        if name in exported or kinds.count("use") != count or len(qualnames) != 1:
            continue
        if not next(iter(qualnames)).startswith(("from ", "import")):
            continue
        for alias, stmt in aliases.get(name, []):
            if id(stmt) in visible or id(stmt) in guarded or _holds_a_comment(stmt, lines):
                continue
            key = (stmt.lineno, lines.char_col(stmt.lineno, stmt.col_offset))
            removals.setdefault(key, set()).add((alias.name, alias.asname))
    return removals


def _root_name(node: ast.Attribute) -> str:
    """The name an attribute chain starts from (``np`` in ``np.random.rand``; ``""``: not a name)."""
    root: ast.expr = node
    while isinstance(root, ast.Attribute):
        root = root.value
    return root.id if isinstance(root, ast.Name) else ""


def _plain_imports(tree: ast.Module) -> dict[int, ast.Import]:
    """id(alias) -> its ``import`` statement, in any scope."""
    return {id(alias): node for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}


# Built-in exceptions that cannot catch a failed import (neither a base of ImportError nor a kind of it,
# as ModuleNotFoundError is): a handler naming only these is no fallback.
_NOT_IMPORT_ERRORS = frozenset(
    name for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
    and not issubclass(ImportError, value) and not issubclass(value, ImportError)
)


# Built-in exceptions that catch a failed import: a `with` naming one may suppress it (contextlib.suppress).
_IMPORT_ERRORS = frozenset(
    name for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
    and (issubclass(ImportError, value) or issubclass(value, ImportError))
)


def _guarded_imports(tree: ast.Module) -> set[int]:
    """id() of the import statements in the body of a ``try`` (or ``try``/``except*``) that may catch
    their ``ImportError``, or of a ``with`` naming one (``with suppress(ImportError):``): removing one
    turns the fallback off (``try: pass``)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if (isinstance(node, _TRY) and any(_may_catch_import_error(h.type) for h in node.handlers)) or (
            isinstance(node, (ast.With, ast.AsyncWith)) and any(_names_an_import_error(i) for i in node.items)
        ):
            guarded.update(id(stmt) for stmt in statements(node.body, _SCOPES)
                           if isinstance(stmt, (ast.Import, ast.ImportFrom)))
    return guarded


def _names_an_import_error(item: ast.withitem) -> bool:
    return any((isinstance(n, ast.Name) and n.id in _IMPORT_ERRORS)
               or (isinstance(n, ast.Attribute) and n.attr in _IMPORT_ERRORS) for n in ast.walk(item.context_expr))


def _may_catch_import_error(kind: ast.expr | None) -> bool:
    """A bare ``except``, ``ImportError`` or a base of it, or anything not known to be another built-in."""
    if kind is None:
        return True
    names = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return not all(isinstance(name, ast.Name) and name.id in _NOT_IMPORT_ERRORS for name in names)


def _holds_a_comment(stmt: ast.stmt, lines: Lines) -> bool:
    """A multi-line import with a comment: removing names from it could drop the comment."""
    last = stmt.end_lineno or stmt.lineno
    return last > stmt.lineno and any("#" in lines[n] for n in range(stmt.lineno, last + 1))


_Matched = TypeVar("_Matched", cst.Call, cst.BinaryOperation)
"""The expression a pattern rule matched: a call, or a ratio or difference of calls."""


def _collapse(outer: cst.Call, func: cst.Attribute) -> cst.Call:
    """``outer(reduce(inner(x), *rest))`` or ``outer(inner(x).reduce(*rest))`` -> ``func(x, *rest)``,
    keeping the spelling of ``x`` and of the reduction's arguments (the engine checked the shape)."""
    reduction = outer.args[0].value
    assert isinstance(reduction, cst.Call)
    if isinstance(reduction.func, cst.Attribute) and isinstance(reduction.func.value, cst.Call):
        inner, rest = reduction.func.value, list(reduction.args)
        comma: cst.Comma | cst.MaybeSentinel = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    else:
        first = reduction.args[0].value
        assert isinstance(first, cst.Call)
        inner, rest, comma = first, list(reduction.args[1:]), reduction.args[0].comma
    x = inner.args[0].with_changes(comma=comma if rest else cst.MaybeSentinel.DEFAULT)
    return cst.Call(func=func, args=[x, *rest], lpar=outer.lpar, rpar=outer.rpar)


def _one_call(operation: cst.BinaryOperation, func: cst.Attribute) -> cst.Call:
    """``inner(x) / reduce(inner(x), *rest)``, ``inner(x) / inner(x).reduce(*rest)`` or
    ``x - reduce(x, *rest)`` -> ``func(x, *rest)`` without ``keepdims``, keeping the spelling of
    ``x`` and of the reduction's other arguments (the engine checked the shape: rules.Rule.form)."""
    reduction = operation.right
    assert isinstance(reduction, cst.Call)
    if isinstance(operation.operator, cst.Subtract):
        x, rest = operation.left, list(reduction.args[1:])
    elif isinstance(reduction.func, cst.Attribute) and isinstance(reduction.func.value, cst.Call):
        x, rest = reduction.func.value.args[0].value, list(reduction.args)
    else:
        first = reduction.args[0].value
        assert isinstance(first, cst.Call)
        x, rest = first.args[0].value, list(reduction.args[1:])
    rest = [arg for arg in rest if not (arg.keyword is not None and arg.keyword.value == "keepdims")]
    if rest:
        rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    first_arg = cst.Arg(x, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if rest else cst.MaybeSentinel.DEFAULT)
    return cst.Call(func=func, args=[first_arg, *rest], lpar=operation.lpar, rpar=operation.rpar)


def _with_lost_comments(collapsed: cst.Call, matched: cst.CSTNode) -> cst.Call:
    """``collapsed`` (a pattern's one call) with the comments of ``matched`` that the collapse dropped."""
    kept = Counter(c.value for c in _comments_in(collapsed))
    lost = []
    for comment in _comments_in(matched):
        if kept[comment.value]:
            kept[comment.value] -= 1
        else:
            lost.append(comment)
    if not lost:
        return collapsed
    # inside the call's own parentheses a comment line is always valid
    return collapsed.with_changes(whitespace_before_args=_comment_lines(lost, collapsed.whitespace_before_args))


def _comments_in(node: cst.CSTNode) -> list[cst.Comment]:
    """The comments inside ``node``, in source order."""
    found: list[cst.Comment] = []

    class _Collect(cst.CSTVisitor):
        def visit_Comment(self, comment: cst.Comment) -> None:
            found.append(comment)

    node.visit(_Collect())
    return found


def _keeping_comments(replacement: cst.Attribute, original: cst.Attribute) -> cst.Attribute:
    """``replacement`` (``<alias>.<helper>``) with every comment that was inside ``original`` (``np  # note``
    then ``.exp`` on the next line): the dot keeps its own whitespace, and the comments of the part the alias
    replaces (``np``, ``sc.special``) go before it; with no bracket around that dot, in new parentheses."""
    inner = _comments_in(original.value)
    if not inner and not _comments_in(original.dot):
        return replacement
    dot = original.dot
    if not inner:
        return replacement.with_changes(dot=dot)
    bracketed = bool(original.lpar) or any(
        isinstance(ws, cst.ParenthesizedWhitespace) for ws in (dot.whitespace_before, dot.whitespace_after)
    )
    if bracketed:
        return replacement.with_changes(dot=dot.with_changes(whitespace_before=_comment_lines(inner, dot.whitespace_before)))
    opening = cst.LeftParen(whitespace_after=_comment_lines(inner, cst.SimpleWhitespace("")))
    return replacement.with_changes(dot=dot, lpar=[opening, *replacement.lpar], rpar=[*replacement.rpar, cst.RightParen()])


def _comment_lines(comments: Sequence[cst.Comment], then: cst.BaseParenthesizableWhitespace) -> cst.ParenthesizedWhitespace:
    """Whitespace (inside brackets) holding ``comments``, one a line, followed by the whitespace ``then``."""
    lines = [cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=c) for c in comments[1:]]
    last = then
    if isinstance(then, cst.ParenthesizedWhitespace):
        if then.first_line.comment is not None:
            lines.append(cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=then.first_line.comment))
        lines.extend(then.empty_lines)
        last = then.last_line
    assert isinstance(last, cst.SimpleWhitespace)
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "), comment=comments[0]),
        empty_lines=lines,
        indent=True,
        last_line=last,
    )


def _has_comment(lines: Sequence[cst.EmptyLine]) -> bool:
    return any(line.comment is not None for line in lines)


class _Rewriter(cst.CSTTransformer):
    def __init__(
        self,
        positions: Mapping[cst.CSTNode, CodeRange],
        replacements: dict[_Span, str],
        removals: _Removals,
        alias: str,
    ) -> None:
        super().__init__()
        self.positions = positions
        self.replacements = replacements
        self.removals = removals
        self.alias = alias
        # lines whose every statement was removed, kept as `pass` until their block decides
        self.emptied: dict[int, cst.SimpleStatementLine] = {}

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
        replacement = cst.Attribute(value=cst.Name(self.alias), attr=cst.Name(helper), lpar=updated.lpar, rpar=updated.rpar)
        if isinstance(updated, cst.Attribute):
            return _keeping_comments(replacement, updated)
        return replacement  # a Name: its comments can only be in its parentheses, which stay

    calls: dict[_Span, str] = {}

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        return self._pattern(original_node, updated_node, _collapse)

    def leave_BinaryOperation(self, original_node: cst.BinaryOperation, updated_node: cst.BinaryOperation) -> cst.BaseExpression:
        return self._pattern(original_node, updated_node, _one_call)

    def _pattern(self, original: _Matched, updated: _Matched,
                 rewrite: Callable[[_Matched, cst.Attribute], cst.Call]) -> cst.BaseExpression:
        """A pattern rule's expression (a call, or a ratio/difference of calls) -> ``alias.helper(...)``."""
        if not self.calls:
            return updated
        span = self.positions.get(original)
        if span is None:
            return updated
        helper = self.calls.pop((span.start.line, span.start.column, span.end.line, span.end.column), None)
        if helper is None:
            return updated
        collapsed = rewrite(updated, cst.Attribute(value=cst.Name(self.alias), attr=cst.Name(helper)))
        return _with_lost_comments(collapsed, updated)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._swap(original_node, updated_node)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        return self._swap(original_node, updated_node)

    # -- removing imports ----------------------------------------------------
    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import | cst.RemovalSentinel:
        return self._without_dropped(original_node, updated_node)

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        return self._without_dropped(original_node, updated_node)

    def _without_dropped(self, original_node: ImportT, updated_node: ImportT) -> ImportT | cst.RemovalSentinel:
        """The import without the names planned for removal (none left: the statement goes)."""
        span = self.positions.get(original_node)
        drop = self.removals.get((span.start.line, span.start.column)) if span else None
        if not drop:
            return updated_node
        assert not isinstance(updated_node.names, cst.ImportStar)
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
        body, footer = self._settle(list(updated_node.body), list(updated_node.footer), may_empty=False)
        return updated_node.with_changes(body=body, footer=footer)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.emptied:
            return updated_node
        # a unit of the module (see apply_fixes): it may end up holding no statement at all
        body, footer = self._settle(list(updated_node.body), list(updated_node.footer), may_empty=True)
        return updated_node.with_changes(body=body, footer=footer)

    def _settle(self, body: list[cst.BaseStatement], footer: list[cst.EmptyLine], may_empty: bool) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
        """Drop emptied lines, keeping every comment they had.

        A dropped line's comments (the lines above it, and its own trailing
        comment as a line of its own) move to the next statement; its blank
        lines do too where that statement has none (they separated groups); a
        block that now starts later loses the blank lines at its new start.
        """
        kept: list[cst.BaseStatement] = []
        comments: list[cst.EmptyLine] = []
        blanks: list[cst.EmptyLine] = []
        first_marker: cst.SimpleStatementLine | None = None
        for stmt in body:
            if id(stmt) not in self.emptied:
                leading = list(stmt.leading_lines)  # type: ignore[attr-defined]  # BaseStatement lacks it, both kinds have it
                if not kept and first_marker is not None:
                    leading = _strip_blank_start(leading)
                elif not leading:
                    leading = blanks
                leading = [*comments, *leading]
                if leading != list(stmt.leading_lines):  # type: ignore[attr-defined]
                    stmt = stmt.with_changes(leading_lines=leading)
                comments, blanks = [], []
                kept.append(stmt)
                continue
            marker = self.emptied[id(stmt)]
            first_marker = first_marker or marker
            own = _trailing_comment(marker)
            if _has_comment(marker.leading_lines) or own:
                comments.extend([*marker.leading_lines, *own])
            elif not blanks:
                blanks = list(marker.leading_lines)
        if not kept and first_marker is not None and not may_empty:
            return [first_marker], footer  # a block cannot be empty: keep `pass` (and its comment)
        return kept, [*comments, *footer]


def _trailing_comment(line: cst.SimpleStatementLine) -> list[cst.EmptyLine]:
    comment = line.trailing_whitespace.comment
    return [] if comment is None else [cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=comment)]


def _strip_blank_start(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    lines = list(lines)
    while lines and lines[0].comment is None:
        lines.pop(0)
    return lines


def _alias_name(alias: cst.ImportAlias) -> str:
    return get_full_name_for_node(alias.name) or ""


def _alias_asname(alias: cst.ImportAlias) -> str | None:
    if alias.asname is None or not isinstance(alias.asname.name, cst.Name):
        return None
    return alias.asname.name.value
