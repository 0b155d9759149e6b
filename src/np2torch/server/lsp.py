"""np2torch's language server, on pygls: the findings of each open file as diagnostics, and code actions.

What it serves (docs/editors.md):

* **Diagnostics** on open, change and save of a Python file, and of a notebook's
  code cells where the client syncs notebook documents (its cells are analysed
  as one module, as ``np2torch check`` reads an ``.ipynb``); each names its rule,
  and the code links to the rule's page.
* **Code actions**: a quick fix per fixable finding (that finding alone),
  ``Disable NPTxxx for this line`` (a ``# noqa``, merged into the line's own),
  and ``source.fixAll.np2torch``: what ``np2torch fix`` makes of the text.
* **Hover** on a finding: its rule, what it finds, and the fix or why there is none.

Settings are those ``np2torch check --force-exclude`` gives the file: the
configuration nearest to it (``.np2torch.toml``, ``np2torch.toml`` or
``[tool.np2torch]`` in ``pyproject.toml``), read again when one of those changes
(watched where the client can, on saving one in the editor, and else looked at
before each analysis).  An excluded file gets no diagnostics; a broken config gets
one diagnostic naming it.  Unsafe fixes are offered only when configured:
``np2torch server --unsafe-fixes``, or ``{"unsafeFixes": true}`` in the client's
initialization options or in its ``np2torch`` settings
(``workspace/didChangeConfiguration``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Callable, Sequence
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from np2torch import __version__
from np2torch.cli.config import CONFIG_NAMES, ConfigError, ConfigFinder, Overrides, RunSettings, settings_for_file
from np2torch.lint import engine, notebook
from np2torch.lint.model import CellFinding, Finding
from np2torch.lint.pages import rule_url
from np2torch.lint.rules import RULES_BY_CODE
from np2torch.lint.suppress import add_noqa
from np2torch.server.edits import line_edits, line_start, line_texts

NAME = "np2torch"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.np2torch"
"""The fix-all action's kind: ``"source.fixAll.np2torch": "explicit"`` in VS Code's ``codeActionsOnSave``."""
NOTEBOOK_FIX_ALL = "notebook.source.fixAll.np2torch"
"""The same for a whole notebook, answered only when asked for by name (VS Code's ``notebook.codeActionsOnSave``)."""
PYTHON_SUFFIXES = (".py", ".pyi")


# ---------------------------------------------------------------- what a document holds


@dataclass(frozen=True)
class Analysis:
    """One document's (or one notebook's) findings, and what they were computed from."""

    text: str
    """The text analysed: the document's, or the notebook's cells as an ``.ipynb`` JSON text."""
    path: str
    settings: RunSettings | None
    """``None``: the file is excluded, or its config is broken (:attr:`error`)."""
    findings: tuple[Finding, ...] = ()
    error: str | None = None
    cells: tuple[str, ...] = ()
    """A notebook's cell document URIs, in cell order (a :class:`CellFinding`'s ``cell`` counts from 1)."""


def _path(uri: str) -> str:
    """The file a document is, for its settings; a document that is no file (``untitled:``) is one in the
    working directory, as ``np2torch check -`` reads stdin."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return os.path.abspath(path or "untitled.py")


class Server(LanguageServer):
    def __init__(self, unsafe_fixes: bool = False) -> None:
        sync = types.NotebookDocumentSyncOptions(
            notebook_selector=[types.NotebookDocumentFilterWithCells(
                cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook")],
            save=True,
        )
        super().__init__(NAME, __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=sync)
        self.unsafe_fixes = unsafe_fixes
        self.started_unsafe = unsafe_fixes
        """``np2torch server --unsafe-fixes``: no client setting turns them off."""
        self.finder = ConfigFinder()
        self.stamps: dict[str, tuple[int, int] | None] = {}
        """Each ``pyproject.toml`` looked for: its modification time and size, ``None`` while there is none."""
        self.analyses: dict[str, tuple[object, Analysis]] = {}
        """Per document or notebook URI: the version analysed and its analysis."""

    # ------------------------------------------------------------ settings

    def settings(self, path: str) -> RunSettings | None:
        return settings_for_file(path, Overrides(unsafe_fixes=self.unsafe_fixes), self.finder)

    def _refresh(self, path: str) -> None:
        if self._configs_changed(path):
            self.finder = ConfigFinder()
            self.analyses.clear()

    def _configs_changed(self, path: str) -> bool:
        """Whether a ``pyproject.toml`` at or above ``path``'s folder changed since it was last looked at: a
        few ``stat`` calls, so that every client sees a config change, also one that watches no files."""
        changed = False
        for candidate in _config_candidates(path):
            stamp = _stamp(candidate)
            if candidate in self.stamps and self.stamps[candidate] != stamp:
                changed = True
            self.stamps[candidate] = stamp
        return changed

    def reload_settings(self) -> None:
        """A ``pyproject.toml`` changed: read every config again and lint the open documents anew."""
        self.finder = ConfigFinder()
        self.stamps.clear()
        self.analyses.clear()
        for uri in list(self.workspace.notebook_documents):
            self.publish_notebook(uri)
        for uri, document in list(self.workspace.text_documents.items()):
            if self.workspace.get_notebook_document(cell_uri=uri) is None and _is_python(document):
                self.publish(uri)

    # ------------------------------------------------------------ analysis

    def analyse(self, document: TextDocument) -> Analysis:
        path = _path(document.uri)
        self._refresh(path)
        cached = self.analyses.get(document.uri)
        if cached is not None and cached[0] == document.version and cached[1].text == document.source:
            return cached[1]
        text = document.source
        analysis = self._analysed(text, path, lambda settings: engine.check_source(text, path, settings=settings))
        self.analyses[document.uri] = (document.version, analysis)
        return analysis

    def analyse_notebook(self, uri: str) -> Analysis | None:
        document = self.workspace.get_notebook_document(notebook_uri=uri)
        if document is None:
            return None
        text, cells = _notebook_json(document, self.workspace.text_documents)
        path = _path(uri)
        self._refresh(path)
        cached = self.analyses.get(uri)
        if cached is not None and cached[1].text == text and cached[1].cells == cells:
            return cached[1]
        analysis = self._analysed(text, path, lambda settings: notebook.check_notebook(text, path, settings=settings))
        analysis = Analysis(analysis.text, path, analysis.settings, analysis.findings, analysis.error, cells)
        self.analyses[uri] = (document.version, analysis)
        return analysis

    def _analysed(self, text: str, path: str, check: Callable[[engine.Settings], Sequence[Finding]]) -> Analysis:
        try:
            settings = self.settings(path)
        except ConfigError as exc:
            return Analysis(text, path, None, error=f"np2torch: {exc}")
        if settings is None:
            return Analysis(text, path, None)
        try:
            findings = tuple(check(settings.lint))
        except engine.SourceError:  # mid-edit text that does not parse: the editor's Python support says why
            findings = ()
        return Analysis(text, path, settings, findings)

    # ------------------------------------------------------------ diagnostics

    def publish(self, uri: str) -> None:
        notebook_uri = self._notebook_of(uri)
        if notebook_uri is not None:
            self.publish_notebook(notebook_uri)
            return
        document = self.workspace.get_text_document(uri)
        analysis = self.analyse(document)
        diagnostics = [self.diagnostic(document, finding) for finding in analysis.findings]
        if analysis.error:
            diagnostics.append(_error_diagnostic(analysis.error))
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=document.version))

    def publish_notebook(self, uri: str) -> None:
        analysis = self.analyse_notebook(uri)
        if analysis is None:
            return
        synced = self.workspace.text_documents
        per_cell: dict[str, list[types.Diagnostic]] = {cell: [] for cell in analysis.cells if unquote(cell) in synced}
        for finding in analysis.findings:
            cell = _cell_uri(analysis, finding)
            if cell in per_cell:
                per_cell[cell].append(self.diagnostic(self.workspace.get_text_document(cell), finding))
        if analysis.error and per_cell:
            per_cell[next(iter(per_cell))].append(_error_diagnostic(analysis.error))
        for cell, diagnostics in per_cell.items():
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell, diagnostics=diagnostics))

    def clear(self, uri: str) -> None:
        self.analyses.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def diagnostic(self, document: TextDocument, finding: Finding) -> types.Diagnostic:
        return types.Diagnostic(
            range=_range(document, finding),
            message=finding.message,
            severity=types.DiagnosticSeverity.Warning,
            code=finding.code,
            code_description=types.CodeDescription(href=rule_url(finding.code)),
            source=NAME,
        )

    # ------------------------------------------------------------ code actions and hover

    def findings_at(self, uri: str, start: types.Position, end: types.Position) -> tuple[Analysis | None, list[Finding]]:
        """The analysis that holds document ``uri`` and its findings touching ``start``..``end`` (client units)."""
        notebook_uri = self._notebook_of(uri)
        document = self.workspace.get_text_document(uri)
        if notebook_uri is not None:
            analysis = self.analyse_notebook(notebook_uri)
            mine = [f for f in analysis.findings if _cell_uri(analysis, f) == uri] if analysis else []
        elif _is_python(document):
            analysis = self.analyse(document)
            mine = list(analysis.findings)
        else:
            return None, []
        lines = line_texts(document.source)
        first, last = _server_position(document, lines, start), _server_position(document, lines, end)
        return analysis, [f for f in mine if (f.line - 1, f.column - 1) <= last and first <= (f.end_line - 1, f.end_column - 1)]

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        analysis, findings = self.findings_at(uri, params.range.start, params.range.end)
        if analysis is None or analysis.settings is None:
            return []
        document = self.workspace.get_text_document(uri)
        actions: list[types.CodeAction] = []
        if _wanted(params.context.only, types.CodeActionKind.QuickFix.value):
            for finding in findings:
                if finding.fixable:
                    actions += self._quick_fix(document, analysis, finding)
            suppressed: set[tuple[int, str]] = set()
            for finding in findings:
                if (finding.line, finding.code) not in suppressed:
                    suppressed.add((finding.line, finding.code))
                    actions += self._disable(document, finding)
        if any(f.fixable for f in analysis.findings):
            if _wanted(params.context.only, FIX_ALL):
                actions += self._fix_all(document, analysis, FIX_ALL)
            if analysis.cells and params.context.only and _wanted(params.context.only, NOTEBOOK_FIX_ALL):
                actions += self._fix_all(document, analysis, NOTEBOOK_FIX_ALL)
        return actions

    def _quick_fix(self, document: TextDocument, analysis: Analysis, finding: Finding) -> list[types.CodeAction]:
        assert analysis.settings is not None
        try:
            if isinstance(finding, CellFinding):
                fixed = notebook.fix_notebook_findings(analysis.text, [finding], analysis.path,
                                                       settings=analysis.settings.lint)
                changes = self._cell_edits(analysis, fixed)
            else:
                fixed = engine.fix_findings(analysis.text, [finding], analysis.path, settings=analysis.settings.lint)
                changes = {document.uri: _text_edits(document, fixed)}
        except (engine.SourceError, engine.FixError) as exc:
            self._log_no_fix(exc)
            return []
        return [types.CodeAction(
            title=f"{finding.fix_title or 'Fix'} ({finding.code})",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[self.diagnostic(document, finding)],
            is_preferred=True,
            edit=types.WorkspaceEdit(changes=changes),
        )]

    def _log_no_fix(self, exc: Exception) -> None:
        """A fix that cannot be made is no action; the client's log says why (a :class:`FixError` is a bug)."""
        self.window_log_message(types.LogMessageParams(types.MessageType.Warning, f"{NAME}: no fix: {exc}"))

    def _disable(self, document: TextDocument, finding: Finding) -> list[types.CodeAction]:
        try:
            suppressed = add_noqa(document.source, finding.line, [finding.code])
        except ValueError:
            return []  # the line ends inside a string or continues: no comment can stand there
        if suppressed == document.source:
            return []
        return [types.CodeAction(
            title=f"Disable {finding.code} for this line",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[self.diagnostic(document, finding)],
            edit=types.WorkspaceEdit(changes={document.uri: _text_edits(document, suppressed)}),
        )]

    def _fix_all(self, document: TextDocument, analysis: Analysis, kind: str) -> list[types.CodeAction]:
        assert analysis.settings is not None
        try:
            if analysis.cells:
                fixed = notebook.fix_notebook(analysis.text, analysis.path, settings=analysis.settings.lint)
                changes = self._cell_edits(analysis, fixed)
            else:
                fixed = engine.fix_source(analysis.text, analysis.path, settings=analysis.settings.lint)
                changes = {document.uri: _text_edits(document, fixed)}
        except (engine.SourceError, engine.FixError) as exc:
            self._log_no_fix(exc)
            return []
        return [types.CodeAction(title="np2torch: fix all fixable findings", kind=kind,
                                 edit=types.WorkspaceEdit(changes=changes))]

    def _cell_edits(self, analysis: Analysis, fixed: str) -> dict[str, list[types.TextEdit]]:
        cells = json.loads(fixed)["cells"]
        changes = {}
        for uri, cell in zip(analysis.cells, cells):
            document = self.workspace.get_text_document(uri)
            if cell["cell_type"] == "code" and cell["source"] != document.source:
                changes[uri] = _text_edits(document, cell["source"])
        return changes

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        _analysis, findings = self.findings_at(params.text_document.uri, params.position, params.position)
        if not findings:
            return None
        return types.Hover(contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(_explain(finding) for finding in findings)))

    def _notebook_of(self, uri: str) -> str | None:
        document = self.workspace.get_notebook_document(cell_uri=uri)
        return None if document is None else document.uri


# ---------------------------------------------------------------- helpers


def _is_python(document: TextDocument) -> bool:
    return document.language_id == "python" or document.uri.endswith(PYTHON_SUFFIXES)


def _wanted(only: Sequence[str] | None, kind: str) -> bool:
    """Whether the client asks for actions of ``kind`` (``source`` asks for ``source.fixAll.np2torch`` too)."""
    return not only or any(kind == asked or kind.startswith(f"{asked}.") for asked in only)


def _notebook_json(document: types.NotebookDocument, texts: dict[str, TextDocument]) -> tuple[str, tuple[str, ...]]:
    """The notebook's cells as an ``.ipynb`` text (what :mod:`np2torch.lint.notebook` reads) and their URIs.

    A cell the client did not sync (markdown, another language) stands as a markdown cell, so that the
    cell numbers are the notebook's."""
    cells = []
    for cell in document.cells:
        text = texts.get(unquote(cell.document))
        code = cell.kind == types.NotebookCellKind.Code and text is not None and text.language_id == "python"
        cells.append({"cell_type": "code" if code else "markdown", "source": text.source if code and text else ""})
    metadata: dict[str, object] = document.metadata if isinstance(document.metadata, dict) else {}
    body = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(body), tuple(cell.document for cell in document.cells)


def _config_candidates(path: str) -> list[str]:
    """The configuration files that may hold the settings of ``path`` (:class:`ConfigFinder` looks there)."""
    folder = os.path.dirname(path)
    found = [os.path.join(folder, name) for name in CONFIG_NAMES]
    while os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
        found += [os.path.join(folder, name) for name in CONFIG_NAMES]
    return found


def _is_config(uri: str) -> bool:
    return uri.rpartition("/")[2] in CONFIG_NAMES


def _unsafe_fixes_option(options: object) -> bool | None:
    """``unsafeFixes`` in a client's initialization options or ``np2torch`` settings, when it is given."""
    if isinstance(options, dict) and isinstance(options.get(NAME), dict):
        options = options[NAME]  # {"np2torch": {...}}, as a client sends a settings section
    if isinstance(options, dict) and isinstance(options.get("unsafeFixes"), bool):
        return bool(options["unsafeFixes"])
    return None


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


def _cell_uri(analysis: Analysis, finding: Finding) -> str | None:
    if not isinstance(finding, CellFinding) or not 0 < finding.cell <= len(analysis.cells):
        return None
    return analysis.cells[finding.cell - 1]


def _client_position(document: TextDocument, lines: list[str], line: int, column: int) -> types.Position:
    """0-based ``line`` and ``column`` in characters -> the client's position encoding (UTF-16 unless agreed)."""
    text = lines[line] if line < len(lines) else ""
    return types.Position(line=line, character=document.position_codec.client_num_units(text[:column]))


def _server_position(document: TextDocument, lines: list[str], position: types.Position) -> tuple[int, int]:
    text = lines[position.line] if position.line < len(lines) else ""
    units = 0
    for column, char in enumerate(text):
        if units >= position.character:
            return position.line, column
        units += document.position_codec.client_num_units(char)
    return position.line, len(text)


def _range(document: TextDocument, finding: Finding) -> types.Range:
    lines = line_texts(document.source)
    return types.Range(start=_client_position(document, lines, finding.line - 1, finding.column - 1),
                       end=_client_position(document, lines, finding.end_line - 1, finding.end_column - 1))


def _error_diagnostic(message: str) -> types.Diagnostic:
    start = types.Position(line=0, character=0)
    return types.Diagnostic(range=types.Range(start=start, end=start), message=message,
                            severity=types.DiagnosticSeverity.Error, source=NAME)


def _text_edits(document: TextDocument, new: str) -> list[types.TextEdit]:
    """The edits that turn the document's text into ``new``, changed lines only."""
    old = document.source
    lines = line_texts(old)
    edits = []
    for edit in line_edits(old, new):
        start, end = line_start(old, edit.start), line_start(old, edit.end)
        edits.append(types.TextEdit(
            range=types.Range(start=_client_position(document, lines, *start),
                              end=_client_position(document, lines, *end)),
            new_text=edit.text))
    return edits


def _explain(finding: Finding) -> str:
    rule = RULES_BY_CODE[finding.code]
    fix = f"**Fix**: {finding.fix_title}." if finding.fixable else f"**No fix**: {finding.reason or 'none available'}."
    return (f"**{finding.code}** `{rule.name}`: {rule.summary}\n\n{finding.message}\n\n{fix}\n\n"
            f"[{finding.code} rule page]({rule_url(finding.code)})")


# ---------------------------------------------------------------- the protocol


def make_server(unsafe_fixes: bool = False) -> Server:
    server = Server(unsafe_fixes)

    @server.feature(types.INITIALIZE)
    def initialize(ls: Server, params: types.InitializeParams) -> None:
        ls.unsafe_fixes = ls.unsafe_fixes or bool(_unsafe_fixes_option(params.initialization_options))

    @server.feature(types.INITIALIZED)
    def initialized(ls: Server, _params: types.InitializedParams) -> None:
        watched = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
        if watched and watched.dynamic_registration:
            watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_NAMES]
            ls.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
                id=f"{NAME}-config", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: Server, params: types.DidOpenTextDocumentParams) -> None:
        if _is_python(ls.workspace.get_text_document(params.text_document.uri)):
            ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: Server, params: types.DidChangeTextDocumentParams) -> None:
        if _is_python(ls.workspace.get_text_document(params.text_document.uri)):
            ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: Server, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if _is_config(uri):
            ls.reload_settings()
        elif _is_python(ls.workspace.get_text_document(uri)):
            ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: Server, params: types.DidCloseTextDocumentParams) -> None:
        ls.clear(params.text_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: Server, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.publish_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: Server, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.publish_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: Server, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.publish_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: Server, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.analyses.pop(params.notebook_document.uri, None)
        for cell in params.cell_text_documents:
            ls.clear(cell.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files(ls: Server, params: types.DidChangeWatchedFilesParams) -> None:
        if any(_is_config(change.uri) for change in params.changes):
            ls.reload_settings()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def configuration(ls: Server, params: types.DidChangeConfigurationParams) -> None:
        unsafe = _unsafe_fixes_option(params.settings)
        if unsafe is not None and unsafe != ls.unsafe_fixes:
            ls.unsafe_fixes = unsafe or ls.started_unsafe
            ls.reload_settings()

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL, NOTEBOOK_FIX_ALL], resolve_provider=False))
    def code_action(ls: Server, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: Server, params: types.HoverParams) -> types.Hover | None:
        return ls.hover(params)

    return server


def serve(unsafe_fixes: bool = False) -> None:
    """Serve one client on stdin and stdout until it exits."""
    make_server(unsafe_fixes).start_io()


__all__ = ["FIX_ALL", "NOTEBOOK_FIX_ALL", "Server", "make_server", "serve"]
