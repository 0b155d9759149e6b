"""Jupyter notebooks: the code cells are one module; findings per cell; a fix touches only changed sources."""

from __future__ import annotations

import contextlib
import io
import json
import textwrap
from pathlib import Path

import pytest

from np2torch.cli import main
from np2torch.lint import engine
from np2torch.lint.notebook import check_notebook, fix_and_check_notebook, fix_notebook, fix_notebook_findings


def code(source: object, n: int = 1) -> dict:
    return {"cell_type": "code", "execution_count": n, "metadata": {}, "outputs": [], "source": source}


def markdown(source: object) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def notebook(*cells: dict, language: str = "python") -> dict:
    return {
        "cells": list(cells),
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": language, "name": "python3"},
                     "language_info": {"name": language}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def nbformat_text(nb: dict) -> str:
    """As nbformat writes: indent 1, keys sorted, non-ASCII kept, a final newline."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def located(text: str) -> list[tuple[int, int, int, str, bool]]:
    return [(f.cell, f.line, f.column, f.code, f.fixable) for f in check_notebook(text, "n.ipynb")]


# ---------------------------------------------------------------- findings


def test_imports_in_one_cell_resolve_names_in_later_cells() -> None:
    text = nbformat_text(notebook(
        code(["import numpy as np\n", "from scipy.special import erf"]),
        markdown(["np.exp(x) in prose is not code"]),
        code(["y = 1\n", "z = np.exp(y) + erf(y)\n"]),
    ))
    assert located(text) == [(3, 2, 5, "NPT001", True), (3, 2, 17, "NPT003", True)]


def test_a_later_rebinding_is_seen_in_cell_order() -> None:
    text = nbformat_text(notebook(code("import numpy as np"), code("np = object()"), code("np.exp(x)")))
    assert located(text) == []


def test_line_magics_are_masked_and_other_languages_cell_magics_skipped() -> None:
    text = nbformat_text(notebook(
        code(["%matplotlib inline\n", "!pip list\n", "import numpy as np\n", "%timeit np.exp(x)\n", "a = np.log(x)"]),
        code(["%%bash\n", "b = np.exp(x)"]),
        code(["files = !ls\n", "c = np.exp(files)"]),  # does not parse even masked: skipped
        code("d = np.exp(x)"),
        code(["%%time\n", "e = np.exp(x)"]),  # a Python body: a cell of the module
    ))
    assert located(text) == [(1, 5, 5, "NPT002", True), (4, 1, 5, "NPT001", True), (5, 2, 5, "NPT001", True)]
    cells = json.loads(fix_notebook(text, "n.ipynb"))["cells"]
    assert cells[4]["source"] == ["%%time\n", "e = np2t.exp(x)"] and cells[1]["source"] == ["%%bash\n", "b = np.exp(x)"]


def test_a_cell_that_does_not_parse_is_skipped_not_an_error() -> None:
    text = nbformat_text(notebook(code("import numpy as np"), code("def broken(:\n"), code("np.exp(x)")))
    assert located(text) == [(3, 1, 1, "NPT001", True)]


def test_non_python_kernel_has_no_findings() -> None:
    text = nbformat_text(notebook(code("import numpy as np\nnp.exp(x)"), language="R"))
    assert located(text) == []
    assert fix_notebook(text) == text


def test_noqa_in_a_cell() -> None:
    text = nbformat_text(notebook(code("import numpy as np\nnp.exp(x)  # noqa: NPT001\nnp.log(x)")))
    assert located(text) == [(1, 3, 1, "NPT002", True)]


def test_invalid_json_is_a_source_error() -> None:
    with pytest.raises(engine.SourceError):
        check_notebook('{"cells": [', "n.ipynb")


# ---------------------------------------------------------------- fixes


def test_fix_changes_only_the_changed_cells_sources_byte_for_byte() -> None:
    nb = notebook(
        code(["%matplotlib inline\n", "import numpy as np  # caf\u00e9"]),
        markdown("np.exp(x)"),
        code(["y = np.exp(x)\n", "\n", "w = 2  # unchanged line\n", "z = np.log(y)\n"], 2),
        code("untouched = 1", 3),
    )
    nb["cells"][2]["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["\u00e9\n"]}]
    before = nbformat_text(nb)
    after = fix_notebook(before, "n.ipynb")
    fixed = json.loads(after)
    assert fixed["cells"][0]["source"] == ["%matplotlib inline\n", "import np2torch.runtime as np2t\n",
                                           "import numpy as np  # caf\u00e9"]
    assert fixed["cells"][2]["source"] == ["y = np2t.exp(x)\n", "\n", "w = 2  # unchanged line\n", "z = np2t.log(y)\n"]
    # everything else is the original document, and the file is laid out exactly as nbformat would
    expected = json.loads(before)
    expected["cells"][0]["source"] = fixed["cells"][0]["source"]
    expected["cells"][2]["source"] = fixed["cells"][2]["source"]
    assert after == nbformat_text(expected)
    assert fix_notebook(after, "n.ipynb") == after  # idempotent
    assert not [f for f in check_notebook(after, "n.ipynb") if f.fixable]


def _run_cells(text: str) -> list[str]:
    """Runs the notebook's code cells in order in one namespace, as a kernel does; what each printed."""
    namespace: dict[str, object] = {}
    printed = []
    for cell in json.loads(text)["cells"]:
        if cell["cell_type"] == "code":
            output = io.StringIO()
            with contextlib.redirect_stdout(output):
                exec("".join(cell["source"]), namespace)
            printed.append(output.getvalue())
    return printed


def test_the_import_goes_in_a_cell_before_the_first_cell_that_runs_a_fix() -> None:
    text = nbformat_text(notebook(
        code(["import numpy as np\n", "\n", "def f(x):\n", "    return np.exp(x)"]),
        code("print(f(np.zeros(2)))", 2),
        code(["import numpy as np\n", "print(np.log(np.ones(2)))"], 3),
    ))
    fixed = fix_notebook(text, "n.ipynb")
    assert json.loads(fixed)["cells"][0]["source"][:2] == ["import np2torch.runtime as np2t\n", "import numpy as np\n"]
    assert "np2t.log" in fixed and _run_cells(fixed) == _run_cells(text)


def test_a_line_magic_may_run_a_fix_so_the_import_goes_before_it() -> None:
    text = nbformat_text(notebook(
        code(["def f(x):\n", "    return np.exp(x)"]),
        code("import numpy as np", 2),
        code("%time y = f(np.zeros(3))", 3),
        code(["import numpy as np\n", "print(f(np.zeros(3)))"], 4),
    ))
    cells = json.loads(fix_notebook(text, "n.ipynb"))["cells"]
    assert cells[1]["source"] == "import np2torch.runtime as np2t\nimport numpy as np"
    assert cells[2]["source"] == "%time y = f(np.zeros(3))" and "np2torch" not in cells[3]["source"]


def test_fix_and_check_places_what_is_left_in_the_fixed_cells() -> None:
    nb = notebook(
        code(["import numpy as np\n", "y = np.exp(x)\n", "t = f is np.exp\n"]),
        markdown("np.exp(x)"),
        code(["%time z = 1\n", "w = {np.log: np.log(y)}\n"], 2),
    )
    before = nbformat_text(nb)
    result = fix_and_check_notebook(before, "n.ipynb")
    assert result.text == fix_notebook(before, "n.ipynb")
    assert list(result.findings) == check_notebook(before, "n.ipynb")
    assert list(result.remaining) == check_notebook(result.text, "n.ipynb")
    assert [(f.cell, f.line, f.column, f.code) for f in result.remaining] == [(1, 4, 10, "NPT001"),
                                                                              (3, 2, 6, "NPT002")]
    assert {f.path for f in (*result.findings, *result.remaining)} == {"n.ipynb"}


@pytest.mark.parametrize("indent", [None, 2, 4], ids=["compact", "indent 2", "indent 4"])
def test_other_layouts_and_key_orders_are_kept(indent: int | None) -> None:
    nb = {"nbformat": 4, "metadata": {"z": 1, "a": 2}, "nbformat_minor": 2,
          "cells": [{"source": ["import numpy as np\n", "np.exp(x)\n"], "outputs": [], "metadata": {},
                     "cell_type": "code", "execution_count": None}]}
    before = json.dumps(nb, indent=indent, ensure_ascii=True)  # no final newline, keys unsorted
    after = fix_notebook(before, "n.ipynb")
    # the import goes into the block before `import numpy` (isort's order): every other line as it was
    nb["cells"][0]["source"] = ["import np2torch.runtime as np2t\n", "import numpy as np\n", "np2t.exp(x)\n"]
    assert after == json.dumps(nb, indent=indent, ensure_ascii=True)


def test_unchanged_lines_keep_their_original_escapes() -> None:
    before = (
        '{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null,\n'
        '  "source": ["import numpy as np  # \\u00e9\\/\\n", "np.exp(x)"]}],\n'
        ' "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'
    )
    after = fix_notebook(before, "n.ipynb")
    assert '"import numpy as np  # \\u00e9\\/\\n"' in after
    assert json.loads(after)["cells"][0]["source"][-1] == "np2t.exp(x)"
    assert after.replace('"np2t.exp(x)"', '"np.exp(x)"').replace('"import np2torch.runtime as np2t\\n", ', "") == before


def test_string_sources_stay_strings() -> None:
    before = nbformat_text(notebook(code("import numpy as np\n\ny = np.exp(x)")))
    after = json.loads(fix_notebook(before, "n.ipynb"))
    assert after["cells"][0]["source"] == "import np2torch.runtime as np2t\nimport numpy as np\n\ny = np2t.exp(x)"


def test_imports_are_never_removed_from_a_notebook() -> None:
    before = nbformat_text(notebook(code("from numpy import exp"), code("%timeit exp(x)\ny = exp(x)")))
    after = json.loads(fix_notebook(before, "n.ipynb"))
    assert after["cells"][0]["source"] == "import np2torch.runtime as np2t\nfrom numpy import exp"
    assert after["cells"][1]["source"] == "%timeit exp(x)\ny = np2t.exp(x)"


def test_masked_magics_are_restored_after_a_fix() -> None:
    before = nbformat_text(notebook(code(["import numpy as np\n", "  %time y = 1\n", "y = np.exp(x)"])))
    after = json.loads(fix_notebook(before, "n.ipynb"))
    assert after["cells"][0]["source"] == ["import np2torch.runtime as np2t\n", "import numpy as np\n",
                                           "  %time y = 1\n", "y = np2t.exp(x)"]


# ---------------------------------------------------------------- through the CLI


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NP2TORCH_LINT_CACHE_DIR", str(tmp_path / ".cache-under-test"))
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code_ = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code_, out, err


CLI_NOTEBOOK = notebook(
    code(["%matplotlib inline\n", "import numpy as np"]),
    markdown("# heading"),
    code(["y = np.exp(x)\n", "same = np.log is f"], 2),
)


def test_cli_check_walks_notebooks_and_reports_cells(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("sub").mkdir()
    Path("sub/n.ipynb").write_text(nbformat_text(CLI_NOTEBOOK), encoding="utf-8")
    code_, out, _ = run(capsys, "check", ".")
    assert code_ == 1
    lines = out.splitlines()
    assert lines[0].startswith("sub/n.ipynb:cell 3:1:5: NPT001 ") and lines[0].endswith("[*]")
    assert lines[1].startswith("sub/n.ipynb:cell 3:2:8: NPT002 ")
    code_, out, _ = run(capsys, "check", "--format", "json", ".")
    assert [(e["cell"], e["line"], e["column"]) for e in json.loads(out)] == [(3, 1, 5), (3, 2, 8)]
    code_, out, _ = run(capsys, "check", "--format", "github", ".")
    assert out.splitlines()[0].startswith("::warning title=np2torch (NPT001) cell 3,file=sub/n.ipynb,line=1,col=5,")
    assert "::cell 3:1:5: NPT001 " in out.splitlines()[0]


def test_cli_sarif_for_a_notebook(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    Path("n.ipynb").write_text(nbformat_text(CLI_NOTEBOOK), encoding="utf-8")
    code_, out, _ = run(capsys, "check", "--format", "sarif", "n.ipynb")
    assert code_ == 1
    log = json.loads(out)
    schema = json.loads((Path(__file__).parent.parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    result = log["runs"][0]["results"][0]
    assert result["properties"]["cell"] == 3
    assert result["message"]["text"].startswith("cell 3: ")
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 1


def test_cli_fix_rewrites_only_the_sources(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = nbformat_text(CLI_NOTEBOOK)
    path = Path("n.ipynb")
    path.write_bytes(before.encode("utf-8"))
    code_, out, err = run(capsys, "fix", "--diff", "n.ipynb")
    assert code_ == 1  # as ruff's: each code cell, changed or not, numbered among all cells; no "\ No newline" line
    assert out == textwrap.dedent("""\
        --- n.ipynb:cell 1
        +++ n.ipynb:cell 1
        @@ -1,2 +1,3 @@
         %matplotlib inline
        +import np2torch.runtime as np2t
         import numpy as np
        --- n.ipynb:cell 3
        +++ n.ipynb:cell 3
        @@ -1,2 +1,2 @@
        -y = np.exp(x)
        +y = np2t.exp(x)
         same = np.log is f

        Would fix 1 error.
        """)
    assert path.read_bytes() == before.encode("utf-8")
    code_, out, _ = run(capsys, "fix", "n.ipynb")
    assert code_ == 1  # the `is` comparison cannot be fixed
    assert "Fixed 1 error in 1 file." in out
    expected = json.loads(before)
    expected["cells"][0]["source"] = ["%matplotlib inline\n", "import np2torch.runtime as np2t\n", "import numpy as np"]
    expected["cells"][2]["source"] = ["y = np2t.exp(x)\n", "same = np.log is f"]
    assert path.read_bytes() == nbformat_text(expected).encode("utf-8")
    code_, out, _ = run(capsys, "fix", "n.ipynb")
    assert "Fixed" not in out
    assert path.read_bytes() == nbformat_text(expected).encode("utf-8")


def test_cli_bad_notebook_is_one_finding(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("bad.ipynb").write_text('{"cells": [}', encoding="utf-8")
    Path("ok.py").write_text("import numpy as np\nnp.exp(x)\n")
    code_, out, err = run(capsys, "check", ".")
    assert code_ == 1 and err == ""  # as ruff's: a file that is not a notebook is an invalid-syntax finding
    bad, ok = out.splitlines()[:2]
    assert bad.startswith("bad.ipynb:1:") and ": invalid-syntax: " in bad and "invalid JSON" in bad
    assert ok.startswith("ok.py:2:1: NPT001")


def _with_metadata(metadata: object) -> str:
    nb = notebook(code("import numpy as np\nnp.exp(x)"))
    nb["metadata"] = metadata
    return json.dumps(nb)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(_with_metadata([1, 2]), "metadata is an array, not an object", id="metadata array"),
        pytest.param(_with_metadata({"language_info": "python"}), "metadata.language_info is a string, not an object",
                     id="language_info string"),
        pytest.param(_with_metadata({"kernelspec": 3}), "metadata.kernelspec is a number, not an object",
                     id="kernelspec number"),
        pytest.param('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}", "the JSON is nested too deeply",
                     id="nested 100000 deep"),
    ],
)
def test_a_malformed_notebook_is_one_finding_and_others_go_on(in_tmp: Path, capsys: pytest.CaptureFixture[str],
                                                                 text: str, message: str) -> None:
    Path("bad.ipynb").write_text(text, encoding="utf-8")
    Path("ok.py").write_text("import numpy as np\nnp.exp(x)\n")
    for command in ("check", "fix"):
        code_, out, err = run(capsys, command, "--no-cache", ".")
        assert code_ == 1 and err == ""  # as ruff's ("does not match the schema expected of Jupyter Notebooks")
        assert out.splitlines()[0] == f"bad.ipynb:1:1: invalid-syntax: not a notebook: {message}"
    assert "np2t.exp(x)" in Path("ok.py").read_text()
    assert Path("bad.ipynb").read_text(encoding="utf-8") == text


def test_null_metadata_is_an_empty_object() -> None:
    assert located(_with_metadata(None)) == [(1, 2, 1, "NPT001", True)]
    assert located(_with_metadata({"language_info": None, "kernelspec": None})) == [(1, 2, 1, "NPT001", True)]


# ---------------------------------------------------------------- one finding (an editor's quick fix)


def test_fix_notebook_findings_fixes_that_finding_alone() -> None:
    text = nbformat_text(notebook(
        code(["import numpy as np\n", "%timeit np.exp(x)"]),
        markdown(["np.exp(x) in prose"]),
        code(["a = np.exp(x)\n", "b = np.log(x)"]),
        code("c = np.exp(x)"),
    ))
    findings = check_notebook(text, "n.ipynb")
    assert [(f.cell, f.line, f.code) for f in findings] == [(3, 1, "NPT001"), (3, 2, "NPT002"), (4, 1, "NPT001")]
    fixed = fix_notebook_findings(text, [findings[1]], "n.ipynb")
    sources = ["".join(cell["source"]) for cell in json.loads(fixed)["cells"]]
    assert sources == ["import np2torch.runtime as np2t\nimport numpy as np\n%timeit np.exp(x)", "np.exp(x) in prose",
                       "a = np.exp(x)\nb = np2t.log(x)", "c = np.exp(x)"]
    assert fix_notebook_findings(text, findings, "n.ipynb") == fix_notebook(text)
    assert fix_notebook_findings(text, [], "n.ipynb") is text
