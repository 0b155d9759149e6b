"""The language server keeps up with a real file and answers as the LSP specification and ruff's server do.

Work is counted, never timed: the server reports what it did per document
(``np2torch.printDebugInformation``: analyses, line-index builds, characters
indexed, the versions it published).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_client import CAPABILITIES, Editor, apply_edits, cli_fix, run_editor, whole
from lsprotocol import types
from pygls.uris import from_fs_path

from np2torch.lint.engine import check_source

pytestmark = pytest.mark.timeout(180)

FIX_ALL = "source.fixAll.np2torch"
HEADER = "import numpy as np\nfrom scipy.special import erf\n\n"


def two_findings_a_line(lines: int) -> str:
    """``lines`` lines of code, each with two findings (NPT001 and NPT002), as the issue measured."""
    return HEADER + "".join(f"y{n} = np.exp(x) + np.log(x)\n" for n in range(lines))


# ---------------------------------------------------------------- scaling, counted


def test_each_version_is_indexed_once_whatever_its_findings(tmp_path: Path) -> None:
    texts = {size: two_findings_a_line(size) for size in (1000, 4000)}
    paths = {}
    for size, text in texts.items():
        paths[size] = tmp_path / f"m{size}.py"
        paths[size].write_text(text)

    async def scenario(editor: Editor) -> None:
        for size, path in paths.items():
            uri, diagnostics = await editor.open(path)
            assert len(diagnostics) == 2 * size
            # asking for the actions on a few lines reads the same index
            await editor.actions(uri, types.Range(start=types.Position(line=3, character=0),
                                                  end=types.Position(line=5, character=0)))
            work = await editor.work(uri)
            assert (work["analyses"], work["lineIndexBuilds"]) == (1, 1)
            # one pass over the text: the work grows with the file, not with the file times its findings
            assert work["indexedCharacters"] == len(texts[size]) - texts[size].count("\n")

    run_editor(scenario, cwd=tmp_path)


def test_a_burst_of_edits_publishes_only_the_latest_version(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    # Long enough that the server's pause before an analysis (half the last one's wall time, so longer on a
    # busy machine) outlasts reading ten queued messages.
    text = two_findings_a_line(2000)
    module.write_text(text)

    async def scenario(editor: Editor) -> None:
        uri, _diagnostics = await editor.open(module)
        assert editor.published_versions[uri] == [1]
        seen = editor.published[uri]
        for n in range(10):  # ten keystrokes, sent as fast as the client writes them
            text_n = text + f"z = np.exp({n})\n" * (n + 1)
            editor.send_change(uri, text_n)
        diagnostics = await editor.published_after(uri, seen)
        assert editor.published_versions[uri] == [1, 11]
        assert len(diagnostics) == len(check_source(text_n, str(module)))
        work = await editor.work(uri)
        assert work["published"] == [1, 11]

    run_editor(scenario, cwd=tmp_path)


def test_incremental_changes_are_applied_and_analysed(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(SETTINGS_SOURCE)

    async def scenario(editor: Editor) -> None:
        uri, diagnostics = await editor.open(module)
        seen = editor.published[uri]
        line = SETTINGS_SOURCE.splitlines().index("b = np.log(x)")
        editor.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangePartial(  # `np.log` becomes `abs`, as a client sends a keystroke
                range=types.Range(start=types.Position(line=line, character=4),
                                  end=types.Position(line=line, character=10)), text="abs")]))
        after = await editor.published_after(uri, seen)
        assert [d.code for d in after] == [d.code for d in diagnostics if d.code != "NPT002"]
        assert editor.published_versions[uri] == [1, 2]

    run_editor(scenario, cwd=tmp_path)


# ---------------------------------------------------------------- pull diagnostics


PULLS = types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
    diagnostic=types.DiagnosticClientCapabilities()))


def test_a_client_that_pulls_gets_the_diagnostics_it_asks_for_and_none_pushed(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    text = two_findings_a_line(3)
    module.write_text(text)

    async def pull(editor: Editor, uri: str, previous: str | None = None) -> Any:
        return await editor.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=previous))

    async def scenario(editor: Editor) -> None:
        uri = from_fs_path(str(module)) or ""
        editor.versions[uri] = 1
        editor.client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            uri=uri, language_id="python", version=1, text=text)))
        report = await pull(editor, uri)
        assert report.kind == "full"
        assert [d.code for d in report.items] == [f.code for f in check_source(text, str(module))]
        assert (await pull(editor, uri, report.result_id)).kind == "unchanged"
        editor.send_change(uri, HEADER + "y = erf(x)\n")
        changed = await pull(editor, uri, report.result_id)
        assert changed.kind == "full" and [d.code for d in changed.items] == ["NPT003"]
        never = await pull(editor, from_fs_path(str(tmp_path / "never_opened.py")) or "")
        assert never.kind == "full" and list(never.items) == []
        assert editor.published == {}  # every answer above came after the analyses: nothing was pushed

    run_editor(scenario, cwd=tmp_path, capabilities=PULLS)


# ---------------------------------------------------------------- the editor's settings


SETTINGS_SOURCE = HEADER + "a = np.exp(x)\nb = np.log(x)\nc = erf(x)\nd = np.tanh(x)\n"


@pytest.mark.parametrize("options, codes", [
    pytest.param(None, ["NPT001", "NPT002", "NPT003"], id="none: the defaults"),
    pytest.param({"lint": {"select": ["NPT002"]}}, ["NPT002"], id="lint.select"),
    pytest.param({"lint": {"ignore": ["NPT001", "NPT003"]}}, ["NPT002"], id="lint.ignore"),
    pytest.param({"lint": {"extendSelect": ["NPT019"]}}, ["NPT001", "NPT002", "NPT003", "NPT019"],
                 id="lint.extendSelect"),
    pytest.param({"lint": {"perFileIgnores": {"mod.py": ["NPT001", "NPT002"]}}}, ["NPT003"],
                 id="lint.perFileIgnores"),
    pytest.param({"configuration": {"select": ["NPT003"]}}, ["NPT003"], id="configuration: inline"),
    pytest.param({"configuration": "np2torch.toml"}, ["NPT001"], id="configuration: a file"),
    pytest.param({"settings": {"lint": {"select": ["NPT002"]}}}, ["NPT002"], id="as ruff's extension sends them"),
    pytest.param({"np2torch": {"lint": {"select": ["NPT002"]}}}, ["NPT002"], id="as a settings section"),
])
def test_initialization_options_change_the_findings(tmp_path: Path, options: Any, codes: list[str]) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "np2torch.toml").write_text('select = ["NPT001"]\n')
    (tmp_path / "pyproject.toml").write_text('[tool.np2torch]\nextend-select = ["NPT019"]\nignore = ["NPT019"]\n')
    module = tmp_path / "mod.py"
    module.write_text(SETTINGS_SOURCE)

    async def scenario(editor: Editor) -> None:
        _uri, diagnostics = await editor.open(module)
        assert sorted({str(d.code) for d in diagnostics}) == codes

    run_editor(scenario, cwd=tmp_path, root=tmp_path / "other", options=options)  # paths: from the root


def test_settings_changed_later_lint_again_and_a_wrong_one_is_shown(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(SETTINGS_SOURCE)

    async def scenario(editor: Editor) -> None:
        uri, diagnostics = await editor.open(module)
        assert {d.code for d in diagnostics} == {"NPT002"}
        seen = editor.published[uri]
        editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"np2torch": {"lint": {"select": ["NPT003"]}, "logLevel": "debug"}}))
        assert {d.code for d in await editor.published_after(uri, seen)} == {"NPT003"}
        information = await editor.command("np2torch.printDebugInformation")
        assert information["logLevel"] == "debug"
        editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"np2torch": {"lint": {"select": ["NPT9999"]}}}))
        await editor.command("np2torch.printDebugInformation")  # a round trip: the message came before
        assert [m.type for m in editor.messages] == [types.MessageType.Error]
        assert "'select' in 'lint'" in editor.messages[0].message and "NPT9999" in editor.messages[0].message
        assert {d.code for d in await editor.change(uri, SETTINGS_SOURCE)} == {"NPT003"}  # the last good ones

    run_editor(scenario, cwd=tmp_path, options={"lint": {"select": ["NPT002"]}})


def test_fix_all_can_be_turned_off(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(SETTINGS_SOURCE)

    async def scenario(editor: Editor) -> None:
        uri, _diagnostics = await editor.open(module)
        assert await editor.actions(uri, whole(SETTINGS_SOURCE), only=[FIX_ALL]) == []
        assert await editor.actions(uri, whole(SETTINGS_SOURCE), only=[types.CodeActionKind.QuickFix]) != []

    run_editor(scenario, cwd=tmp_path, options={"fixAll": False})


# ---------------------------------------------------------------- code actions


RESOLVES = types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
    code_action=types.CodeActionClientCapabilities(resolve_support=types.ClientCodeActionResolveOptions(
        properties=["edit"]))))


def test_fix_all_is_computed_when_resolved_and_quick_fixes_only_in_the_range(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(SETTINGS_SOURCE)

    async def scenario(editor: Editor) -> None:
        uri, diagnostics = await editor.open(module)
        log_line = next(d for d in diagnostics if d.code == "NPT002").range
        actions = await editor.actions(uri, log_line)
        assert [a.title for a in actions] == ["Replace with `np2t.log` (NPT002)", "Disable NPT002 for this line",
                                              "np2torch: fix all fixable findings"]
        fix_all = actions[-1]
        assert fix_all.kind == FIX_ALL and fix_all.edit is None  # nothing computed until the client asks
        resolved = await editor.client.code_action_resolve_async(fix_all)
        assert resolved.edit is not None and resolved.edit.changes is not None
        assert apply_edits(SETTINGS_SOURCE, resolved.edit.changes[uri]) == cli_fix(module)

    run_editor(scenario, cwd=tmp_path, capabilities=RESOLVES)


# ---------------------------------------------------------------- commands


def test_commands_apply_all_fixes_and_show_the_settings(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(SETTINGS_SOURCE)
    (tmp_path / "pyproject.toml").write_text('[tool.np2torch]\nignore = ["NPT003"]\n')

    async def scenario(editor: Editor) -> None:
        uri, _diagnostics = await editor.open(module)
        assert await editor.command("np2torch.applyAutofix", {"uri": uri, "version": 1}) is None
        (edit,) = editor.applied
        assert edit.changes is not None
        assert apply_edits(SETTINGS_SOURCE, edit.changes[uri]) == cli_fix(module)
        shown = await editor.command("np2torch.showSettings", {"uri": uri})
        assert 'rules' in shown and '"NPT003"' not in shown.split("# Resolved")[1]
        assert "ignore" in shown and "pyproject.toml" in shown
        assert '"logLevel": "warn"' in shown  # and the editor's own
        with pytest.raises(Exception, match="no open Python document"):
            await editor.command("np2torch.applyAutofix", {"uri": from_fs_path(str(tmp_path / "other.py"))})

    run_editor(scenario, cwd=tmp_path, options={"logLevel": "warn"})


# ---------------------------------------------------------------- syntax errors


def test_a_syntax_error_is_shown_while_the_last_good_findings_stay(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(SETTINGS_SOURCE)

    async def scenario(editor: Editor) -> None:
        uri, good = await editor.open(module)
        broken = SETTINGS_SOURCE + "e = np.exp(\n"
        diagnostics = await editor.change(uri, broken)
        errors = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
        assert len(errors) == 1 and errors[0].message.startswith("SyntaxError")  # as ruff's server has it:
        assert errors[0].code == "invalid-syntax" and errors[0].code_description is None  # its id, no page
        assert errors[0].range.start.line == 7
        assert [d for d in diagnostics if d not in errors] == good
        # still broken: the same good findings stay
        assert [d for d in await editor.change(uri, broken + "\n") if d.severity != errors[0].severity] == good
        assert await editor.actions(uri, whole(broken)) == []  # no fix of a text that does not parse
        assert len(await editor.change(uri, SETTINGS_SOURCE + "e = np.exp(x)\n")) == len(good) + 1

    run_editor(scenario, cwd=tmp_path)


# ---------------------------------------------------------------- the protocol's errors and exits


def frame(message: object) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def serve(*messages: object) -> tuple[int, list[dict[str, Any]], str]:
    """The server's exit code, its answers and its stderr, for ``messages`` sent over stdin at once."""
    done = subprocess.run([sys.executable, "-m", "np2torch", "server"], input=b"".join(map(frame, messages)),
                          capture_output=True, timeout=120)
    answers = []
    rest = done.stdout
    while rest:
        head, _, rest = rest.partition(b"\r\n\r\n")
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        answers.append(json.loads(rest[:length]))
        rest = rest[length:]
    return done.returncode, answers, done.stderr.decode()


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
SHUTDOWN = {"jsonrpc": "2.0", "id": 99, "method": "shutdown"}
EXIT = {"jsonrpc": "2.0", "method": "exit"}


def test_exit_without_shutdown_exits_1_and_after_it_0() -> None:
    assert serve(INITIALIZE, EXIT)[0] == 1
    code, answers, _ = serve(INITIALIZE, SHUTDOWN, EXIT)
    assert code == 0 and [a["id"] for a in answers] == [1, 99]


def test_a_message_that_is_not_json_is_answered_with_a_parse_error_not_a_traceback() -> None:
    code, answers, stderr = serve(b"{not json", [1, 2], INITIALIZE, SHUTDOWN, EXIT)
    assert code == 0
    assert answers[0]["id"] is None and answers[0]["error"]["code"] == -32700
    assert answers[1]["id"] is None and answers[1]["error"]["code"] == -32600
    assert [a.get("id") for a in answers[2:]] == [1, 99]  # and the server went on
    assert "Traceback" not in stderr and "not JSON" in stderr


def test_a_request_whose_params_do_not_fit_is_answered_invalid_params() -> None:
    doc = {"uri": "file:///nowhere/a.py"}
    unfit = [
        {"method": "textDocument/hover", "params": {"textDocument": doc, "position": {"line": 0}}},
        {"method": "textDocument/codeAction", "params": {"textDocument": doc, "context": {"diagnostics": []},
                                                         "range": {"start": {"line": -1, "character": 0},
                                                                   "end": {"line": 0, "character": 0}}}},
        {"method": "textDocument/hover", "params": "not an object"},
        {"method": "textDocument/diagnostic"},
    ]
    requests = [{"jsonrpc": "2.0", "id": n, **r} for n, r in enumerate(unfit, 2)]
    requests[2]["id"] = "by name"
    bad_notification = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {}}
    code, answers, stderr = serve(INITIALIZE, *requests, bad_notification, SHUTDOWN, EXIT)
    assert code == 0 and [a.get("id") for a in answers] == [1, 2, 3, "by name", 5, 99]  # the notification: none
    assert [a["error"]["code"] for a in answers[1:5]] == [-32602] * 4
    assert "required field missing @ $.params.position.character" in answers[1]["error"]["message"]
    assert "Position.line should be in range [0:2147483647], but was -1" in answers[2]["error"]["message"]
    assert "Traceback" not in stderr and "a notification textDocument/didOpen whose params do not fit" in stderr


def test_a_request_after_shutdown_or_not_2_0_is_answered_invalid_request() -> None:
    hover = {"method": "textDocument/hover", "params": {"textDocument": {"uri": "file:///nowhere/a.py"},
                                                        "position": {"line": 0, "character": 0}}}
    code, answers, _ = serve(INITIALIZE, {"jsonrpc": "1.0", "id": 2, **hover}, SHUTDOWN,
                             {"jsonrpc": "2.0", "id": 3, **hover}, {"jsonrpc": "2.0", "method": "initialized",
                                                                    "params": {}}, EXIT)
    assert code == 0 and [a.get("id") for a in answers] == [1, 2, 99, 3]  # the notification: none
    assert answers[1]["error"]["code"] == answers[3]["error"]["code"] == -32600
    assert "shut down" in answers[3]["error"]["message"]


def test_requests_about_a_document_never_opened_are_answered_without_an_error() -> None:
    never = {"uri": "file:///nowhere/never_opened.py"}
    start = {"line": 0, "character": 0}
    requests = [
        {"method": "textDocument/hover", "params": {"textDocument": never, "position": start}},
        {"method": "textDocument/codeAction", "params": {"textDocument": never, "range": {"start": start, "end": start},
                                                         "context": {"diagnostics": []}}},
        {"method": "textDocument/diagnostic", "params": {"textDocument": never}},
    ]
    code, answers, _ = serve(INITIALIZE, *({"jsonrpc": "2.0", "id": n, **r} for n, r in enumerate(requests, 2)),
                             SHUTDOWN, EXIT)
    assert code == 0
    assert [a.get("error") for a in answers] == [None] * 5
    assert [a["result"] for a in answers[1:4]] == [None, [], {"items": [], "kind": "full"}]


def test_the_capabilities_say_what_the_server_does() -> None:
    _code, answers, _ = serve(INITIALIZE, SHUTDOWN, EXIT)
    capabilities = answers[0]["result"]["capabilities"]
    assert capabilities["diagnosticProvider"]["identifier"] == "np2torch"
    assert capabilities["codeActionProvider"]["resolveProvider"] is True
    assert capabilities["executeCommandProvider"]["commands"] == [
        "np2torch.applyAutofix", "np2torch.showSettings", "np2torch.printDebugInformation"]
    assert capabilities["textDocumentSync"]["change"] == types.TextDocumentSyncKind.Incremental.value
    assert CAPABILITIES.text_document is None  # the other tests' editor: pushed diagnostics, no resolve
