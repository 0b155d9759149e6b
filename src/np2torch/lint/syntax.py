"""Code written for a newer Python than the one running np2torch.

The analysis parses with :func:`ast.parse`, which reads the running interpreter's
grammar only: under Python 3.11, ``type X = int``, ``def f[T](x: T)`` and
``f"{d["key"]}"`` (all valid 3.12) are syntax errors, as ``match`` (3.10) is under 3.9.  LibCST's native parser
reads them whatever runs it, so when ``ast`` fails, :func:`newer_syntax` asks
LibCST and looks for a construct of a later version: the file is then valid
code this interpreter cannot analyse (reported and skipped), not an error.
A text LibCST cannot parse, or parses without such a construct (``del f()``,
which no Python accepts), stays the syntax error ``ast`` reported.
"""

from __future__ import annotations

import sys

Version = tuple[int, int]


def newer_syntax(text: str) -> Version | None:
    """The Python version the text's syntax needs when it is later than the running one; else ``None``."""
    needed = syntax_version(text)
    return needed if needed is not None and needed > sys.version_info[:2] else None


def syntax_version(text: str) -> Version | None:
    """The latest Python version a construct of the text needs (after 3.9, the oldest np2torch runs on); ``None``
    when it needs none of them or LibCST cannot parse it."""
    try:
        import libcst as cst
    except ImportError:  # pragma: no cover - libcst is a dependency
        return None
    try:
        module = cst.parse_module(text)
    except Exception:  # ParserSyntaxError, or anything the native parser raises on odd input
        return None
    finder = _Finder(module)
    module.visit(finder)
    return finder.needed


def _finder_base() -> type:
    import libcst as cst

    return cst.CSTVisitor


class _Finder(_finder_base()):  # type: ignore[misc]
    """The latest Python version any construct in the module needs (those after 3.9 are looked for)."""

    def __init__(self, module: object) -> None:
        super().__init__()
        self.module = module
        self.needed: Version | None = None

    def _need(self, version: Version) -> None:
        if self.needed is None or version > self.needed:
            self.needed = version

    def visit_Match(self, node: object) -> None:  # PEP 634: `match x:`
        self._need((3, 10))

    def visit_TryStar(self, node: object) -> None:  # PEP 654: `except*`
        self._need((3, 11))

    def visit_TypeAlias(self, node: object) -> None:  # PEP 695: `type X = ...`
        self._need((3, 12))

    def visit_TypeParameters(self, node: object) -> None:  # PEP 695: `def f[T]`, `class C[T]`
        self._need((3, 12))

    def visit_FormattedString(self, node: object) -> None:  # PEP 701: the f-string's own quote (or \) inside
        quote = getattr(node, "end", "")
        parts = list(getattr(node, "parts", ()))
        while parts:  # the fields, and those in their format specs (`f"{x:{"a"}}"`)
            part = parts.pop()
            expression = getattr(part, "expression", None)
            if expression is None:
                continue
            parts.extend(getattr(part, "format_spec", None) or ())
            code = self.module.code_for_node(expression)  # type: ignore[attr-defined]
            # a field spanning lines of a single-quoted f-string is PEP 701's too
            if (quote and quote in code) or "\\" in code or (len(quote) == 1 and "\n" in code):
                self._need((3, 12))


def version_text(version: Version) -> str:
    return f"{version[0]}.{version[1]}"
