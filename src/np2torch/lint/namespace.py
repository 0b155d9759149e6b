"""Whether a module lists its own names: then a name a fix binds at module level would become one of them.

``__all__ = [n for n in dir() if not n.startswith("_")]`` (or a filter over
``globals()``, a module ``__dir__``, a registry built from the namespace) turns
every public module-level name into a public name of the module: star-importers
get it.  The fix's runtime import is then bound under a name those filters
exclude, ``_np2t`` (:func:`np2torch.lint.engine._choose_alias`).
"""

from __future__ import annotations

import ast
import re

from np2torch.lint import walk

__all__ = ["LISTING_WORDS", "lists_namespace"]


_GLOBALS_ATTRIBUTES = ("__globals__", "f_globals")
"""A function's globals, a frame's globals: the module's namespace, as ``globals()`` is (and a frame's ``f_locals``
at module level, as ``locals()``; :mod:`np2torch.lint.resolve` counts writes through them)."""
# each word a listing spells, as a whole word (the literal first, so that `re` scans for it quickly)
_NAMESPACE_WORDS = {word: re.compile(rf"{word}(?!\w)(?<!\w{word})")
                    for word in ("globals", "dir", "vars", "locals", "__dict__", "getmembers", *_GLOBALS_ATTRIBUTES, "f_locals")}
LISTING_WORDS: frozenset[str] = frozenset(_NAMESPACE_WORDS)
"""What a listing of the module's names spells in its statement (:func:`lists_namespace` walks those only)."""


def lists_namespace(tree: ast.Module, spelled: str) -> bool:
    """Whether the module lists its own names, where a new module-level name would show: ``globals()``
    anywhere, ``dir()``, ``vars()`` or ``locals()`` at module level (``__all__ = [n for n in dir() if not
    n.startswith("_")]``, a registry built from ``globals().items()``), or its module object's
    (``sys.modules[__name__]``) ``__dict__``, ``dir``, ``vars`` or ``inspect.getmembers``, or a function's
    ``__globals__``, a frame's ``f_globals`` (``sys._getframe().f_globals``), ``f_locals`` at module level.  Looking up one
    name (``globals()["f"]``, ``globals().get("f")``, ``"f" in globals()``) lists nothing."""
    words = [pattern for word, pattern in _NAMESPACE_WORDS.items() if word in spelled]
    # the call or attribute that lists them spells its word: only the statements holding such a line are walked
    for node, parent, module_level in walk.nodes(tree, walk.line_numbers(spelled, words) if words else []):
        if type(node) is ast.Call and _lists(node, module_level) and not _looks_up_one(node, parent):
            return True
        if type(node) is ast.Attribute and (node.attr in _GLOBALS_ATTRIBUTES or (node.attr == "f_locals" and module_level)
                                            or (node.attr == "__dict__" and _is_module_object(node.value))):
            if not _looks_up_one(node, parent):
                return True
    return False


def _lists(call: ast.Call, module_level: bool) -> bool:
    """``call`` returns the module's names: ``globals()``; ``dir()``/``vars()``/``locals()`` at module level;
    ``dir``, ``vars`` or ``getmembers`` of the module object."""
    func, args = call.func, call.args
    name = func.id if type(func) is ast.Name else func.attr if type(func) is ast.Attribute else ""
    if not args and not call.keywords:
        return name == "globals" or (module_level and name in ("dir", "vars", "locals") and type(func) is ast.Name)
    return name in ("dir", "vars", "getmembers") and _is_module_object(args[0])


def _is_module_object(node: ast.expr) -> bool:
    """``sys.modules[__name__]`` (or ``.get(__name__)``)."""
    if type(node) is ast.Subscript:
        key = node.slice
    elif type(node) is ast.Call and type(node.func) is ast.Attribute and node.func.attr == "get" and node.args:
        key, node = node.args[0], node.func
    else:
        return False
    holder = node.value
    return type(key) is ast.Name and key.id == "__name__" and type(holder) is ast.Attribute and holder.attr == "modules"


def _looks_up_one(namespace: ast.expr, parent: ast.AST | None) -> bool:
    """``namespace["f"]``, ``namespace.get("f")``, ``"f" in namespace``: one name looked up, none listed."""
    if type(parent) is ast.Subscript and parent.value is namespace:
        return True
    if type(parent) is ast.Attribute and parent.value is namespace and parent.attr in ("get", "__getitem__",
                                                                                      "__contains__", "setdefault"):
        return True
    return type(parent) is ast.Compare and namespace in parent.comparators and all(
        type(op) in (ast.In, ast.NotIn) for op in parent.ops)
