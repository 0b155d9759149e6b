"""A document's lines, split once per version: what every position the server sends or reads is counted in.

A finding's range, a code action's edit and a client's cursor all need the text
of one line; splitting the document for each of them makes diagnostics grow
with the square of the file.  :class:`LineIndex` splits it once (as the LSP
counts lines: ``\\r\\n``, ``\\r``, ``\\n``) and answers each position from its line.
"""

from __future__ import annotations

from typing import Protocol

from lsprotocol import types

from np2torch.server.edits import line_texts


class Codec(Protocol):
    """How the client counts columns (UTF-16 code units unless agreed otherwise): pygls's ``PositionCodec``."""

    def client_num_units(self, chars: str) -> int: ...


class LineIndex:
    """The lines of one text, without their endings; ``builds`` and ``indexed`` count the work of every index
    made in this process (the server reports them: ``np2torch.printDebugInformation``)."""

    builds = 0
    indexed = 0
    """Characters split into lines, all indexes together."""

    def __init__(self, text: str) -> None:
        self.lines = line_texts(text)
        LineIndex.builds += 1
        LineIndex.indexed += len(text)

    def line(self, number: int) -> str:
        """Line ``number`` (0-based); past the end, an empty one."""
        return self.lines[number] if 0 <= number < len(self.lines) else ""

    def client_position(self, codec: Codec, line: int, column: int) -> types.Position:
        """0-based ``line`` and ``column`` in characters -> the client's position."""
        return types.Position(line=line, character=codec.client_num_units(self.line(line)[:column]))

    def server_position(self, codec: Codec, position: types.Position) -> tuple[int, int]:
        """A client's position -> 0-based line and column in characters (clamped to the line)."""
        text = self.line(position.line)
        units = 0
        for column, char in enumerate(text):
            if units >= position.character:
                return position.line, column
            units += codec.client_num_units(char)
        return position.line, len(text)

    def range(self, codec: Codec, line: int, column: int, end_line: int, end_column: int) -> types.Range:
        """1-based lines and columns (a :class:`~np2torch.lint.model.Finding`'s) -> the client's range."""
        return types.Range(start=self.client_position(codec, line - 1, column - 1),
                           end=self.client_position(codec, end_line - 1, end_column - 1))
