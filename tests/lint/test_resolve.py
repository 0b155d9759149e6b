"""The resolver: Python's scoping rules, and agreement with LibCST's QualifiedNameProvider."""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Set, Tuple

import libcst as cst
import pytest
from libcst.metadata import (
    ExpressionContext,
    ExpressionContextProvider,
    MetadataWrapper,
    PositionProvider,
    QualifiedNameProvider,
)

from np2torch.lint.engine import CONSTANTS
from np2torch.lint.model import Lines as _Lines
from np2torch.lint.resolve import bound_names, namespace_writes, resolve
from np2torch.lint.rules import RULES

KNOWN = frozenset({r.qualname for r in RULES} | CONSTANTS)
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*.py"))

_Span = Tuple[int, int, int, int, str]


TARGETS = frozenset(r.qualname for r in RULES)


def resolved(source: str, *, prune: bool = True, focus: frozenset = KNOWN) -> List[str]:  # type: ignore[type-arg]
    """``"line:source text=qualname"`` for every resolved reference, in source order."""
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    refs = resolve(tree, KNOWN, source if prune else None, focus=focus).refs
    refs = sorted(refs, key=lambda r: (r.node.lineno, r.node.col_offset))
    return [f"{r.node.lineno}:{ast.get_source_segment(source, r.node)}={r.qualname}" for r in refs]


def assert_resolves(source: str, expected: List[str]) -> None:
    """The same answer walked in full, pruned for every known name, and pruned for the table only."""
    assert resolved(source, prune=False) == expected
    assert resolved(source) == expected
    on_targets = [r for r in expected if r.rpartition("=")[2] in TARGETS]
    assert [r for r in resolved(source, focus=TARGETS) if r.rpartition("=")[2] in TARGETS] == on_targets


# --------------------------------------------------------------------------- LibCST cross-check


def _value(x):  # type: ignore[no-untyped-def]
    return x() if callable(x) else x  # LibCST hands some metadata out lazily


def _libcst_spans(text: str) -> Tuple[Set[_Span], Set[Tuple[int, int, int, int]]]:
    """Load-context names LibCST resolves to exactly one known name, and the spans where it is unsure."""
    wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
    names = wrapper.resolve(QualifiedNameProvider)
    positions = wrapper.resolve(PositionProvider)
    contexts = wrapper.resolve(ExpressionContextProvider)
    sure: Set[_Span] = set()
    unsure: Set[Tuple[int, int, int, int]] = set()
    for node, qualified in names.items():
        if not isinstance(node, (cst.Name, cst.Attribute)):
            continue
        if _value(contexts.get(node)) != ExpressionContext.LOAD:
            continue
        qualified = _value(qualified)
        hits = [q.name for q in qualified if q.name in KNOWN]
        r = positions[node]
        span = (r.start.line, r.start.column, r.end.line, r.end.column)
        if hits and len(qualified) == 1:
            sure.add((*span, hits[0]))
        elif hits:
            unsure.add(span)
    return sure, unsure


def _our_spans(text: str, *, prune: bool = True, focus: frozenset = KNOWN) -> Set[_Span]:  # type: ignore[type-arg]
    lines = _Lines(text)
    spans = set()
    for ref in resolve(ast.parse(text), KNOWN, text if prune else None, focus=focus).refs:
        n = ref.node
        end = n.end_lineno or n.lineno
        spans.add(
            (n.lineno, lines.char_col(n.lineno, n.col_offset), end, lines.char_col(end, n.end_col_offset or 0), ref.qualname)
        )
    return spans


# Where np2torch deliberately differs from LibCST, file by file: (line, qualname) -> why.
# LibCST's "several possible names" answers (a name rebound in its scope, conditional
# imports of different things) are not differences: np2torch resolves nothing there,
# and the comparison counts only LibCST's single-name answers.
DELIBERATE: Dict[str, Dict[Tuple[int, str], str]] = {
    "fix/nfkc_identifier.in.py": {(5, "numpy.exp"): "Python NFKC-normalises identifiers (np.ｅｘｐ is np.exp); LibCST does not"},
    "fix/star_import_numpy.in.py": {
        (5, "numpy.exp"): "LibCST ignores star imports",
        (5, "numpy.log"): "LibCST ignores star imports",
        (5, "numpy.sqrt"): "LibCST ignores star imports (sqrt is a table name: an opt-in rule)",
    },
    "fix/star_import_numpy.out.py": {
        (6, "numpy.sqrt"): "LibCST ignores star imports (sqrt is a table name: an opt-in rule)",
    },
    "noop/rebound_names.py": {
        (24, "numpy.exp"): "`del exp` makes exp local (UnboundLocalError); LibCST ignores del",
        (34, "scipy.special.logsumexp"): "a mapping-pattern capture binds the name; LibCST misses it",
        (35, "scipy.special.logsumexp"): "a mapping-pattern capture binds the name; LibCST misses it",
    },
    "noop/type_checking_only_import.py": {
        (11, "numpy.exp"): "imports under `if TYPE_CHECKING:` do not exist at run time",
        (11, "numpy.log"): "imports under `if TYPE_CHECKING:` do not exist at run time",
    },
}


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_agrees_with_libcst_on_fixtures(path: Path) -> None:
    text = path.read_bytes().decode("utf-8").lstrip("\ufeff")
    theirs, unsure = _libcst_spans(text)
    ours = _our_spans(text)
    expected = DELIBERATE.get(path.relative_to(FIXTURES).as_posix(), {})
    differ = {(s[0], s[4]) for s in theirs ^ ours if s[:4] not in unsure}
    assert differ == set(expected), {
        "libcst only": sorted(theirs - ours),
        "np2torch only": sorted(ours - theirs),
    }


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_pruning_by_spelling_is_exact(path: Path) -> None:
    """Skipping statements that cannot matter never changes the answer for the focus names."""
    text = path.read_bytes().decode("utf-8").lstrip("\ufeff")
    full = _our_spans(text, prune=False)
    assert _our_spans(text, prune=True) == full
    focused = _our_spans(text, prune=True, focus=TARGETS)
    assert {s for s in focused if s[4] in TARGETS} == {s for s in full if s[4] in TARGETS}


# --------------------------------------------------------------------------- import forms

IMPORT_FORMS = [
    pytest.param("import numpy as np\nnp.exp(x)", ["2:np.exp=numpy.exp"], id="import numpy as np"),
    pytest.param("import numpy\nnumpy.log(x)", ["2:numpy.log=numpy.log"], id="import numpy"),
    pytest.param("from numpy import exp\nexp(x)", ["2:exp=numpy.exp"], id="from numpy import exp"),
    pytest.param("from numpy import log as ln\nln(x)", ["2:ln=numpy.log"], id="from numpy import log as ln"),
    pytest.param("import scipy.special as sc\nsc.erf(x)", ["2:sc.erf=scipy.special.erf"], id="import scipy.special as sc"),
    pytest.param("from scipy import special\nspecial.erf(x)", ["2:special.erf=scipy.special.erf"], id="from scipy import special"),
    pytest.param(
        "import scipy.special\nscipy.special.logsumexp(x)",
        ["2:scipy.special.logsumexp=scipy.special.logsumexp"],
        id="import scipy.special",
    ),
    pytest.param("from scipy.special import erf as E\nE(x)", ["2:E=scipy.special.erf"], id="from scipy.special import erf as E"),
    pytest.param("import numpy.random\nnumpy.exp(x)", ["2:numpy.exp=numpy.exp"], id="import numpy.random binds numpy"),
    pytest.param("import numpy.random as npr\nnpr.exp(x)", [], id="import numpy.random as npr binds numpy.random"),
    pytest.param("import numpy as np\nnp.pi + np.e", ["2:np.pi=numpy.pi", "2:np.e=numpy.e"], id="constants"),
    pytest.param("import numpy as np\nimport numpy as np\nnp.exp(x)", ["3:np.exp=numpy.exp"], id="the same import twice"),
    pytest.param("import numpy as np, math\nnp.exp(math.pi)", ["2:np.exp=numpy.exp", "2:math.pi=math.pi"], id="several names"),
    pytest.param("from . import numpy\nnumpy.exp(x)", [], id="relative import"),
    pytest.param("from .numpy import exp\nexp(x)", [], id="relative from import"),
    pytest.param("import numpy as np\nnp.ma.exp(x); np.exp.nin", ["2:np.exp=numpy.exp"], id="only exact table names"),
    pytest.param("import jax.numpy as np\nnp.exp(x)", [], id="another library under the same alias"),
    pytest.param("exp(x); np.exp(x)", [], id="nothing imported"),
]


@pytest.mark.parametrize(("source", "expected"), IMPORT_FORMS)
def test_import_forms(source: str, expected: List[str]) -> None:
    assert_resolves(source, expected)


# --------------------------------------------------------------------------- scoping

SCOPING = [
    pytest.param(
        """
        def f(x):
            import numpy as np
            return np.exp(x)
        np.exp(1)
        """,
        ["4:np.exp=numpy.exp"],
        id="function import is local to the function",
    ),
    pytest.param(
        """
        import numpy as np
        def f(x):
            y = np.exp(x)
            np = None
        """,
        [],
        id="a name assigned anywhere in a function is local all through it",
    ),
    pytest.param(
        """
        import numpy as np
        def f(x):
            np = None
        np.exp(x)
        """,
        ["5:np.exp=numpy.exp"],
        id="a function's local does not leak to the module",
    ),
    pytest.param(
        """
        class K:
            from numpy import exp
            a = exp(x)
            def m(self, x):
                return exp(x)
            b = [exp(y) for y in exp(x)]
        """,
        ["4:exp=numpy.exp", "7:exp=numpy.exp"],
        id="class scope: visible in the body and the first iterable, not in methods or comprehensions",
    ),
    pytest.param(
        """
        def outer():
            from numpy import log
            class K:
                a = log(x)
                def m(self):
                    return log(x)
            return K
        """,
        ["5:log=numpy.log", "7:log=numpy.log"],
        id="an enclosing function's names are visible through a class",
    ),
    pytest.param(
        """
        def setup():
            global np
            import numpy as np
        def f(x):
            return np.exp(x)
        """,
        ["6:np.exp=numpy.exp"],
        id="global import binds the module name",
    ),
    pytest.param(
        """
        import numpy as np
        def f(x):
            global np
            np = None
        np.exp(x)
        """,
        [],
        id="global assignment rebinds the module name",
    ),
    pytest.param(
        """
        def outer():
            from numpy import log
            def inner(x):
                nonlocal log
                return log(x)
            return inner
        """,
        ["6:log=numpy.log"],
        id="nonlocal reads the enclosing import",
    ),
    pytest.param(
        """
        def outer():
            from numpy import log
            def inner():
                nonlocal log
                log = None
            return log(x)
        """,
        [],
        id="nonlocal assignment rebinds the enclosing name",
    ),
    pytest.param(
        """
        import numpy as np
        f = lambda np: np.exp(x)
        g = lambda x, d=np.exp: np.log(x)
        """,
        ["4:np.exp=numpy.exp", "4:np.log=numpy.log"],
        id="lambda parameters shadow, lambda defaults are outside",
    ),
    pytest.param(
        """
        import numpy as np
        def f(np=np.exp, *, k: np.log = None) -> np.exp:
            return np.exp(1)
        """,
        ["3:np.exp=numpy.exp", "3:np.log=numpy.log", "3:np.exp=numpy.exp"],
        id="defaults and annotations are evaluated outside the function",
    ),
    pytest.param(
        """
        import numpy as np
        @np.exp
        class np(np.log):
            pass
        """,
        [],
        id="a class named like the import rebinds it",
    ),
    pytest.param(
        """
        import numpy as np
        ys = [np.exp(v) for np in xs]
        zs = [np.exp(v) for v in np.log(xs)]
        """,
        ["4:np.exp=numpy.exp", "4:np.log=numpy.log"],
        id="a comprehension target shadows only inside the comprehension",
    ),
    pytest.param(
        """
        import numpy as np
        ws = [np.exp(v) for v in np.log(xs) for np in v]
        """,
        ["3:np.log=numpy.log"],
        id="the first iterable is outside, later ones inside",
    ),
    pytest.param(
        """
        import numpy as np
        def f(xs):
            [(np := v) for v in xs]
            return np.exp(1)
        np.exp(2)
        """,
        ["6:np.exp=numpy.exp"],
        id="walrus in a comprehension binds in the enclosing function",
    ),
    pytest.param(
        """
        from numpy import exp
        def f(x):
            try:
                pass
            except Exception as exp:
                pass
            return exp(x)
        """,
        [],
        id="except-as binds",
    ),
    pytest.param(
        """
        from numpy import exp
        def f(x):
            with g() as (a, exp):
                return exp(x)
        """,
        [],
        id="with-as tuple binds",
    ),
    pytest.param(
        """
        from numpy import exp
        def f(x):
            match x:
                case [*exp]:
                    pass
            return exp(x)
        """,
        [],
        id="match star capture binds",
    ),
    pytest.param(
        """
        from numpy import exp
        def f(x):
            exp: int
            return exp(x)
        """,
        [],
        id="a bare annotation makes the name local",
    ),
    pytest.param(
        """
        from numpy import exp
        def f(x):
            del exp
            return exp(x)
        """,
        [],
        id="del makes the name local",
    ),
    pytest.param(
        """
        from numpy import exp
        def f(x):
            def exp(y):
                return y
            return exp(x)
        """,
        [],
        id="a def of the same name binds",
    ),
    pytest.param(
        """
        import os
        if os.name == "nt":
            from numpy import exp
        else:
            from numpy import exp
        exp(x)
        """,
        ["7:exp=numpy.exp"],
        id="imports of the same thing in both branches",
    ),
    pytest.param(
        """
        try:
            from scipy.special import logsumexp
        except ImportError:
            from scipy.misc import logsumexp
        logsumexp(x)
        """,
        [],
        id="imports of different things",
    ),
    pytest.param(
        """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import numpy as np
        np.exp(x)
        """,
        [],
        id="TYPE_CHECKING-only import does not exist at run time",
    ),
    pytest.param(
        """
        import typing
        import numpy as np
        if typing.TYPE_CHECKING:
            import numpy as np
        else:
            pass
        np.exp(x)
        """,
        ["8:np.exp=numpy.exp"],
        id="TYPE_CHECKING import beside the run-time one",
    ),
    pytest.param(
        """
        from numpy import *
        exp(x); log(x); square(x)
        """,
        ["3:exp=numpy.exp", "3:log=numpy.log"],
        id="star import provides the table names",
    ),
    pytest.param(
        """
        from numpy import *
        from math import *
        exp(x)
        """,
        [],
        id="two star imports may disagree",
    ),
    pytest.param(
        """
        from numpy import *
        def f(x):
            exp = None
            return exp(x)
        def g(x):
            return exp(x)
        """,
        ["7:exp=numpy.exp"],
        id="star-imported name shadowed locally",
    ),
    pytest.param(
        """
        from scipy.special import *
        from numpy import exp
        exp(x); erf(x)
        """,
        ["4:exp=numpy.exp", "4:erf=scipy.special.erf"],
        id="explicit import beside a star import",
    ),
    pytest.param(
        """
        import numpy as np
        np.exp = np.square
        del np.log
        """,
        [],
        id="store and del contexts are not references",
    ),
    pytest.param(
        """
        import numpy as np
        def f(x):
            import np.linalg
            return np.exp(x)
        """,
        [],
        id="import of a dotted name binds its root even when spelled with a dot",
    ),
    pytest.param(
        """
        import numpy as np
        def f(x):
            y = np.sqrt(x)
            for np in range(3):
                pass
            return np.exp(y)
        """,
        [],
        id="a binding far from the reference, on a line that spells no table name",
    ),
    pytest.param(
        """
        import numpy as np
        def f(x):
            y = (np
                 .exp)(x)
            z = np.\\
                log(x)
            return y, z
        """,
        ["4:np\n         .exp=numpy.exp", "6:np.\\\n        log=numpy.log"],
        id="references split over lines",
    ),
]


@pytest.mark.parametrize(("source", "expected"), SCOPING)
def test_scoping(source: str, expected: List[str]) -> None:
    assert_resolves(source, expected)


def test_non_ascii_source_is_walked_in_full() -> None:
    # ｎｐ is np after NFKC normalisation: spelling-based pruning cannot see it
    source = "import numpy as ｎｐ\ndef f(x):\n    return np.exp(x)\n"
    assert resolved(source) == ["3:np.exp=numpy.exp"]


def test_deeply_nested_expressions_do_not_exhaust_the_stack() -> None:
    # ast.parse itself gives up near 3000 nested operators; a recursive walker near 1000
    source = "import numpy as np\ny = " + " + ".join(["x"] * 2500) + " + np.exp(x)\n"
    assert resolved(source) == ["2:np.exp=numpy.exp"]


def test_bound_names_records_every_kind() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            import np2torch.runtime as np2t
            from numpy import exp as e
            import os.path
            def f(a, *b, c, **d):
                global g
                e(a)
            class C: pass
            """
        )
    )
    names = bound_names(tree)
    assert names["np2t"] == ["import np2torch.runtime"]
    assert sorted(names["e"]) == ["from numpy.exp", "use"]
    assert names["os"] == ["import"]  # `import os.path` binds `os`
    assert all(names[n] == ["other"] for n in "bcdfgC")


def _calls_resolving(blocks: int) -> int:
    """The function calls (Python's and C's) resolving a file of ``blocks`` functions makes: its work, counted."""
    block = textwrap.dedent(
        """
        def f{i}(x, y=None):
            z = np.exp(x) + math.log(y or 1) * erf(x)
            for k in range(3):
                z = [v ** 2 for v in z if v]
            return z
        """
    )
    source = "import math\nimport numpy as np\nfrom scipy.special import erf\n" + "".join(
        block.format(i=i) for i in range(blocks))
    tree = ast.parse(source)
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        refs = resolve(tree, KNOWN, source).refs
    finally:
        sys.setprofile(None)
    assert len(refs) == 2 * blocks
    return calls


def test_resolving_is_linear_in_the_file() -> None:
    """Guards against accidental quadratic behaviour by counting work, not seconds (CI's cores are shared):
    twice the functions, twice the calls (a quadratic pass would make it four times)."""
    small, large = _calls_resolving(400), _calls_resolving(800)
    assert large < 2.2 * small, (small, large)


@pytest.mark.parametrize(
    ("source", "every", "names"),
    [
        pytest.param("x = globals()['exp']\ny = globals().get('log')\nz = 'np' in globals()\n", False, set(),
                     id="reading the namespace is no write"),
        pytest.param("globals()['exp'] = abs\n", False, {"exp"}, id="a spelled item write"),
        pytest.param("import sys\nsetattr(sys.modules[__name__], 'log', abs)\nsys.modules[__name__].erf = abs\n",
                     False, {"log", "erf"}, id="writes to the module object"),
        pytest.param("exec('np2t = 1')\n", False, {"np2t"}, id="exec of a constant binds the names it spells"),
        pytest.param("def f():\n    exec(code)\n", True, set(), id="exec of unknown code may say global"),
        pytest.param("def f():\n    vars()['exp'] = 1\n    locals()['log'] = 1\n", False, set(),
                     id="vars and locals in a function are its own"),
        pytest.param("vars()['exp'] = 1\n", False, {"exp"}, id="vars at module level is the module's"),
        pytest.param("def f(d):\n    globals().update(d)\n", True, set(), id="update in a function"),
        pytest.param("g = globals()\n", True, set(), id="the namespace handed on"),
        pytest.param("exec('from math import *')\n", True, set(), id="exec of a star import"),
        pytest.param("eval('exp(1)')\n", False, set(), id="an expression binds nothing without :="),
        pytest.param("def f():\n    pass\nf.__globals__['exp'] = abs\nx = f.__globals__.get('log')\n", False, {"exp"},
                     id="a function's globals"),
        pytest.param("import sys\nsys._getframe().f_globals.update(d)\n", True, set(), id="a frame's globals"),
        pytest.param("import sys\ndef f():\n    sys._getframe(1).f_locals['np'] = 1\n", False, {"np"},
                     id="a frame's locals: the caller may be the module"),
    ],
)
def test_namespace_writes(source: str, every: bool, names: set[str]) -> None:
    writes = namespace_writes(ast.parse(source), source)
    assert (writes is not None and writes.every is not None) == every
    assert (set(writes.names) if writes else set()) == names
