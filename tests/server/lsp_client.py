"""A small editor for the language server's tests: pygls's own client over stdio, with the diagnostics the
server published, the edits it asked to apply, and the edits applied the way an editor applies them
(positions in UTF-16 code units, the LSP default)."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from np2torch.cli import main


def _lines(text: str) -> list[str]:
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def _offset(text: str, position: types.Position) -> int:
    """An LSP position (UTF-16 code units) as an index into ``text``."""
    lines = _lines(text)
    before = sum(len(line) for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = 0
    for column, char in enumerate(line.rstrip("\r\n")):
        if units >= position.character:
            return before + column
        units += 2 if ord(char) > 0xFFFF else 1
    return before + len(line.rstrip("\r\n"))


def apply_edits(text: str, edits: Sequence[types.TextEdit]) -> str:
    spans = sorted(((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text) for e in edits),
                   reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def utf16(text: str) -> int:
    return sum(2 if ord(char) > 0xFFFF else 1 for char in text)


class Editor:
    """A pygls client with the diagnostics the server published, per URI."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.diagnostics: dict[str, list[types.Diagnostic]] = {}
        self.published: dict[str, int] = {}
        self.published_versions: dict[str, list[int | None]] = {}
        self.registrations: list[types.Registration] = []
        self.versions: dict[str, int] = {}
        self.applied: list[types.WorkspaceEdit] = []
        self.messages: list[types.ShowMessageParams] = []

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            self.diagnostics[params.uri] = list(params.diagnostics)
            self.published[params.uri] = self.published.get(params.uri, 0) + 1
            self.published_versions.setdefault(params.uri, []).append(params.version)

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params: types.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            self.applied.append(params.edit)
            return types.ApplyWorkspaceEditResult(applied=True)

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def show(params: types.ShowMessageParams) -> None:
            self.messages.append(params)

    async def published_after(self, uri: str, count: int) -> list[types.Diagnostic]:
        """The diagnostics of ``uri`` once the server has published them more than ``count`` times."""
        for _ in range(600):
            if self.published.get(uri, 0) > count:
                return self.diagnostics[uri]
            await asyncio.sleep(0.05)
        raise AssertionError(f"no diagnostics published for {uri}")

    async def open(self, path: Path, text: str | None = None) -> tuple[str, list[types.Diagnostic]]:
        uri = from_fs_path(str(path))
        assert uri is not None
        seen = self.published.get(uri, 0)
        self.versions[uri] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            uri=uri, language_id="python", version=1, text=path.read_text() if text is None else text)))
        return uri, await self.published_after(uri, seen)

    def send_change(self, uri: str, text: str) -> None:
        """The whole new text, as the next version (answered later: :meth:`published_after`)."""
        self.versions[uri] += 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))

    async def change(self, uri: str, text: str) -> list[types.Diagnostic]:
        seen = self.published.get(uri, 0)
        self.send_change(uri, text)
        return await self.published_after(uri, seen)

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command=name, arguments=list(arguments)))

    async def work(self, uri: str) -> dict[str, Any]:
        """What the server did for ``uri`` (``np2torch.printDebugInformation``)."""
        information = await self.command("np2torch.printDebugInformation")
        return dict(information["documents"][uri])

    async def actions(self, uri: str, rng: types.Range, only: Sequence[str] | None = None,
                      diagnostics: Sequence[types.Diagnostic] = ()) -> list[types.CodeAction]:
        result = await self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
            context=types.CodeActionContext(diagnostics=list(diagnostics), only=list(only) if only else None)))
        return [action for action in result or [] if isinstance(action, types.CodeAction)]


CAPABILITIES = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True)),
    notebook_document=types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities()),
)
"""What the tests' editor can do: watch files, sync notebooks; diagnostics pushed, code actions complete."""


def run_editor(scenario: Callable[[Editor], Awaitable[None]], *, cwd: Path, options: Any = None,
               args: Sequence[str] = (), capabilities: types.ClientCapabilities = CAPABILITIES,
               root: Path | None = None) -> None:
    """Run ``scenario`` against a server started in ``cwd``, for the workspace ``root`` (``cwd`` unless given)."""
    async def session() -> None:
        client = LanguageClient("np2torch-tests", "1")
        editor = Editor(client)
        await client.start_io(sys.executable, "-m", "np2torch", "server", *args, cwd=str(cwd))
        try:
            result = await client.initialize_async(types.InitializeParams(
                capabilities=capabilities, root_uri=from_fs_path(str(root or cwd)), initialization_options=options))
            assert result.server_info is not None and result.server_info.name == "np2torch"
            client.initialized(types.InitializedParams())
            await scenario(editor)
        finally:
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()

    asyncio.run(session())


def edits_of(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    assert action.edit is not None and action.edit.changes is not None
    return list(action.edit.changes[uri])


def cli_fix(path: Path, *args: str) -> str:
    """``np2torch fix`` run where the editor runs the server (the file's folder: the import order comes from
    the project there)."""
    before = os.getcwd()
    os.chdir(path.parent)
    try:
        assert main(["fix", "--no-cache", "-q", *args, str(path)]) in (0, 1)
    finally:
        os.chdir(before)
    return path.read_text()


def whole(text: str) -> types.Range:
    return types.Range(start=types.Position(line=0, character=0), end=types.Position(line=len(_lines(text)), character=0))
