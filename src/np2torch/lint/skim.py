"""Parse less: a module's text with the function bodies that cannot hold a finding replaced by ``pass``.

The prefilter (:func:`np2torch.lint.engine.may_contain`) spares the parse of a file that cannot contain a
finding, as ruff does; in a file that can, most functions still spell nothing a finding needs (no target's
name, nothing a whole-module analysis keys on).  :func:`skim` finds them from the text alone and gives the
text with each such body replaced by ``pass``; ``ast.parse`` of that is a fraction of the whole, and so is
every walk of the tree after it.

Only what does not run when the module is imported is replaced: the body of a ``def`` at the top level or
in the body of a top-level class (nested classes too).  Everything else is kept byte for byte: module-level
statements, class bodies, and each function's decorators, parameters, defaults and annotations (its header,
up to the ``:`` that ends it); the ``pass`` stands on the body's last line, so every kept node has the line
and column it has in the whole text, and each stub the lines its function had.

How the text is split.  A statement of a block starts on a line that begins, at the block's indentation, with
code (not a blank line, not a comment, not a closing bracket, not ``else``/``elif``/``except``/``finally``)
outside every string literal and after no backslash continuation.  One regular expression finds the string
literals (every prefix, triple- or single-quoted, escapes and backslash-newlines inside) and comments; a
line that begins inside a string that spans lines is no statement's start.  Brackets are not counted: a
line inside brackets that begins at a block's indentation starts a piece that is kept as it is, and the
unmatched closing bracket it holds makes the skimmed text a syntax error whenever the piece before it was
replaced (and so a full parse).  Decorators belong to the ``def`` or ``class`` they decorate; anything else
after them gives up the skim.  A body with a line of code that does not begin with the indentation of its
first (a stray ``else:``, ``except`` or ``)`` at the ``def``'s, a dedent to no block's: a syntax error; or
brackets closed there) is kept as it is.  What a body
spells is read in its code: a word in a comment or in a literal is no name, but the fields of an f-string (or
t-string) are code; a word is compared after NFKC normalisation, as the parser reads names.  An f-string whose
field the old pairing of quotes leaves open (PEP 701's reused quotes, Python 3.12) gives up the skim.

:meth:`Skim.fits` checks the parse of the skimmed text against what the split expected: the statements of
each split block start exactly where the pieces start, and each stub is a ``def`` of its name whose ``pass``
stands on its last line.  Anything else (the split was wrong, or the skimmed text does not parse) means the
caller parses the whole text, so that a syntax error in the code that can hold a finding is reported as it
always was.  A syntax error inside a replaced body goes unreported, as one in a file the prefilter skips.
"""

from __future__ import annotations

import ast
import functools
import operator
import re
import unicodedata
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Collection, Iterator, Optional, Sequence

__all__ = ["Skim", "skim"]

# A string literal (the quote on: a prefix never changes where a literal ends, `r"\""` holds `\"` too) or a
# comment; the last alternative, a quote that opens no literal, is an unterminated one.
_LITERALS = (
    r"#[^\r\n]*"
    r"|'(?:''[^'\\]*(?:(?:\\(?:\r\n|.)|'(?!''))[^'\\]*)*'''|[^'\\\r\n]*(?:\\(?:\r\n|.)[^'\\\r\n]*)*')"
    r'|"(?:""[^"\\]*(?:(?:\\(?:\r\n|.)|"(?!""))[^"\\]*)*"""|[^"\\\r\n]*(?:\\(?:\r\n|.)[^"\\\r\n]*)*")'
    r"|['\"]"
)
# one group: `split` keeps what it matches; the lookahead lets `re` skip to where one can start
_STRINGS_AND_COMMENTS = re.compile(f"(?=[#'\"])({_LITERALS})", re.DOTALL)
# what a header is read by: literals and comments (skipped), brackets, and the `:` that ends it
_HEADER_TOKENS = re.compile(_LITERALS + r"|[()\[\]{}:]", re.DOTALL)
# what may follow a header's `:` on its line when the body is a block of its own
_REST_OF_HEADER = re.compile(r"[ \t]*(?:#[^\r\n]*)?(?:\r?\n)")
_LITERAL = re.compile(_LITERALS, re.DOTALL)
# the prefix of a literal: the letters right before its quote (`if"x"` is a keyword and a plain string)
_PREFIX = re.compile(r"(?<![\w.])[A-Za-z]{1,2}\Z")
_LOUD = frozenset({"f", "rf", "fr", "t", "rt", "tr"})
_NOT_ASCII = re.compile(r"[^\x00-\x7f]")
# the start of a piece: decorator, or `def`/`class` and the name it binds
_HEAD = re.compile(r"(@)|(?:async[ \t]+)?(def|class)[ \t]+(\w+)")


@functools.lru_cache(maxsize=64)
def _starts(indent: str) -> re.Pattern[str]:
    """A line that begins with code at exactly ``indent``, not with a closing bracket (which no statement
    starts with: black puts the one of a bracket that spans lines at the indentation of its statement) nor
    with a clause that continues a compound statement (``else``, ``elif``, ``except``, ``finally``)."""
    return re.compile("^" + re.escape(indent) + r"(?!(?:else|elif|except|finally)(?!\w))[^\s#)\]}]", re.MULTILINE)


@functools.lru_cache(maxsize=64)
def _outdented(indent: str) -> re.Pattern[str]:
    """A line whose code does not begin with a body's ``indent``: it belongs to no body (a stray ``else:``,
    ``except`` or ``)`` at the ``def``'s indentation, a dedent to no block's: a syntax error), or continues
    brackets (legal, and rare)."""
    return re.compile("^(?!" + re.escape(indent) + r")[ \t]*[^\s#]", re.MULTILINE)


@functools.lru_cache(maxsize=64)
def _words(words: frozenset[str]) -> list[tuple[str, re.Pattern[str]]]:
    """Each word and its pattern as a whole identifier (the literal first, so that ``re`` scans for it quickly)."""
    return [(word, re.compile(rf"{re.escape(word)}(?!\w)(?<!\w{re.escape(word)})")) for word in sorted(words)]


@dataclass
class _Piece:
    """One statement of a split block, as the split expects to find it in the parse of the skimmed text."""

    line: int
    """Its first line (its first decorator's)."""
    name: Optional[str] = None
    """The name a ``def`` or ``class`` binds."""
    stub: int = 0
    """A replaced body: the line its ``pass`` stands on (the last line of the function)."""
    block: Optional[list[_Piece]] = None
    """A class whose body was split: the pieces of its body."""


@dataclass
class Skim:
    """The skimmed text, and what its parse must look like (:meth:`fits`)."""

    text: str
    pieces: list[_Piece] = field(default_factory=list)
    stubs: int = 0
    """How many bodies were replaced."""

    def fits(self, tree: ast.Module) -> bool:
        """Whether ``tree`` (the parse of :attr:`text`) is what the split expected."""
        return _fits(tree.body, self.pieces)


def _fits(body: Sequence[ast.stmt], pieces: Sequence[_Piece]) -> bool:
    if len(body) != len(pieces):
        return False
    for stmt, piece in zip(body, pieces):
        decorators = getattr(stmt, "decorator_list", None)
        first = min([stmt.lineno, *(d.lineno for d in decorators)]) if decorators else stmt.lineno
        if first != piece.line:
            return False
        if piece.stub:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or stmt.name != piece.name:
                return False
            if len(stmt.body) != 1 or type(stmt.body[0]) is not ast.Pass or stmt.body[0].lineno != piece.stub:
                return False
            if stmt.end_lineno != piece.stub:
                return False
        elif piece.block is not None:
            if not isinstance(stmt, ast.ClassDef) or stmt.name != piece.name or not _fits(stmt.body, piece.block):
                return False
    return True


def skim(text: str, words: Collection[str], substrings: Collection[str] = ()) -> Skim | None:
    """``text`` with the body of each function (top-level, or a method of a top-level class) that spells none
    of ``words`` in its code (as a whole identifier, after NFKC normalisation as the parser reads names;
    comments and literals other than f-strings aside) and none of ``substrings`` anywhere replaced by ``pass``; None when nothing is replaced or the text is not split (a lone
    ``\\r`` or a form feed, which move lines and columns for the tokenizer; a decorator before something
    that is neither a ``def`` nor a ``class``; a quote that opens no literal; a null byte, which no parse
    takes)."""
    if "\f" in text or "\0" in text or text.count("\r") != text.count("\r\n"):
        return None
    # the parser reads a name NFKC-normalised (`ｅ` is `e`): so are the words, whatever spells them
    words = {word if word.isascii() else unicodedata.normalize("NFKC", word) for word in words}
    substrings = {sub if sub.isascii() else unicodedata.normalize("NFKC", sub) for sub in substrings}
    skimmer = _Skimmer(text, frozenset(words), frozenset(substrings))
    if not skimmer.lex():
        return None
    found = skimmer.block(0, len(text), "")
    if found is None or not skimmer.stubs:
        return None
    out, pieces = found
    return Skim("".join(out), pieces, skimmer.stubs)


class _Skimmer:
    def __init__(self, text: str, words: frozenset[str], substrings: frozenset[str]) -> None:
        self.text = text
        self.ascii = text.isascii()
        self.words, self.substrings = words, substrings
        self.string_starts: list[int] = []
        self.string_ends: list[int] = []
        """The literals that span lines (only they can hold a line's start), in order."""
        self.comment_backslashes: set[int] = set()
        """Where a comment ends in a backslash (no continuation: the comment ends at the line's end)."""
        self.parts: list[str] = []
        """The text split at its literals and comments: code, a literal, code, ... (:meth:`lex`)."""
        self.loud: list[int] = []
        """The parts that are f-strings or t-strings (a letter before the quote that is no prefix only adds
        one): literals whose fields are code."""
        self.bounds: list[int] = []
        """Where the pieces of the text end, code and literals (comments too) by turns: a position before
        ``bounds[0]`` is code, then a literal up to ``bounds[1]``, and so on."""
        self.spelled: list[int] | None = None
        """Where the words are spelled in code."""
        self.unusual: list[int] = []
        """Where code holds a character that is not ASCII."""
        self.stubs = 0
        self._line_pos = 0
        self._line = 1

    # -- the text ------------------------------------------------------------
    def lex(self) -> bool:
        """Finds the literals and comments, and of them the literals that span lines; False at a quote that
        opens none.  (``split`` and ``accumulate`` do the work in C; only the rare pieces take Python's.)"""
        parts = _STRINGS_AND_COMMENTS.split(self.text)
        self.parts = parts
        self.bounds = bounds = list(accumulate(map(len, parts)))
        text, loud = self.text, self.loud
        for i in range(1, len(parts), 2):
            part = parts[i]
            if len(part) == 1 and part != "#":
                return False
            if part[0] != "#":
                found = _PREFIX.search(text, max(bounds[i - 1] - 3, 0), bounds[i - 1])
                prefix = found.group().lower() if found is not None else ""
                if prefix in _LOUD:
                    if not _fields_close(part, "r" in prefix):
                        return False  # the literal ends inside a field: PEP 701's f-string, or no Python
                    loud.append(i)  # an f-string (or t-string): its fields are code
            if "\n" in part:
                self.string_starts.append(bounds[i - 1])
                self.string_ends.append(bounds[i])
            elif part[-1] == "\\" and part[0] == "#":
                self.comment_backslashes.add(bounds[i] - 1)
        return True

    def line_of(self, pos: int) -> int:
        """The 1-based line of ``pos`` (counted on from the last position asked, which mostly comes before)."""
        if pos < self._line_pos:
            self._line_pos, self._line = 0, 1
        self._line += self.text.count("\n", self._line_pos, pos)
        self._line_pos = pos
        return self._line

    def begins(self, start: int, end: int, indent: str) -> Iterator[int]:
        """Where the statements of the block from ``start`` to ``end`` begin: lines that begin with code at
        ``indent`` outside the literals that span lines (the text between them is searched) and that continue
        no line with a backslash."""
        return self.lines_matching(start, end, _starts(indent))

    def lines_matching(self, start: int, end: int, pattern: re.Pattern[str]) -> Iterator[int]:
        """The starts of the lines from ``start`` (a line's start) to ``end`` that ``pattern`` matches at,
        outside the literals that span lines and continuing no line with a backslash."""
        text, starts, ends = self.text, self.string_starts, self.string_ends
        i = bisect_left(starts, start)  # `start` begins a line of code: no literal holds it
        pos = start
        while pos < end:
            stop = starts[i] if i < len(starts) and starts[i] < end else end
            # a literal may begin the line: the search reaches its first character
            for match in pattern.finditer(text, pos, min(stop + 1, end)):
                line = match.start()
                back = line - 2 if line >= 2 and text[line - 2] != "\r" else line - 3
                if not (back >= 0 and text[back] == "\\" and back not in self.comment_backslashes):
                    yield line
            if stop == end:
                return
            pos = ends[i]
            i += 1

    def code_spelling(self) -> list[int]:
        """Where the code spells the words, in order: searched in the code between the literals and comments
        (joined by spaces, so that no two parts make a word), and in each f-string (and t-string)."""
        parts, bounds, each = self.parts, self.bounds, _words(self.words)
        code_parts = parts[0::2]
        code = " ".join(code_parts)
        # where code part j (the text's part 2j) starts in `code`, and in the text
        in_code = list(map(operator.add, accumulate(map(len, code_parts), initial=0), range(len(code_parts))))
        in_text = [0, *bounds[1::2]]
        found = []
        for _word, pattern in each:
            for match in pattern.finditer(code):
                j = bisect_right(in_code, match.start()) - 1
                found.append(in_text[j] + match.start() - in_code[j])
        for k in self.loud:
            found.extend(bounds[k - 1] + m.start() for _w, pattern in each for m in pattern.finditer(parts[k]))
        return sorted(found)

    def quiet(self, pos: int) -> bool:
        """Whether ``pos`` lies in a comment or in a literal that holds no code (all but f- and t-strings)."""
        i = bisect_right(self.bounds, pos)
        if not i % 2:
            return False  # code
        j = bisect_left(self.loud, i)
        return not (j < len(self.loud) and self.loud[j] == i)

    def spells(self, start: int, end: int) -> bool:
        """Whether the text from ``start`` to ``end`` spells one of the words in its code (outside comments and
        literals other than f-strings) or one of the substrings anywhere."""
        text = self.text
        if any(text.find(substring, start, end) >= 0 for substring in self.substrings):
            return True
        if not self.ascii and not text[start:end].isascii():
            # a name spelled with characters the parser normalises spells a substring after NFKC
            normalised = unicodedata.normalize("NFKC", text[start:end])
            if any(substring in normalised for substring in self.substrings):
                return True
        if self.spelled is None:
            self.spelled = self.code_spelling()
            # the parser NFKC-normalises a name that is not ASCII (`ｅｘｐ` is `exp`): where code holds one, the
            # piece's normalised text is searched instead
            self.unusual = [] if self.ascii else [m.start() for m in _NOT_ASCII.finditer(text) if not self.quiet(m.start())]
        if self.unusual:
            i = bisect_left(self.unusual, start)
            if i < len(self.unusual) and self.unusual[i] < end:
                normalised = unicodedata.normalize("NFKC", text[start:end])
                return any(word in normalised and pattern.search(normalised) for word, pattern in _words(self.words))
        i = bisect_left(self.spelled, start)
        return i < len(self.spelled) and self.spelled[i] < end

    # -- blocks --------------------------------------------------------------
    def block(self, start: int, end: int, indent: str) -> tuple[list[str], list[_Piece]] | None:
        """The skimmed text of the block from ``start`` to ``end`` whose statements begin at ``indent``, and
        its pieces; None when it cannot be split."""
        text = self.text
        begins = list(self.begins(start, end, indent))
        out = [text[start:begins[0] if begins else end]]
        pieces: list[_Piece] = []
        i = 0
        while i < len(begins):
            first = begins[i]
            head = _HEAD.match(text, first + len(indent))
            decorated = head is not None and head.group(1)
            while head is not None and head.group(1) and i + 1 < len(begins):  # decorators, then what they decorate
                i += 1
                head = _HEAD.match(text, begins[i] + len(indent))
            if decorated and (head is None or head.group(1)):
                return None  # a decorator before something else, or at the end
            stop = begins[i + 1] if i + 1 < len(begins) else end
            i += 1
            piece = _Piece(self.line_of(first))
            pieces.append(piece)
            if head is None:
                out.append(text[first:stop])
                continue
            piece.name = head.group(3)
            if head.group(2) == "def":
                kept = self.stub(piece, first, head.end(), stop, indent)
            else:
                kept = self.split_class(piece, first, head.end(), stop)
            out.append(text[first:stop] if kept is None else kept)
        return out, pieces

    def header_end(self, pos: int, end: int) -> int | None:
        """Where the header from ``pos`` ends: after its line holding the ``:`` outside brackets, when nothing
        but a comment follows it there (the body is a block of its own); else None."""
        depth = 0
        for match in _HEADER_TOKENS.finditer(self.text, pos, end):
            token = match.group()
            if len(token) != 1:
                continue  # a literal or a comment
            if token in "([{":
                depth += 1
            elif token in ")]}":
                depth -= 1
            elif token == ":" and depth == 0:
                rest = _REST_OF_HEADER.match(self.text, match.end(), end)
                return rest.end() if rest is not None else None
            elif token in "'\"":
                return None  # a quote that opens no literal
        return None

    def stub(self, piece: _Piece, first: int, name_end: int, stop: int, indent: str) -> str | None:
        """The ``def`` from ``first`` to ``stop`` with its body replaced by ``pass`` on its last line, or None
        (it spells a word, or its body is not a block of its own)."""
        if self.spells(first, stop):
            return None
        body = self.header_end(name_end, stop)
        last = _last_code_line(self.text, body, stop) if body is not None else None
        if body is None or last is None:
            return None
        if not self.one_block(body, stop, indent):
            return None
        header = self.text[first:body]
        body_line = self.line_of(body)
        piece.stub = self.line_of(last)
        before = piece.stub - body_line
        after = self.text.count("\n", body, stop) - before
        self.stubs += 1
        return header + "\n" * before + indent + " pass" + "\n" * after

    def one_block(self, body: int, stop: int, indent: str) -> bool:
        """Whether every line of code from ``body`` to ``stop`` begins with the indentation of the first, which
        is deeper than ``indent`` (the ``def``'s); else the body is kept as it is, to be parsed."""
        code = _first_code_line(self.text, body, stop)
        if code is None:
            return False
        newline = self.text.find("\n", code, stop)
        line = self.text[code:newline if newline >= 0 else stop]
        deeper = line[:len(line) - len(line.lstrip(" \t"))]
        if len(deeper) <= len(indent) or not deeper.startswith(indent):
            return False
        return next(self.lines_matching(body, stop, _outdented(deeper)), None) is None

    def split_class(self, piece: _Piece, first: int, name_end: int, stop: int) -> str | None:
        """The ``class`` from ``first`` to ``stop`` with its methods skimmed (:meth:`block` on its body), or None."""
        body = self.header_end(name_end, stop)
        if body is None:
            return None
        code = _first_code_line(self.text, body, stop)
        if code is None:
            return None
        newline = self.text.find("\n", code, stop)
        line = self.text[code:newline if newline >= 0 else stop]
        indent = line[:len(line) - len(line.lstrip(" \t"))]
        if not indent:
            return None
        stubs = self.stubs
        found = self.block(body, stop, indent)
        if found is None or self.stubs == stubs:
            self.stubs = stubs  # kept as it is: none of its stubs stands
            return None
        out, pieces = found
        piece.block = pieces
        return self.text[first:body] + "".join(out)


def _fields_close(literal: str, raw: bool) -> bool:
    """Whether each replacement field of the f-string (or t-string) ``literal`` (its quotes on) closes inside
    it, holding nothing the grammar before Python 3.12 rejects there (its own quote, a backslash, a comment).
    Where one does not, the quotes were paired the old way and the literal ends inside a field: on Python
    3.12 and later (PEP 701) the quote there opens a string inside the field and the f-string goes on, and
    before 3.12 the text is no Python (or a literal the split cannot tell): in both, the whole text is parsed.
    Conservative: a quote in a format spec (``{x:'>9}``) counts as a string that does not close."""
    q = 3 if len(literal) >= 6 and literal[:3] == literal[0] * 3 else 1
    body, depth, i = literal[q:len(literal) - q], 0, 0
    while i < len(body):
        c = body[i]
        if depth == 0:
            if c == "\\":
                if not raw and body.startswith("N{", i + 1):  # `\N{DASH}` names a character, no field
                    close = body.find("}", i)
                    if close < 0:
                        return False
                    i = close + 1
                    continue
                i += 1 if body[i + 1:i + 2] in ("{", "}") else 2
                continue
            if c in "{}":
                if body.startswith(c, i + 1):
                    i += 2  # `{{` and `}}` are braces
                    continue
                if c == "}":
                    return False
                depth = 1
        elif c in "'\"":
            nested = _LITERAL.match(body, i)
            if nested is None or len(nested.group()) == 1:
                return False
            i = nested.end()
            continue
        elif c in "\\#":
            return False
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        i += 1
    return depth == 0


def _lines(text: str, start: int, end: int) -> Iterator[int]:
    """The starts of the lines from ``start`` (a line's start) to ``end``."""
    pos = start
    while pos < end:
        yield pos
        newline = text.find("\n", pos, end)
        if newline < 0:
            return
        pos = newline + 1


def _is_code(text: str, start: int, end: int) -> bool:
    """Whether the line from ``start`` to ``end`` holds more than whitespace and a comment."""
    stripped = text[start:end].strip()
    return bool(stripped) and not stripped.startswith("#")


def _first_code_line(text: str, start: int, end: int) -> int | None:
    """The start of the first line from ``start`` to ``end`` that holds code."""
    for pos in _lines(text, start, end):
        newline = text.find("\n", pos, end)
        if _is_code(text, pos, newline if newline >= 0 else end):
            return pos
    return None


def _last_code_line(text: str, start: int, end: int) -> int | None:
    """The start of the last line from ``start`` (a line's start) to ``end`` that holds code (a line that
    begins inside a literal holds its closing quotes further on, so the last is never one of those)."""
    stop = end
    while stop > start:
        newline = text.rfind("\n", start, stop - 1)
        line_start = newline + 1 if newline >= 0 else start
        if _is_code(text, line_start, stop):
            return line_start
        stop = line_start
    return None
