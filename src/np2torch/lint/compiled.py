"""Functions that a compiler (numba, JAX, torch, CuPy) takes over: no fix may go inside them.

``@numba.njit def sp(x): return np.log(1.0 + np.exp(x))`` runs before a fix
and raises numba's ``TypingError`` after it: numba compiles ``np.exp`` itself
but cannot compile a call of ``np2torch.runtime.exp``, a plain Python
function.  JAX traces, TorchScript/``torch.compile`` and ``cupy.fuse`` have
the same problem.  A finding inside such a function is reported without a fix.

A function is compiled when a compiler (:data:`COMPILERS`, resolved by
qualified name through imports and aliases) decorates it (``@njit``,
``@nb.jit(nopython=True)``, ``@functools.partial(jax.jit, static_argnums=0)``),
or is applied to it by name (``g = numba.jit(f)``, ``njit(cache=True)(f)``,
``jax.jit(f)``: every module-level ``def f`` of the module counts) or to a
lambda (``njit(lambda x: ...)``).  Everything inside its body counts, nested
functions included; decorators and defaults are evaluated outside it.
"""

from __future__ import annotations

import ast
from typing import Iterator

from np2torch.lint.resolve import Ref, Resolution

__all__ = ["COMPILERS", "PARTIAL", "RESOLVED_NAMES", "compiled_regions", "inside", "reason"]

_NUMBA = "numba"
_JAX = "jax"
_TORCH = "torch"
_CUPY = "cupy"

COMPILERS: dict[str, str] = {
    **{
        f"numba.{name}": _NUMBA
        for name in ("jit", "njit", "vectorize", "guvectorize", "cfunc", "stencil", "generated_jit", "jitclass")
    },
    "numba.cuda.jit": _NUMBA,
    "numba.experimental.jitclass": _NUMBA,
    "numba.extending.overload": _NUMBA,  # the implementation it returns (nested) is compiled
    "numba.extending.overload_method": _NUMBA,
    "numba.extending.register_jitable": _NUMBA,
    "jax.jit": _JAX,
    "jax.pmap": _JAX,
    "torch.jit.script": _TORCH,
    "torch.compile": _TORCH,
    "cupy.fuse": _CUPY,
}
"""Qualified name of a compiler -> the family named in the reason."""

PARTIAL = "functools.partial"
RESOLVED_NAMES: frozenset[str] = frozenset(COMPILERS) | {PARTIAL}
"""The qualified names the resolver must find for this module's analysis."""

_REASONS = {
    _NUMBA: "inside a numba-compiled function: np2torch.runtime helpers cannot be compiled by numba",
    _JAX: "inside a JAX-compiled function: np2torch.runtime helpers cannot be traced by jax.jit",
    _TORCH: "inside a torch-compiled function: np2torch.runtime helpers cannot be compiled by TorchScript",
    _CUPY: "inside a cupy.fuse function: np2torch.runtime helpers cannot be fused by CuPy",
}

_Pos = tuple[int, int]
Region = tuple[_Pos, _Pos, str]
"""(start, end, family): a compiled body, positions as ``ast`` gives them (line, byte column)."""

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def reason(family: str) -> str:
    return _REASONS[family]


def compiled_regions(tree: ast.Module, res: Resolution) -> list[Region]:
    """The bodies of the functions (and jitclasses, lambdas) that a compiler takes over."""
    regions: list[Region] = []
    by_name: dict[str, str] = {}
    for ref in res.refs:
        family = COMPILERS.get(ref.qualname)
        if family is None:
            continue
        for target in _targets(ref, res):
            if type(target) is ast.Name:
                by_name.setdefault(target.id, family)
            else:
                regions.append(_body_region(target, family))
    if by_name:
        for stmt in tree.body:
            if isinstance(stmt, _DEFS) and stmt.name in by_name:
                regions.append(_body_region(stmt, by_name[stmt.name]))
    return regions


def inside(node: ast.AST, regions: list[Region]) -> str | None:
    """The family of the compiled region holding ``node``, or None."""
    pos = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    for start, end, family in regions:
        if start <= pos < end:
            return family
    return None


def _targets(ref: Ref, res: Resolution) -> Iterator[ast.AST]:
    """What the compiler named by ``ref`` is applied to: a def, a lambda, or a Name (call form)."""
    node, parent, grand = ref.node, ref.parent, ref.grand
    if _decorates(node, parent):
        yield parent  # type: ignore[misc]
        return
    if type(parent) is not ast.Call:
        return
    call: ast.Call = parent
    if call.func is node:  # jit(f), jit(lambda ...), or jit(options) used as a decorator / called on f
        if call.args and type(call.args[0]) in (ast.Name, ast.Lambda):
            yield call.args[0]
    elif not (call.args and call.args[0] is node and res.qualname(call.func) == PARTIAL):
        return  # passed to something else: not known to compile anything
    if _decorates(call, grand):
        yield grand  # type: ignore[misc]
    elif type(grand) is ast.Call and grand.func is call and grand.args:
        first = grand.args[0]
        if type(first) in (ast.Name, ast.Lambda):
            yield first


def _decorates(node: ast.AST, owner: ast.AST | None) -> bool:
    return isinstance(owner, _DEFS) and any(d is node for d in owner.decorator_list)


def _body_region(target: ast.AST, family: str) -> Region:
    if type(target) is ast.Lambda:
        body = target.body
        return (body.lineno, body.col_offset), (body.end_lineno, body.end_col_offset), family  # type: ignore[return-value]
    first = target.body[0]  # type: ignore[attr-defined]
    end = (target.end_lineno, target.end_col_offset)  # type: ignore[attr-defined]
    return (first.lineno, first.col_offset), end, family
