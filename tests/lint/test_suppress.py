"""Whole-file suppression: files np2torch generated, file-level pragmas, and the runtime module itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from np2torch.lint.engine import Settings, check_source, fix_source
from np2torch.lint.rules import select_rules
from np2torch.lint.suppress import MARKER, add_noqa, add_noqa_lines, in_runtime_module

CODE = "import numpy as np\nimport scipy.special\n\ny = np.exp(x)\nz = np.log(x)\nw = scipy.special.erf(x)\n"
ALL = ["NPT001", "NPT002", "NPT003"]


def codes(text: str, path: str = "<string>", settings: Settings | None = None) -> list:
    return [finding.code for finding in check_source(text, path, settings=settings)]


@pytest.mark.parametrize(
    "text, left",
    [
        pytest.param(CODE, ALL, id="no pragma"),
        pytest.param("# np2torch: noqa\n" + CODE, [], id="np2torch noqa at the top"),
        pytest.param(CODE + "# np2torch: noqa\n", [], id="np2torch noqa at the end"),
        pytest.param("def f():\n    # np2torch: noqa\n    pass\n" + CODE, [], id="indented comment line"),
        pytest.param("#NP2TORCH:NOQA\n" + CODE, [], id="any case, no spaces"),
        pytest.param("# np2torch: noqa  (vendored numerics)\n" + CODE, [], id="text after the pragma"),
        pytest.param("# flake8: noqa\n" + CODE, [], id="flake8 noqa applies to every plugin"),
        pytest.param("# np2torch: noqa: NPT001\n" + CODE, ["NPT002", "NPT003"], id="one code"),
        pytest.param("# np2torch: noqa: NPT001,NPT002\n" + CODE, ["NPT003"], id="two codes"),
        pytest.param("# np2torch: noqa: npt001 NPT003\n" + CODE, ["NPT002"], id="codes in any case, space separated"),
        pytest.param("# np2torch: noqa: NPT001\n# np2torch: noqa: NPT003\n" + CODE, ["NPT002"], id="two pragma lines add up"),
        pytest.param("# flake8: noqa: NPT002\n" + CODE, ["NPT001", "NPT003"], id="flake8 codes read as ruff reads them"),
        pytest.param("# np2torch: noqa: E501\n" + CODE, ALL, id="another tool's code"),
        pytest.param("# np2torch: noqa:\n" + CODE, ALL, id="colon without codes suppresses nothing"),
        pytest.param("# ruff: noqa\n" + CODE, ALL, id="ruff's pragma is ruff's"),
        pytest.param("# np2torch: noqa-ish\n" + CODE, ALL, id="not the word noqa"),
        pytest.param("x = 1  # np2torch: noqa\n" + CODE, ALL, id="trailing comment is not file level"),
        pytest.param('s = """\n# np2torch: noqa\n"""\n' + CODE, ALL, id="inside a string"),
        pytest.param("# np2torch: noqa\n" + CODE.replace("np.log(x)", "np.log(np.sum(np.exp(x)))"), [], id="pattern rules too"),
        pytest.param("#  Np2Torch : NoQa\n" + CODE, [], id="mixed case"),
        pytest.param("s = 'İstanbul'\n# NP2TORCH: NOQA: NPT002\n" + CODE, ["NPT001", "NPT003"], id="letters that grow when lowered"),
        pytest.param(("# np2torch: noqa\n" + CODE).replace("\n", "\r\n"), [], id="CRLF"),
        pytest.param(("# np2torch: noqa: NPT003\n" + CODE).replace("\n", "\r"), ["NPT001", "NPT002"], id="CR only"),
    ],
)
def test_file_level_pragma(text: str, left: list) -> None:
    assert codes(text) == left


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"{MARKER} from np2torch 0.1.0 -- generated, do not edit.\n" + CODE, id="package module"),
        pytest.param(f"\ufeff{MARKER} from np2torch 0.0.9 -- generated, do not edit.\n" + CODE, id="with a BOM"),
        pytest.param(f"{MARKER} from np2torch 0.1.0\n" + CODE + "def f(:\n", id="even unparsable"),
    ],
)
def test_a_file_np2torch_generated_is_never_a_finding(text: str) -> None:
    assert codes(text) == []
    assert fix_source(text) == text


def test_the_marker_counts_only_on_the_first_line() -> None:
    assert codes(f"import os\n{MARKER} from np2torch 0.1.0\n" + CODE) == ALL


def test_fix_honours_the_file_pragma() -> None:
    text = "# np2torch: noqa: NPT001\n" + CODE
    fixed = fix_source(text)
    assert "np.exp(x)" in fixed and "np2t.log(x)" in fixed and "np2t.erf(x)" in fixed


# ---------------------------------------------------------------- the runtime module itself


def package(root: Path, *folders: str) -> Path:
    """``root/a/b/...`` with an ``__init__.py`` in each named folder."""
    folder = root
    for name in folders:
        folder = folder / name
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").touch()
    return folder


@pytest.mark.parametrize(
    "layout, file, runtime, inside",
    [
        pytest.param(("proj", "_np2torch"), "_ufunc.py", "proj._np2torch", True, id="module of the vendored package"),
        pytest.param(("proj", "_np2torch"), "__init__.py", "proj._np2torch", True, id="the package's __init__"),
        pytest.param(("proj",), "fast.py", "proj.fast", True, id="the runtime module is this file"),
        pytest.param(("proj",), "model.py", "proj._np2torch", False, id="a sibling of the runtime"),
        pytest.param(("proj",), "__init__.py", "proj._np2torch", False, id="the parent package"),
        pytest.param(("_np2torch",), "_ufunc.py", "proj._np2torch", True, id="namespace package above"),
        pytest.param((), "fast.py", "proj.fast", True, id="top-level module under a folder named like the package"),
        pytest.param(("np2torch", "runtime"), "_ufunc.py", "np2torch.runtime", True, id="np2torch's own runtime, default setting"),
        pytest.param(("src",), "app.py", "proj", False, id="a checkout folder named like the runtime"),
        pytest.param(("proj", "_np2torch"), "_ufunc.ipynb", "proj._np2torch", False, id="a notebook is never imported"),
    ],
)
def test_in_runtime_module(tmp_path: Path, layout: tuple, file: str, runtime: str, inside: bool) -> None:
    root = tmp_path / "proj"  # the checkout folder is called like the package in every case
    root.mkdir()
    folder = package(root, *layout)
    (folder / file).write_text(CODE, encoding="utf-8")
    assert in_runtime_module(str(folder / file), runtime) is inside


def test_no_fix_makes_the_runtime_module_import_itself(tmp_path: Path) -> None:
    folder = package(tmp_path, "proj")
    helpers = folder / "fast.py"
    settings = Settings(runtime_module="proj.fast")
    findings = check_source(CODE, str(helpers), settings=settings)
    assert [f.code for f in findings] == ALL
    assert not any(f.fixable for f in findings)
    assert all("import itself" in f.reason and "proj.fast" in f.reason for f in findings)
    assert fix_source(CODE, str(helpers), settings=settings) == CODE
    assert "import proj.fast as np2t" in fix_source(CODE, str(folder / "model.py"), settings=settings)


def test_a_finding_without_fix_keeps_its_own_reason_in_the_runtime(tmp_path: Path) -> None:
    folder = package(tmp_path, "proj")
    text = "import numpy as np\nif f is np.exp:\n    y = np.log(x)\n"
    findings = check_source(text, str(folder / "fast.py"), settings=Settings(runtime_module="proj.fast"))
    assert "compared" in findings[0].reason and "import itself" in findings[1].reason


# ---------------------------------------------------------------- add_noqa


@pytest.mark.parametrize(
    "text, line, codes, expected",
    [
        pytest.param("y = np.exp(x)\n", 1, ["NPT001"], "y = np.exp(x)  # noqa: NPT001\n", id="a line without a comment"),
        pytest.param("y = np.exp(x)   \t\n", 1, ["NPT001"], "y = np.exp(x)  # noqa: NPT001\n", id="trailing blanks replaced"),
        pytest.param("y = np.exp(x)  # noqa: E501\n", 1, ["NPT001"], "y = np.exp(x)  # noqa: E501, NPT001\n",
                     id="merged into the line's noqa"),
        pytest.param("y = np.exp(x)  # noqa:E501 -- why\n", 1, ["NPT001"], "y = np.exp(x)  # noqa:E501, NPT001 -- why\n",
                     id="merged before the text after the codes"),
        pytest.param("y = np.exp(x)  # a note\n", 1, ["NPT001"], "y = np.exp(x)  # a note  # noqa: NPT001\n",
                     id="after another comment"),
        pytest.param("y = np.exp(np.log(x))\n", 1, ["npt001", "NPT002", "NPT001"],
                     "y = np.exp(np.log(x))  # noqa: NPT001, NPT002\n", id="several codes, once each, upper case"),
        pytest.param("a = 1\ny = np.exp(x)\r\nb = 2\r\n", 2, ["NPT001"], "a = 1\ny = np.exp(x)  # noqa: NPT001\r\nb = 2\r\n",
                     id="the line's own ending"),
        pytest.param("a = 1\ry = np.exp(x)\rb = 2", 2, ["NPT001"], "a = 1\ry = np.exp(x)  # noqa: NPT001\rb = 2",
                     id="CR-only lines"),
        pytest.param("y = np.exp(x)", 1, ["NPT001"], "y = np.exp(x)  # noqa: NPT001", id="no final newline"),
        pytest.param("y = f(np.exp(x),\n      2)\n", 1, ["NPT001"], "y = f(np.exp(x),  # noqa: NPT001\n      2)\n",
                     id="inside brackets"),
        pytest.param("\ufeffy = np.exp(x)  # noqa: E501\n", 1, ["NPT001"], "\ufeffy = np.exp(x)  # noqa: E501, NPT001\n",
                     id="after a BOM"),
        pytest.param("s = '# noqa'; y = np.exp(x)\n", 1, ["NPT001"], "s = '# noqa'; y = np.exp(x)  # noqa: NPT001\n",
                     id="a noqa inside a string is no comment"),
    ],
)
def test_add_noqa(text: str, line: int, codes: list[str], expected: str) -> None:
    assert add_noqa(text, line, codes) == expected
    assert add_noqa(expected, line, codes) == expected  # twice is once


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("y = np.exp(x)  # noqa\n", id="a bare noqa suppresses every code"),
        pytest.param("y = np.exp(x)  # NOQA: npt001\n", id="already listed, any case"),
        pytest.param("y = np.exp(x)  # noqa: E501 NPT001\n", id="listed with a space"),
    ],
)
def test_add_noqa_leaves_a_line_that_already_suppresses_the_code(text: str) -> None:
    assert add_noqa(text, 1, ["NPT001"]) is text


@pytest.mark.parametrize(
    "text, line",
    [
        pytest.param('y = f("""a\n""", np.exp(x))\n', 1, id="the line ends inside a string"),
        pytest.param("y = np.exp(x) + \\\n    1\n", 1, id="a backslash continues the line"),
        pytest.param("y = np.exp(x)\n", 3, id="no such line"),
    ],
)
def test_add_noqa_where_no_comment_can_stand_is_a_value_error(text: str, line: int) -> None:
    with pytest.raises(ValueError, match=f"^line {line}: "):
        add_noqa(text, line, ["NPT001"])


def test_add_noqa_suppresses_what_it_says() -> None:
    text = "import numpy as np\ny = np.exp(np.log(x))  # noqa: E501\n"
    assert codes(add_noqa(text, 2, ["NPT001", "NPT002"])) == []
    assert codes(add_noqa(text, 2, ["NPT002"])) == ["NPT001"]


def test_add_noqa_to_text_that_cannot_be_tokenized_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="^line 1: cannot tokenize the text"):
        add_noqa("y = np.exp(x) + len('''abc\n", 1, ["NPT001"])


def test_add_noqa_lines_tokenizes_once_and_names_the_lines_it_left() -> None:
    text = 'a = np.exp(x)\nb = f("""\n""", np.log(x))  # noqa: E501\nc = np.exp(x) + \\\n    1\nd = np.log(x)\n'
    fixed, refused = add_noqa_lines(text, {1: ["NPT001"], 3: ["NPT002"], 4: ["NPT001"], 6: ["NPT002"], 9: ["NPT001"]})
    assert fixed == ('a = np.exp(x)  # noqa: NPT001\nb = f("""\n""", np.log(x))  # noqa: E501, NPT002\n'
                     'c = np.exp(x) + \\\n    1\nd = np.log(x)  # noqa: NPT002\n')
    assert refused == [4, 9]
    assert add_noqa_lines(fixed, {1: ["NPT001"], 3: ["NPT002"], 6: ["NPT002"]}) == (fixed, [])


def test_what_add_noqa_lines_writes_the_engine_reads() -> None:
    from np2torch.lint.suppress import add_noqa_lines

    text = "import numpy as np\n\ny = np.exp(x) + np.log(x)  # noqa: E501\nz = np.log(x)  # note\n"
    wanted: dict = {}
    for finding in check_source(text):
        wanted.setdefault(finding.line, []).append(finding.code)
    text, refused = add_noqa_lines(text, wanted)
    assert refused == [] and check_source(text) == []
    assert text.endswith("y = np.exp(x) + np.log(x)  # noqa: E501, NPT001, NPT002\nz = np.log(x)  # note  # noqa: NPT002\n")


UNUSED = Settings(rules=select_rules(["NPT0", "NPT801"]))


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param("import math\ny = math.exp(1)  # noqa: NPT001\n", "import math\ny = math.exp(1)\n",
                     id="the only code: the comment goes, with its blanks"),
        pytest.param("import math\ny = math.exp(1)  # noqa: NPT001, E501\n", "import math\ny = math.exp(1)  # noqa: E501\n",
                     id="other tools' codes stay"),
        pytest.param("import numpy as np\nw = np.log(x)  # noqa: NPT002, NPT001 because\n",
                     "import numpy as np\nw = np.log(x)  # noqa: NPT002 because\n", id="a used code stays"),
        pytest.param("y = 1  # type: ignore  # noqa: NPT001\n", "y = 1  # type: ignore\n",
                     id="the rest of the comment stays"),
        pytest.param("y = 1  # noqa: NPT001  # a note\n", "y = 1  # a note\n", id="a note after the directive"),
        pytest.param("y = 1  # noqa: NPT001 because of x\n", "y = 1  # because of x\n",
                     id="a reason after the codes stays a comment"),
        pytest.param("def f():\n    # noqa: NPT001\n    return 1\n", "def f():\n\n    return 1\n",
                     id="a comment line: no line is removed"),
        pytest.param("y = 1  # noqa: NPT001, NPT002, NPT001\r\nz = 2\r\n", "y = 1\r\nz = 2\r\n",
                     id="every unused code, the line's own ending"),
        pytest.param("\ufeffy = 1  # noqa: npt001\n", "\ufeffy = 1\n", id="any case, after a BOM"),
        pytest.param("s = '# noqa: NPT001'  # noqa: NPT002\n", "s = '# noqa: NPT001'\n",
                     id="a noqa inside a string is no comment"),
        pytest.param("y = 1  # noqa: NPT001, NPT801\n", "y = 1  # noqa: NPT001, NPT801\n",
                     id="suppressed by noqa: NPT801: no finding, no fix"),
        pytest.param("y = 1  # noqa\n", "y = 1  # noqa\n", id="a bare noqa is never judged"),
    ],
)
def test_npt801_fix_removes_the_unused_codes(text: str, expected: str) -> None:
    assert fix_source(text, settings=UNUSED) == expected
    assert [f.code for f in check_source(expected, settings=UNUSED)] == []


def test_npt801_fix_beside_a_call_fix_on_the_same_line() -> None:
    text = "import numpy as np\nz = np.exp(x)  # noqa: NPT002\n"
    assert [(f.code, f.fixable) for f in check_source(text, settings=UNUSED)] == [("NPT001", True), ("NPT801", True)]
    assert fix_source(text, settings=UNUSED).endswith("import np2torch.runtime as np2t\nimport numpy as np\nz = np2t.exp(x)\n")


def test_npt801_fix_of_one_finding_leaves_the_others() -> None:
    from np2torch.lint.engine import fix_findings

    text = "import math\na = math.exp(1)  # noqa: NPT001, NPT002\nb = 1  # noqa: NPT003\n"
    first = check_source(text, settings=UNUSED)[0]
    assert (first.line, first.column, first.fix_title) == (2, 26, "Remove the unused `noqa` code")
    fixed = fix_findings(text, [first], settings=UNUSED)
    assert fixed == "import math\na = math.exp(1)  # noqa: NPT002\nb = 1  # noqa: NPT003\n"


def test_npt801_is_left_out_by_from_run() -> None:
    from np2torch.lint.engine import REASON_NOT_A_SITE, fix_and_check

    text = "import math\na = math.exp(1)  # noqa: NPT001\n"
    done = fix_and_check(text, settings=UNUSED, only=frozenset())
    assert done.text is text
    assert [(f.code, f.fixable, f.reason) for f in done.findings] == [("NPT801", False, REASON_NOT_A_SITE)]


@pytest.mark.parametrize("line", ["y = 1", "y = f(1,", "s = '''", "t = 2 if a else \\"])
def test_removing_noqa_codes_changes_comments_only(line: str) -> None:
    # Whatever the line holds before its comment, the tokens other than comments are the same after the fix.
    import io
    import tokenize

    from np2torch.lint.suppress import remove_noqa_codes

    def code_tokens(text: str) -> list[tuple[int, str]]:
        try:
            return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(text).readline)
                    if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)]
        except (tokenize.TokenError, SyntaxError):
            return []

    text = f"{line}  # noqa: NPT001, E501\nz = 3  # keep: NPT001\n"
    column = text.index("# noqa")
    fixed = remove_noqa_codes(text, {1: ["NPT001"], 2: ["NPT001"]}, {1: (column, "# noqa: NPT001, E501")})
    assert fixed.splitlines()[1] == "z = 3  # keep: NPT001"  # a line without its comment read: untouched
    assert code_tokens(fixed) == code_tokens(text)
    assert fixed.count("\n") == text.count("\n")
