"""``np2torch server`` driven over stdio by a real LSP client (pygls's), as an editor drives it.

Each test starts ``python -m np2torch server`` in a fresh process, opens documents,
waits for the diagnostics it publishes, asks for code actions and hovers, applies
the edits the way an editor does (positions in UTF-16 code units, the LSP default),
and compares the result with what ``np2torch fix`` and ``np2torch check`` make of
the same file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsp_client import Editor, apply_edits, cli_fix, edits_of, run_editor, utf16, whole
from lsprotocol import types
from pygls.uris import from_fs_path

from np2torch.lint.engine import check_source
from np2torch.lint.notebook import check_notebook
from np2torch.lint.pages import rule_url

pytestmark = pytest.mark.timeout(120)

FIX_ALL = "source.fixAll.np2torch"
SOURCE = (
    "import numpy as np\n"
    "from scipy.special import erf\n"
    "\n"
    "def f(x):\n"
    "    label = ('\U0001d535', 'é')  # astral and accented: UTF-16 columns differ from characters\n"
    "    y = ('\U0001d535', np.exp(x))\n"
    "    return np.log(y[1]) + erf(x)  # noqa: E501\n"
    "\n"
    "table = {np.exp: 1}\n"
)
IMPORT = "import np2torch.runtime as np2t\n"
LSE = "import numpy as np\n\ndef g(x):\n    return np.log(np.sum(np.exp(x), axis=0))\n"


# ---------------------------------------------------------------- Python files


def test_diagnostics_name_the_rule_link_its_page_and_count_utf16(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(SOURCE)
    expected = check_source(SOURCE, str(module))

    async def scenario(editor: Editor) -> None:
        _uri, diagnostics = await editor.open(module)
        assert [(d.code, d.range.start.line + 1) for d in diagnostics] == [(f.code, f.line) for f in expected]
        line = SOURCE.splitlines()[5]
        exp = next(d for d in diagnostics if d.range.start.line == 5)
        assert exp.range.start.character == utf16(line[: line.index("np.exp")])  # the astral letter counts twice
        assert exp.range.end.character == exp.range.start.character + len("np.exp")
        assert all(d.source == "np2torch" and d.code_description is not None for d in diagnostics)
        assert exp.code_description is not None and exp.code_description.href == rule_url("NPT001")

    run_editor(scenario, cwd=tmp_path)


def test_fix_all_gives_what_np2torch_fix_gives(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(SOURCE)

    async def scenario(editor: Editor) -> None:
        uri, _diagnostics = await editor.open(module)
        actions = await editor.actions(uri, whole(SOURCE), only=[types.CodeActionKind.SourceFixAll])
        assert [a.kind for a in actions] == [FIX_ALL]
        fixed = apply_edits(SOURCE, edits_of(actions[0], uri))
        assert fixed == cli_fix(module)
        assert fixed != SOURCE
        assert await editor.actions(uri, whole(SOURCE), only=[types.CodeActionKind.QuickFix]) != []

    run_editor(scenario, cwd=tmp_path)


def test_quick_fixes_one_at_a_time_end_where_np2torch_fix_ends(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(SOURCE)

    async def scenario(editor: Editor) -> None:
        uri, diagnostics = await editor.open(module)
        text = SOURCE
        fixes = 0
        while True:
            fixable = [d for d in diagnostics if d.code != "NPT001" or d.range.start.line != 8]  # table key: no fix
            quick = []
            for diagnostic in fixable:
                actions = await editor.actions(uri, diagnostic.range, only=[types.CodeActionKind.QuickFix],
                                               diagnostics=[diagnostic])
                quick += [a for a in actions if a.title.startswith("Replace")]
            if not quick:
                break
            assert quick[0].is_preferred and quick[0].diagnostics
            before = len(diagnostics)
            text = apply_edits(text, edits_of(quick[0], uri))
            diagnostics = await editor.change(uri, text)
            assert len(diagnostics) == before - 1  # that finding alone was fixed
            fixes += 1
        assert fixes == 3
        # The same text, but for where the runtime import stands: after the import the first fix resolved
        # through, where `np2torch fix` puts it after the last one its findings resolve through.
        fixed = cli_fix(module)
        assert [text.count(IMPORT), fixed.count(IMPORT)] == [1, 1]
        assert text.replace(IMPORT, "") == fixed.replace(IMPORT, "")

    run_editor(scenario, cwd=tmp_path)


def test_disable_for_this_line_merges_into_the_lines_noqa(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(SOURCE)

    async def scenario(editor: Editor) -> None:
        uri, diagnostics = await editor.open(module)
        text = SOURCE
        on_line_7 = [d for d in diagnostics if d.range.start.line == 6]
        assert {d.code for d in on_line_7} == {"NPT002", "NPT003"}
        for code in ("NPT002", "NPT003"):
            diagnostic = next(d for d in on_line_7 if d.code == code)
            actions = await editor.actions(uri, diagnostic.range, only=[types.CodeActionKind.QuickFix])
            disable = [a for a in actions if a.title == f"Disable {code} for this line"]
            assert len(disable) == 1
            text = apply_edits(text, edits_of(disable[0], uri))
            diagnostics = await editor.change(uri, text)
        assert text.splitlines()[6] == "    return np.log(y[1]) + erf(x)  # noqa: E501, NPT002, NPT003"
        assert [d.range.start.line for d in diagnostics] == [5, 8]
        exp = diagnostics[0]
        actions = await editor.actions(uri, exp.range, only=[types.CodeActionKind.QuickFix])
        text = apply_edits(text, edits_of(next(a for a in actions if a.title.startswith("Disable")), uri))
        assert text.splitlines()[5] == "    y = ('\U0001d535', np.exp(x))  # noqa: NPT001"
        assert [(d.range.start.line, d.code) for d in await editor.change(uri, text)] == [(8, "NPT001")]

    run_editor(scenario, cwd=tmp_path)


def test_hover_shows_the_rule_and_why_there_is_no_fix(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(SOURCE)

    async def scenario(editor: Editor) -> None:
        uri, diagnostics = await editor.open(module)
        key = next(d for d in diagnostics if d.range.start.line == 8)
        hover = await editor.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=key.range.start))
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        text = hover.contents.value
        assert "**NPT001**" in text and "`numpy.exp` call or reference" in text
        assert "**No fix**: it is used as a lookup key" in text and rule_url("NPT001") in text
        nothing = await editor.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=2, character=0)))
        assert nothing is None
        quick = await editor.actions(uri, key.range, only=[types.CodeActionKind.QuickFix])
        assert [a.title for a in quick] == ["Disable NPT001 for this line"]  # reported, not fixable

    run_editor(scenario, cwd=tmp_path)


# ---------------------------------------------------------------- settings


def test_settings_come_from_the_nearest_pyproject_and_are_read_again_when_it_changes(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "generated").mkdir()
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[tool.np2torch]\nignore = ["NPT002"]\nextend-exclude = ["generated"]\n')
    module = project / "pkg" / "mod.py"
    module.write_text(SOURCE)
    excluded = project / "generated" / "out.py"
    excluded.write_text(SOURCE)

    async def scenario(editor: Editor) -> None:
        uri, diagnostics = await editor.open(module)
        # asked for while handling `initialized`, so before these diagnostics
        assert [r.method for r in editor.registrations] == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
        assert "NPT002" not in {d.code for d in diagnostics} and {"NPT001", "NPT003"} <= {d.code for d in diagnostics}
        _other, none = await editor.open(excluded)
        assert none == []

        seen = editor.published[uri]
        pyproject.write_text('[tool.np2torch]\nselect = ["NPT002"]\n')
        editor.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=from_fs_path(str(pyproject)) or "", type=types.FileChangeType.Changed)]))
        assert {d.code for d in await editor.published_after(uri, seen)} == {"NPT002"}

        seen = editor.published[uri]
        pyproject.write_text('[tool.np2torch]\nselekt = ["NPT002"]\n')
        editor.client.text_document_did_save(types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(uri=from_fs_path(str(pyproject)) or "")))
        broken = await editor.published_after(uri, seen)
        assert len(broken) == 1 and broken[0].severity == types.DiagnosticSeverity.Error
        assert "unknown key 'selekt' in [tool.np2torch]" in broken[0].message

        # A client that watches no files, and a pyproject.toml edited elsewhere: the next change of the
        # document reads it again.
        pyproject.write_text('[tool.np2torch]\nselect = ["NPT003"]\n')
        assert {d.code for d in await editor.change(uri, SOURCE)} == {"NPT003"}

    run_editor(scenario, cwd=tmp_path)


@pytest.mark.parametrize("name, table", [(".np2torch.toml", ""), ("np2torch.toml", ""),
                                         ("pyproject.toml", "[tool.np2torch]\n")])
def test_every_configuration_file_is_watched_and_read_again(tmp_path: Path, name: str, table: str) -> None:
    config = tmp_path / name
    config.write_text(table + 'select = ["NPT001"]\n')
    module = tmp_path / "mod.py"
    module.write_text(SOURCE)

    async def scenario(editor: Editor) -> None:
        uri, diagnostics = await editor.open(module)
        assert {d.code for d in diagnostics} == {"NPT001"}
        (registration,) = editor.registrations
        options: Any = registration.register_options  # as the client received it: JSON
        watched = {watcher["globPattern"] for watcher in options["watchers"]}
        assert watched == {"**/.np2torch.toml", "**/np2torch.toml", "**/pyproject.toml"}
        seen = editor.published[uri]
        config.write_text(table + 'select = ["NPT002"]\n')
        editor.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=from_fs_path(str(config)) or "", type=types.FileChangeType.Changed)]))
        assert {d.code for d in await editor.published_after(uri, seen)} == {"NPT002"}

    run_editor(scenario, cwd=tmp_path)


async def pattern_fixes(editor: Editor, uri: str) -> list[types.CodeAction]:
    """The quick fixes offered for the NPT901 finding of ``uri`` (an unsafe fix: offered only when configured)."""
    pattern = next(d for d in editor.diagnostics[uri] if d.code == "NPT901")
    actions = await editor.actions(uri, pattern.range, only=[types.CodeActionKind.QuickFix])
    return [a for a in actions if "NPT901" in a.title and a.title.startswith("Replace")]


def test_unsafe_fixes_follow_the_clients_settings(tmp_path: Path) -> None:
    module = tmp_path / "lse.py"
    module.write_text(LSE)

    async def offered(editor: Editor, uri: str) -> list[str]:
        return [a.title for a in await pattern_fixes(editor, uri)]

    async def scenario(editor: Editor) -> None:
        uri, _ = await editor.open(module)
        assert await offered(editor, uri) == []
        for unsafe, titles in ((True, ["Replace with `np2t.logsumexp` (NPT901)"]), (False, [])):
            seen = editor.published[uri]
            editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
                settings={"np2torch": {"unsafeFixes": unsafe}}))
            await editor.published_after(uri, seen)
            assert await offered(editor, uri) == titles

    run_editor(scenario, cwd=tmp_path)


@pytest.mark.parametrize("how, offered", [
    pytest.param({}, [], id="not configured: reported, no fix"),
    pytest.param({"args": ["--unsafe-fixes"]}, ["Replace with `np2t.logsumexp` (NPT901)"],
                 id="np2torch server --unsafe-fixes"),
    pytest.param({"options": {"unsafeFixes": True}}, ["Replace with `np2t.logsumexp` (NPT901)"],
                 id="initialization options"),
])
def test_unsafe_fixes_only_when_configured(tmp_path: Path, how: dict[str, Any], offered: list[str]) -> None:
    module = tmp_path / "lse.py"
    module.write_text(LSE)

    async def scenario(editor: Editor) -> None:
        uri, _diagnostics = await editor.open(module)
        fixes = await pattern_fixes(editor, uri)
        assert [a.title for a in fixes] == offered
        if fixes:
            assert apply_edits(LSE, edits_of(fixes[0], uri)) == cli_fix(module, "--unsafe-fixes")

    run_editor(scenario, cwd=tmp_path, **how)


# ---------------------------------------------------------------- notebooks


CELLS = [
    ("code", "import numpy as np\n"),
    ("markdown", "# Some *prose*, np.exp(x) is no code here\n"),
    ("code", "x = np.linspace(0, 1, 10)\ny = np.exp(x)  # noqa: E501\n"),
    ("code", "%timeit np.log(x)\nz = np.log(x)\n"),
]


def test_notebook_cells_get_their_diagnostics_quick_fixes_and_fix_all_as_np2torch_fix(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    cells = [{"cell_type": kind, "metadata": {}, "source": text, **({"outputs": [], "execution_count": None}
                                                                    if kind == "code" else {})}
             for kind, text in CELLS]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))
    expected = check_notebook(path.read_text(), str(path))
    uri = from_fs_path(str(path)) or ""
    cell_uris = [f"vscode-notebook-cell:{path}#cell{n}" for n in range(len(CELLS))]

    async def scenario(editor: Editor) -> None:
        editor.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri=uri, notebook_type="jupyter-notebook", version=1, cells=[
                types.NotebookCell(kind=types.NotebookCellKind.Code if kind == "code" else types.NotebookCellKind.Markup,
                                   document=cell_uri) for (kind, _t), cell_uri in zip(CELLS, cell_uris)]),
            cell_text_documents=[types.TextDocumentItem(uri=cell_uri, language_id="python", version=1, text=text)
                                 for (kind, text), cell_uri in zip(CELLS, cell_uris) if kind == "code"]))
        published = {cell_uri: await editor.published_after(cell_uri, 0)
                     for (kind, _t), cell_uri in zip(CELLS, cell_uris) if kind == "code"}
        got = sorted((cell_uris.index(u) + 1, d.range.start.line + 1, d.code) for u, ds in published.items() for d in ds)
        assert got == sorted((f.cell, f.line, f.code) for f in expected)
        assert got == [(3, 2, "NPT001"), (4, 2, "NPT002")]

        third = cell_uris[2]
        actions = await editor.actions(third, published[third][0].range)
        assert [a.title for a in actions] == ["Replace with `np2t.exp` (NPT001)", "Disable NPT001 for this line",
                                              "np2torch: fix all fixable findings"]
        quick, disable, fix_all = actions
        assert quick.edit is not None and quick.edit.changes is not None
        assert sorted(quick.edit.changes) == [cell_uris[0], third]  # the import goes to the cell that imports numpy
        assert apply_edits(CELLS[0][1], quick.edit.changes[cell_uris[0]]) == IMPORT + "import numpy as np\n"
        assert apply_edits(CELLS[2][1], quick.edit.changes[third]).splitlines()[1] == "y = np2t.exp(x)  # noqa: E501"
        noqa = apply_edits(CELLS[2][1], edits_of(disable, third))
        assert noqa.splitlines()[1] == "y = np.exp(x)  # noqa: E501, NPT001"
        assert fix_all.kind == FIX_ALL and fix_all.edit is not None and fix_all.edit.changes is not None
        fixed_cells = [apply_edits(text, fix_all.edit.changes.get(cell_uri, [])) if kind == "code" else text
                       for (kind, text), cell_uri in zip(CELLS, cell_uris)]
        cli_fix(path)
        assert fixed_cells == ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]]
        assert fixed_cells != [text for _kind, text in CELLS]
        on_save = await editor.actions(cell_uris[0], whole(CELLS[0][1]), only=["notebook.source.fixAll"])
        assert [(a.kind, a.edit) for a in on_save] == [("notebook.source.fixAll.np2torch", fix_all.edit)]
        assert cell_uris[1] not in editor.published  # the markdown cell is no document of the server's

        # Typing in the last cell: its finding goes, the other cell's stays.
        fourth = cell_uris[3]
        seen = {cell: editor.published[cell] for cell in published}
        editor.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=uri),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=fourth, version=2),
                    changes=[types.TextDocumentContentChangeWholeDocument(text="z = 1\n")])]))))
        assert await editor.published_after(fourth, seen[fourth]) == []
        assert [d.code for d in await editor.published_after(third, seen[third])] == ["NPT001"]

    run_editor(scenario, cwd=tmp_path)

