"""The engine: ``check_source``, ``fix_source`` and ``fix_and_check`` (both from one analysis), and
``fix_findings`` (some findings only, for an editor's quick fix): text in and text out, no file I/O.

They run the same analysis (:func:`_analyze`): a text prefilter derived from the
rule table, ``ast.parse`` (of the text with the function bodies that cannot hold a
finding replaced by ``pass``, :mod:`np2torch.lint.skim`, where it only reports or
rewrites text), the qualified-name resolver of :mod:`np2torch.lint.resolve`,
and the classification below.  ``fix_source`` then hands exactly the fixable
findings' nodes to LibCST (:mod:`np2torch.lint.rewrite`), so check and fix
cannot disagree about what a finding is.

What a finding is
-----------------
A ``Name`` or ``Attribute`` expression (load context) whose qualified name is a
table name, spanning exactly that expression (``np.exp`` in ``np.exp(x)``): the
span is what the fix replaces.

* the callee of a call: fixable, unless every argument is a numeric constant
  (``np.log(2)``, ``np.exp(-0.5)``, ``np.log(2 * np.pi)``: literals, ``+ - ~``,
  binary operators, the constants in :data:`CONSTANTS`, and calls of table
  functions with such arguments), which is no finding at all;
* a reference that passes the function on (``map(np.exp, xs)``, ``fn=np.log``,
  ``[np.exp, erf]``, a dict value, an assignment): an unsafe fix, applied only
  with ``Settings.unsafe_fixes``: the helper is a different object than the
  ufunc, and wherever the reference flows (``act = np.exp; act is np.exp``,
  ``INV[t]``, ``isinstance(f, np.ufunc)``, ``f.nin``) no static check follows it;
* a reference whose rewrite could change behaviour: reported, not fixable,
  with the reason: compared (``f is np.exp``, ``f in (np.exp, np.log)``, a
  ``match`` value pattern), used as a lookup key (dict key, set member,
  subscript), inspected by a builtin (``isinstance``, ``type``, ``getattr``,
  ...), a method called on it (``np.log.reduce(x)``, ``np.exp.at(...)``), or
  made a class attribute in a class body (``f = np.exp``: the helper binds as
  the original does, but it is a different object wherever the attribute is
  read; not fixed even with ``Settings.unsafe_fixes``);
* reading a plain attribute of the function (``np.exp.__name__``, ``np.exp.nin``)
  does not pass the function on and computes nothing: no finding;
* anything inside a function that numba, JAX, TorchScript/``torch.compile`` or
  ``cupy.fuse`` compiles (:mod:`np2torch.lint.compiled`): reported, not fixable (they
  compile the NumPy call, not a call of a helper);
* a reference whose name may mean something else at run time: a star import after
  the import binding it (:attr:`np2torch.lint.resolve.Ref.rebound_by`) or a write to
  the module's namespace (:func:`np2torch.lint.resolve.namespace_writes`): reported,
  not fixable;
* anything inside a self-documenting f-string field (``f"{np.exp(x)=}"`` prints its
  source text): reported, not fixable;
* a call that can run before the import its name resolves through (a later module-level
  import, a later import in its own function, a ``global`` import in another function;
  :func:`np2torch.lint.placement.before_their_import`): reported, not fixable (the
  original raises NameError there);
* every fixable finding when no line can hold the runtime import
  (:mod:`np2torch.lint.placement`): reported, not fixable, with the reason.

A ``# noqa`` or ``# noqa: NPT001`` comment on the line where a finding starts
suppresses it, for check and fix alike.

Pattern rules (NPT9xx, a row with ``pattern``) find a nesting of calls
(``np.log(np.sum(np.exp(x), axis=k))``, :func:`_pattern_matches`); the finding
spans the whole outer call and its fix replaces that call.  A rule whose
``fix_safety`` is ``unsafe`` is fixable only with ``Settings.unsafe_fixes``.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import io
import re
import sys
import tokenize
import unicodedata
from dataclasses import dataclass, field
from typing import Collection, Iterable, Iterator, Sequence

from np2torch.lint import compiled, nul, placement, skim, walk
from np2torch.lint.model import DEFAULT_SETTINGS, Finding, FixError, FixResult, Lines, Planned, Settings, SourceError
from np2torch.lint.namespace import LISTING_WORDS, lists_namespace
from np2torch.lint.resolve import WRITE_WORDS, NamespaceWrites, Ref, Resolution, bound_names, namespace_writes, resolve
from np2torch.lint.rules import DIFFERENCE, RATIO, RULES, RULES_BY_CODE, Rule
from np2torch.lint.suppress import NOQA, file_rules, in_runtime_module, no_fix_reason, noqa_codes, remove_noqa_codes

__all__ = [
    "CONSTANTS",
    "Finding",
    "FixError",
    "FixResult",
    "Settings",
    "NewerSyntaxError",
    "SourceError",
    "check_source",
    "fix_and_check",
    "EachFix",
    "fix_findings",
    "fix_source",
    "may_contain",
    "skimmed_text",
]

CONSTANTS: frozenset[str] = frozenset(
    {
        "numpy.pi",
        "numpy.e",
        "numpy.euler_gamma",
        "numpy.inf",
        "numpy.nan",
        "math.pi",
        "math.e",
        "math.tau",
        "math.inf",
        "math.nan",
    }
)
"""Qualified names of numeric constants: a call whose arguments are built only from
these and literals is scalar math, not a finding."""

_FUNCTION_TARGETS: frozenset[str] = frozenset(rule.qualname for rule in RULES if rule.is_function)
# Pattern rules (NPT9xx) also need the names of their inner calls resolved (`numpy.sum`).
_ALL_TARGETS: frozenset[str] = _FUNCTION_TARGETS | frozenset(name for rule in RULES for name in rule.pattern)
_KNOWN: frozenset[str] = _ALL_TARGETS | CONSTANTS
# Every finding starts from a reference to a function rule's name or a pattern's first name (its outer call, or
# the name a ratio or difference starts from): the statements spelling those are all the resolver needs to walk
# (a pattern's inner calls and a call's constant arguments are in the same statement).
_FOCUS: frozenset[str] = _FUNCTION_TARGETS | frozenset(rule.pattern[0] for rule in RULES if rule.pattern)

# Builtins whose argument is the function object itself, not something it computes.
_INSPECTORS = frozenset(
    {"isinstance", "issubclass", "type", "id", "hash", "getattr", "hasattr", "setattr", "delattr", "vars", "dir"}
)

REASON_COMPARED = "it is compared (identity or equality); the helper is a different object"
REASON_KEY = "it is used as a lookup key (dict key, set member or subscript); the helper is a different object"
REASON_INSPECTED = "the function object itself is inspected; the helper is a different object"
REASON_UNSAFE = "unsafe fix (it changes rounding): applied only with --unsafe-fixes"
REASON_REFERENCE = (
    "unsafe fix (it passes the function on, and the helper is not the ufunc: `is`, dict keys, "
    "`isinstance(f, np.ufunc)`, `.nin` change where it flows): applied only with --unsafe-fixes"
)
REASON_CLASS_ATTRIBUTE = (
    "it becomes a class attribute, read through instances and subclasses, where the helper is a different object "
    "than the original (`is`, `isinstance(f, np.ufunc)`, `.nin`, `.reduce`); it binds as the original does"
)
REASON_NO_IMPORT_PLACE = (
    "no line can hold the runtime import: it must run before the first statement that can run a rewritten "
    "call, and after the set-up code before the module's NumPy/SciPy import (sys.path, os.environ)"
)
REASON_STAR_AFTER_IMPORT = (
    "a star import runs after the runtime import would and may rebind its alias (a module's names are known "
    "only at run time)"
)
_NO_PLACE_REASONS = {placement.NO_PLACE: REASON_NO_IMPORT_PLACE, placement.STAR_AFTER: REASON_STAR_AFTER_IMPORT}
REASON_BEFORE_ITS_IMPORT = (
    "it can run before the import that binds its name has run (a later module-level import, a later import "
    "in its own function, a `global` import in another function): the original raises NameError there, the "
    "rewritten call would not"
)
REASON_SELF_DOCUMENTING = (
    "it is inside a self-documenting f-string field (`f\"{expr=}\"`), which prints the expression's source "
    "text: the rewrite would change the output"
)


def _reason_method(attr: str) -> str:
    return f"`.{attr}` is called on it; the helper is a plain function, not a NumPy ufunc"


def _reason_rebound(by: str) -> str:
    return f"its name may be rebound at run time by {by}, and the fix would call NumPy's/SciPy's function instead"


# --------------------------------------------------------------------------- prefilter


def may_contain(text: str, rules: Sequence[Rule]) -> bool:
    """False only when no rule can match: a finding needs its module's root and its name spelled, the name
    where a reference to it can stand.

    Every way to reach ``numpy.exp`` spells ``numpy`` (in an import) and ``exp``
    (as an imported or attribute name), each as a whole identifier: a name a
    ``from numpy...`` import binds (``from numpy import exp``; a star import from
    ``numpy`` is read as spelling the names it provides), or an attribute after a
    dot (``np.exp``, ``numpy . exp``) of a name that can mean the module holding it
    (:func:`_owner_may_hold`).  A line that starts with ``>>>`` (a doctest's, inside a
    string) or with ``...`` then a name (a doctest's continuation) is never code.
    The parser NFKC-normalises non-ASCII identifiers (``ｅｘｐ`` is ``exp``), so
    non-ASCII text is normalised before looking.  A text with a NUL may: a NUL in code is a finding
    (:mod:`np2torch.lint.nul`).
    """
    return "\0" in text or _may_contain(text, rules, _may_match(text, rules))


def _may_contain(text: str, rules: Sequence[Rule], matching: Iterable[Rule]) -> bool:
    """:func:`may_contain`, given the rules that may match (:func:`_may_match`, asked only as far as needed)."""
    if any(rule.is_meta for rule in rules) and "noqa" in text.lower():
        return True  # NPT801 judges the file's noqa comments, whatever it calls
    return next(iter(matching), None) is not None


def _may_match(text: str, rules: Sequence[Rule]) -> Iterator[Rule]:
    """The rules of ``rules`` (NPT801 aside) that may match in ``text``, as :func:`may_contain` decides."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    imports_from: dict[str, bool] = {}  # root -> whether a `from <root>...` import is spelled
    aliases: frozenset[str] | None = None
    for rule, root, name, owners, root_word, name_word, from_root in _prefilter_patterns(tuple(rules)):
        if root in text and name in text and root_word.search(text) and name_word.search(text):
            if root not in imports_from:
                imports_from[root] = any(not _in_doctest(text, m.start()) for m in from_root.finditer(text))
            if imports_from[root]:
                yield rule
                continue
            if aliases is None:
                aliases = frozenset(_ALIAS.findall(text))
            if _after_a_dot(text, name_word, owners | aliases):
                yield rule


# what `import numpy as np`, `from scipy import special as sp` bind (any `as` clause: a superset), past line
# continuations and the comments a parenthesised import may hold
_ALIAS = re.compile(r"as(?<![\w.]as)(?:[ \t\f\r\n\\]|#[^\r\n]*)+(\w+)")
# a line that is never code: a doctest's (`>>> np.exp(1)`: `>>` then `>` follow no operand), or its continuation
# (`...` then a name: Ellipsis followed by a name is no expression, unless the name is a keyword that can follow
# one: `... if c else x`)
_DOCTEST = re.compile(r"[ \t\f]*(?:>>>|\.\.\.[ \t\f]+(?!(?:if|else|and|or|not|in|is|for|async|as)(?!\w))\w)")


def _in_doctest(text: str, pos: int) -> bool:
    """Whether the line holding ``pos`` is a doctest's line (see :data:`_DOCTEST`), never code."""
    start = max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1
    return _DOCTEST.match(text, start, pos) is not None


def _after_a_dot(text: str, word: re.Pattern[str], owners: frozenset[str]) -> bool:
    """A name (``word``: its pattern) spelled as an attribute of one of ``owners`` (what can hold it): after a
    dot and whitespace (line continuations included); a line ending in a comment before it counts too
    (``(np.  # why\n exp)``)."""
    for match in word.finditer(text):
        if _in_doctest(text, match.start()):
            continue
        i = match.start() - 1
        while i >= 0 and text[i] in " \t\f\r\n\\":
            i -= 1
        if i >= 0 and text[i] == "." and _owner_may_hold(text, i, owners):
            return True
        skipped = text[i + 1:match.start()]
        if i >= 0 and ("\n" in skipped or "\r" in skipped):
            line_start = max(text.rfind("\n", 0, i), text.rfind("\r", 0, i)) + 1
            if "#" in text[line_start:i + 1]:
                return True  # maybe a comment between the dot and the name: look no further
    return False


def _owner_may_hold(text: str, dot: int, owners: frozenset[str]) -> bool:
    """Whether what stands before the dot at ``dot`` can be a name the resolver reads as the module holding
    the attribute: one of ``owners`` (the root, a module on the way, any alias), a parenthesised name
    (``(np).exp``), a name on a line before that may end in a comment, or any name that is not ASCII."""
    i = dot - 1
    while i >= 0 and text[i] in " \t\f\r\n\\":
        if text[i] in "\r\n":
            line_start = max(text.rfind("\n", 0, i), text.rfind("\r", 0, i)) + 1
            if "#" in text[line_start:i]:
                return True  # maybe a comment between the name and the dot
        i -= 1
    if i < 0:
        return False
    if text[i] == ")":
        return True
    end = i + 1
    while i >= 0 and (text[i].isalnum() or text[i] == "_" or not text[i].isascii()):
        i -= 1
    owner = text[i + 1:end]
    return owner in owners or not owner.isascii()


@functools.lru_cache(maxsize=64)
def _prefilter_patterns(
    rules: tuple[Rule, ...],
) -> list[tuple[Rule, str, str, frozenset[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]]:
    patterns = []
    for rule in rules:
        if rule.is_meta:
            continue
        root, name = rule.qualname.partition(".")[0], rule.qualname.rpartition(".")[2]
        owners = frozenset(rule.qualname.split(".")[:-1])  # `numpy`; `scipy`, `special` (`import scipy.special`)
        from_root = re.compile(rf"from(?<!\wfrom)[\s\\]+{re.escape(root)}(?!\w)")  # `from` first: scanned quickly
        patterns.append((rule, root, name, owners, _whole_word(root), _whole_word(name), from_root))
    return patterns


def _whole_word(word: str) -> re.Pattern[str]:
    # The literal comes first so that `re` scans for it quickly; the lookarounds
    # then reject it inside a longer identifier (`expm1`, `np_exp`).
    escaped = re.escape(word)
    return re.compile(rf"{escaped}(?!\w)(?<!\w{escaped})")


# --------------------------------------------------------------------------- positions


# --------------------------------------------------------------------------- noqa


class _Noqa:
    def __init__(self, text: str, lines: Lines) -> None:
        self._text = text
        self._lines = lines
        self._comments: dict[int, str] | None = None
        self._columns: dict[int, int] = {}
        self._tokenized = False
        self.used: set[tuple[int, str]] = set()
        """The ``(line, code)`` pairs a line's noqa suppressed (what NPT801 judges the codes by)."""
        self.ignored = False
        """``--ignore-noqa``: no comment suppresses anything."""

    def suppresses(self, line: int, code: str) -> bool:
        if self.ignored:
            return False
        source_line = self._lines[line]
        if "#" not in source_line or not NOQA.search(source_line):
            return False
        comment = self._comment(line, source_line)
        for match in NOQA.finditer(comment):
            codes = match.group("codes")
            if codes is None or code.upper() in {c.upper() for c in noqa_codes(codes)}:
                self.used.add((line, code.upper()))
                return True
        return False

    def comments(self) -> dict[int, tuple[int, str]]:
        """Each line's comment and its column (0-based, in characters); empty when the text does not tokenize."""
        self._comment(1, "")
        return {line: (self._columns[line], text) for line, text in (self._comments or {}).items()}

    def _comment(self, line: int, fallback: str) -> str:
        """The comment on ``line`` (a ``# noqa`` inside a string does not count)."""
        if not self._tokenized:
            self._tokenized = True
            try:
                comments: dict[int, str] = {}
                for tok in tokenize.generate_tokens(io.StringIO(self._text).readline):
                    if tok.type == tokenize.COMMENT:
                        comments[tok.start[0]] = tok.string
                        self._columns[tok.start[0]] = tok.start[1]
                self._comments = comments
            except (tokenize.TokenError, SyntaxError):
                self._comments = None
        if self._comments is None:
            return fallback
        return self._comments.get(line, "")


_CODE = re.compile(r"[A-Za-z]+[0-9]+")


def _unused_noqa(noqa: _Noqa, rule: Rule, selected: set[str], path: str) -> list[Finding]:
    """NPT801: each ``NPT`` code of a line's ``# noqa: ...`` that suppressed nothing there, when its rule ran
    (or no rule has that code).  Other tools' codes and a bare ``# noqa`` are theirs to judge."""
    findings = []
    for line, (column, comment) in sorted(noqa.comments().items()):
        for match in NOQA.finditer(comment):
            if match.group("codes") is None:
                continue
            for code in _CODE.finditer(match.group("codes")):
                name = code.group().upper()
                if not name.startswith("NPT") or (line, name) in noqa.used:
                    continue
                if name in RULES_BY_CODE and name not in selected:
                    continue  # its rule did not run: nothing to judge it by
                start = column + match.start("codes") + code.start()
                if noqa.suppresses(line, rule.code):
                    continue
                findings.append(Finding(path=path, line=line, column=start + 1, end_line=line,
                                        end_column=start + len(name) + 1, code=rule.code, message=rule.message(),
                                        fixable=True, fix_title=rule.fix_title("")))
    return findings


# --------------------------------------------------------------------------- classification


def _is_inspector(func: ast.expr) -> bool:
    return type(func) is ast.Name and func.id in _INSPECTORS


def _is_constant(expr: ast.expr, res: Resolution) -> bool:
    """A numeric constant expression; iterative because operator chains can nest deeply."""
    stack: list[ast.expr] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Constant):
            if type(node.value) not in (int, float, complex):
                return False
        elif isinstance(node, ast.UnaryOp):
            if type(node.op) not in (ast.USub, ast.UAdd, ast.Invert):
                return False
            stack.append(node.operand)
        elif isinstance(node, ast.BinOp):
            stack.append(node.left)
            stack.append(node.right)
        elif isinstance(node, (ast.Name, ast.Attribute)):
            if res.qualname(node) not in CONSTANTS:
                return False
        elif isinstance(node, ast.Call):
            if res.qualname(node.func) not in _FUNCTION_TARGETS:
                return False
            stack.extend(node.args)
            stack.extend(k.value for k in node.keywords)
        else:
            return False
    return True


def _classify(ref: Ref, res: Resolution) -> tuple[bool, str | None] | None:
    """None: no finding; else (fixable, reason when not fixable).

    Only a callee is a safe fix.  A reference that passes the function on is
    :data:`REASON_REFERENCE`, fixable with ``--unsafe-fixes``: where it flows no
    static check follows it (``t = np.exp; t is np.exp``, ``INV[t]``).
    """
    node, parent, grand = ref.node, ref.parent, ref.grand
    if isinstance(parent, ast.Call):
        if parent.func is node:
            args = [*parent.args, *(k.value for k in parent.keywords)]
            if all(_is_constant(a, res) for a in args):
                return None
            return True, None
        if _is_inspector(parent.func):
            return False, REASON_INSPECTED
        return False, REASON_REFERENCE
    if isinstance(parent, ast.keyword):
        if isinstance(grand, ast.Call) and _is_inspector(grand.func):
            return False, REASON_INSPECTED
        return False, REASON_REFERENCE
    if isinstance(parent, ast.Attribute):  # the function is the value of an attribute access
        if isinstance(grand, ast.Call) and grand.func is parent:
            return False, _reason_method(parent.attr)
        return None
    if isinstance(parent, ast.Compare) or (isinstance(parent, (ast.Tuple, ast.List, ast.Set))
                                           and isinstance(grand, ast.Compare)):
        return False, REASON_COMPARED
    if sys.version_info >= (3, 10) and isinstance(parent, ast.MatchValue):
        return False, REASON_COMPARED
    if isinstance(parent, ast.Set):
        return False, REASON_KEY
    if isinstance(parent, ast.Dict) and any(key is node for key in parent.keys):
        return False, REASON_KEY
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return False, REASON_KEY
    if ref.in_class and _becomes_class_attribute(node, parent, grand):
        return False, REASON_CLASS_ATTRIBUTE
    return False, REASON_REFERENCE


def _becomes_class_attribute(node: ast.expr, parent: ast.AST | None, grand: ast.AST | None) -> bool:
    """In a class body: ``f = np.exp``, ``f: Any = np.exp``, ``f = np.exp if c else g``, ``f, g = np.exp, g``."""
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
        return parent.value is node
    if isinstance(parent, ast.IfExp) and node is not parent.test:
        return isinstance(grand, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and grand.value is parent
    if isinstance(parent, (ast.Tuple, ast.List)) and isinstance(grand, ast.Assign) and grand.value is parent:
        return any(isinstance(target, (ast.Tuple, ast.List)) for target in grand.targets)
    return False


# --------------------------------------------------------------------------- analysis


@dataclass
class _Analysis:
    text: str
    """The text analysed: the source without its BOM, its NULs replaced (:mod:`np2torch.lint.nul`)."""
    bom: str
    masked: nul.Masked = nul.Masked("")
    """What puts the NULs back into a text made from :attr:`text`."""
    tree: ast.Module | None = None
    skimmed: bool = False
    """The tree is the parse of the skimmed text (:func:`_skimmed_parse`), not of the whole."""
    resolution: Resolution | None = None
    findings: list[Finding] = field(default_factory=list)
    fixes: list[Planned] = field(default_factory=list)
    alias: str | None = None
    place: placement.ImportPlace | None = None
    """Where the runtime import goes (np2torch.lint.placement), when there is something to fix."""
    noqa_fixes: list[Finding] = field(default_factory=list)
    """The fixable NPT801 findings: a code each, to remove from its line's ``# noqa: ...``."""
    comments: dict[int, tuple[int, str]] = field(default_factory=dict)
    """Each line's comment and its column, when NPT801 ran (what its fixes edit)."""


class NewerSyntaxError(SourceError):
    """Valid code for a newer Python than the one running: this interpreter's ``ast`` cannot read it."""

    def __init__(self, needed: tuple[int, int]) -> None:
        super().__init__(f"needs Python >= {needed[0]}.{needed[1]} to analyse; skipped")
        self.needed = needed


def _parse(text: str, masked: nul.Masked = nul.Masked("")) -> ast.Module:
    """The parse of ``text`` (``masked``'s text, when it had a NUL: :mod:`np2torch.lint.nul`)."""
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        in_code = masked.error(exc)
        if in_code is not None:
            raise in_code from None
        from np2torch.lint.syntax import newer_syntax  # LibCST's parser reads every version's grammar

        needed = newer_syntax(text)
        if needed is not None:
            raise NewerSyntaxError(needed) from None
        kind = type(exc).__name__
        raise SourceError(f"{kind}: {exc.msg}", exc.lineno, exc.offset) from None
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes; absurd nesting
        raise SourceError(f"cannot parse: {exc}") from None


def _skim(text: str, settings: Settings, matching: Sequence[Rule]) -> skim.Skim | None:
    """``text`` with the function bodies that cannot hold a finding replaced by ``pass`` (:mod:`np2torch.lint.skim`),
    or None where functions other modules compile are known (they are followed through every scope).  A
    body is parsed where it spells one of :func:`_kept_words`, what placement reads in bodies
    (:func:`np2torch.lint.placement.function_body_words`), or the runtime's alias (the names bound anywhere
    decide whether the alias is free); where a compiler may be reached (:func:`np2torch.lint.compiled.may_compile`),
    also where it spells a compiler's package anywhere (every way to one starts there: :func:`_skimmed_parse`)."""
    if settings.compiled_elsewhere:
        return None
    placed = placement.function_body_words(text)
    words = _kept_words(tuple(matching))
    packages = compiled.PACKAGE_ROOTS if compiled.may_compile(text) else frozenset()
    return skim.skim(text, words | _aliases_of(text, words) | placed, {settings.alias, *packages})


def _aliases_of(text: str, words: frozenset[str]) -> frozenset[str]:
    """The names ``<word> as <name>`` binds for any of ``words`` (``from scipy.special import digamma as psi``:
    a reference to ``scipy.special.digamma`` is spelled ``psi``); a superset where a comment may stand between
    the word and ``as``."""
    found = set()
    for match in _ALIAS.finditer(text):
        i = match.start() - 1
        while i >= 0 and text[i] in " \t\f\r\n\\":
            if text[i] in "\r\n":
                line_start = max(text.rfind("\n", 0, i), text.rfind("\r", 0, i)) + 1
                if "#" in text[line_start:i]:
                    found.add(_nfkc(match.group(1)))  # maybe a comment between the word and `as`
                    break
            i -= 1
        end = i + 1
        while i >= 0 and (text[i].isalnum() or text[i] == "_"):
            i -= 1
        word = text[i + 1:end]
        if _nfkc(word) in words:
            found.add(_nfkc(match.group(1)))  # `as ｅ` binds `e`, as the parser reads it
    return frozenset(found)


def _nfkc(name: str) -> str:
    """A name as the parser reads it."""
    return name if name.isascii() else unicodedata.normalize("NFKC", name)


@functools.lru_cache(maxsize=64)
def _kept_words(rules: tuple[Rule, ...]) -> frozenset[str]:
    """What a function body that can matter spells in its code: the name every finding of ``rules`` (those
    that may match in the text: :func:`_may_match`) starts from (a function rule's, a pattern's first
    call's: the resolver's focus), a namespace write or listing (``globals()``, ``exec``,
    ``sys.modules[__name__]``: in any scope they reach the module's names), ``global`` and ``nonlocal`` (a
    body binding a name of another scope)."""
    names = {rule.qualname.rpartition(".")[2] for rule in rules if rule.is_function}
    names.update(rule.pattern[0].rpartition(".")[2] for rule in rules if rule.pattern)
    return frozenset(names) | WRITE_WORDS | LISTING_WORDS | {"global", "nonlocal"}


def _skimmed_parse(text: str, settings: Settings, matching: Sequence[Rule]) -> tuple[ast.Module, str] | None:
    """The parse of the skimmed text (:func:`_skim`; ``matching``: the rules that may match in it) and that
    text, when it parses and is what the skim expected; else None (the whole text is parsed, and its syntax
    errors reported as ever)."""
    skimmed = _skim(text, settings, matching)
    if skimmed is None:
        return None
    try:
        tree = ast.parse(skimmed.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not skimmed.fits(tree):
        return None
    if compiled.may_compile(text):
        # the compiled regions follow a compiler through every scope: only where no way to one starts (in
        # the bodies kept: each spells its package) do they find nothing, in the whole module as in this tree
        imports = [node for node in walk.every(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
        if compiled.starts_a_compiler(tree, text, imports):
            return None
    return tree, skimmed.text


def skimmed_text(source: str, settings: Settings | None = None) -> str | None:
    """The text that :func:`check_source` parses in place of ``source`` (function bodies that cannot hold a
    finding replaced by ``pass``; :mod:`np2torch.lint.skim`), or None when it parses the whole text (or
    nothing: the prefilter).  A syntax error only in a replaced body goes unreported, as one in a text the
    prefilter skips."""
    settings = settings or DEFAULT_SETTINGS
    text = source[1:] if source.startswith("\ufeff") else source
    matching = tuple(_may_match(text, settings.rules))
    parsed = _skimmed_parse(text, settings, matching) if _may_contain(text, settings.rules, matching) else None
    return None if parsed is None else parsed[1]


def _analyze(source: str, path: str, settings: Settings, *, prefilter: bool = True,
             only: Collection[tuple[int, int, str]] | None = None, import_line: bool = True,
             skimmed: bool = False) -> _Analysis:
    """The analysis both check and fix run, as a pipeline: which rules can match (the text prefilter), the
    parse, the names resolved, each reference's verdict (:func:`_verdicts`, with what the whole module says
    about it: :class:`_Module`), the verdicts narrowed by ``only`` and by where the file is, where the runtime
    import goes (:func:`_place`), then the findings and the fixes (:func:`_record`) and NPT801's.

    ``import_line``: the fix binds the runtime to an alias with an import line (a text fix), which needs a
    place (np2torch.lint.placement); ``np2torch run``'s rewrite binds nothing and needs none.

    ``skimmed``: parse the text with the function bodies that cannot hold a finding replaced by ``pass``
    (:func:`_skimmed_parse`): the findings are the same, the tree is not the whole module's (for what only
    reports findings or rewrites text, never for ``np2torch run``, which executes the tree)."""
    bom = "\ufeff" if source.startswith("\ufeff") else ""
    masked = nul.mask(source[len(bom) :])
    if masked.stand_in is not None:  # a NUL in code is ruff's finding whatever the file calls: parsed whole
        prefilter = skimmed = False
    text = masked.text
    analysis = _Analysis(text=text, bom=bom, masked=masked)
    # the rules that may match: all of them where the skim needs them, else as far as the prefilter asks
    matching: Iterable[Rule] = ()
    if settings.rules:
        matching = tuple(_may_match(text, settings.rules)) if skimmed else _may_match(text, settings.rules)
    if not settings.rules or (prefilter and not _may_contain(text, settings.rules, matching)):
        return analysis
    rules = file_rules(text, settings.rules)  # np2torch's own files, `# np2torch: noqa` (np2torch.lint.suppress)
    if not rules:
        return analysis
    parsed = _skimmed_parse(text, settings, tuple(matching)) if skimmed else None
    analysis.skimmed = parsed is not None
    tree = analysis.tree = parsed[0] if parsed is not None else _parse(text, masked)
    # the resolver reads the lines that spell a candidate: the skimmed text's (the same lines, the replaced
    # bodies blank) where the tree is its parse
    res = analysis.resolution = resolve(tree, _KNOWN, parsed[1] if parsed is not None else text, focus=_FOCUS)
    lines = Lines(text)
    module = _Module(tree, text, lines, res, settings, analysis.skimmed)
    noqa = _Noqa(text, lines)
    noqa.ignored = settings.ignore_noqa
    verdicts = _verdicts(res, rules, settings, module, noqa)
    if only is not None:
        verdicts = [v if not v.fixable or _key(v.ref.node, v.rule.code, lines) in only
                    else v.unfixable(REASON_LEFT_OUT) for v in verdicts]
    if settings.unfixable:
        verdicts = [v.unfixable(REASON_UNFIXABLE) if v.fixable and v.rule.code in settings.unfixable else v
                    for v in verdicts]
    if any(v.fixable for v in verdicts) and in_runtime_module(path, settings.runtime_module):
        itself = no_fix_reason(settings.runtime_module)  # the fix would make the runtime import itself
        verdicts = [v.unfixable(itself) if v.fixable else v for v in verdicts]
    verdicts = _place(analysis, verdicts, settings, module, import_line)
    _record(analysis, verdicts, path, settings, lines)
    meta = None if settings.ignore_noqa else next((rule for rule in rules if rule.is_meta), None)
    if meta is not None:
        _judge_noqa(analysis, noqa, meta, settings, rules, path, only)
    analysis.findings.sort(key=lambda f: (f.line, f.column, f.code))
    return analysis


@dataclass(frozen=True)
class _Verdict:
    """What a reference (or a pattern's whole expression) is: a finding of ``rule``, fixable or not (why)."""

    ref: Ref
    rule: Rule
    fixable: bool
    reason: str | None

    def unfixable(self, reason: str) -> _Verdict:
        return _Verdict(self.ref, self.rule, False, reason)


class _Module:
    """What the whole module says about a reference, each part computed only where it can matter (there are
    references at all, and the text spells what the part looks for): the compiled regions
    (:mod:`np2torch.lint.compiled`), the self-documenting f-string fields, the namespace writes
    (:func:`np2torch.lint.resolve.namespace_writes`); and the layout placement reads, made when asked."""

    def __init__(self, tree: ast.Module, text: str, lines: Lines, res: Resolution, settings: Settings,
                 skimmed: bool = False) -> None:
        self.tree, self.text, self.lines, self.skimmed = tree, text, lines, skimmed
        self.regions = compiled.compiled_regions(tree, text, res.imports) if res.refs else []
        if res.refs and settings.compiled_elsewhere:  # compiled by other modules of the project (lint.project)
            self.regions += compiled.compiled_elsewhere(tree, settings.compiled_elsewhere)
        self.printed = _self_documenting_fields(tree, text, lines) if res.refs else []
        self.writes = namespace_writes(tree, text) if res.refs else None
        self._layout: placement.Layout | None = None

    @property
    def layout(self) -> placement.Layout:
        if self._layout is None:
            # a skimmed tree (function bodies as `pass`): the whole one, if placement needs what bodies bind
            whole = functools.partial(_parse, self.text) if self.skimmed else None
            self._layout = placement.Layout(self.tree, self.lines, whole)
        return self._layout

    def judge(self, ref: Ref, verdict: tuple[bool, str | None]) -> tuple[bool, str | None]:
        """``verdict``, unless the reference is printed, may be rebound or is compiled (no fix then)."""
        return _unless_compiled(ref, self.regions, _unless_printed_or_rebound(ref, verdict, self.printed, self.writes))


def _verdicts(res: Resolution, rules: Sequence[Rule], settings: Settings, module: _Module,
              noqa: _Noqa) -> list[_Verdict]:
    """Each reference's verdict for the function rules, then each pattern rule's matches; none for what a
    ``# noqa`` suppresses."""
    found = []
    enabled = {rule.qualname: rule for rule in rules if rule.is_function}
    for ref in res.refs:
        rule = enabled.get(ref.qualname)
        if rule is None:
            continue
        verdict = _classify(ref, res)
        if verdict is None or noqa.suppresses(ref.node.lineno, rule.code):
            continue
        verdict = _unless_printed_or_rebound(ref, verdict, module.printed, module.writes)
        if verdict[1] is REASON_REFERENCE and settings.unsafe_fixes:
            verdict = (True, None)
        found.append(_Verdict(ref, rule, *_unless_compiled(ref, module.regions, verdict)))
    for rule in rules:
        if rule.is_pattern:
            for ref in _pattern_matches(rule, res):
                if not noqa.suppresses(ref.node.lineno, rule.code):
                    unsafe = rule.fix_safety == "unsafe" and not settings.unsafe_fixes
                    found.append(_Verdict(ref, rule, *module.judge(ref, (not unsafe, REASON_UNSAFE if unsafe else None))))
    return found


def _place(analysis: _Analysis, verdicts: list[_Verdict], settings: Settings, module: _Module,
           import_line: bool) -> list[_Verdict]:
    """The alias and (``import_line``) where the runtime import goes (:mod:`np2torch.lint.placement`); a fix
    that can run before its own import, or that no place serves, is none."""
    if import_line and any(v.fixable for v in verdicts):
        early = placement.before_their_import(module.layout, [v.ref for v in verdicts if v.fixable])
        verdicts = [v.unfixable(REASON_BEFORE_ITS_IMPORT) if v.fixable and v.ref in early else v for v in verdicts]
    if any(v.fixable for v in verdicts):
        analysis.alias = _choose_alias(module.tree, module.text, settings, module.writes)
    if import_line and analysis.alias is not None:
        refs = [v.ref for v in verdicts if v.fixable]
        place = placement.import_place(module.layout, refs, settings.runtime_module, analysis.alias,
                                       settings.import_order)
        if isinstance(place, str):  # nowhere: no fix at all
            return [v.unfixable(_NO_PLACE_REASONS[place]) if v.fixable else v for v in verdicts]
        analysis.place = place
    return verdicts


def _record(analysis: _Analysis, verdicts: list[_Verdict], path: str, settings: Settings, lines: Lines) -> None:
    """The findings (positions in characters, 1-based) and the fixable ones' plans."""
    for verdict in verdicts:
        node, rule, fixable = verdict.ref.node, verdict.rule, verdict.fixable
        end_line = node.end_lineno or node.lineno
        finding = Finding(
            path=path,
            line=node.lineno,
            column=lines.char_col(node.lineno, node.col_offset) + 1,
            end_line=end_line,
            end_column=lines.char_col(end_line, node.end_col_offset or 0) + 1,
            code=rule.code,
            message=rule.message(settings.runtime_module),
            fixable=fixable,
            fix_title=rule.fix_title(analysis.alias) if fixable and analysis.alias else None,
            reason=verdict.reason,
        )
        analysis.findings.append(finding)
        if fixable:
            analysis.fixes.append(Planned(finding, verdict.ref, rule))


def _judge_noqa(analysis: _Analysis, noqa: _Noqa, meta: Rule, settings: Settings, rules: Sequence[Rule],
                path: str, only: Collection[tuple[int, int, str]] | None) -> None:
    """NPT801's findings (:func:`_unused_noqa`), and the comments its fixes edit."""
    unused = _unused_noqa(noqa, meta, {rule.code for rule in rules}, path)
    if meta.code in settings.unfixable:
        unused = [dataclasses.replace(f, fixable=False, fix_title=None, reason=REASON_UNFIXABLE) for f in unused]
    if only is not None:
        unused = [dataclasses.replace(f, fixable=False, fix_title=None, reason=REASON_NOT_A_SITE) for f in unused]
    analysis.findings.extend(unused)
    analysis.noqa_fixes = [f for f in unused if f.fixable]
    analysis.comments = noqa.comments()


def _unless_printed_or_rebound(
    ref: Ref, verdict: tuple[bool, str | None], printed: list[_Span], writes: NamespaceWrites | None
) -> tuple[bool, str | None]:
    """No fix inside a self-documenting f-string field, nor for a name something may rebind at run time."""
    if not verdict[0] and verdict[1] not in (REASON_REFERENCE, REASON_UNSAFE):
        return verdict  # unfixable anyway: keep the reason that applies everywhere
    if printed and _inside(ref.node, printed):
        return False, REASON_SELF_DOCUMENTING
    by = ref.rebound_by or (writes.rebinding(_root_name(ref.node)) if writes else None)
    return verdict if by is None else (False, _reason_rebound(by))


def _root_name(node: ast.expr) -> str:
    """The name a reference starts from: ``np`` in ``np.exp``, in the call ``np.log(...)``, and in the
    expressions a ratio or difference pattern spans (their call: the division's left, the subtraction's
    right); "" for anything else."""
    while not isinstance(node, ast.Name):
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.BinOp):
            node = node.left if isinstance(node.op, ast.Div) else node.right
        else:
            return ""
    return node.id


REASON_LEFT_OUT = "left out by --from-run: the run measured no saving here"
REASON_UNFIXABLE = "the settings make this rule unfixable (`unfixable`, `fixable`)"
REASON_NOT_A_SITE = "left out by --from-run: it rewrites the run's call sites only"


def _key(node: ast.expr, code: str, lines: Lines) -> tuple[int, int, str]:
    """A finding's ``(line, column, code)`` as :class:`Finding` places it (1-based character column)."""
    return node.lineno, lines.char_col(node.lineno, node.col_offset) + 1, code


def _unless_compiled(
    ref: Ref, regions: list[compiled.Region], verdict: tuple[bool, str | None]
) -> tuple[bool, str | None]:
    """No fix inside a function numba/JAX/torch/CuPy compiles: they cannot compile the helpers."""
    if not verdict[0] and verdict[1] not in (REASON_REFERENCE, REASON_UNSAFE):
        return verdict  # unfixable whatever the compiler: keep the reason that applies everywhere
    family = compiled.inside(ref.node, regions) if regions else None
    return verdict if family is None else (False, compiled.reason(family))


# --------------------------------------------------------------------------- self-documenting f-strings


_Span = tuple[tuple[int, int], tuple[int, int]]
# `=` then the end of the field (`}`), its conversion (`!r`) or its format spec (`:`): a self-documenting field
_DEBUG_SPECIFIER = re.compile(r"=[ \t\r\n\f]*[}!:]")
# what the start of an f-string spells (`rf'` and `F"""` spell `f'` and `F"`): only they have fields
_F_STRING = tuple(prefix + quote for prefix in ("f", "F", "fr", "fR", "Fr", "FR") for quote in "\"'")


def _self_documenting_fields(tree: ast.Module, text: str, lines: Lines) -> list[_Span]:
    """The expressions of the ``f"{expr=}"`` fields: Python prints their source text, so no fix may touch them.

    ``ast`` keeps no trace of the ``=`` (the text becomes a constant before the value); the source
    does: after the expression, only whitespace and then ``=``.
    """
    if not any(start in text for start in _F_STRING):
        return []
    spans = []
    for node, _parent, _module_level in walk.nodes(tree, walk.line_numbers(text, [_DEBUG_SPECIFIER])):
        if type(node) is ast.FormattedValue:
            value = node.value
            end = (value.end_lineno or value.lineno, value.end_col_offset or 0)
            if _next_character(lines, *end) == "=":
                spans.append(((value.lineno, value.col_offset), end))
    return spans


def _next_character(lines: Lines, line: int, byte_col: int) -> str:
    """The first character at or after (line, byte column) that is not whitespace; "" at the end of the text."""
    rest = lines[line].encode("utf-8")[byte_col:].decode("utf-8", errors="replace")
    while True:
        stripped = rest.lstrip()
        if stripped:
            return stripped[0]
        line += 1
        if line > lines.count:
            return ""
        rest = lines[line]


def _inside(node: ast.expr, spans: list[_Span]) -> bool:
    pos = (node.lineno, node.col_offset)
    return any(start <= pos < end for start, end in spans)


# --------------------------------------------------------------------------- pattern rules (NPT9xx)


_REDUCTION_KEYWORDS = frozenset({"axis", "keepdims"})


def _pattern_matches(rule: Rule, res: Resolution) -> list[Ref]:
    """The expressions spelling ``rule.pattern`` in its ``form`` (rules.Rule.form): a :class:`Ref` whose node is
    the whole expression, so the finding spans it and the fix replaces it."""
    if rule.form == RATIO:
        return _ratio_matches(rule, res)
    if rule.form == DIFFERENCE:
        return _difference_matches(rule, res)
    return _nested_matches(rule, res)


def _nested_matches(rule: Rule, res: Resolution) -> list[Ref]:
    """``outer(reduce(inner(x), ...))``: the outer calls."""
    outer, reduction, inner = rule.pattern
    found = []
    for ref in res.refs:
        call = ref.parent
        if ref.qualname != outer or type(call) is not ast.Call or call.func is not ref.node:
            continue
        if len(call.args) == 1 and not call.keywords and _reduces(call.args[0], reduction, inner, res):
            found.append(Ref(call, outer, ref.grand, None, (), ref.in_class, ref.bindings, ref.rebound_by))
    return found


def _reduces(node: ast.expr, reduction: str, inner: str, res: Resolution) -> bool:
    """``reduction(inner(x), [axis], axis=, keepdims=)`` or ``inner(x).<reduction's name>(...)``."""
    if type(node) is not ast.Call:
        return False
    call: ast.Call = node
    if any(k.arg not in _REDUCTION_KEYWORDS for k in call.keywords) or any(type(a) is ast.Starred for a in call.args):
        return False
    method = reduction.rpartition(".")[2]
    if res.qualname(call.func) == reduction:
        return 1 <= len(call.args) <= 2 and _unary_call(call.args[0], inner, res)
    func = call.func
    return (type(func) is ast.Attribute and func.attr == method
            and len(call.args) <= 1 and _unary_call(func.value, inner, res))


def _ratio_matches(rule: Rule, res: Resolution) -> list[Ref]:
    """``inner(x) / reduction(inner(x), axis, keepdims=True)`` (or ``inner(x).<reduction>(...)``): the divisions."""
    inner, reduction = rule.pattern
    found = []
    for ref in res.refs:
        call, division = ref.parent, ref.grand
        if ref.qualname != inner or type(call) is not ast.Call or call.func is not ref.node:
            continue
        if type(division) is not ast.BinOp or type(division.op) is not ast.Div or division.left is not call:
            continue
        total = division.right
        if not (_unary_call(call, inner, res) and _plain(call.args[0]) and type(total) is ast.Call
                and _reduces(total, reduction, inner, res)):
            continue
        method = res.qualname(total.func) != reduction  # inner(x).sum(...): the axis comes first
        again = total.func.value if method and type(total.func) is ast.Attribute else total.args[0]
        if type(again) is ast.Call and _same(again.args[0], call.args[0]) and _keeps_dims(total, axis_at=0 if method else 1):
            found.append(Ref(division, inner, None, None, (), ref.in_class, ref.bindings, ref.rebound_by))
    return found


def _difference_matches(rule: Rule, res: Resolution) -> list[Ref]:
    """``x - reduction(x, axis, keepdims=True)``: the subtractions."""
    (reduction,) = rule.pattern
    found = []
    for ref in res.refs:
        call, difference = ref.parent, ref.grand
        if ref.qualname != reduction or type(call) is not ast.Call or call.func is not ref.node:
            continue
        if type(difference) is not ast.BinOp or type(difference.op) is not ast.Sub or difference.right is not call:
            continue
        if any(k.arg not in _REDUCTION_KEYWORDS for k in call.keywords) or not 1 <= len(call.args) <= 2:
            continue
        if any(type(a) is ast.Starred for a in call.args) or not _plain(difference.left):
            continue
        if _same(call.args[0], difference.left) and _keeps_dims(call, axis_at=1):
            found.append(Ref(difference, reduction, None, None, (), ref.in_class, ref.bindings, ref.rebound_by))
    return found


def _plain(node: ast.expr) -> bool:
    """A name or an attribute of one (``x``, ``self.logits``): evaluating it twice or once is the same."""
    while type(node) is ast.Attribute:
        node = node.value
    return type(node) is ast.Name


def _same(a: ast.expr, b: ast.expr) -> bool:
    return ast.dump(a) == ast.dump(b)


def _keeps_dims(call: ast.Call, axis_at: int) -> bool:
    """The reduction keeps the reduced axes (``keepdims=True``), or reduces everything (no axis, ``axis=None``)."""
    keywords = {k.arg: k.value for k in call.keywords}
    axis = call.args[axis_at] if len(call.args) > axis_at else keywords.get("axis")
    keep = keywords.get("keepdims")
    if type(keep) is ast.Constant and keep.value is True:
        return True
    whole = axis is None or (type(axis) is ast.Constant and axis.value is None)
    return whole and (keep is None or (type(keep) is ast.Constant and keep.value is False))


def _unary_call(node: ast.expr, qualname: str, res: Resolution) -> bool:
    return (type(node) is ast.Call and res.qualname(node.func) == qualname
            and len(node.args) == 1 and not node.keywords
            and type(node.args[0]) is not ast.Starred)


def _choose_alias(tree: ast.Module, text: str, settings: Settings, writes: NamespaceWrites | None = None) -> str:
    """``settings.alias``, or ``<alias>_1``, ``_2``, ... when it is bound to anything but the runtime
    (``writes``: names the module's namespace writes spell, ``globals()["np2t"] = ...``); ``_<alias>`` (and
    so on) when the module lists its own names (:func:`np2torch.lint.namespace.lists_namespace`), unless it imports the runtime
    as the alias already."""
    spelled = text if text.isascii() else unicodedata.normalize("NFKC", text)
    same_import = f"import {settings.runtime_module}"
    base = settings.alias
    if not base.startswith("_") and lists_namespace(tree, spelled):
        # `__all__ = [n for n in dir() if not n.startswith("_")]` must not gain the runtime; a module fixed
        # before keeps its import of it as the one import
        if base not in spelled or same_import not in bound_names(tree).get(base, ()):
            base = f"_{base}"
    if base not in spelled:
        return base  # a name that is not spelled is bound nowhere
    names = bound_names(tree)
    in_strings = _words_in_strings(tree) if _runs_strings(names) else frozenset()
    n = 0
    while True:
        candidate = base if n == 0 else f"{base}_{n}"
        kinds = set(names.get(candidate, ()))
        free = not kinds or (same_import in kinds and kinds <= {same_import, "use"})
        if free and candidate not in in_strings and not (writes and writes.rebinding(candidate)):
            return candidate
        n += 1


def _runs_strings(names: dict[str, list[str]]) -> bool:
    """The module calls (or passes on) ``exec``/``eval``: a string may bind any name (``exec("np2t = 1")``)."""
    return any("use" in names.get(builtin, ()) for builtin in ("exec", "eval"))


def _words_in_strings(tree: ast.Module) -> frozenset[str]:
    words = set()
    for node in walk.every(tree):
        if type(node) is ast.Constant and isinstance(node.value, str):
            words.update(re.findall(r"\w+", node.value))
    return frozenset(words)


# --------------------------------------------------------------------------- public API


def check_source(source: str, path: str = "<string>", *, settings: Settings | None = None) -> list[Finding]:
    """The findings in ``source``, sorted by position.  Raises :class:`SourceError` if it cannot be parsed."""
    return _analyze(source, path, settings or DEFAULT_SETTINGS, skimmed=True).findings


def _analyze_to_fix(source: str, path: str, settings: Settings,
                    only: Collection[tuple[int, int, str]] | None = None) -> _Analysis:
    """:func:`_analyze` for a fix of the text: skimmed, then again whole where there is something to rewrite
    (the rewrite reads the whole module: every use of an import it may remove)."""
    analysis = _analyze(source, path, settings, only=only, skimmed=True)
    if analysis.fixes and analysis.skimmed:
        analysis = _analyze(source, path, settings, only=only)
    return analysis


def fix_source(source: str, path: str = "<string>", *, settings: Settings | None = None) -> str:
    """``source`` with every fixable finding rewritten; unchanged (the same text) when there is none.

    ``path`` matters only for re-exports: in an ``__init__.py`` no import is removed.
    Raises :class:`SourceError` for unparsable text and :class:`FixError` when the
    fix cannot be made safely (LibCST cannot rewrite the text exactly, or the result
    would not compile).
    """
    settings = settings or DEFAULT_SETTINGS
    return _fixed_text(_analyze_to_fix(source, path, settings), source, path, settings)


def fix_and_check(source: str, path: str = "<string>", *, settings: Settings | None = None,
                  only: Collection[tuple[int, int, str]] | None = None) -> FixResult:
    """:func:`check_source` and :func:`fix_source` from one analysis: the findings, the fixed text, what is left.

    The text is analysed once.  The fixed text is analysed again only when the fix left
    findings (unfixable ones), to give their positions in it; when every finding was fixable,
    none is left (the rewrite makes every planned fix or raises :class:`FixError`).
    ``only``: rewrite just the findings at these ``(line, column, code)``; the others stay findings, not
    fixable here (``np2torch fix --from-run``).
    Raises as :func:`fix_source` does.
    """
    settings = settings or DEFAULT_SETTINGS
    analysis = _analyze_to_fix(source, path, settings, only)
    fixed = _fixed_text(analysis, source, path, settings)
    findings = tuple(analysis.findings)
    if fixed is source:
        return FixResult(findings, source, findings)
    if all(finding.fixable for finding in findings):
        return FixResult(findings, fixed, ())
    remaining = _analyze(fixed, path, settings, skimmed=True).findings
    if only is not None:  # what is still fixable in the fixed text is what `only` left out
        remaining = [dataclasses.replace(f, fixable=False, fix_title=None, reason=REASON_LEFT_OUT) if f.fixable
                     else f for f in remaining]
    return FixResult(findings, fixed, tuple(remaining))


@dataclass(frozen=True)
class Plan:
    """One text's analysis, for a rewrite made on its ``ast`` rather than its text (``np2torch run``)."""

    tree: ast.Module | None
    """The parsed text (None when nothing could be found in it); the fixes' nodes are nodes of this tree."""
    findings: tuple[Finding, ...]
    """Every finding, as :func:`check_source` gives them."""
    fixes: tuple[Planned, ...]
    """The fixable findings with their nodes: a function rule's node is the reference (``np.exp``) the
    helper replaces, a pattern rule's the whole outer call."""


def plan_source(source: str, path: str = "<string>", *, settings: Settings | None = None) -> Plan:
    """What :func:`fix_source` would rewrite in ``source``, as nodes of its ``ast`` tree instead of text.

    Raises :class:`SourceError` as :func:`check_source` does, and for a NUL anywhere: the tree runs, and Python
    runs no text with one (a NUL in a string would be the stand-in's value in it, :mod:`np2torch.lint.nul`).
    """
    nul.refuse(source)
    analysis = _analyze(source, path, settings or DEFAULT_SETTINGS, import_line=False)
    return Plan(analysis.tree, tuple(analysis.findings), tuple(analysis.fixes))


def fix_findings(source: str, findings: Collection[Finding], path: str = "<string>", *,
                 settings: Settings | None = None) -> str:
    """``source`` with only those of ``findings`` rewritten that are fixable: an editor's fix of one finding.

    ``findings`` are matched by code and position against a fresh analysis of ``source`` (their
    ``path`` and message do not matter), so they must come from :func:`check_source` of this very
    text; one that is not there is left alone.  The runtime import is added as :func:`fix_source`
    adds it, and a ``from``-import is removed only when no finding left unfixed still uses it.
    Raises as :func:`fix_source` does.
    """
    settings = settings or DEFAULT_SETTINGS
    analysis = _analyze_to_fix(source, path, settings)
    wanted = {_position(finding) for finding in findings}
    analysis.fixes = [planned for planned in analysis.fixes if _position(planned.finding) in wanted]
    analysis.noqa_fixes = [finding for finding in analysis.noqa_fixes if _position(finding) in wanted]
    return _fixed_text(analysis, source, path, settings)


class EachFix:
    """One analysis's fixes, for an output that carries each finding's edits: the text with only the runtime
    import added (what every fix adds; the text itself when none is), the text every fix makes
    (:func:`fix_source`'s), every fix's position (code, line, column, end line, end column), and
    :meth:`alone`, a fix made alone (:func:`fix_findings` of one finding) from the same analysis."""

    def __init__(self, source: str, path: str, settings: Settings) -> None:
        self._source, self._path, self._settings = source, path, settings
        self._analysis = analysis = _analyze_to_fix(source, path, settings)
        self._fixes, self._noqa_fixes = list(analysis.fixes), list(analysis.noqa_fixes)
        self.whole = _fixed_text(analysis, source, path, settings)
        self.positions = [_position(planned.finding) for planned in self._fixes] + list(map(_position, self._noqa_fixes))
        self.imported = source
        if self._fixes and analysis.place is not None and not analysis.place.existing:
            from np2torch.lint.rewrite import apply_fixes

            assert analysis.tree is not None and analysis.resolution is not None and analysis.alias is not None
            self.imported = analysis.bom + analysis.masked.restore(apply_fixes(
                analysis.text, analysis.tree, [], analysis.resolution.import_froms, analysis.alias, settings, path,
                analysis.place))

    def alone(self, position: tuple[str, int, int, int, int]) -> str | None:
        """The text the fix of the finding at ``position`` makes alone; None when it has none.  Raises
        :class:`FixError` as :func:`fix_findings` does."""
        analysis = self._analysis
        analysis.fixes = [planned for planned in self._fixes if _position(planned.finding) == position]
        analysis.noqa_fixes = [finding for finding in self._noqa_fixes if _position(finding) == position]
        if not analysis.fixes and not analysis.noqa_fixes:
            return None
        return _fixed_text(analysis, self._source, self._path, self._settings)


def _position(finding: Finding) -> tuple[str, int, int, int, int]:
    return finding.code, finding.line, finding.column, finding.end_line, finding.end_column


def _fixed_text(analysis: _Analysis, source: str, path: str, settings: Settings) -> str:
    if not analysis.fixes and not analysis.noqa_fixes:
        return source
    text = analysis.text
    if analysis.noqa_fixes:  # comments only, no line added or removed: the tree's positions still hold
        codes: dict[int, set[str]] = {}
        for finding in analysis.noqa_fixes:
            column, comment = analysis.comments[finding.line]
            codes.setdefault(finding.line, set()).add(comment[finding.column - 1 - column:finding.end_column - 1 - column])
        text = remove_noqa_codes(text, codes, analysis.comments)
        if not analysis.fixes:
            _verify(analysis.text, text, path)
            return analysis.bom + analysis.masked.restore(text)
    from np2torch.lint.rewrite import apply_fixes  # LibCST loads only when there is something to fix

    assert analysis.tree is not None and analysis.resolution is not None and analysis.alias is not None
    assert analysis.place is not None
    fixed = apply_fixes(
        text,
        analysis.tree,
        analysis.fixes,
        analysis.resolution.import_froms,
        analysis.alias,
        settings,
        path,
        analysis.place,
    )
    _verify(analysis.text, fixed, path)
    return analysis.bom + analysis.masked.restore(fixed)


def _verify(original: str, fixed: str, path: str) -> None:
    """The fixed text must compile wherever the original did (a failure is a bug in np2torch)."""
    try:
        compile(fixed, path, "exec", dont_inherit=True)
        return
    except (SyntaxError, ValueError) as exc:
        problem = exc
    try:
        # `return` outside a function and the like pass ast.parse but not compile():
        # if the original fails compile() too, the fix made nothing worse
        compile(original, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        try:
            ast.parse(fixed)
            return
        except (SyntaxError, ValueError) as exc:
            problem = exc
    raise FixError(f"the fixed text does not compile ({' '.join(str(problem).split())}); left unchanged")

