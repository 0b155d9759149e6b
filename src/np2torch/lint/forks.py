"""Whether a module imports torch and starts processes that may be forked.

There the runtime changes the program's own torch: a child forked from a
process that imported torch and ``np2torch.runtime`` runs torch on one thread
(:mod:`np2torch.runtime._fork`; docs/runtime.md, "Fork and the program's own
torch use").  ``np2torch fix`` and ``np2torch run`` say so once, on such a
file, rather than leaving it to the docs.  Text in, a few words out: what
starts the processes, or None.
"""

from __future__ import annotations

import ast
from typing import Iterator

NOTICE = ("imports torch and starts processes ({how}): a child it forks runs torch on one thread once "
          "np2torch.runtime is imported (docs/runtime.md, \"Fork and the program's own torch use\")")
"""The notice, with :func:`forks_with_torch`'s answer in ``{how}``."""

_PROCESS_MODULES = ("multiprocessing", "torch.multiprocessing")
_FORKS = ("fork", "forkpty")


def might_fork_with_torch(text: str) -> bool:
    """A test of the text alone: False means :func:`forks_with_torch` is None, without parsing."""
    return "torch" in text and any(word in text for word in ("multiprocessing", "fork", "ProcessPoolExecutor"))


def forks_with_torch(text: str) -> str | None:
    """What starts processes in the module ``text`` (``multiprocessing``, ``os.fork``, ``ProcessPoolExecutor``)
    when it also imports torch; None when it does not do both (or does not parse)."""
    if not might_fork_with_torch(text):
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    imported = set(_imported(tree))
    if not any(name == "torch" or name.startswith("torch.") for name in imported):
        return None
    found = [how for how in _starters(tree, imported) if how]
    return ", ".join(dict.fromkeys(found)) if found else None


def _imported(tree: ast.Module) -> Iterator[str]:
    """Every module the file imports, and ``module.name`` of each name it imports from one."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def _starters(tree: ast.Module, imported: set[str]) -> Iterator[str]:
    for name in sorted(imported):
        if any(name == module or name.startswith(module + ".") for module in _PROCESS_MODULES):
            yield "multiprocessing"
        elif name == "concurrent.futures.ProcessPoolExecutor":
            yield "ProcessPoolExecutor"
        elif name in ("os.fork", "os.forkpty"):
            yield "os.fork"
    if "os" in imported or "concurrent.futures" in imported or "concurrent" in imported:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in _FORKS and _named(node.value, "os"):
                yield "os.fork"
            elif isinstance(node, ast.Attribute) and node.attr == "ProcessPoolExecutor":
                yield "ProcessPoolExecutor"


def _named(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
