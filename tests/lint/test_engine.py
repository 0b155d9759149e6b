"""The engine's API: findings, errors, settings, noqa, positions, the prefilter."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import np2torch
from np2torch.lint import engine
from np2torch.lint.engine import (
    REASON_CLASS_ATTRIBUTE,
    REASON_COMPARED,
    REASON_REFERENCE,
    Finding,
    FixError,
    Settings,
    SourceError,
    _analyze,
    check_source,
    fix_findings,
    fix_source,
    may_contain,
)
from np2torch.lint.rules import RULES, RULES_BY_CODE, select_rules
from np2torch.lint.syntax import newer_syntax, syntax_version

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ALL_FIXTURES = sorted(FIXTURES.rglob("*.py"))


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def spans(source: str, **kwargs) -> list[str]:  # type: ignore[no-untyped-def]
    return [
        f"{f.line}:{f.column}-{f.end_line}:{f.end_column} {f.code}{'' if f.fixable else ' nofix'}"
        for f in check_source(source, **kwargs)
    ]


# --------------------------------------------------------------------------- API


def test_top_level_api_is_the_engine() -> None:
    assert np2torch.check_source is check_source
    assert np2torch.fix_source is fix_source
    assert np2torch.Finding is Finding
    assert np2torch.Settings is Settings


def test_finding_fields() -> None:
    assert [f.name for f in dataclasses.fields(Finding)] == [
        "path", "line", "column", "end_line", "end_column", "code", "message", "fixable", "fix_title", "reason",
    ]  # fmt: skip
    [finding] = check_source("import numpy as np\ny = np.exp(x)\n", "pkg/mod.py")
    assert finding == Finding(
        path="pkg/mod.py",
        line=2,
        column=5,
        end_line=2,
        end_column=11,
        code="NPT001",
        message=RULES_BY_CODE["NPT001"].message(),
        fixable=True,
        fix_title="Replace with `np2t.exp`",
        reason=None,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.line = 3  # type: ignore[misc]


def test_unfixable_finding_has_a_reason_and_no_fix_title() -> None:
    [finding] = check_source("import numpy as np\nok = f is np.exp\n")
    assert (finding.fixable, finding.fix_title, finding.reason) == (False, None, REASON_COMPARED)


def test_class_attribute_is_reported_not_rewritten() -> None:
    source = "import numpy as np\nclass K:\n    f = np.exp\n    def m(self):\n        self.g = np.exp\n"
    first, second = check_source(source, settings=Settings(unsafe_fixes=True))
    assert (first.line, first.fixable, first.reason) == (3, False, REASON_CLASS_ATTRIBUTE)
    assert (second.line, second.fixable) == (5, True)


def test_the_class_attribute_reason_is_true_of_every_helper() -> None:
    # A ufunc's helper (the C front, or without it an Unbound) binds as a ufunc does, not as a method; logsumexp's,
    # softmax's are Python functions standing in for Python functions: each binds as its original does.
    import importlib

    import np2torch.runtime as np2t

    for rule in RULES:
        if not rule.helper or rule.pattern:  # a pattern (NPT9xx) rewrites calls only, never a reference
            continue
        module, _, name = rule.qualname.rpartition(".")
        original, helper = getattr(importlib.import_module(module), name), getattr(np2t, rule.helper)
        kind = type("K", (), {"original": original, "helper": helper})
        assert (kind().original is original) == (kind().helper is helper), rule.code
    assert "binds as a method" not in REASON_CLASS_ATTRIBUTE and "binds as the original does" in REASON_CLASS_ATTRIBUTE


def test_a_reference_is_an_unsafe_fix() -> None:
    source = "import numpy as np\nact = np.exp\ny = np.exp(x)\n"
    reference, call = check_source(source)
    assert (reference.fixable, reference.fix_title, reference.reason) == (False, None, REASON_REFERENCE)
    assert "--unsafe-fixes" in REASON_REFERENCE  # what the CLI counts as a hidden fix
    assert (call.fixable, call.fix_title) == (True, "Replace with `np2t.exp`")
    unsafe = Settings(unsafe_fixes=True)
    assert [f.fixable for f in check_source(source, settings=unsafe)] == [True, True]
    assert "act = np2t.exp\n" in fix_source(source, settings=unsafe)
    assert "act = np.exp\n" in fix_source(source)


def test_findings_are_sorted_by_position() -> None:
    source = src(
        """
        from scipy.special import erf
        import numpy as np
        y = erf(np.log(x)) + np.exp(x)
        z = np.log(x)
        """
    )
    assert spans(source) == ["3:5-3:8 NPT003", "3:9-3:15 NPT002", "3:22-3:28 NPT001", "4:5-4:11 NPT002"]


def test_multi_line_finding_spans_lines() -> None:
    assert spans("import numpy as np\ny = (np\n     .exp)(x)\n") == ["2:6-3:10 NPT001"]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("call", [check_source, fix_source], ids=["check", "fix"])
def test_syntax_error_is_a_source_error(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SourceError) as info:
        call("import numpy as np\n\ndef f(:\n    return np.exp(x)\n")
    assert info.value.line == 3
    assert info.value.column is not None and info.value.column >= 1
    assert "\n" not in str(info.value) and str(info.value).startswith("SyntaxError: ")


NUL_MESSAGE = "SyntaxError: source code cannot contain null bytes"  # Python's words; ruff's invalid-syntax there


@pytest.mark.parametrize(("text", "where"), [
    pytest.param("import numpy as np\nnp.exp(x)\x00\n", (2, 10), id="after code"),
    pytest.param("import os\n\x00\x01\x02", (2, 1), id="beside other control characters"),
    pytest.param("x = '\u00e9'\x00\n", (1, 8), id="after a character of two bytes: its column in characters"),
    pytest.param("x = 1\r\n\ry\x00", (3, 2), id="after CRLF and CR"),
    pytest.param("x = 1 \\\n\x00\n", (2, 1), id="after a line continuation"),
    pytest.param("s = f'{x\x00}'\n", (1, 9), id="in an f-string's expression"),
    pytest.param("s = '\x00'\nx = 1\x00\n", (2, 6), id="in code after one in a string"),
])
def test_a_nul_in_code_is_a_source_error_where_it_stands(text: str, where: tuple[int, int]) -> None:
    # whatever the text calls: ruff reports it in every file
    for call in (check_source, fix_source):
        with pytest.raises(SourceError) as info:
            call(text)
        assert (str(info.value), info.value.line, info.value.column) == (NUL_MESSAGE, *where)


@pytest.mark.parametrize("literal", [
    pytest.param("'a\x00b'", id="string"),
    pytest.param("b'a\x00b'", id="bytes"),
    pytest.param("f'a\x00{np.log(x)}'", id="f-string"),
    pytest.param('"""a\n\x00b"""', id="triple-quoted over two lines"),
    pytest.param("'a\\\n\x00b'", id="after a backslash-newline in a string"),
])
def test_a_nul_in_a_string_or_a_comment_is_taken_as_ruff_takes_it(literal: str) -> None:
    # the findings and the fix are those of the text with any other character in place of each NUL
    text = f"import numpy as np\n# a comment\x00\ns = {literal}; y = np.exp(x)\nz = np.log(x)  # \x00\n"
    plain = text.replace("\x00", "_")
    findings = check_source(text)
    assert findings == check_source(plain) and len(findings) == 2 + ("np.log" in literal)
    fixed = fix_source(text)
    assert fixed == fix_source(plain).replace("_", "\x00") != text  # each NUL where it was, nothing else one


def test_a_nul_in_a_string_of_a_file_that_calls_nothing_is_no_finding() -> None:
    assert check_source("s = '\x00'\n") == [] and fix_source("s = '\x00'\n") == "s = '\x00'\n"
    assert may_contain("s = '\x00'\n", RULES)  # the prefilter lets it through: a NUL may stand in code


def test_a_text_holding_every_stand_in_refuses_its_first_nul() -> None:
    from np2torch.lint import nul

    stand_ins = nul.STAND_INS
    with pytest.raises(SourceError) as info:
        check_source(f"import numpy as np\ns = '{stand_ins}\x00'\ny = np.exp(x)\n")
    assert (info.value.line, info.value.column) == (2, 6 + len(stand_ins))


def test_a_fix_that_would_add_a_nul_is_refused() -> None:
    from np2torch.lint import nul

    masked = nul.mask("s = '\x00'\n")
    assert "\x00" not in masked.text and masked.restore(masked.text) == "s = '\x00'\n"
    with pytest.raises(FixError):
        masked.restore(masked.text * 2)


def test_a_nul_is_refused_for_a_text_to_run() -> None:
    # `np2torch run` executes the tree: Python runs no text with a NUL, and the stand-in would be the string's value
    with pytest.raises(SourceError) as info:
        engine.plan_source("import numpy as np\ns = '\x00'\ny = np.exp(x)\n")
    assert (str(info.value), info.value.line, info.value.column) == (NUL_MESSAGE, 2, 6)


def test_indentation_error_is_a_source_error() -> None:
    with pytest.raises(SourceError) as info:
        check_source("import numpy as np\ndef f():\nreturn np.exp(1.0 * x)\n")
    assert str(info.value).startswith("IndentationError: ")
    assert info.value.line == 3


def test_prefilter_does_not_parse_text_that_cannot_have_findings() -> None:
    # By design (as TorchFix's): text spelling no table module and name is never parsed,
    # so its syntax errors are not the engine's to report.
    assert check_source("def f(:\n") == []
    assert fix_source("def f(:\n") == "def f(:\n"


def test_fix_error_when_the_rewrite_does_not_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    import np2torch.lint.rewrite as fixer

    monkeypatch.setattr(fixer, "apply_fixes", lambda *args, **kwargs: "def broken(:\n")
    with pytest.raises(FixError):
        fix_source("import numpy as np\ny = np.exp(x)\n")


def test_fix_error_when_the_rewrite_parses_but_does_not_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    import np2torch.lint.rewrite as fixer

    monkeypatch.setattr(fixer, "apply_fixes", lambda *args, **kwargs: "def f():\n    nonlocal x\n")
    with pytest.raises(FixError, match="does not compile"):
        fix_source("import numpy as np\ny = np.exp(x)\n")


def test_text_libcst_cannot_reproduce_is_a_fix_error() -> None:
    # LibCST 1.x drops a form feed that starts a module-level statement line; rather
    # than lose that byte, the fix refuses (the CLI reports it and leaves the file)
    source = "import numpy as np\n\x0cy = np.exp(x)\n"
    assert check_source(source)[0].fixable
    with pytest.raises(FixError, match="byte for byte"):
        fix_source(source)


def test_text_that_never_compiled_can_still_be_fixed() -> None:
    # ast.parse accepts a module-level return; compile() does not, before or after
    source = "import numpy as np\nreturn np.exp(x)\n"
    assert fix_source(source).endswith("return np2t.exp(x)\n")


def test_syntax_of_a_later_python_than_the_oldest_supported_is_recognised() -> None:
    # Under Python 3.9, `match` is valid code np2torch cannot analyse (skipped with a warning), not a syntax error.
    assert syntax_version("match x:\n    case 1:\n        y = np.exp(x)\n") == (3, 10)
    assert syntax_version("try:\n    pass\nexcept* ValueError:\n    pass\n") == (3, 11)
    assert syntax_version("type X = int\n") == (3, 12)
    assert syntax_version("import numpy as np\nnp.exp(x)\n") is None


@pytest.mark.parametrize(("text", "needed"), [
    pytest.param('y = f"{d["k"]}"\n', (3, 12), id="the quote in a field"),
    pytest.param('y = f"{x:{"a"}}"\n', (3, 12), id="the quote in a format spec's field"),
    pytest.param('y = f"{[1,\n 2]}"\n', (3, 12), id="a field spanning lines of a single-quoted f-string"),
    pytest.param('y = f"""{[1,\n 2]}"""\n', None, id="a field spanning lines of a triple-quoted f-string"),
    pytest.param("y = f\"{x:>{w}}\" + f'{d[\"#\"]}'\n", None, id="other quotes, nested fields"),
])
def test_pep_701_f_strings_are_recognised_wherever_the_quote_is(text: str, needed: tuple[int, int] | None) -> None:
    assert syntax_version(text) == needed


# --------------------------------------------------------------------------- prefilter


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_prefilter_is_exact_on_fixtures(path: Path) -> None:
    source = path.read_bytes().decode("utf-8")
    needed = newer_syntax(source)
    if needed is not None:
        pytest.skip(f"needs Python >= {needed[0]}.{needed[1]}")  # `match` under 3.9: np2torch skips the file
    for rules in [RULES, *((rule,) for rule in RULES)]:
        settings = Settings(rules=rules)
        unfiltered = _analyze(source, str(path), settings, prefilter=False).findings
        assert check_source(source, str(path), settings=settings) == unfiltered
        if not may_contain(source, rules):
            assert unfiltered == []


def test_prefilter_needs_module_and_name_of_one_rule() -> None:
    assert may_contain("import numpy as np\nnp.exp(x)", RULES)
    assert not may_contain("import numpy as np\nnp.square(x)", RULES)
    assert not may_contain("import numpy as np\nerf(x)", select_rules(["NPT001", "NPT002"]))
    assert not may_contain("from math import exp\nexp(x)", RULES)


@pytest.mark.parametrize("source", [
    "import numpy as np\ny = (np).exp(x)\n",
    "import numpy as np\ny = (np  # why\n     .exp)(x)\n",
    "import numpy as np\ny = np \\\n    . exp(x)\n",
    "import numpy as \\\n    N\ny = N.exp(x)\n",
    "from scipy import special\ny = special.erf(x)\n",
    "import scipy.special\ny = scipy.special.erf(x)\n",
    "from scipy import (special as  # why\n    sp)\ny = sp.erf(x)\n",
    "import numpy as np\ny = (0,\n... if c else np.exp(x))\n",
    "import numpy as np\ny = [0,\n    ..., np.exp(x)]  # >>> np.exp\n",
    "import numpy as \u00f1p\ny = \u00f1p.exp(x)\n",
    "from numpy import exp\n'''\n    >>> import numpy\n'''\ny = exp(x)\n",
])
def test_prefilter_passes_every_reference_the_resolver_reads(source: str) -> None:
    assert may_contain(source, RULES)
    assert check_source(source)


@pytest.mark.parametrize("source", [
    'import numpy as np\n\ndef f(x):\n    """\n    >>> np.exp(1)\n    >>> y = (np.\n    ...      exp(2))\n    """\n',
    "import numpy as np\n\ndef f(x):\n    xp = array_namespace(x)\n    return xp.exp(x) + xp.log(x)\n",
    "import numpy as np\ns = '''\n>>> from numpy import exp\n... exp(1)\n'''\n",
])
def test_prefilter_leaves_doctests_and_attributes_of_other_names(source: str) -> None:
    assert not may_contain(source, RULES)
    assert _analyze(source, "<string>", Settings(), prefilter=False).findings == []


def test_prefilter_sees_nfkc_normalised_identifiers() -> None:
    source = "import numpy as np\ny = np.ｅｘｐ(x)\n"
    assert may_contain(source, RULES)
    assert spans(source) == ["2:5-2:11 NPT001"]
    assert fix_source(source) == "import np2torch.runtime as np2t\nimport numpy as np\ny = np2t.exp(x)\n"


# --------------------------------------------------------------------------- positions


def test_columns_count_characters_not_bytes() -> None:
    source = 'import numpy as np\ns = "é½🌡"; y = np.exp(x)\n'
    assert spans(source) == ["2:16-2:22 NPT001"]
    line = source.splitlines()[1]
    assert line[15:21] == "np.exp"  # column 16 is index 15


def test_tabs_count_as_one_column() -> None:
    assert spans("import numpy as np\nif x:\n\ty =\tnp.log(x)\n") == ["3:6-3:12 NPT002"]


def test_bom_is_not_a_column_and_survives_the_fix() -> None:
    source = "\ufeffimport numpy as np; y = np.exp(x)\n"
    assert spans(source) == ["1:25-1:31 NPT001"]  # as if the BOM were not there
    fixed = fix_source(source)
    assert fixed.startswith("\ufeff") and fixed.count("\ufeff") == 1
    assert "np2t.exp(x)" in fixed


# --------------------------------------------------------------------------- noqa

NOQA = [
    ("# noqa", True),
    ("#noqa", True),
    ("# NOQA", True),
    ("# noqa:NPT001", True),
    ("#noqa:NPT001", True),
    ("# noqa: NPT001", True),
    ("# noqa: npt001", True),
    ("# noqa: E501,NPT001", True),
    ("# noqa: E501, NPT001", True),
    ("# noqa: E501 NPT001", True),
    ("# type: ignore  # noqa: NPT001", True),
    ("# noqa: NPT002", False),
    ("# noqa: E501", False),
    ("# noqa: NPT0011", False),
    ("# noqanything", False),
    ("# not a noqa: NPT001 comment", False),
]


@pytest.mark.parametrize(("comment", "suppressed"), NOQA, ids=[c for c, _ in NOQA])
def test_noqa(comment: str, suppressed: bool) -> None:
    source = f"import numpy as np\ny = np.exp(x)  {comment}\n"
    assert spans(source) == ([] if suppressed else ["2:5-2:11 NPT001"])
    assert (fix_source(source) == source) is suppressed


def test_noqa_inside_a_string_does_not_count() -> None:
    assert spans('import numpy as np\ny = np.exp(x); s = "# noqa"\n') == ["2:5-2:11 NPT001"]


def test_noqa_applies_to_the_line_where_the_finding_starts() -> None:
    source = "import numpy as np\ny = (np  # noqa\n     .exp)(x)\nz = (np\n     .exp)(x)  # noqa\n"
    assert spans(source) == ["4:6-5:10 NPT001"]


def test_noqa_use_keeps_the_import() -> None:
    source = "from numpy import exp\na = exp(x)  # noqa\nb = exp(y)\n"
    assert fix_source(source) == "import np2torch.runtime as np2t\nfrom numpy import exp\na = exp(x)  # noqa\nb = np2t.exp(y)\n"


# --------------------------------------------------------------------------- settings


def test_rules_subset_finds_and_fixes_only_those() -> None:
    settings = Settings(rules=select_rules(["NPT001"]))
    source = "import numpy as np\ny = np.exp(x) + np.log(x)\n"
    assert spans(source, settings=settings) == ["2:5-2:11 NPT001"]
    assert fix_source(source, settings=settings).endswith("y = np2t.exp(x) + np.log(x)\n")


def test_rules_take_codes_and_selectors_as_select_does() -> None:
    # A user has codes, not Rule objects: np2torch.Settings(rules=["NPT001"]) crashed with AttributeError.
    source = "import numpy as np\ny = np.exp(x) + np.log(x) + np.tanh(x)\n"
    assert spans(source, settings=np2torch.Settings(rules=["NPT001"])) == ["2:5-2:11 NPT001"]
    assert np2torch.Settings(rules="NPT001") == np2torch.Settings(rules=["NPT001"]) == Settings(rules=select_rules(["NPT001"]))
    assert np2torch.Settings(rules=["NPT0"]).rules == select_rules(["NPT0"])  # opt-in rules too, as --select
    assert np2torch.Settings(rules=["ALL"]).rules == select_rules(["ALL"])
    mixed = np2torch.Settings(rules=[RULES_BY_CODE["NPT002"], "npt001", "NPT002"])
    assert [rule.code for rule in mixed.rules] == ["NPT002", "NPT001"]
    assert fix_source(source, settings=np2torch.Settings(rules=["NPT0"])).endswith(
        "y = np2t.exp(x) + np2t.log(x) + np2t.tanh(x)\n")


def test_rules_of_another_type_say_what_to_pass() -> None:
    for bad in ([1], 3, [None]):
        with pytest.raises(TypeError, match=r"Settings\(rules=\.\.\.\) takes rule codes or selectors such as 'NPT001'"):
            np2torch.Settings(rules=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown rule selector 'NPX1'"):
        np2torch.Settings(rules=["NPX1"])


def test_no_rules_no_findings() -> None:
    assert check_source("import numpy as np\nnp.exp(x)\n", settings=Settings(rules=())) == []


def test_custom_runtime_module_and_alias() -> None:
    settings = Settings(runtime_module="mypkg.fast", alias="fast")
    source = "import numpy as np\ny = np.exp(x)\n"
    assert check_source(source, settings=settings)[0].fix_title == "Replace with `fast.exp`"
    assert fix_source(source, settings=settings) == "import mypkg.fast as fast\nimport numpy as np\ny = fast.exp(x)\n"


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"alias": "npt"}, "numpy.typing"),
        ({"alias": "1x"}, "identifier"),
        ({"alias": "class"}, "identifier"),
        ({"runtime_module": "a..b"}, "module"),
        ({"runtime_module": ""}, "module"),
    ],
)
def test_bad_settings_are_value_errors(kwargs, word: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=word):
        Settings(**kwargs)


def test_settings_travel_to_worker_processes_as_rule_codes() -> None:
    import pickle

    everything = Settings(rules=RULES, alias="fast", unsafe_fixes=True)
    data = pickle.dumps(everything)
    assert pickle.loads(data) == everything and len(data) < 2_000  # not the rules' documentation
    own = dataclasses.replace(RULES_BY_CODE["NPT001"], why="a rule of the caller's own")
    mixed = Settings(rules=(own, RULES_BY_CODE["NPT002"]))
    assert pickle.loads(pickle.dumps(mixed)).rules[0].why == "a rule of the caller's own"


def test_np2torch_settings_is_the_engine_settings() -> None:
    assert np2torch.Settings is Settings and Settings.__name__ == "Settings"
    assert repr(Settings(rules=select_rules(["NPT001", "NPT002"]), alias="fast")) == (
        "Settings(rules=<NPT001, NPT002>, runtime_module='np2torch.runtime', alias='fast', unsafe_fixes=False, "
        "ignore_noqa=False, unfixable=(), import_order=ImportOrder(known_first_party=(), known_third_party=(), known_local_folder=(), "
        "extra_standard_library=(), project_modules=(), force_sort_within_sections=False, case_sensitive=False, "
        "from_first=False, line_length=88))")


def test_the_public_api_is_the_engine_api() -> None:
    for name in ("Finding", "FixResult", "Settings", "check_source", "fix_and_check", "fix_source"):
        assert getattr(np2torch, name) is getattr(engine, name), name


def test_alias_spelled_in_fullwidth_is_still_taken() -> None:
    source = "import numpy as np\nｎｐ２ｔ = 1\ny = np.exp(x)\n"  # NFKC: ｎｐ２ｔ is np2t
    assert check_source(source)[0].fix_title == "Replace with `np2t_1.exp`"


def test_fix_title_names_the_alias_the_fix_will_use() -> None:
    source = "import numpy as np\nnp2t = 1\ny = np.exp(x)\n"
    assert check_source(source)[0].fix_title == "Replace with `np2t_1.exp`"
    assert "np2t_1.exp(x)" in fix_source(source)


# --------------------------------------------------------------------------- fix behaviour


def test_nothing_to_fix_returns_the_text_unchanged() -> None:
    for source in ["x = 1\n", "import numpy as np\nnp.log(2)\n", "import numpy as np\nf is np.exp\n"]:
        assert fix_source(source) == source


@pytest.mark.parametrize("source", [
    pytest.param("import numpy as np\ny = np.exp(x) + np.log(x)\n", id="every finding fixable"),
    pytest.param("import numpy as np\ny = np.exp(x); t = f is np.exp\nk = {np.log: np.log(y)}\n",
                 id="findings left, on the lines and columns the fix moved"),
    pytest.param("import numpy as np\nt = f is np.exp\n", id="nothing fixable"),
    pytest.param("x = 1\n", id="no finding"),
])
def test_fix_and_check_is_check_then_fix_then_check_in_one_analysis(source: str) -> None:
    result = engine.fix_and_check(source, "m.py")
    assert list(result.findings) == check_source(source, "m.py")
    assert result.text == fix_source(source, "m.py")
    assert list(result.remaining) == check_source(result.text, "m.py")
    assert result.fixed == tuple(f for f in result.findings if f.fixable)
    if not result.fixed:
        assert result.text is source


def test_fix_and_check_analyses_the_fixed_text_only_to_place_what_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    analysed: list[str] = []
    real = engine._analyze

    def counting(source: str, *args: object, **kwargs: object) -> object:
        analysed.append(source)
        return real(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "_analyze", counting)
    every = engine.fix_and_check("import numpy as np\ny = np.exp(x)\n")
    assert len(analysed) == 1 and every.remaining == ()
    source = "import numpy as np\ny = np.exp(x)\nt = f is np.exp\n"
    left = engine.fix_and_check(source)
    assert analysed[1:] == [source, left.text]
    assert [(f.line, f.code, f.fixable) for f in left.remaining] == [(4, "NPT001", False)]


@pytest.mark.parametrize(
    ("path", "kept"),
    [("pkg/__init__.py", True), ("pkg\\__init__.py", True), ("__init__.py", True), ("pkg/mod.py", False), ("<string>", False)],
)
def test_init_files_keep_their_imports(path: str, kept: bool) -> None:
    """Only --unsafe-fixes removes a module-level import; never in an ``__init__.py`` (re-exports)."""
    fixed = fix_source("from numpy import exp\ny = exp(x)\n", path, settings=Settings(unsafe_fixes=True))
    assert ("from numpy import exp" in fixed) is kept
    assert "np2t.exp(x)" in fixed
    assert "from numpy import exp" in fix_source("from numpy import exp\ny = exp(x)\n", path)


@pytest.mark.parametrize(
    ("source", "path", "unsafe", "kept"),
    [
        pytest.param("import numpy as np\ny = np.exp(x)\n", "m.py", True, False, id="unused after the fix: goes"),
        pytest.param("import numpy\ny = numpy.exp(x)\n", "m.py", True, False, id="without an alias too"),
        pytest.param("import numpy as np\ny = np.exp(x)\n", "m.py", False, True, id="module level: only unsafe"),
        pytest.param("import numpy as np\ny = np.exp(x)\n", "pkg/__init__.py", True, True, id="a package's re-export"),
        pytest.param("__all__ = ['np']\nimport numpy as np\ny = np.exp(x)\n", "m.py", True, True, id="listed in __all__"),
        pytest.param("import numpy as np\ny = np.exp(x) + np.pi\n", "m.py", True, True, id="still used"),
        pytest.param("try:\n    import numpy as np\nexcept ImportError:\n    raise SystemExit(1)\ny = np.exp(x)\n", "m.py", True,
                     True, id="feature detection"),
        pytest.param("def f(x):\n    import numpy as np\n    return np.exp(x)\n", "m.py", False, False,
                     id="a function's own import goes as its from imports do"),
        pytest.param("import numpy as np\ny = np.log(np.sum(np.exp(x)))\n", "m.py", True, True,
                     id="a pattern fix's names are not counted: kept"),
    ],
)
def test_an_unused_numpy_import_goes_as_from_imports_do(source: str, path: str, unsafe: bool, kept: bool) -> None:
    fixed = fix_source(source, path, settings=Settings(unsafe_fixes=unsafe, rules=select_rules(["ALL"])))
    assert "np2t." in fixed
    assert ("import numpy" in fixed) is kept, fixed


def test_a_module_level_import_stays_and_a_local_one_goes() -> None:
    source = "from numpy import exp  # keep me\n\ndef f(x):\n    from numpy import log  # local\n    return exp(log(x))\n"
    assert fix_source(source) == (
        "import np2torch.runtime as np2t\nfrom numpy import exp  # keep me\n\n"
        "def f(x):\n    # local\n    return np2t.exp(np2t.log(x))\n"
    )
    unsafe = fix_source(source, settings=Settings(unsafe_fixes=True))
    assert unsafe.startswith("import np2torch.runtime as np2t\n# keep me\n\ndef f(x):\n    # local\n")


@pytest.mark.parametrize("dynamic", ["eval('exp(1.0)')", "exec('y = log(2.0)')", "globals()['exp']"])
def test_a_module_that_looks_names_up_dynamically_keeps_every_import(dynamic: str) -> None:
    source = f"def f(x):\n    from numpy import exp, log\n    return exp(log(x))\n\n{dynamic}\n"
    for settings in (Settings(), Settings(unsafe_fixes=True)):
        assert "from numpy import exp, log\n" in fix_source(source, settings=settings)


def test_deeply_nested_expression_is_fixed() -> None:
    source = "import numpy as np\ny = " + " + ".join(["x"] * 600) + " + np.exp(x)\n"
    fixed = fix_source(source)
    assert fixed.endswith(" + x + np2t.exp(x)\n")
    assert fix_source(fixed) == fixed


def test_check_never_loads_libcst_or_torch() -> None:
    code = textwrap.dedent(
        """
        import sys
        import np2torch
        findings = np2torch.check_source("import numpy as np\\ny = np.exp(x)\\n")
        assert len(findings) == 1, findings
        loaded = sorted(m for m in ("libcst", "torch") if m in sys.modules)
        assert not loaded, loaded
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


FOUR = "import numpy as np\nfrom numpy import log\n\n\ndef f(x):\n    return np.exp(x) + log(x) + np.exp(2 * x) + log(x)\n"


def test_fix_findings_fixes_that_finding_alone() -> None:
    findings = check_source(FOUR)
    assert [f.code for f in findings] == ["NPT001", "NPT002", "NPT001", "NPT002"]
    one = fix_findings(FOUR, [findings[1]])
    assert one.splitlines()[-1] == "    return np.exp(x) + np2t.log(x) + np.exp(2 * x) + log(x)"
    assert "from numpy import log" in one  # still used by the finding left unfixed
    assert [f.code for f in check_source(one)] == ["NPT001", "NPT001", "NPT002"]


def test_fix_findings_of_every_finding_is_fix_source() -> None:
    assert fix_findings(FOUR, check_source(FOUR)) == fix_source(FOUR)


@pytest.mark.parametrize("findings", [
    pytest.param([], id="none"),
    pytest.param([Finding("<string>", 6, 12, 6, 18, "NPT002", "m", True, None)], id="a position with no finding"),
])
def test_fix_findings_without_a_finding_of_this_text_changes_nothing(findings: list[Finding]) -> None:
    assert fix_findings(FOUR, findings) is FOUR


def test_fix_findings_leaves_an_unfixable_finding_alone() -> None:
    source = "import numpy as np\nTABLE = {np.exp: 1}\n"
    assert fix_findings(source, check_source(source)) is source


def test_engine_module_exports() -> None:
    for name in engine.__all__:
        assert hasattr(engine, name)


# --------------------------------------------------------------------------- compiled functions


def test_a_call_inside_a_numba_function_is_reported_with_the_reason() -> None:
    source = "import numpy as np\nfrom numba import njit\n@njit\ndef sp(x):\n    return np.log(1.0 + np.exp(x))\n"
    findings = check_source(source)
    assert [(f.fixable, f.fix_title) for f in findings] == [(False, None), (False, None)]
    assert {f.reason for f in findings} == {
        "inside a numba-compiled function: np2torch.runtime helpers cannot be compiled by numba"
    }
    assert fix_source(source) == source


def test_a_decorator_named_jit_from_elsewhere_compiles_nothing() -> None:
    source = "import numpy as np\nfrom mylib import jit\n@jit\ndef f(x):\n    return np.exp(x)\n"
    assert [f.fixable for f in check_source(source)] == [True]


_KERNEL = "import numba\nimport numpy as np\n\ndef kernel(x):\n    return np.exp(x)\n\nKERNELS = {'k': kernel}\n"


@pytest.mark.parametrize(
    "application",
    [
        pytest.param("FAST = {k: numba.njit(v) for k, v in KERNELS.items()}", id="unpacked in a comprehension"),
        pytest.param("for fn in KERNELS.values():\n    numba.njit(fn)", id="a loop over a call"),
        pytest.param("for i, fn in enumerate([kernel]):\n    numba.njit(fn)", id="unpacked in a loop"),
        pytest.param("fn, other = kernel, None\nnumba.njit(fn)", id="unpacked by an assignment"),
        pytest.param("for fn in self.kernels:\n    numba.njit(fn)", id="a loop over an attribute"),
        pytest.param("FAST = list(map(numba.njit, KERNELS.values()))", id="a compiler handed to map"),
        pytest.param("FAST = [numba.njit][0](kernel)", id="a compiler taken from a list"),
        pytest.param("JITS = {'fast': numba.njit}\nJITS['fast'](kernel)", id="a compiler taken from a dict"),
        pytest.param("import functools\nfunctools.partial(map, numba.njit)(KERNELS.values())",
                     id="a compiler handed on by partial"),
    ],
)
def test_a_function_a_compiler_gets_from_a_container_may_be_any(application: str) -> None:
    assert [f.fixable for f in check_source(_KERNEL + application.replace("njit", "prange"))] == [True]
    assert [f.fixable for f in check_source(_KERNEL + application + "\n")] == [False]


@pytest.mark.parametrize(
    "loaded",
    [
        pytest.param('numba = import_optional_dependency("numba")\n@numba.jit(nopython=True)', id="pandas' way"),
        pytest.param('nb = importlib.import_module("numba")\n@nb.njit', id="import_module"),
        pytest.param('nb = __import__("numba")\n@nb.njit', id="__import__"),
        pytest.param('jit = getattr(importlib.import_module("numba"), "njit")\n@jit', id="getattr of import_module"),
        pytest.param('@importlib.import_module("numba").njit', id="an attribute of import_module"),
    ],
)
def test_a_compiler_of_a_package_loaded_by_its_name_compiles(loaded: str) -> None:
    source = f"import importlib\nimport numpy as np\n\ndef make():\n    {loaded.replace(chr(10), chr(10) + '    ')}\n" \
        "    def kernel(x):\n        return np.exp(x)\n    return kernel\n"
    assert [f.fixable for f in check_source(source)] == [False]
    assert [f.fixable for f in check_source(source.replace('"numba"', '"json"'))] == [True]


def test_numba_s_own_module_paths_of_its_compilers_compile() -> None:
    source = "import numpy as np\nfrom numba.np.ufunc import vectorize\n@vectorize(['f8(f8)'])\ndef f(x):\n    return np.exp(x)\n"
    assert [f.fixable for f in check_source(source)] == [False]


@pytest.mark.parametrize(
    "compiled",
    [
        pytest.param("@njit\ndef f(x):\n    return np.exp(x)\n", id="decorated"),
        pytest.param("def f(x):\n    return np.exp(x)\n\nF = jit(nopython=True)(f)\n", id="applied by call"),
        pytest.param("@experimental.jitclass\nclass C:\n    def f(self, x):\n        return np.exp(x)\n",
                     id="a package the star import binds"),
    ],
)
def test_a_compiler_a_star_import_binds_compiles(compiled: str) -> None:
    source = "from numba import *\nimport numpy as np\n\n" + compiled  # `np` bound after: the star cannot rebind it
    assert [f.fixable for f in check_source(source)] == [False]
    assert [f.fixable for f in check_source(source.replace("numba", "mylib"))] == [True]


def test_the_unsafe_pattern_inside_a_compiled_function_stays_unfixed() -> None:
    source = "import numpy as np\nimport jax\n@jax.jit\ndef f(x):\n    return np.log(np.sum(np.exp(x)))\n"
    findings = check_source(source, settings=Settings(unsafe_fixes=True))
    assert [(f.code, f.fixable) for f in findings] == [("NPT002", False), ("NPT901", False), ("NPT001", False)]
    assert all("JAX" in (f.reason or "") for f in findings)


# --------------------------------------------------------------------------- LibCST failures are one line


@pytest.mark.parametrize(
    "source",
    [
        "import numpy as np\ndef f(x):\n\x0c    return np.exp(x)\n",
        "import numpy as np\nif 1:\n  \x0c  y = np.exp(x)\n",
    ],
)
def test_a_form_feed_inside_indentation_is_fixed(source: str) -> None:
    """LibCST's AddImportsVisitor raised "invalid value for default_indent" here; the import is text now."""
    fixed = fix_source(source)
    assert "np2t.exp(x)" in fixed and "\x0c" in fixed
    compile(fixed, "<fixed>", "exec")


def test_a_form_feed_libcst_cannot_parse_is_a_one_line_fix_error() -> None:
    source = "import numpy as np\ndef f(x):\n    if x:\n\x0c        return np.exp(x)\n    return 1\n"
    with pytest.raises(FixError, match="lines 2-5") as caught:
        fix_source(source)
    assert "\n" not in str(caught.value)


def test_an_unexpected_libcst_error_is_a_fix_error_naming_the_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    from np2torch.lint import rewrite

    def broken(*_args: object) -> str:
        raise ValueError("Got an invalid value for default_indent: '\\x0c    '")

    monkeypatch.setattr(rewrite, "_rewrite", broken)
    with pytest.raises(FixError, match=r"lines 3-4 \(ValueError: Got an invalid value for default_indent"):
        fix_source("import numpy as np\n\ndef f(x):\n    return np.exp(x)\n")


# --------------------------------------------------------------------------- large files


def test_a_large_module_is_fixed_by_splicing_only_what_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the top-level statements holding a fix go through LibCST; every other byte is spliced through.

    The timing (50,000 lines in ~1.3 s instead of ~66 s) is measured by benchmarks/fix_large_file.py.
    """
    from np2torch.lint import rewrite

    blocks = [f"def f{i}(x):\r\n    if x:\r\n        return [x, {i}]  # \x0c odd bytes stay\r\n    return x\r\n" for i in range(3000)]
    head = '"""Doc."""\r\nimport numpy as np\r\n\r\n'
    middle = "TABLE = np.exp(np.arange(3))\r\n"
    tail = "def hot(x):\r\n    return np.log(x)"  # no final newline
    source = head + "\r\n".join(blocks[:1500]) + middle + "\r\n".join(blocks[1500:]) + tail
    parsed = []
    real_parse = rewrite.cst.parse_module
    monkeypatch.setattr(rewrite.cst, "parse_module", lambda text: parsed.append(text) or real_parse(text))
    fixed = fix_source(source)
    assert parsed == [middle, tail]
    expected = source.replace("import numpy as np\r\n", "import np2torch.runtime as np2t\r\nimport numpy as np\r\n", 1)
    expected = expected.replace("TABLE = np.exp(", "TABLE = np2t.exp(").replace("return np.log(x)", "return np2t.log(x)")
    assert fixed == expected
