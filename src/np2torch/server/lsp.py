"""np2torch's language server, on pygls: the findings of each open file as diagnostics, and code actions.

What it serves (docs/editors.md):

* **Diagnostics** on open, change and save of a Python file, and of a notebook's
  code cells where the client syncs notebook documents (its cells are analysed
  as one module, as ``np2torch check`` reads an ``.ipynb``); each names its rule,
  and the code links to the rule's page.  Pushed (``publishDiagnostics``), or
  pulled (``textDocument/diagnostic``) by a client that says it pulls.
* **Code actions**: a quick fix per fixable finding in the range asked about (that
  finding alone), ``Disable NPTxxx for this line`` (a ``# noqa``, merged into the
  line's own), and ``source.fixAll.np2torch``: what ``np2torch fix`` makes of the
  text, computed when the client resolves the action (``codeAction/resolve``).
* **Hover** on a finding: its rule, what it finds, and the fix or why there is none.
* **Commands** (``workspace/executeCommand``): ``np2torch.applyAutofix`` (fix all),
  ``np2torch.showSettings`` (a file's settings), ``np2torch.printDebugInformation``.

Latest wins: a document is analysed in a worker thread (:mod:`.worker`), one
analysis at a time, after a pause in the edits (half the document's last analysis
time, at most :data:`MAX_DELAY`); an edit stops the analysis under way of the
version it leaves, and the result of a version the document has left is never
published.  Each analysis splits the text into lines once (:class:`LineIndex`),
and every position is counted from that.

Settings are those ``np2torch check --force-exclude`` gives the file: the
configuration nearest to it (``.np2torch.toml``, ``np2torch.toml`` or
``[tool.np2torch]`` in ``pyproject.toml``), read again when one of those changes
(watched where the client can, on saving one in the editor, and else looked at
before each analysis), with the editor's settings (:mod:`.options`) on top.  An
excluded file gets no diagnostics; a broken config gets one diagnostic naming it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import unquote

from cattrs import BaseValidationError, transform_error
from cattrs.v import format_exception
from lsprotocol import types
from pygls.exceptions import JsonRpcException, PyglsError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCProtocol, JsonRPCRequestMessage
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from np2torch import __version__
from np2torch.cli.cache import cache_folder
from np2torch.cli.config import CONFIG_NAMES, ConfigError, ConfigFinder, RunSettings, settings_for_file
from np2torch.cli.show import settings_report
from np2torch.lint import engine, notebook
from np2torch.lint.model import INVALID_SYNTAX, CellFinding, Finding, SourceError
from np2torch.lint.pages import rule_url
from np2torch.lint.rules import RULES_BY_CODE
from np2torch.lint.suppress import add_noqa
from np2torch.server.edits import spans
from np2torch.server.index import Codec, LineIndex
from np2torch.server.options import LOG_LEVELS, ClientSettings, client_settings, merged, section
from np2torch.server.worker import Superseded, Worker

NAME = "np2torch"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.np2torch"
"""The fix-all action's kind: ``"source.fixAll.np2torch": "explicit"`` in VS Code's ``codeActionsOnSave``."""
NOTEBOOK_FIX_ALL = "notebook.source.fixAll.np2torch"
"""The same for a whole notebook, answered only when asked for by name (VS Code's ``notebook.codeActionsOnSave``)."""
APPLY_AUTOFIX = "np2torch.applyAutofix"
SHOW_SETTINGS = "np2torch.showSettings"
DEBUG_INFORMATION = "np2torch.printDebugInformation"
PYTHON_SUFFIXES = (".py", ".pyi")
MIN_DELAY = 0.05
MAX_DELAY = 0.5
"""Seconds the edits of a document must pause before it is analysed: half its last analysis, within these."""

log = logging.getLogger("np2torch.server")


# ---------------------------------------------------------------- what a document holds


@dataclass(frozen=True)
class Snapshot:
    """What one analysis reads, taken on the server's event loop: a document or notebook at one version."""

    key: str
    """The document's URI, or the notebook's."""
    token: tuple[object, ...]
    """The settings' generation and the version(s): an analysis with the same token is of the same input."""
    version: int | None
    text: str
    """The document's text, or the notebook's cells as an ``.ipynb`` JSON text."""
    path: str
    codec: Codec
    cells: tuple[str, ...] = ()
    """A notebook's cell document URIs, in cell order (a :class:`CellFinding`'s ``cell`` counts from 1)."""
    cell_texts: Mapping[str, str] = field(default_factory=dict)
    """The text of each cell the client synced."""
    edits: int = 0
    """How many edits (and settings changes) of the document the server had seen: a later one makes it stale."""


@dataclass(frozen=True)
class Analysis:
    """One document's (or one notebook's) findings, their diagnostics, and what they were computed from."""

    snapshot: Snapshot
    settings: RunSettings | None
    """``None``: the file is excluded, or its config is broken (:attr:`error`)."""
    findings: tuple[Finding, ...] = ()
    error: str | None = None
    syntax_error: SourceError | None = None
    """The text does not parse: no findings of its own, the last good ones are still shown."""
    indexes: Mapping[str, LineIndex] = field(default_factory=dict)
    """Per document URI (the notebook's cells), its lines."""
    diagnostics: Mapping[str, list[types.Diagnostic]] = field(default_factory=dict)
    """Per document URI, what is published."""
    good: Mapping[str, list[types.Diagnostic]] = field(default_factory=dict)
    """The diagnostics of the findings of the last version that parsed (kept while the text does not)."""

    @property
    def text(self) -> str:
        return self.snapshot.text

    @property
    def path(self) -> str:
        return self.snapshot.path

    @property
    def cells(self) -> tuple[str, ...]:
        return self.snapshot.cells

    @property
    def result_id(self) -> str:
        return ":".join(map(str, self.snapshot.token))


@dataclass
class Work:
    """What the server did for one document: what ``np2torch.printDebugInformation`` reports."""

    analyses: int = 0
    line_index_builds: int = 0
    indexed_characters: int = 0
    published: list[int | None] = field(default_factory=list)
    """The versions whose diagnostics were pushed, in order."""
    seconds: float = 0.0
    """The last analysis's duration (what the pause before the next one is half of)."""


def _path(uri: str) -> str:
    """The file a document is, for its settings; a document that is no file (``untitled:``) is one in the
    working directory, as ``np2torch check -`` reads stdin."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return os.path.abspath(path or "untitled.py")


@dataclass(frozen=True)
class Unfit:
    """A request or notification whose params do not fit the protocol's types (a hover without ``character``,
    a range at line -1): what pygls would raise in the middle of reading it, leaving the request unanswered."""

    msg_id: int | str | None
    method: str
    request: bool
    reason: str


class Protocol(LanguageServerProtocol):
    """pygls's protocol, answering as the specification says a message that is no JSON-RPC message, a request
    whose params do not fit the protocol's types, and a request pygls would drop (after shutdown, not 2.0)."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        method = data.get("method")
        if "jsonrpc" not in data or not isinstance(method, str) or "error" in data:
            return super().structure_message(data)
        request = "id" in data
        kind = self.get_message_type(method) or (JsonRPCRequestMessage if request else JsonRPCNotification)
        try:
            return self._converter.structure(data, kind)
        except Exception as exc:  # pygls raises here, inside json.loads: nobody would learn the request's id
            msg_id = data.get("id")
            valid_id = isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)
            return Unfit(msg_id if valid_id else None, method, request, _unfit_reason(exc))

    def handle_message(self, message: Any) -> None:
        if isinstance(message, Unfit):
            kind = "request" if message.request else "notification"
            log.error("%s: a %s %s whose params do not fit the protocol: %s", NAME, kind, message.method,
                      message.reason)
            if message.request:  # a notification is never answered
                _answer_error(self, message.msg_id, types.ErrorCodes.InvalidParams,
                              f"Invalid params for {message.method}: {message.reason}")
            return
        if not hasattr(message, "jsonrpc"):  # valid JSON, but no request, notification or response
            msg_id = message.get("id") if isinstance(message, dict) else None
            log.error("%s: not a JSON-RPC message: %.200s", NAME, json.dumps(message))
            _answer_error(self, msg_id if isinstance(msg_id, (int, str)) else None, types.ErrorCodes.InvalidRequest,
                          "Invalid Request: not a JSON-RPC 2.0 message")
            return
        refused = self._refused(message)
        if refused is not None:
            log.warning("%s: request %s refused: %s", NAME, message.method, refused)
            _answer_error(self, message.id, types.ErrorCodes.InvalidRequest, f"Invalid Request: {refused}")
            return
        super().handle_message(message)

    def _refused(self, message: Any) -> str | None:
        """Why pygls would drop this request with a warning and no answer, where the specification asks for
        an Invalid Request error; ``None`` for the others (a notification or response is never answered)."""
        if not (hasattr(message, "id") and hasattr(message, "method")):
            return None
        if message.jsonrpc != JsonRPCProtocol.VERSION:
            return f"jsonrpc must be {JsonRPCProtocol.VERSION!r}, got {message.jsonrpc!r}"
        if self._shutdown and message.method != types.EXIT:
            return "the server is shut down (after shutdown, only exit)"
        return None


def _answer_error(protocol: LanguageServerProtocol, msg_id: int | str | None, code: types.ErrorCodes,
                  message: str) -> None:
    """An error response; ``"id": null`` written out, as the specification asks when the id is unknown (a
    response built from lsprotocol's classes would leave it out)."""
    protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code.value, "message": message}})


def _unfit_reason(exc: Exception) -> str:
    """Where the params go wrong, as cattrs says it (``required field missing @ $.params.position.character``)."""
    if isinstance(exc, BaseValidationError):
        return "; ".join(transform_error(exc, format_exception=_unfit_value))
    return str(exc) or type(exc).__name__


def _unfit_value(exc: BaseException, kind: type | None) -> str:
    """lsprotocol's validators say what is wrong (``Position.line should be in range [0:2147483647], but was
    -1.``); cattrs would say ``invalid value``."""
    return str(exc) if type(exc) is ValueError and str(exc) else format_exception(exc, kind)


class _NoTraceback(logging.Filter):
    """pygls logs a message that is not JSON with its traceback; the server logs it in one line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], json.JSONDecodeError))


class Server(LanguageServer):
    def __init__(self, unsafe_fixes: bool = False) -> None:
        sync = types.NotebookDocumentSyncOptions(
            notebook_selector=[types.NotebookDocumentFilterWithCells(
                cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook")],
            save=True,
        )
        super().__init__(NAME, __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=sync, protocol_cls=Protocol)
        self.started_unsafe = unsafe_fixes
        """``np2torch server --unsafe-fixes``: no client setting turns them off."""
        self.root = Path(os.getcwd())
        self.initial: dict[str, object] = {}
        """The client's initialization options (np2torch's section), what ``didChangeConfiguration`` lays over."""
        self.client = ClientSettings()
        self.overrides = self.client.overrides(unsafe_fixes)
        self.finder: ConfigFinder | None = ConfigFinder()
        self.finder_error: str | None = None
        self.generation = 0
        """Incremented whenever the settings change: part of every :attr:`Snapshot.token`."""
        self.stamps: dict[str, tuple[int, int] | None] = {}
        """Each configuration file looked for: its modification time and size, ``None`` while there is none."""
        self.analyses: dict[str, Analysis] = {}
        """Per document or notebook URI: its latest analysis."""
        self.computing: dict[str, tuple[tuple[object, ...], asyncio.Future[Analysis]]] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}
        """Per document or notebook URI: the analysis and publication waiting for the edits to pause."""
        self.work: dict[str, Work] = {}
        self.edits: dict[str, int] = {}
        """Per document or notebook URI, its edits and settings changes so far (:attr:`Snapshot.edits`)."""
        self.worker: Worker[Analysis] = Worker("np2torch-analysis")
        """Where documents are analysed, one at a time; a document's edit stops its analysis under way."""
        self.pulls = False
        """The client pulls diagnostics (``textDocument/diagnostic``): nothing is pushed."""
        self.resolves = False
        """The client resolves code actions' edits (``codeAction/resolve``): fix-all is computed only then."""
        self.shut_down = False

    # ------------------------------------------------------------ settings

    def configure(self, raw: Mapping[str, object]) -> None:
        """Take the editor's settings; a wrong one is shown to the user and the settings before it stay."""
        try:
            settings, unknown = client_settings(raw)
            finder = settings.finder(self.root)
        except ConfigError as exc:
            self.show(types.MessageType.Error, f"{NAME}: {exc}")
            return
        for warning in unknown:
            log.warning(warning)
        self.client, self.finder, self.finder_error = settings, finder, None
        self.overrides = settings.overrides(self.started_unsafe)
        set_log_level(settings.log_level)

    def settings(self, path: str) -> RunSettings | None:
        if self.finder is None:
            raise ConfigError(self.finder_error or "no configuration")
        return settings_for_file(path, self.overrides, self.finder)

    def _refresh(self, path: str) -> None:
        if self._configs_changed(path):  # found by looking, not told: every open document is stale
            self.reload_settings()

    def _new_finder(self) -> None:
        try:
            self.finder, self.finder_error = self.client.finder(self.root), None
        except ConfigError as exc:  # the editor's `configuration` file is gone or broken
            self.finder, self.finder_error = None, str(exc)
        self.generation += 1

    def _configs_changed(self, path: str) -> bool:
        """Whether a configuration file at or above ``path``'s folder changed since it was last looked at: a
        few ``stat`` calls, so that every client sees a config change, also one that watches no files."""
        changed = False
        for candidate in _config_candidates(path):
            stamp = _stamp(candidate)
            if candidate in self.stamps and self.stamps[candidate] != stamp:
                changed = True
            self.stamps[candidate] = stamp
        return changed

    def reload_settings(self) -> None:
        """A configuration (a file, or the editor's) changed: read every config again and lint the open
        documents anew."""
        self._new_finder()
        self.stamps.clear()
        if self.pulls:
            refresh = self.client_capabilities.workspace and self.client_capabilities.workspace.diagnostics
            if refresh and refresh.refresh_support:
                self.workspace_diagnostic_refresh(None)
            return
        for uri in list(self.workspace.notebook_documents):
            self.schedule(uri, at_once=True)
        for uri, document in list(self.workspace.text_documents.items()):
            if self.workspace.get_notebook_document(cell_uri=uri) is None and _is_python(document):
                self.schedule(uri, at_once=True)

    # ------------------------------------------------------------ latest wins

    def key_of(self, uri: str) -> str | None:
        """The URI whose analysis holds document ``uri`` (a cell's is its notebook's); ``None`` when the
        client never opened it."""
        notebook_document = self.workspace.get_notebook_document(cell_uri=uri)
        if notebook_document is not None:
            return notebook_document.uri
        if self.workspace.get_notebook_document(notebook_uri=uri) is not None:
            return uri
        document = self.workspace.text_documents.get(unquote(uri))
        return uri if document is not None and _is_python(document) else None

    def snapshot(self, key: str) -> Snapshot | None:
        notebook_document = self.workspace.get_notebook_document(notebook_uri=key)
        if notebook_document is not None:
            return self._notebook_snapshot(notebook_document)
        document = self.workspace.text_documents.get(unquote(key))
        if document is None:
            return None
        path = _path(key)
        self._refresh(path)
        return Snapshot(key, (self.generation, document.version), document.version, document.source, path,
                        document.position_codec, edits=self.edits.get(key, 0))

    def _notebook_snapshot(self, document: types.NotebookDocument) -> Snapshot:
        texts = self.workspace.text_documents
        text, cells = _notebook_json(document, texts)
        synced = {cell: texts[unquote(cell)] for cell in cells if unquote(cell) in texts}
        path = _path(document.uri)
        self._refresh(path)
        token = (self.generation, document.version, *(synced[cell].version for cell in cells if cell in synced))
        return Snapshot(document.uri, token, None, text, path, self.workspace.position_codec, cells,
                        {cell: doc.source for cell, doc in synced.items()}, self.edits.get(document.uri, 0))

    def delay(self, key: str) -> float:
        """How long the edits of ``key`` must pause before it is analysed again."""
        work = self.work.get(key)
        if work is None or not work.analyses:
            return 0.0
        return min(MAX_DELAY, max(MIN_DELAY, work.seconds / 2))

    def schedule(self, key: str, *, at_once: bool = False) -> None:
        """Analyse ``key`` and publish its diagnostics once its edits pause; a newer call replaces this one."""
        waiting = self.tasks.pop(key, None)
        if waiting is not None:
            waiting.cancel()
        self.stale(key)
        self.tasks[key] = asyncio.ensure_future(self._publish_later(key, 0.0 if at_once else self.delay(key)))

    def stale(self, key: str) -> None:
        """``key`` changed: its analysis under way stops, one waiting for the worker will not start."""
        self.edits[key] = self.edits.get(key, 0) + 1
        self.worker.interrupt(lambda tag: tag == key)

    async def _publish_later(self, key: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        try:
            analysis = await self.analysis(key)
        except Exception:  # a bug: in the client's log, and the other documents go on
            log.exception("%s: analysing %s failed", NAME, key)
            return
        snapshot = self.snapshot(key)
        if analysis is not None and snapshot is not None and snapshot.token == analysis.snapshot.token:
            self.publish(analysis)  # else the document has moved on: its newer version publishes

    async def analysis(self, key: str) -> Analysis | None:
        """The analysis of ``key`` as it is now: the one made already, the one under way, or a new one."""
        while True:
            snapshot = self.snapshot(key)
            if snapshot is None:
                return None
            latest = self.analyses.get(key)
            if latest is not None and latest.snapshot.token == snapshot.token:
                return latest
            running = self.computing.get(key)
            if running is None or running[0] != snapshot.token:
                future = asyncio.wrap_future(self.worker.submit(key, lambda: self.compute(snapshot, latest)))
                future.add_done_callback(lambda done: self._computed(key, snapshot.token, done))
                running = self.computing[key] = (snapshot.token, future)
            try:
                return await asyncio.shield(running[1])
            except Superseded:  # the document changed meanwhile: its new version's
                continue

    def _computed(self, key: str, token: tuple[object, ...], done: asyncio.Future[Analysis]) -> None:
        if key in self.computing and self.computing[key][0] == token:
            del self.computing[key]
        if not done.cancelled() and done.exception() is None and self.key_of(key) == key:
            self.analyses[key] = done.result()  # one worker: analyses end in the order they began

    # ------------------------------------------------------------ analysis (in the worker thread)

    def compute(self, snapshot: Snapshot, previous: Analysis | None) -> Analysis:
        if self.edits.get(snapshot.key, 0) != snapshot.edits:
            raise Superseded(f"{snapshot.key} changed while this analysis waited for the worker")
        started = time.perf_counter()
        work = self.work.setdefault(snapshot.key, Work())
        work.analyses += 1
        analysis = self._analysed(snapshot, previous)
        for index in analysis.indexes.values():
            work.line_index_builds += 1
            work.indexed_characters += sum(map(len, index.lines))
        work.seconds = time.perf_counter() - started
        log.debug("%s: analysed %s (version %s) in %.3f s", NAME, snapshot.key, snapshot.version, work.seconds)
        return analysis

    def _analysed(self, snapshot: Snapshot, previous: Analysis | None) -> Analysis:
        uris = snapshot.cells or (snapshot.key,)
        empty: dict[str, list[types.Diagnostic]] = {uri: [] for uri in uris if not snapshot.cells
                                                    or uri in snapshot.cell_texts}
        try:
            settings = self.settings(snapshot.path)
        except ConfigError as exc:
            error = f"{NAME}: {exc}"
            first = next(iter(empty), None)
            shown = {uri: [_error_diagnostic(error)] if uri == first else [] for uri in empty}
            return Analysis(snapshot, None, error=error, diagnostics=shown)
        if settings is None:
            return Analysis(snapshot, None, diagnostics=empty)
        findings: tuple[Finding, ...]
        try:
            if snapshot.cells:
                findings = tuple(notebook.check_notebook(snapshot.text, snapshot.path, settings=settings.lint))
            else:
                findings = tuple(engine.check_source(snapshot.text, snapshot.path, settings=settings.lint))
        except SourceError as exc:
            return self._unparsed(snapshot, settings, exc, previous, empty)
        texts = snapshot.cell_texts if snapshot.cells else {snapshot.key: snapshot.text}
        indexes = {uri: LineIndex(text) for uri, text in texts.items()}
        diagnostics = {uri: list[types.Diagnostic]() for uri in empty}
        for finding in findings:
            uri = _cell_uri(snapshot, finding) if snapshot.cells else snapshot.key
            if uri in indexes:
                diagnostics[uri].append(_diagnostic(indexes[uri], snapshot.codec, finding))
        return Analysis(snapshot, settings, findings, indexes=indexes, diagnostics=diagnostics, good=diagnostics)

    def _unparsed(self, snapshot: Snapshot, settings: RunSettings, exc: SourceError, previous: Analysis | None,
                  empty: dict[str, list[types.Diagnostic]]) -> Analysis:
        """Text that does not parse (mid-edit): where and why, and the findings of the last text that did."""
        good = previous.good if previous is not None and previous.settings is not None else empty
        shown = {uri: list(good.get(uri, [])) for uri in empty}
        if not snapshot.cells:  # a notebook's cells are joined: the line is no cell's
            index = LineIndex(snapshot.text)
            shown[snapshot.key].append(_syntax_diagnostic(index, snapshot.codec, exc))
            return Analysis(snapshot, settings, syntax_error=exc, indexes={snapshot.key: index}, diagnostics=shown,
                            good=good)
        return Analysis(snapshot, settings, syntax_error=exc, diagnostics=shown, good=good)

    # ------------------------------------------------------------ diagnostics

    def publish(self, analysis: Analysis) -> None:
        if self.pulls:
            return  # the client asks (textDocument/diagnostic), for a notebook's cells too
        work = self.work.setdefault(analysis.snapshot.key, Work())
        work.published.append(analysis.snapshot.version)
        for uri, diagnostics in analysis.diagnostics.items():
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, diagnostics=diagnostics, version=analysis.snapshot.version))

    def clear(self, key: str, uris: Sequence[str]) -> None:
        waiting = self.tasks.pop(key, None)
        if waiting is not None:
            waiting.cancel()
        self.stale(key)
        self.analyses.pop(key, None)
        self.work.pop(key, None)
        if not self.pulls:
            for uri in uris:
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    async def pull(self, params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        uri = params.text_document.uri
        key = self.key_of(uri)
        analysis = None if key is None else await self.analysis(key)
        if analysis is None:  # never opened, or no Python: nothing to say about it
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        if params.previous_result_id == analysis.result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=analysis.result_id)
        return types.RelatedFullDocumentDiagnosticReport(items=list(analysis.diagnostics.get(uri, [])),
                                                         result_id=analysis.result_id)

    # ------------------------------------------------------------ code actions and hover

    def findings_in(self, analysis: Analysis, uri: str, start: types.Position,
                    end: types.Position) -> list[Finding]:
        """The findings of document ``uri`` touching ``start``..``end`` (client units)."""
        index = analysis.indexes.get(uri)
        if index is None:
            return []
        first = index.server_position(analysis.snapshot.codec, start)
        last = index.server_position(analysis.snapshot.codec, end)
        mine = [f for f in analysis.findings if not analysis.cells or _cell_uri(analysis.snapshot, f) == uri]
        return [f for f in mine if (f.line - 1, f.column - 1) <= last and first <= (f.end_line - 1, f.end_column - 1)]

    async def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        key = self.key_of(uri)
        analysis = None if key is None else await self.analysis(key)
        if analysis is None or analysis.settings is None or analysis.syntax_error is not None:
            return []
        findings = self.findings_in(analysis, uri, params.range.start, params.range.end)
        actions: list[types.CodeAction] = []
        if _wanted(params.context.only, types.CodeActionKind.QuickFix.value):
            for finding in findings:
                if finding.fixable:
                    actions += self._quick_fix(uri, analysis, finding)
            suppressed: set[tuple[int, str]] = set()
            for finding in findings:
                if (finding.line, finding.code) not in suppressed:
                    suppressed.add((finding.line, finding.code))
                    actions += self._disable(uri, analysis, finding)
        if self.client.fix_all and any(f.fixable for f in analysis.findings):
            if _wanted(params.context.only, FIX_ALL):
                actions += self._fix_all(uri, analysis, FIX_ALL)
            if analysis.cells and params.context.only and _wanted(params.context.only, NOTEBOOK_FIX_ALL):
                actions += self._fix_all(uri, analysis, NOTEBOOK_FIX_ALL)
        return actions

    def _quick_fix(self, uri: str, analysis: Analysis, finding: Finding) -> list[types.CodeAction]:
        assert analysis.settings is not None
        try:
            if isinstance(finding, CellFinding):
                fixed = notebook.fix_notebook_findings(analysis.text, [finding], analysis.path,
                                                       settings=analysis.settings.lint)
                changes = _cell_edits(analysis, fixed)
            else:
                fixed = engine.fix_findings(analysis.text, [finding], analysis.path, settings=analysis.settings.lint)
                changes = {uri: _text_edits(analysis, uri, fixed)}
        except (engine.SourceError, engine.FixError) as exc:
            _log_no_fix(exc)
            return []
        return [types.CodeAction(
            title=f"{finding.fix_title or 'Fix'} ({finding.code})",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[_diagnostic(analysis.indexes[uri], analysis.snapshot.codec, finding)],
            is_preferred=True,
            edit=types.WorkspaceEdit(changes=changes),
        )]

    def _disable(self, uri: str, analysis: Analysis, finding: Finding) -> list[types.CodeAction]:
        text = analysis.snapshot.cell_texts[uri] if analysis.cells else analysis.text
        try:
            suppressed = add_noqa(text, finding.line, [finding.code])
        except ValueError:
            return []  # the line ends inside a string or continues: no comment can stand there
        if suppressed == text:
            return []
        return [types.CodeAction(
            title=f"Disable {finding.code} for this line",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[_diagnostic(analysis.indexes[uri], analysis.snapshot.codec, finding)],
            edit=types.WorkspaceEdit(changes={uri: _text_edits(analysis, uri, suppressed)}),
        )]

    def _fix_all(self, uri: str, analysis: Analysis, kind: str) -> list[types.CodeAction]:
        action = types.CodeAction(title="np2torch: fix all fixable findings", kind=kind, data={"uri": uri})
        if self.resolves:
            return [action]  # the edit is made when the client resolves it (codeAction/resolve)
        edit = fix_all_edit(analysis, uri)
        if edit is None:
            return []
        action.edit = edit
        return [action]

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        uri = action.data.get("uri") if isinstance(action.data, dict) else None
        key = self.key_of(uri) if isinstance(uri, str) else None
        analysis = None if key is None else await self.analysis(key)
        if analysis is not None and analysis.settings is not None and analysis.syntax_error is None:
            assert isinstance(uri, str)
            action.edit = fix_all_edit(analysis, uri) or types.WorkspaceEdit(changes={})
        return action

    async def hover(self, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        key = self.key_of(uri)
        analysis = None if key is None else await self.analysis(key)
        findings = [] if analysis is None else self.findings_in(analysis, uri, params.position, params.position)
        if not findings:
            return None
        return types.Hover(contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(_explain(finding) for finding in findings)))

    # ------------------------------------------------------------ commands

    async def apply_autofix(self, uri: str) -> None:
        """Apply every safe fix (and the unsafe ones where configured) to document ``uri``, as ``np2torch fix``."""
        key = self.key_of(uri)
        analysis = None if key is None else await self.analysis(key)
        if analysis is None or analysis.settings is None or analysis.syntax_error is not None:
            raise JsonRpcException.of(ValueError(f"{uri}: no open Python document np2torch can fix"))
        edit = fix_all_edit(analysis, uri)
        if edit is not None and edit.changes:
            await self.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=f"{NAME}: fix all"))

    def show_settings(self, uri: str) -> str:
        """What ``np2torch check --show-settings FILE`` prints for document ``uri``, and the editor's settings."""
        if self.finder is None:
            return f"{NAME}: {self.finder_error}"
        path = _path(uri)
        config = self.finder.project()
        try:
            lines = list(settings_report(path, self.finder, self.overrides, fmt=config.output_format or "full",
                                         cache=cache_folder(None, config)))
        except ConfigError as exc:
            return f"{NAME}: {exc}"
        return "\n".join([*lines, "", "# Editor settings", json.dumps(dict(self.client.raw), sort_keys=True)])

    def debug_information(self) -> dict[str, object]:
        return {
            "version": __version__, "pullDiagnostics": self.pulls, "resolveCodeActions": self.resolves,
            "interruptedAnalyses": self.worker.interruptions,
            "settings": dict(self.client.raw), "logLevel": self.client.log_level,
            "documents": {key: {"analyses": work.analyses, "lineIndexBuilds": work.line_index_builds,
                                "indexedCharacters": work.indexed_characters, "published": work.published,
                                "lastAnalysisSeconds": round(work.seconds, 6)}
                          for key, work in list(self.work.items())},  # the worker adds to it
        }

    # ------------------------------------------------------------ errors

    def show(self, kind: types.MessageType, message: str) -> None:
        log.log(logging.ERROR if kind == types.MessageType.Error else logging.WARNING, message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def report_server_error(self, error: Exception, source: type[PyglsError] | type[JsonRpcException]) -> None:
        if isinstance(error, json.JSONDecodeError):  # the specification's answer: a Parse error, id null
            log.error("%s: a message that is not JSON: %s", NAME, error)
            _answer_error(self.protocol, None, types.ErrorCodes.ParseError, f"Parse error: {error}")
            return
        super().report_server_error(error, source)


# ---------------------------------------------------------------- helpers


def _is_python(document: TextDocument) -> bool:
    return document.language_id == "python" or document.uri.endswith(PYTHON_SUFFIXES)


def _wanted(only: Sequence[str] | None, kind: str) -> bool:
    """Whether the client asks for actions of ``kind`` (``source`` asks for ``source.fixAll.np2torch`` too)."""
    return not only or any(kind == asked or kind.startswith(f"{asked}.") for asked in only)


def _notebook_json(document: types.NotebookDocument, texts: Mapping[str, TextDocument]) -> tuple[str, tuple[str, ...]]:
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


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


def _cell_uri(snapshot: Snapshot, finding: Finding) -> str | None:
    if not isinstance(finding, CellFinding) or not 0 < finding.cell <= len(snapshot.cells):
        return None
    return snapshot.cells[finding.cell - 1]


def _diagnostic(index: LineIndex, codec: Codec, finding: Finding) -> types.Diagnostic:
    return types.Diagnostic(
        range=index.range(codec, finding.line, finding.column, finding.end_line, finding.end_column),
        message=finding.message,
        severity=types.DiagnosticSeverity.Warning,
        code=finding.code,
        code_description=types.CodeDescription(href=rule_url(finding.code)),
        source=NAME,
    )


def _error_diagnostic(message: str) -> types.Diagnostic:
    start = types.Position(line=0, character=0)
    return types.Diagnostic(range=types.Range(start=start, end=start), message=message,
                            severity=types.DiagnosticSeverity.Error, source=NAME)


def _syntax_diagnostic(index: LineIndex, codec: Codec, error: SourceError) -> types.Diagnostic:
    """Where the text stops parsing: the rest of the line from the error's column; an error of code
    ``invalid-syntax`` and no page, its message bare, as ruff's server shows a syntax error (a diagnostic of no
    rule: its id where a rule's code goes)."""
    line = max((error.line or 1) - 1, 0)
    column = max((error.column or 1) - 1, 0)
    text = index.line(line)
    start = index.client_position(codec, line, min(column, len(text)))
    end = index.client_position(codec, line, len(text))
    return types.Diagnostic(range=types.Range(start=start, end=end), message=str(error),
                            severity=types.DiagnosticSeverity.Error, code=INVALID_SYNTAX, source=NAME)


def _text_edits(analysis: Analysis, uri: str, new: str) -> list[types.TextEdit]:
    """The edits that turn document ``uri``'s text, as analysed, into ``new``: changed lines only."""
    old = analysis.snapshot.cell_texts[uri] if analysis.cells else analysis.text
    index, codec = analysis.indexes[uri], analysis.snapshot.codec
    return [types.TextEdit(range=types.Range(start=index.client_position(codec, *start),
                                             end=index.client_position(codec, *end)), new_text=text)
            for start, end, text in spans(old, new)]


def _cell_edits(analysis: Analysis, fixed: str) -> dict[str, list[types.TextEdit]]:
    cells = json.loads(fixed)["cells"]
    changes = {}
    for uri, cell in zip(analysis.cells, cells):
        old = analysis.snapshot.cell_texts.get(uri)
        if cell["cell_type"] == "code" and old is not None and cell["source"] != old:
            changes[uri] = _text_edits(analysis, uri, cell["source"])
    return changes


def fix_all_edit(analysis: Analysis, uri: str) -> types.WorkspaceEdit | None:
    """What ``np2torch fix`` makes of the document (or the whole notebook) ``uri`` belongs to, as edits."""
    assert analysis.settings is not None
    try:
        if analysis.cells:
            fixed = notebook.fix_notebook(analysis.text, analysis.path, settings=analysis.settings.lint)
            changes = _cell_edits(analysis, fixed)
        else:
            fixed = engine.fix_source(analysis.text, analysis.path, settings=analysis.settings.lint)
            changes = {uri: _text_edits(analysis, uri, fixed)}
    except (engine.SourceError, engine.FixError) as exc:
        _log_no_fix(exc)
        return None
    return types.WorkspaceEdit(changes=changes)


def _log_no_fix(exc: Exception) -> None:
    """A fix that cannot be made is no action; the log says why (a :class:`FixError` is a bug)."""
    log.warning("%s: no fix: %s", NAME, exc)


def _explain(finding: Finding) -> str:
    rule = RULES_BY_CODE[finding.code]
    fix = f"**Fix**: {finding.fix_title}." if finding.fixable else f"**No fix**: {finding.reason or 'none available'}."
    return (f"**{finding.code}** `{rule.name}`: {rule.summary}\n\n{finding.message}\n\n{fix}\n\n"
            f"[{finding.code} rule page]({rule_url(finding.code)})")


def _uri_argument(arguments: Sequence[object]) -> str:
    """The document a command is about: ``[{"uri": ..., "version": ...}]`` (as ruff's commands take it) or
    ``["uri"]``."""
    first = arguments[0] if arguments else None
    uri = first.get("uri") if isinstance(first, dict) else first
    if not isinstance(uri, str):
        raise JsonRpcException.of(ValueError('expected the document as an argument: [{"uri": "file:///..."}]'))
    return uri


def set_log_level(level: str) -> None:
    """What the server logs on stderr (the client's log): ``error``, ``warn``, ``info``, ``debug`` or ``trace``
    (which adds pygls's own, every message sent and received)."""
    log.setLevel(LOG_LEVELS[level])
    logging.getLogger("pygls").setLevel(logging.DEBUG if level == "trace" else logging.WARNING)


def _start_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    for name in ("np2torch.server", "pygls"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False
    logging.getLogger("pygls.server").addFilter(_NoTraceback())
    set_log_level("info")


# ---------------------------------------------------------------- the protocol


def make_server(unsafe_fixes: bool = False) -> Server:
    server = Server(unsafe_fixes)
    _lifecycle(server)
    _documents(server)
    _requests(server)
    return server


def _lifecycle(server: Server) -> None:
    """initialize, initialized (the configuration files watched), shutdown."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: Server, params: types.InitializeParams) -> None:
        root = params.root_uri or (params.workspace_folders[0].uri if params.workspace_folders else None)
        if root and root.startswith("file:"):
            ls.root = Path(to_fs_path(root) or os.getcwd())
        capabilities = params.capabilities.text_document
        ls.pulls = bool(capabilities and capabilities.diagnostic)
        support = capabilities and capabilities.code_action and capabilities.code_action.resolve_support
        ls.resolves = bool(support and "edit" in support.properties)
        ls.initial = section(params.initialization_options) or {}
        ls.configure(ls.initial)

    @server.feature(types.INITIALIZED)
    def initialized(ls: Server, _params: types.InitializedParams) -> None:
        watched = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
        if watched and watched.dynamic_registration:
            watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_NAMES]
            ls.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
                id=f"{NAME}-config", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: Server, _params: None) -> None:
        ls.shut_down = True


def _documents(server: Server) -> None:
    """Text documents and notebooks opened, changed, saved and closed; configuration changed."""

    def changed(ls: Server, uri: str, *, at_once: bool = False) -> None:
        key = ls.key_of(uri)
        if key is not None:
            ls.schedule(key, at_once=at_once)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: Server, params: types.DidOpenTextDocumentParams) -> None:
        changed(ls, params.text_document.uri, at_once=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: Server, params: types.DidChangeTextDocumentParams) -> None:
        changed(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: Server, params: types.DidSaveTextDocumentParams) -> None:
        if _is_config(params.text_document.uri):
            ls.reload_settings()
        else:
            changed(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: Server, params: types.DidCloseTextDocumentParams) -> None:
        ls.clear(params.text_document.uri, [params.text_document.uri])

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: Server, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, at_once=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: Server, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: Server, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: Server, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.clear(params.notebook_document.uri, [cell.uri for cell in params.cell_text_documents])

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files(ls: Server, params: types.DidChangeWatchedFilesParams) -> None:
        if any(_is_config(change.uri) for change in params.changes):
            ls.reload_settings()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def configuration(ls: Server, params: types.DidChangeConfigurationParams) -> None:
        given = section(params.settings)
        if given is not None:
            ls.configure(merged(ls.initial, given))
            ls.reload_settings()


def _requests(server: Server) -> None:
    """What the client asks: diagnostics, code actions, hovers, commands."""

    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
        identifier=NAME, inter_file_dependencies=False, workspace_diagnostics=False))
    async def diagnostic(ls: Server, params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        return await ls.pull(params)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL, NOTEBOOK_FIX_ALL], resolve_provider=True))
    async def code_action(ls: Server, params: types.CodeActionParams) -> list[types.CodeAction]:
        return await ls.code_actions(params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: Server, params: types.CodeAction) -> types.CodeAction:
        return await ls.resolve(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: Server, params: types.HoverParams) -> types.Hover | None:
        return await ls.hover(params)

    @server.command(APPLY_AUTOFIX)
    async def apply_autofix(ls: Server, *arguments: object) -> None:
        await ls.apply_autofix(_uri_argument(arguments))

    @server.command(SHOW_SETTINGS)
    def show_settings(ls: Server, *arguments: object) -> str:
        return ls.show_settings(_uri_argument(arguments))

    @server.command(DEBUG_INFORMATION)
    def debug_information(ls: Server, *_arguments: object) -> dict[str, object]:
        return ls.debug_information()


def serve(unsafe_fixes: bool = False) -> int:
    """Serve one client on stdin and stdout until it exits; the exit code the specification asks for: 0 after
    a ``shutdown`` request, else 1."""
    _start_logging()
    server = make_server(unsafe_fixes)
    try:
        server.start_io()
    finally:
        server.worker.stop()
    return 0 if server.shut_down else 1


__all__ = ["APPLY_AUTOFIX", "DEBUG_INFORMATION", "FIX_ALL", "NOTEBOOK_FIX_ALL", "SHOW_SETTINGS", "Server",
           "make_server", "serve"]
