"""Jupyter notebooks: check and fix the code cells of an ``.ipynb`` file, text in and text out.

A notebook's code cells share one namespace (``import numpy as np`` in cell 1,
``np.exp`` in cell 3), so the cells are analysed as ONE module, in cell order:
their sources are joined, a marker comment (``# np2torch:cell N``) between
them, and the engine runs on that text.  Findings are mapped back to
``cell N`` (1-based position among ALL cells, as a reader counts them) and a
line and column inside the cell.

Cells that are not Python are skipped: markdown and raw cells, a cell whose
first line is a cell magic with another language (``%%bash``; ``%%time``,
``%%timeit``, ``%%capture``, ``%%prun`` and ``%%debug`` run their Python body
and are cells of the module, their first line masked), and a cell that does not
parse even after its IPython line magics and shell escapes (lines starting
with ``%`` or ``!``) are masked as a statement that may call the module's code
(``%timeit f(x)`` runs ``f``) with the magic as its comment (as a comment alone
where no statement fits its indentation).  A notebook whose kernel language
is not Python has no findings.

A fix rewrites only the ``source`` values of the cells it changed, spliced
into the original bytes: every other byte of the file (indentation, key order,
escapes, the final newline, other cells, outputs, metadata) stays as it was,
and inside a changed cell each unchanged line keeps its original JSON token.
The runtime import lands where :mod:`np2torch.lint.placement` puts it in the
joined module: in a cell that runs, in cell order, before the first cell that
can run a rewritten call (after the import the findings resolve through, not
after a later cell's repeated ``import numpy as np``).
No import is ever removed from a notebook: a skipped cell (``%timeit exp(x)``)
may still use it.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Mapping, Sequence

from np2torch.lint import engine
from np2torch.lint.model import CellFinding
from np2torch.lint.suppress import add_noqa_lines

__all__ = ["CellFinding", "add_noqa_notebook", "cell_sources", "check_notebook", "fix_and_check_notebook",
           "fix_notebook", "fix_notebook_findings", "module_text"]

_MARKER = "# np2torch:cell "
_MARKER_LINE = re.compile(r"^# np2torch:cell (\d+)\n", re.MULTILINE)
_MAGIC_PREFIX = "#np2torch-magic:"
# A masked line magic stays a statement that calls a name of the module (`%timeit f(x)` runs `f`, `%env`
# sets up): where the runtime import goes (np2torch.lint.placement) counts it as code that may run a fix.
_MAGIC_MASK = "__np2torch_magic__ = __np2torch_magic__()" + _MAGIC_PREFIX
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
"""Cell magics whose body is Python run in the kernel's namespace: such a cell is a cell of the module."""
_MAGIC_LINE = re.compile(r"^([ \t]*)(?=[%!])", re.MULTILINE)
_NEWLINE = re.compile(r"\r\n|\r|\n")
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


# ---------------------------------------------------------------- locating the cells' sources in the JSON text


def _ws(text: str, i: int) -> int:
    blank = _WS.match(text, i)
    assert blank is not None  # `*`: it matches the empty string
    return blank.end()


def _members(text: str, i: int) -> list[tuple[str, int, int]]:
    """The ``(key, value_start, value_end)`` of the JSON object starting at ``text[i] == "{"``."""
    members: list[tuple[str, int, int]] = []
    i = _ws(text, i + 1)
    if text[i] == "}":
        return members
    while True:
        key, i = scanstring(text, i + 1)
        i = _ws(text, _ws(text, i) + 1)  # past ':'
        _, end = _DECODER.raw_decode(text, i)
        members.append((key, i, end))
        i = _ws(text, end)
        if text[i] == "}":
            return members
        i = _ws(text, i + 1)  # past ','


def _items(text: str, i: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each value of the JSON array starting at ``text[i] == "["``."""
    items: list[tuple[int, int]] = []
    i = _ws(text, i + 1)
    if text[i] == "]":
        return items
    while True:
        _, end = _DECODER.raw_decode(text, i)
        items.append((i, end))
        i = _ws(text, end)
        if text[i] == "]":
            return items
        i = _ws(text, i + 1)


@dataclass
class _Cell:
    number: int
    value: object
    """The ``source`` value as stored: a list of lines or one string."""
    span: tuple[int, int]
    """Where that value's JSON text is in the file."""
    text: str = ""
    masked: bool = False
    first_line: int = 0
    """Line of the joined module where the cell's first line is."""


class NotebookError(engine.SourceError):
    """The file is not a notebook this module can read (bad JSON, unexpected structure)."""


_Object = dict[str, object]
"""A JSON object: what each value is, the code asks with ``isinstance``."""


def _load(text: str) -> tuple[_Object, list[_Cell]]:
    try:
        return _load_unguarded(text)
    except RecursionError:  # json recurses once per nested array or object
        raise NotebookError("not a notebook: the JSON is nested too deeply") from None


def _load_unguarded(text: str) -> tuple[_Object, list[_Cell]]:
    body = text[1:] if text.startswith("\ufeff") else text
    shift = len(text) - len(body)
    try:
        document = json.loads(body)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a notebook: invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    if not isinstance(document, dict):
        raise NotebookError("not a notebook: the JSON document is not an object")
    cells: list[_Cell] = []
    top = {key: (start, end) for key, start, end in _members(body, _ws(body, 0))}
    every_cell = document.get("cells")
    if "cells" not in top or not isinstance(every_cell, list):
        return document, cells
    for number, (start, _end) in enumerate(_items(body, top["cells"][0]), 1):
        if body[start] != "{":
            continue
        members = {key: (s, e) for key, s, e in _members(body, start)}
        cell = every_cell[number - 1]  # an object: its text starts with `{`
        if not isinstance(cell, dict) or cell.get("cell_type") != "code" or "source" not in members:
            continue
        value = cell["source"]
        if isinstance(value, list) and all(isinstance(line, str) for line in value):
            text_value = "".join(value)
        elif isinstance(value, str):
            text_value = value
        else:
            continue
        s, e = members["source"]
        cells.append(_Cell(number, value, (s + shift, e + shift), text_value))
    return document, cells


def _is_python(document: _Object) -> bool:
    metadata = _object(document, "metadata", "metadata")
    languages = [
        _object(metadata, "language_info", "metadata.language_info").get("name"),
        _object(metadata, "kernelspec", "metadata.kernelspec").get("language"),
    ]
    return all(not isinstance(lang, str) or lang.lower() in ("python", "python3") for lang in languages)


_JSON_TYPES = ((bool, "a boolean"), (str, "a string"), (list, "an array"), ((int, float), "a number"))


def _object(parent: _Object, key: str, where: str) -> _Object:
    """``parent[key]``, which nbformat says is an object; absent or null: an empty one."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        kind = next((name for types, name in _JSON_TYPES if isinstance(value, types)), type(value).__name__)
        raise NotebookError(f"not a notebook: {where} is {kind}, not an object")
    return value


# ---------------------------------------------------------------- one module from the cells


def _parses(text: str) -> bool:
    try:
        compile(text, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def _python_text(cell: _Cell) -> str | None:
    """The cell's text as the engine sees it, or None when the cell is not Python."""
    text = cell.text
    if not text.strip() or _MARKER in text or _MAGIC_PREFIX in text:
        return None
    cell_magic = re.match(r"%%(\w*)", text.lstrip())
    if cell_magic and cell_magic.group(1) not in _PYTHON_CELL_MAGICS:
        return None
    if _parses(text):
        return text
    for mask in (_MAGIC_MASK, _MAGIC_PREFIX):  # a statement where one fits its indentation, else a comment
        masked = _MAGIC_LINE.sub(lambda m: m.group(1) + mask, text)
        if masked != text and _parses(masked):
            cell.masked = True
            return masked
    return None


@dataclass
class _Module:
    text: str
    cells: list[_Cell]

    def locate(self, line: int) -> tuple[_Cell, int]:
        for cell in reversed(self.cells):
            if line >= cell.first_line:
                return cell, line - cell.first_line + 1
        raise AssertionError(f"line {line} is before the first cell")


def _module(cells: Sequence[_Cell]) -> _Module:
    parts: list[str] = []
    used: list[_Cell] = []
    line = 1
    for cell in cells:
        text = _python_text(cell)
        if text is None:
            continue
        if used:
            parts.append(f"{_MARKER}{cell.number}\n")
            line += 1
        if not text.endswith(("\n", "\r")):
            text += "\n"
        cell.first_line = line
        line += len(_NEWLINE.findall(text))
        parts.append(text)
        used.append(cell)
    return _Module("".join(parts), used)


def _analysis(text: str) -> tuple[_Module, list[_Cell]]:
    document, cells = _load(text)
    if not _is_python(document):
        return _Module("", []), cells
    return _module(cells), cells


def _cell_error(exc: engine.SourceError, module: _Module, path: str) -> engine.SourceError:
    if exc.line is None or not module.cells:
        return exc
    cell, line = module.locate(exc.line)
    return engine.SourceError(f"cell {cell.number}:{line}: {exc}")


# ---------------------------------------------------------------- public API


def check_notebook(text: str, path: str = "<notebook>", *, settings: engine.Settings | None = None) -> list[CellFinding]:
    """The findings in the notebook ``text`` (its JSON), each with its cell and cell-relative position."""
    module, _cells = _analysis(text)
    if not module.cells:
        return []
    try:
        findings = engine.check_source(module.text, path, settings=settings)
    except engine.SourceError as exc:
        raise _cell_error(exc, module, path) from None
    return _in_cells(findings, module, path)


def fix_notebook(text: str, path: str = "<notebook>", *, settings: engine.Settings | None = None) -> str:
    """``text`` with the fixable findings of its code cells rewritten; the same text when there is none."""
    return fix_and_check_notebook(text, path, settings=settings).text


def fix_and_check_notebook(text: str, path: str = "<notebook>", *,
                           settings: engine.Settings | None = None) -> engine.FixResult:
    """:func:`check_notebook` and :func:`fix_notebook` from one analysis (:func:`np2torch.lint.engine.fix_and_check`):
    the findings, the fixed notebook's text and the findings left in it, as :class:`CellFinding`."""
    module, _cells = _analysis(text)
    if not module.cells:
        return engine.FixResult((), text, ())
    try:
        # An `__init__.py` path keeps every import (see the module docstring).
        result = engine.fix_and_check(module.text, os.path.join(path, "__init__.py"), settings=settings)
    except engine.SourceError as exc:
        raise _cell_error(exc, module, path) from None
    findings = tuple(_in_cells(result.findings, module, path))
    if result.text == module.text:
        return engine.FixResult(findings, text, findings)
    fixed, fixed_module = _spliced(text, module, result.text)
    return engine.FixResult(findings, fixed, tuple(_in_cells(result.remaining, fixed_module, path)))


def fix_notebook_findings(text: str, findings: Sequence[CellFinding], path: str = "<notebook>", *,
                          settings: engine.Settings | None = None) -> str:
    """``text`` with only ``findings`` (from :func:`check_notebook` of this text) rewritten:
    :func:`np2torch.lint.engine.fix_findings` for a notebook, an editor's fix of one finding."""
    module, _cells = _analysis(text)
    first_lines = {cell.number: cell.first_line for cell in module.cells}
    wanted = [dataclasses.replace(finding, line=first_lines[finding.cell] + finding.line - 1,
                                  end_line=first_lines[finding.cell] + finding.end_line - 1)
              for finding in findings if finding.cell in first_lines]
    if not wanted:
        return text
    try:
        fixed = engine.fix_findings(module.text, wanted, os.path.join(path, "__init__.py"), settings=settings)
    except engine.SourceError as exc:
        raise _cell_error(exc, module, path) from None
    return text if fixed == module.text else _spliced(text, module, fixed)[0]


def _spliced(text: str, module: _Module, fixed_text: str) -> tuple[str, _Module]:
    """The notebook ``text`` with its cells' sources replaced by their pieces of the fixed module, and that module."""
    pieces, fixed_module = _split(fixed_text, module)
    ascii_only = text.isascii()
    edits = []
    for cell, piece in zip(module.cells, pieces):
        # The cell keeps its own trailing newlines (the fixer may add a blank line after its import).
        piece = piece.rstrip("\r\n") + cell.text[len(cell.text.rstrip("\r\n")):]
        if cell.masked:
            piece = piece.replace(_MAGIC_MASK, "").replace(_MAGIC_PREFIX, "")
        if piece != cell.text:
            edits.append((cell.span, _source_json(text[cell.span[0]:cell.span[1]], cell.value, piece, ascii_only)))
    fixed = text
    for (start, end), replacement in sorted(edits, reverse=True):
        fixed = fixed[:start] + replacement + fixed[end:]
    return fixed, fixed_module


def module_text(text: str) -> str:
    """The notebook's Python cells as the one module the engine analyses (empty when its kernel is not
    Python): what the project index reads (a notebook that compiles a function of the project);
    ``NotebookError`` if not a notebook."""
    return _analysis(text)[0].text


def cell_sources(text: str) -> dict[int, str]:
    """Each code cell's source by cell number (as findings number cells); ``NotebookError`` if not a notebook."""
    _document, cells = _load(text)
    return {cell.number: cell.text for cell in cells}


def add_noqa_notebook(text: str, lines: Mapping[tuple[int, int], Sequence[str]]) -> str:
    """The notebook ``text`` with each ``(cell, line) -> codes`` of ``lines`` suppressed by a ``# noqa`` on that
    line of that cell (:func:`np2torch.lint.suppress.add_noqa_lines`); only the changed cells' ``source`` values
    are rewritten, every other byte kept (as a fix keeps them).  A line no comment can end is left as it is."""
    _document, cells = _load(text)
    edits = []
    for cell in cells:
        wanted = {line: codes for (number, line), codes in lines.items() if number == cell.number}
        python = _python_text(cell) if wanted else None
        if python is None:
            continue
        try:
            edited, _refused = add_noqa_lines(python, wanted)
        except ValueError:  # the cell does not tokenize: no comment is placed in it
            continue
        if cell.masked:
            edited = edited.replace(_MAGIC_PREFIX, "")
        if edited != cell.text:
            edits.append((cell.span, _source_json(text[cell.span[0]:cell.span[1]], cell.value, edited, text.isascii())))
    for (start, end), replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _in_cells(findings: Sequence[engine.Finding], module: _Module, path: str) -> list[CellFinding]:
    """``findings`` of the joined ``module`` as findings of ``path``'s cells."""
    located = []
    for finding in findings:
        cell, line = module.locate(finding.line)
        end_line = finding.end_line - cell.first_line + 1
        fields = {**finding.__dict__, "path": path, "line": line, "end_line": end_line}
        located.append(CellFinding(**fields, cell=cell.number))
    return located


def _split(fixed: str, module: _Module) -> tuple[list[str], _Module]:
    """The fixed module cut back into the cells' texts at the markers, and the fixed module with each cell
    at its first line in it (the import a fix adds moves the lines below it)."""
    marks = list(_MARKER_LINE.finditer(fixed))
    wanted = [cell.number for cell in module.cells[1:]]
    if [int(m.group(1)) for m in marks] != wanted:
        raise engine.FixError("the fix moved a notebook cell boundary; notebook left unchanged")
    bounds = [0, *(m.start() for m in marks), len(fixed)]
    starts = [0, *(m.end() for m in marks)]
    cells = [dataclasses.replace(cell, first_line=len(_NEWLINE.findall(fixed, 0, start)) + 1)
             for cell, start in zip(module.cells, starts)]
    return [fixed[starts[k]:bounds[k + 1]] for k in range(len(module.cells))], _Module(fixed, cells)


def _source_json(raw: str, value: object, new_text: str, ascii_only: bool) -> str:
    """The JSON text for a cell's new source, in the style of the original value ``raw``."""
    if not isinstance(value, list):
        return json.dumps(new_text, ensure_ascii=ascii_only)
    lines = new_text.split("\n")
    new_lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    items = _items(raw, 0)
    tokens: dict[str, str] = {}
    for (start, end), line in zip(items, value):
        tokens.setdefault(line, raw[start:end])
    if not items:
        lead, sep, trail = "", ", ", ""
    else:
        lead = raw[1:items[0][0]]
        trail = raw[items[-1][1]:-1]
        sep = raw[items[0][1]:items[1][0]] if len(items) > 1 else "," + lead
    body = sep.join(tokens.get(line) or json.dumps(line, ensure_ascii=ascii_only) for line in new_lines)
    if not new_lines:
        return "[]"
    return "[" + lead + body + trail + "]"
