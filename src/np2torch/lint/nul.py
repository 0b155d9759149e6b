"""NUL bytes in source, taken where ruff takes them.

Python's parser refuses a NUL anywhere in the text (``source code cannot contain null bytes``); ruff's takes one
inside a string literal (of any kind: bytes, f-string, triple-quoted) or a comment, and reports one anywhere
else as ``invalid-syntax``.  So the engine analyses the text with each NUL replaced by a stand-in: a control
character the text does not hold, which Python takes where ruff takes a NUL and nowhere else, and which is one
byte in UTF-8 as a NUL is, so that every line and column (``ast``'s are UTF-8 byte offsets) stays true.  A text
with a NUL is parsed whole, whatever it calls (ruff reports a NUL in code in every file); where the parse
stumbles on the stand-in, the NUL stood in code: a syntax error at its place, in Python's words
(:meth:`Masked.error`).  What the engine returns as text gets its NULs back (:meth:`Masked.restore`): the
stand-in appears nowhere else, and no fix writes a control character.
"""

from __future__ import annotations

from dataclasses import dataclass

from np2torch.lint.model import FixError, SourceError

MESSAGE = "SyntaxError: source code cannot contain null bytes"
"""Python's words for a NUL (``compile``'s since 3.12; ``ast.parse`` raises a ValueError worded so before)."""

STAND_INS = "\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1f\x7f"
"""Control characters that are no line break, to Python's tokenizer nor to ``str.splitlines`` (which breaks at
``\\x0b``, ``\\x0c`` and ``\\x1c``-``\\x1e``): a stand-in moves no line."""


@dataclass(frozen=True)
class Masked:
    """A text with its NULs replaced by :attr:`stand_in` (None: it held no NUL, and ``text`` is the text)."""

    text: str
    stand_in: str | None = None

    def restore(self, text: str) -> str:
        """``text`` (a fix of this text) with the NULs back in place of the stand-in; :class:`FixError` if it holds
        more of them than this text (a bug: the file would get a NUL it did not have)."""
        if self.stand_in is None:
            return text
        if text.count(self.stand_in) > self.text.count(self.stand_in):
            raise FixError("the fix would add a NUL byte; left unchanged")
        return text.replace(self.stand_in, "\0")

    def error(self, exc: SyntaxError) -> SourceError | None:
        """The parse of :attr:`text` stumbled on a stand-in (``invalid non-printable character U+0001``): a NUL in
        code, ruff's ``invalid-syntax`` there, in Python's words for a NUL; None for any other syntax error."""
        if self.stand_in is None or f"U+{ord(self.stand_in):04X}" not in (exc.msg or ""):
            return None
        lines = self.text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        line, column = exc.lineno or 1, exc.offset or 1
        if not 0 < line <= len(lines) or lines[line - 1][column - 1:column] != self.stand_in:
            # Python before 3.12 places an error in an f-string's expression within the expression alone
            # (`(x\x01)`): the stand-in on that line, else the first one, is where the NUL is
            if 0 < line <= len(lines) and self.stand_in in lines[line - 1]:
                return SourceError(MESSAGE, line, lines[line - 1].index(self.stand_in) + 1)
            return _error(self.text, self.text.index(self.stand_in))
        return SourceError(MESSAGE, line, column)


def mask(text: str) -> Masked:
    """``text`` ready to parse (its NULs replaced by a stand-in); :class:`SourceError` at the first NUL in the absurd
    text that holds every stand-in."""
    if "\0" not in text:
        return Masked(text)
    stand_in = next((char for char in STAND_INS if char not in text), None)
    if stand_in is None:
        raise _error(text, text.index("\0"))
    return Masked(text.replace("\0", stand_in), stand_in)


def refuse(text: str) -> None:
    """Raise :class:`SourceError` at the first NUL of ``text``, as Python refuses it (for a text to run)."""
    if "\0" in text:
        raise _error(text, text.index("\0"))


def _error(text: str, offset: int) -> SourceError:
    lines = text[:offset].replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return SourceError(MESSAGE, len(lines), len(lines[-1]) + 1)
