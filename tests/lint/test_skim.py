"""Parse less (np2torch.lint.skim): the findings of the skimmed parse are the whole parse's, on every fixture, on
the cases where a careless skim would change them, and on installed SciPy; the lexer's edge cases; and
``np2torch run`` still executes every function."""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from pathlib import Path

import pytest

from np2torch.lint import engine
from np2torch.lint.engine import Settings, _analyze, check_source, fix_source, skimmed_text
from np2torch.lint.model import DEFAULT_SETTINGS, SourceError
from np2torch.lint.rules import RULES
from np2torch.lint.skim import Skim, _Piece, skim
from np2torch.lint.syntax import newer_syntax

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ALL_FIXTURES = sorted(FIXTURES.rglob("*.py"))
SETTINGS = [DEFAULT_SETTINGS, Settings(rules=RULES), Settings(unsafe_fixes=True), Settings(alias="np")]


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _outcome(source: str, path: str, settings: Settings, skimmed: bool) -> object:
    try:
        analysis = _analyze(source, path, settings, skimmed=skimmed)
    except SourceError as exc:
        return ("error", str(exc), exc.line, exc.column)
    return analysis.findings


def _same_as_whole(source: str, path: str = "m.py", settings: Settings = DEFAULT_SETTINGS) -> bool:
    """The skimmed analysis gives the whole one's findings (or error); True when it really was skimmed."""
    assert _outcome(source, path, settings, True) == _outcome(source, path, settings, False)
    return skimmed_text(source, settings) is not None


def _stubs(skimmed: Skim) -> list[tuple[str, int]]:
    """(name, line of its ``pass``) of each replaced body, in order, nested classes' methods included."""
    found: list[tuple[str, int]] = []

    def visit(pieces: list[_Piece]) -> None:
        for piece in pieces:
            if piece.stub:
                found.append((piece.name, piece.stub))
            if piece.block is not None:
                visit(piece.block)

    visit(skimmed.pieces)
    return found


def _skimmed(text: str, words: set[str]) -> Skim:
    found = skim(text, words)
    assert found is not None
    assert found.text.count("\n") == text.count("\n")
    assert found.fits(ast.parse(found.text))
    return found


# --------------------------------------------------------------------------- the same findings


def _fixture_source(path: Path) -> str:
    source = path.read_bytes().decode("utf-8")
    needed = newer_syntax(source)
    if needed is not None:
        pytest.skip(f"needs Python >= {needed[0]}.{needed[1]}")
    return source


# A function no finding can be in, before and after the fixture's code: the fixtures are small, and most have
# nothing else to skim.
UNTOUCHED = 'def _untouched(a, b=1):\n    """Not np.exp."""\n    return [a,\n        b]\n'


def _variants(source: str) -> list[str]:
    return [source, UNTOUCHED + "\n" + source, source + "\n\n" + UNTOUCHED]


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_findings_and_fixes_are_the_whole_parses_on_every_fixture(path: Path) -> None:
    name = str(path).replace(".in.py", ".py")
    for source in _variants(_fixture_source(path)):
        for settings in SETTINGS:
            _same_as_whole(source, name, settings)
            try:
                whole = engine._analyze(source, name, settings)
                expected = engine._fixed_text(whole, source, name, settings)
            except (SourceError, engine.FixError) as exc:
                with pytest.raises(type(exc)):
                    fix_source(source, name, settings=settings)
                continue
            assert fix_source(source, name, settings=settings) == expected


def test_the_fixtures_exercise_the_skim() -> None:
    # the comparison above means something only where bodies were replaced
    texts = [text for path in ALL_FIXTURES for text in _variants(_read(path))]
    assert sum(skimmed_text(text) is not None for text in texts) >= len(ALL_FIXTURES)


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


# Each case is skimmed (some body is replaced), and a skim that replaced the body named in the id, or dropped
# the header, class body or gate named there, would change its findings.
CAREFUL = {
    "a namespace write in a function body (globals())": """
        import numpy as np

        def setup():
            globals()["np"] = None

        def f(x):
            return np.exp(x)
        """,
    "exec in a function body": """
        import numpy as np

        def run(code):
            exec(code)

        def f(x):
            return np.exp(x)
        """,
    "sys.modules[__name__] written in a function body": """
        import sys
        import numpy as np

        def patch(g):
            sys.modules[__name__].np = g

        def f(x):
            return np.exp(x)
        """,
    "the alias bound in a function body": """
        import numpy as np

        def helper():
            np2t = 3
            return np2t

        def f(x):
            return np.exp(x)
        """,
    "a decorator of a skimmed function that calls code before the import": """
        def f(x):
            return np.exp(x)

        @register(f)
        def g():
            return 1

        import numpy as np
        """,
    "a default of a skimmed function that calls code before the import": """
        def f(x):
            return np.exp(x)

        def g(y=f(1.0)):
            return y

        import numpy as np
        """,
    "a class body, which runs on import, around a skimmed method": """
        def f(x):
            return np.exp(x)

        class A:
            y = f(1.0)

            def method(self):
                return 1

        import numpy as np
        """,
    "a method holding the finding beside skimmed ones": """
        import numpy as np

        class A:
            def one(self):
                return 1

            class Inner:
                def two(self):
                    return 2

                def three(self, x):
                    return np.exp(x)
        """,
    "a self-documenting f-string field in a function body": """
        import numpy as np

        def show(x):
            print(f"{np.exp(x)=}")

        def quiet():
            return 0
        """,
    "a from-import's alias of a target, spelled instead of its name": """
        from numpy import exp as e

        def f(x):
            return e(x)
        """,
    "a from-import's alias spelled with characters the parser normalises (NFKC)": """
        from numpy import exp as \uff45

        def f(x):
            return e(x)
        """,
    "a from-import's alias spelled plainly, called with characters the parser normalises": """
        from numpy import exp as e

        def f(x):
            return \uff45(x)
        """,
    "an alias after a comment in a parenthesised import": """
        from numpy import (
            exp  # the exponential
            as e,
        )

        def f(x):
            return e(x)
        """,
    "a class statement in a function where __class_getitem__ is spelled": """
        def f(x):
            return np.exp(x)

        def make():
            class Grid:
                def __class_getitem__(cls, item):
                    return f(item)
            return Grid

        Grid = None
        y = Grid[1.0]
        import numpy as np
        """,
    "a compiler's package named in a string, never imported": """
        import numpy as np

        @skip_backends("torch")
        def test_exp(x):
            return np.exp(x)

        def g(module):
            return module.jit
        """,
    "a name spelled only in a docstring and a comment": """
        import numpy as np

        def f(x):
            '''The exp of nothing.'''
            return x  # not np.exp

        def g(x):
            return np.exp(x)
        """,
}


@pytest.mark.parametrize("source", list(CAREFUL.values()), ids=list(CAREFUL))
def test_what_a_careless_skim_would_change(source: str) -> None:
    text = src(source) + "\n\ndef untouched():\n    return 0\n"  # at least this body is skimmed
    assert _same_as_whole(text)
    assert check_source(text)  # there is something to get wrong


# Where a way to a compiler starts, it may be applied by a name bound anywhere: the whole text is parsed.
WHOLE = {
    "a compiler imported in a function body": """
        import numpy as np

        def make(kernel):
            import numba
            return numba.njit(kernel)

        def kernel(x):
            return np.exp(x)
        """,
    "a compiler applied by a function elsewhere": """
        import numba
        import numpy as np

        def make():
            return numba.njit(kernel)

        def kernel(x):
            return np.exp(x)
        """,
}


@pytest.mark.parametrize("source", list(WHOLE.values()), ids=list(WHOLE))
def test_where_function_bodies_matter_the_whole_text_is_parsed(source: str) -> None:
    text = src(source) + "\n\ndef untouched():\n    return 0\n"
    assert not _same_as_whole(text)
    assert not check_source(text)[0].fixable


@pytest.mark.parametrize("binder", ["global", "walrus"])
def test_names_bound_in_a_skimmed_body_still_count_where_placement_reads_every_scope(binder: str) -> None:
    # with a `global` statement or a `:=` anywhere, placement counts every name bound in any scope as the
    # module's own (placement._own_names): `runner`, bound only in `setup`'s skimmed body, makes `runner.go()`
    # a call that can run `f` before the import (the finding is unfixable); a skim that lost it would fix it
    text = src("""
        def f(x):
            return np.exp(x)

        def setup():
            runner = f
            return runner

        def h(xs):
            BINDER

        runner.go()
        import numpy as np
        """).replace("BINDER", "global g" if binder == "global" else "return [y for x in xs if (y := x)]")
    assert _same_as_whole(text)
    (finding,) = check_source(text)
    assert not finding.fixable and "return runner" not in (skimmed_text(text) or "")


def test_a_body_that_spells_the_word_only_in_a_string_is_skimmed() -> None:
    text = src(CAREFUL["a name spelled only in a docstring and a comment"])
    skimmed = skimmed_text(text)
    assert skimmed is not None and "not np.exp" not in skimmed and "return np.exp(x)" in skimmed


def test_only_the_rules_that_may_match_keep_a_body() -> None:
    # `log` is spelled in code, but no `np.log` can match (the prefilter's verdict for NPT002): the body of
    # `g` is skimmed; with `np.log` spelled, it is read
    text = src("""
        import numpy as np

        def f(x):
            return np.exp(x)

        def g(log):
            return log(1)
        """)
    assert "return log(1)" not in (skimmed_text(text) or "")
    assert "return log(1)" in (skimmed_text(text + "y = np.log\n") or text)


# --------------------------------------------------------------------------- syntax errors


def test_a_syntax_error_in_code_that_is_read_is_reported_as_ever() -> None:
    text = "import numpy as np\n\ndef f(x):\n    return x\n\ny = np.exp(1.0 +\n"
    with pytest.raises(SourceError) as info:
        check_source(text)
    assert info.value.line == 6


def test_a_syntax_error_in_a_skimmed_body_goes_unreported() -> None:
    # as one in a file the prefilter skips (docs/corpus.md, README)
    text = "import numpy as np\n\ndef f(x):\n    return x +\n\ndef g(x):\n    return np.exp(x)\n"
    assert [f.code for f in check_source(text)] == ["NPT001"]
    with pytest.raises(SourceError):
        _analyze(text, "m.py", DEFAULT_SETTINGS)


# A line no deeper than a `def` after its body is no part of the body: kept, it makes the skimmed text the
# syntax error the whole text is, reported where ruff reports it.
STRAY = ["else:\n    pass\n", "elif x:\n    pass\n", "except ValueError:\n    pass\n", "finally:\n    pass\n",
         ")\n", "]\n", "}\n"]
AFTER = {  # and the column ruff reports (Python's IndentationError gives the end of the line instead)
    "after a function": ("def f(x):\n    return x\n{stray}", 1),
    "after a method, at the class's indentation": ("class A:\n    def f(self):\n        return 1\n{stray}", 1),
    "after a method, at the method's indentation": ("class A:\n    def f(self):\n        return 1\n    {stray}", 5),
    "after a function, at no block's indentation": ("def f(x):\n    return x\n  {stray}", None),
}


@pytest.mark.parametrize("stray", STRAY, ids=lambda s: s.split(None, 1)[0])
@pytest.mark.parametrize(("where", "column"), list(AFTER.values()), ids=list(AFTER))
def test_a_stray_line_after_a_skimmed_function_is_the_syntax_error_it_is(where: str, column: int | None,
                                                                          stray: str) -> None:
    head = "import numpy as np\n\n" + where.format(stray=stray)
    text = head + "\ndef g(x):\n    return np.exp(x)\n"
    assert _same_as_whole(text) is False
    with pytest.raises(SourceError) as info:
        check_source(text)
    line = head.count("\n") - stray.count("\n") + 1
    assert info.value.line == line and (column is None or info.value.column == column)  # where ruff reports it


def test_a_bracket_closed_at_the_def_s_indentation_inside_its_body_keeps_the_body() -> None:
    text = "def f(x):\n    return g(\n        x,\n)\n\ndef h(\n    y,\n):\n    return y\n"
    skimmed = _skimmed(text, WORDS)
    assert _stubs(skimmed) == [("h", 9)]  # `def h(` closes its bracket in its header: no line of its body
    assert skimmed.text.startswith(text[:text.index("def h")])


# Python 3.12 reads a quote inside an f-string's field as a string there (PEP 701), where the old grammar ends
# the f-string: the whole text is parsed, which reads it as this Python does (or says which Python can).
PEP_701 = {
    "the f-string's own quote in a field of a body that can hold nothing": (
        'def f(d):\n    return f"{d["#"]}"\n\ndef g(x):\n    return np.exp(x)\n'),
    "a target called after the f-string's own quote in a field": (
        'def f(x):\n    return f"{"a"}{np.exp(x)}"\n\ndef g():\n    return 0\n'),
    "a string in a format spec reusing the quote": (
        'def f(x):\n    return f"{x:{"a"}}" + f"{np.exp(x)!r}"\n\ndef g():\n    return 0\n'),
}


@pytest.mark.parametrize("body", list(PEP_701.values()), ids=list(PEP_701))
def test_f_strings_that_reuse_their_quotes_are_read_as_the_parser_reads_them(body: str) -> None:
    text = "import numpy as np\n\n" + body
    assert _same_as_whole(text) is False
    try:
        ast.parse(text)
    except SyntaxError:  # before Python 3.12: valid code of a later Python, as the whole parse says
        with pytest.raises(SourceError, match="needs Python >= 3.12"):
            check_source(text)
    else:
        assert [f.code for f in check_source(text)] == ["NPT001"]


@pytest.mark.parametrize("literal", ["f'{d[\"x\"]:>{w}}'", 'f"{{a}} {b!r} {{"', 'f"\\N{DASH} {x}"', 'rf"\\{x}"',
                                     'f"""{[1,\n2]}"""', "f'{x}' if\"{\" else 1"])
def test_f_strings_of_every_grammar_are_still_skimmed(literal: str) -> None:
    text = f"def f(x, d, w, b):\n    return {literal}\n\ndef g():\n    return exp\n"
    assert _stubs(_skimmed(text, WORDS)) == [("f", text.count("\n", 0, text.index("\n\ndef g")) + 1)]


# --------------------------------------------------------------------------- the lexer


WORDS = {"exp"}


def test_a_column_0_def_inside_a_triple_quoted_string_is_no_statement() -> None:
    text = 'def f():\n    s = """\ndef g():\n    return 1\n"""\n    return s\n\ndef h():\n    return exp\n'
    assert _stubs(_skimmed(text, WORDS)) == [("f", 6)]


def test_a_column_0_def_inside_a_backslash_continued_string_is_no_statement() -> None:
    text = "def f():\n    s = 'a\\\ndef g(): return exp'\n    return s\n\ndef h():\n    return 1\n"
    assert _stubs(_skimmed(text, WORDS)) == [("f", 4), ("h", 7)]  # `exp` in a string is no name


def test_a_quote_in_a_comment_opens_no_string() -> None:
    text = "def f():  # don't\n    return 1\n\ndef g():\n    return exp  # it's\n\ndef h():\n    return 2\n"
    assert _stubs(_skimmed(text, WORDS)) == [("f", 2), ("h", 8)]


def test_a_hash_in_a_string_opens_no_comment() -> None:
    text = "def f():\n    s = '# not a comment \"\"\"'\n    return s\n\ndef g():\n    return exp\n"
    assert _stubs(_skimmed(text, WORDS)) == [("f", 3)]


@pytest.mark.parametrize("prefix", ["", "r", "b", "rb", "Rb", "bR", "br", "u", "U", "R"])
def test_every_string_prefix_holds_its_literal(prefix: str) -> None:
    text = f'def f():\n    s = {prefix}"""\\"""\ndef g(): exp\n"""\n    return s\n\ndef h():\n    return exp\n'
    assert _stubs(_skimmed(text, WORDS)) == [("f", 5)]


@pytest.mark.parametrize("prefix", ["f", "F", "rf", "fR", "Rf"])
def test_the_fields_of_an_f_string_are_code(prefix: str) -> None:
    text = f'def f(x):\n    return {prefix}"{{exp(x)}}"\n\ndef g():\n    return 1\n'
    assert _stubs(_skimmed(text, WORDS)) == [("g", 5)]


def test_nested_quotes_in_f_strings() -> None:
    text = "def f(d):\n    return f\"{d['#']}\" + f'{d[\"x\"]}'\n\ndef g():\n    return exp\n"
    assert _stubs(_skimmed(text, WORDS)) == [("f", 2)]


def test_decorators_with_arguments_spanning_lines_belong_to_their_def() -> None:
    text = "@deco(\n    1,\n    exp=2,\n)\ndef f():\n    return 1\n\n@other\n@deco(\n)\ndef g():\n    return 2\n"
    skimmed = _skimmed(text, {"nothing"})
    assert _stubs(skimmed) == [("f", 6), ("g", 12)]
    assert skimmed.text.startswith("@deco(\n    1,\n    exp=2,\n)\ndef f():\n")
    assert skim(text, WORDS) is not None and _stubs(_skimmed(text, WORDS)) == [("g", 12)]  # the word in f's header


def test_a_decorator_before_anything_but_a_def_gives_up() -> None:
    # `@` at column 0 inside brackets is a matrix product, not a decorator
    assert skim("y = (a\n@ b\n)\nz = 1\n\ndef f():\n    return 1\n", WORDS) is None
    assert skim("def f():\n    return 1\n\n@deco\n", WORDS) is None


def test_a_matrix_product_at_column_0_before_a_def_makes_a_whole_parse() -> None:
    text = "import numpy as np\ny = (a\n@ b)\n\ndef f():\n    return 1\n\ndef g(x):\n    return np.exp(x)\n"
    skimmed = skim(text, WORDS)
    assert skimmed is not None and not skimmed.fits(ast.parse(skimmed.text))  # `f` does not start at `@ b)`
    assert not _same_as_whole(text)
    assert [f.code for f in check_source(text)] == ["NPT001"]


def test_a_bracketed_line_at_column_0_in_a_body_makes_a_whole_parse() -> None:
    text = "import numpy as np\n\ndef f():\n    x = [\n1, 2]\n    return x\n\ndef g(x):\n    return np.exp(x)\n"
    skimmed = skim(text, WORDS)
    assert skimmed is not None
    with pytest.raises(SyntaxError):
        ast.parse(skimmed.text)  # the line left as it was closes a bracket the stub does not open
    assert not _same_as_whole(text)
    assert [f.code for f in check_source(text)] == ["NPT001"]


def test_a_one_line_body_is_kept_and_methods_are_skimmed_at_their_indentation() -> None:
    text = "class A(\n    Base,\n):\n    def f(self): return 1\n\n    def g(self):\n        return 2\n    x = 1\n"
    skimmed = _skimmed(text, WORDS)
    assert _stubs(skimmed) == [("g", 7)]
    assert skimmed.text.endswith("    def f(self): return 1\n\n    def g(self):\n     pass\n    x = 1\n")


def test_a_statement_the_split_missed_makes_the_parse_not_fit() -> None:
    text = "class A:\n    def g(self):\n        return 2\n    y = 1\n"
    skimmed = _skimmed(text, WORDS)
    tree = ast.parse(skimmed.text)
    (klass,) = tree.body
    assert isinstance(klass, ast.ClassDef)
    klass.body.append(ast.parse("z = 2").body[0])
    assert not skimmed.fits(tree)


@pytest.mark.parametrize("text", ["def f():\n\x0c    return 1\n", "def f():\r    return 1\r", "def f():\n    return 1\x00\n",
                                  "def f():\n    return 'unterminated\n"])
def test_text_the_split_cannot_read_is_not_skimmed(text: str) -> None:
    assert skim(text, WORDS) is None


def test_a_backslash_continuation_is_no_statement() -> None:
    text = "x = 1 + \\\n2\n\ndef f():\n    return 1  # \\\ny = 2\n"
    skimmed = _skimmed(text, WORDS)
    assert _stubs(skimmed) == [("f", 5)] and [piece.line for piece in skimmed.pieces] == [1, 4, 6]


def test_words_and_substrings_are_read_as_the_parser_reads_them() -> None:
    # a word spelled with characters NFKC maps (an alias `as ｅ`) is the plain name the body spells
    text = "def f(x):\n    return e(x)\n\ndef g(x):\n    np2t = x\n    return \uff4e\uff50\uff12\uff54\n\ndef h():\n    return 1\n"
    found = skim(text, {"\uff45"}, {"np2t"})
    assert found is not None and _stubs(found) == [("h", 9)]


def test_names_are_read_as_the_parser_reads_them() -> None:
    # NFKC: `ｅｘｐ` is `exp`; a non-ASCII character in a string or comment is no name
    text = "def f(x):\n    return np.\uff45\uff58\uff50(x)\n\ndef g():\n    return '\u00e9'  # \u00e9\n"
    assert _stubs(_skimmed(text, WORDS)) == [("g", 5)]


# --------------------------------------------------------------------------- np2torch run


def test_run_executes_every_function_of_a_file_with_a_finding() -> None:
    from np2torch.run.instrument import instrument

    text = src("""
        import numpy as np

        def side(x):
            return x + 41

        def g(x):
            return np.exp(x)

        RESULT = side(1)
        """)
    assert "return x + 41" not in (skimmed_text(text) or "")  # check reads `side` as `pass`; run must not
    result = instrument(text, "m.py", DEFAULT_SETTINGS)
    assert result.code is not None and result.sites
    namespace: dict[str, object] = {}
    exec(result.code, namespace)
    assert namespace["RESULT"] == 42


# --------------------------------------------------------------------------- installed SciPy


@pytest.mark.slow
@pytest.mark.parametrize("subpackage", ["special", "optimize", "stats"])
def test_installed_scipy_gives_the_same_findings(subpackage: str) -> None:
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("scipy is not installed")
    root = Path(list(spec.submodule_search_locations)[0]) / subpackage
    skimmed = 0
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if engine.may_contain(source, DEFAULT_SETTINGS.rules):
            skimmed += _same_as_whole(source, str(path))
    assert skimmed >= 5
