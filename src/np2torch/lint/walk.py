"""Walks of only the statements that can matter, shared by the analyses that look at a whole module.

An analysis that needs a whole-module look (namespace writes, self-documenting f-string fields, compilers
loaded by name) can only be triggered by code that spells something: ``globals(``, ``=}``, a compiler's
package name in quotes.  :func:`line_numbers` finds the lines that spell it (regular expressions over the
text: the cheap first pass), and :func:`nodes` walks only the statements holding those lines, as the
resolver walks only the statements spelling a candidate name (:mod:`np2torch.lint.resolve`, with
:func:`holds`).  A compound statement (``def``, ``if``, ``try``, ...) holding a wanted line is visited
with its header; of its blocks only the wanted statements are walked.  :func:`children` and :func:`every`
are ``ast.iter_child_nodes`` and ``ast.walk`` for the analyses that need the whole tree, at less cost.
"""

from __future__ import annotations

import ast
import re
import sys
from bisect import bisect_left
from collections import deque
from typing import Iterator, Sequence

__all__ = ["Visit", "children", "every", "holds", "line_numbers", "nodes"]

Visit = tuple[ast.AST, "ast.AST | None", bool]
"""A node, its parent, and whether it is evaluated at module level (outside every ``def``, ``lambda`` and
``class`` body; their decorators, defaults and bases are not at module level either)."""

_SCOPE_BODIES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes(node)`` as a list, in the same order, at a fraction of its cost (the field
    names of each node type are looked up once, and never those that cannot hold a node)."""
    t = type(node)
    fields = _FIELDS.get(t)
    if fields is None:
        fields = _FIELDS[t] = tuple(f for f in t._fields if f not in _LEAF_FIELDS)
    found: list[ast.AST] = []
    for field in fields:
        value = getattr(node, field, None)
        if type(value) is list:
            found.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def every(root: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk(root)``: every node, breadth first, in the same order (through :func:`children`)."""
    queue = deque([root])
    while queue:
        node = queue.popleft()
        queue.extend(children(node))
        yield node


# fields that never hold a node: identifiers, constants, flags
_LEAF_FIELDS = frozenset({"id", "name", "arg", "attr", "module", "level", "type_comment", "is_async", "conversion",
                          "kind"})


def line_numbers(text: str, patterns: Sequence[re.Pattern[str]]) -> list[int]:
    """The sorted numbers of the lines on which a match of any of ``patterns`` starts."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    positions = sorted(match.start() for pattern in patterns for match in pattern.finditer(text))
    lines: list[int] = []
    line, last = 1, 0
    for pos in positions:
        line += text.count("\n", last, pos)
        last = pos
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def nodes(tree: ast.Module, lines: Sequence[int]) -> Iterator[Visit]:
    """Every node of the statements (at any depth) whose lines hold one of ``lines``, each once, parents
    before children, the last child first (a depth-first walk off a stack: what an analysis that keeps the
    first of several findings reports is the one furthest down); a compound statement holding a wanted
    line is visited itself (its header) and its wanted statements are walked."""
    if not lines:
        return
    stack: list[tuple[ast.AST, ast.AST | None, bool]] = [
        (stmt, tree, True) for stmt in tree.body if holds(stmt, lines)
    ]
    while stack:
        node, parent, module_level = stack.pop()
        yield node, parent, module_level
        inner = module_level and not isinstance(node, _SCOPE_BODIES)
        found: list[tuple[ast.AST, ast.AST | None, bool]] = []
        for field, value in ast.iter_fields(node):
            if type(value) is list:
                if field in _BLOCKS and value and isinstance(value[0], (ast.stmt, ast.excepthandler, _MATCH_CASE)):
                    found.extend((child, node, inner) for child in value if holds(child, lines))
                else:
                    found.extend((child, node, inner) for child in value if isinstance(child, ast.AST))
            elif isinstance(value, ast.AST):
                found.append((value, node, inner))
        stack.extend(found)


_MATCH_CASE: type = getattr(ast, "match_case", ast.excepthandler)


def holds(stmt: ast.AST, lines: Sequence[int]) -> bool:
    """Whether one of ``lines`` (sorted) lies within the statement (its decorators included)."""
    first: int | None = getattr(stmt, "lineno", None)
    if first is None:  # a `match` case (Python >= 3.10) has no position: its pattern's first line to its body's last
        assert sys.version_info >= (3, 10) and isinstance(stmt, ast.match_case)
        first, last = stmt.pattern.lineno, stmt.body[-1].end_lineno or stmt.body[-1].lineno
    else:
        decorators: list[ast.expr] | None = getattr(stmt, "decorator_list", None)
        if decorators:
            first = min(first, *(d.lineno for d in decorators))
        last = getattr(stmt, "end_lineno", None) or first
    i = bisect_left(lines, first)
    return i < len(lines) and lines[i] <= last
