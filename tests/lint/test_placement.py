"""Where the runtime import goes: before the first statement that can run a rewritten call, after its set-up.

Each case is a module with one line marked ``# <-``: the import must be the line right after it (with that
line's indentation when it is in a block), or, for the no-place cases, every finding has no fix and says why.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from np2torch import check_source, fix_source
from np2torch.cli import main
from np2torch.lint.engine import REASON_NO_IMPORT_PLACE, REASON_STAR_AFTER_IMPORT, plan_source

IMPORT = "import np2torch.runtime as np2t"


def _import_after_marker(source: str) -> None:
    """The import follows the marked line, or, when that is an import, goes up among the imports right
    above it to where isort puts it (``np2torch`` sorts before ``numpy``): it runs no later."""
    source = textwrap.dedent(source).lstrip("\n")
    lines = source.splitlines()
    marked = next(i for i, line in enumerate(lines) if line.rstrip().endswith("# <-"))
    fixed = fix_source(source).splitlines()
    indent = lines[marked][: len(lines[marked]) - len(lines[marked].lstrip())]
    at = next(i for i, line in enumerate(fixed) if line.strip() == IMPORT)
    marked = next(i for i, line in enumerate(fixed) if line.rstrip().endswith("# <-"))  # (an import above may go)
    if at < marked:  # moved up: every line it passed is an import of the same block
        passed = fixed[at + 1 : marked + 1]
        assert all(line.lstrip().startswith(("import ", "from ")) for line in passed), "\n".join(fixed)
    else:
        assert at == marked + 1, "\n".join(fixed)
    assert fixed[at] == indent + IMPORT, "\n".join(fixed)
    assert sum(IMPORT in line for line in fixed) == 1
    compile("\n".join(fixed), "<fixed>", "exec")


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            """
            import numpy as np  # <-

            def f(x):
                return np.exp(x)

            print(f(0.0))
            import numpy as np
            """,
            id="before the first call, not after a later repeated import",
        ),
        pytest.param(
            """
            def f(x):
                return np.exp(x)

            print("a call that spells nothing of this module runs no rewritten call")
            import numpy as np  # <-
            print(f(0.0))
            """,
            id="a call spelling no name of the module is no deadline",
        ),
        pytest.param(
            """
            def main(x):
                return np.exp(x)

            if __name__ == "__main__":
                import sys
                sys.path.insert(0, "vendor")
                import numpy as np  # <-
                print(main(np.zeros(2)))
            """,
            id="into the main block, after its set-up",
        ),
        pytest.param(
            """
            def f(x):
                return np.log(x)

            try:
                import numpy as np  # <-
                print(f(np.ones(2)))
            except ImportError:
                pass
            """,
            id="into a module-level try",
        ),
        pytest.param(
            """
            import sys

            def f(x):
                return np.exp(x)
            # <-
            if sys.argv:
                import numpy as np
                print(f(np.zeros(1)))
            else:
                print(f(0.0))
            """,
            id="before the statement when another branch calls too",
        ),
        pytest.param(
            """
            import os
            import sys

            sys.path.insert(0, "vendor")
            os.environ["OMP_NUM_THREADS"] = "1"  # <-

            def f(x):
                import numpy as np

                return np.exp(x)

            print(f(0.0))
            """,
            id="after the set-up code when numpy is imported in functions",
        ),
        pytest.param(
            """
            import os
            import sys

            import numpy as np

            sys.path.insert(0, "vendor")
            os.environ.setdefault("NP2TORCH_MIN_SIZE", "0")  # <-
            X = np.exp(np.ones(3))
            """,
            id="after set-up between the numpy import and the first fix",
        ),
        pytest.param(
            """
            import os
            import sys

            def main(x):
                import numpy as np

                return np.exp(x)

            if __name__ == "__main__":
                sys.path.insert(0, "vendor")  # <-
                print(main(0.0), os.path.join("a", "b"))
            """,
            id="after set-up inside the main block when numpy is imported in functions",
        ),
        pytest.param(
            """
            from numpy import *
            import numpy as np  # <-

            X = exp(np.log(np.ones(3)))
            """,
            id="after every star import before the first call",
        ),
    ],
)
def test_the_import_goes_right_after(source: str) -> None:
    _import_after_marker(source)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        pytest.param(
            """
            import sys

            def where():
                return "vendor"

            def f(x):
                return np.exp(x)

            if __name__ == "__main__":
                sys.path.insert(0, where())
                import numpy as np
                print(f(np.zeros(2)))
            """,
            REASON_NO_IMPORT_PLACE,
            id="set-up that may call the module's functions before the only import",
        ),
        pytest.param(
            """
            from numpy import exp

            def f(x):
                return exp(x)

            print(f(1.0))
            from numpy import *
            """,
            REASON_STAR_AFTER_IMPORT,
            id="a star import after every place may rebind the alias",
        ),
    ],
)
def test_no_place(source: str, reason: str) -> None:
    source = textwrap.dedent(source).lstrip("\n")
    findings = check_source(source)
    assert findings and all(not f.fixable and f.reason == reason for f in findings)
    assert fix_source(source) == source


def test_an_existing_runtime_import_before_the_first_call_is_reused() -> None:
    source = "import numpy as np\nimport np2torch.runtime as np2t\n\nprint(np.exp(np.ones(2)))\n"
    assert fix_source(source) == source.replace("np.exp", "np2t.exp")


def test_an_existing_runtime_import_after_the_first_call_gets_one_before() -> None:
    source = "import numpy as np\n\nprint(np.exp(np.ones(2)))\nimport np2torch.runtime as np2t\n"
    fixed = fix_source(source)
    assert fixed.startswith("import np2torch.runtime as np2t\nimport numpy as np\n")
    assert "np2t.exp(np.ones(2))" in fixed


def test_check_shows_why_there_is_no_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NP2TORCH_CACHE_DIR", str(tmp_path / ".cache-under-test"))
    (tmp_path / "m.py").write_text(
        "from numpy import exp\n\n\ndef f(x):\n    return exp(x)\n\n\nprint(f(1.0))\nfrom numpy import *\n"
    )
    assert main(["check", "m.py"]) == 1
    out = capsys.readouterr().out
    assert f"m.py:5:12: NPT001 `numpy.exp` can run on torch via `np2torch.runtime.exp` (no fix: {REASON_STAR_AFTER_IMPORT})" in out


def test_np2torch_runs_rewrite_binds_no_alias_and_needs_no_place() -> None:
    source = "from numpy import exp\n\n\ndef f(x):\n    return exp(x)\n\n\nprint(f(1.0))\nfrom numpy import *\n"
    assert not any(f.fixable for f in check_source(source))
    plan = plan_source(source)
    assert [(f.line, f.fixable) for f in plan.findings] == [(5, True)] and len(plan.fixes) == 1


def test_a_statement_that_gets_the_import_and_fixes_leaves_the_later_statements_lines_alone() -> None:
    source = textwrap.dedent(
        """
        def f(x):
            return np.exp(x)


        if __name__ == "__main__":
            import numpy as np
            print(f(np.zeros(1)), np.log(np.ones(1)))


        def g(x):
            return np.sin(x)
        """
    ).lstrip("\n")
    fixed = fix_source(source)
    assert "    import np2torch.runtime as np2t\n    import numpy as np\n    print(f(np.zeros(1)), np2t.log(" in fixed
    assert fixed.endswith("def g(x):\n    return np2t.sin(x)\n")


@pytest.mark.parametrize("source", [
    "def f():\n    global g\n    g = 1\n",
    "def f(): global g; g = 1\n",
    "def f():\n    x = 1; global g\n",
    "def f():\n    if x: global g\n",
    "def f():\n\tglobal g\n",
    "def f():\n\x0c    global g\n",
    "def f():\n    x = (1 +\n         2); global \\\n        g\n",
    "class A:\n    def f(self):\n        try: global g\n        finally: pass\n",
])
def test_every_global_statement_takes_the_whole_tree_path(source: str) -> None:
    # _own_names walks only the module level unless a `global` may stand somewhere: the text test must find every
    # global statement the parser finds (a false alarm costs time, a miss a wrong place).
    import ast

    from np2torch.lint.placement import _may_be_global

    assert any(isinstance(node, ast.Global) for node in ast.walk(ast.parse(source)))
    assert _may_be_global(source)


def test_global_in_comments_strings_and_names_is_no_global_statement() -> None:
    from np2torch.lint.placement import _may_be_global

    source = "x = global_state  # global\ns = 'the global view'\n\"\"\"\nglobals are read here\n\"\"\"\n"
    assert not _may_be_global(source)


def test_a_global_statement_after_a_carriage_return_only_line_end() -> None:
    from np2torch.lint.placement import _may_be_global

    assert _may_be_global("def f():\r    global g\r")


def test_a_global_statement_is_spelled_in_ascii() -> None:
    # _may_be_global looks for the ASCII keyword only: an NFKC spelling of it is a name, never the statement.
    import ast

    with pytest.raises(SyntaxError):
        ast.parse("def f():\n    \uff47\uff4c\uff4f\uff42\uff41\uff4c x\n")
    (assign,) = ast.parse("\uff47\uff4c\uff4f\uff42\uff41\uff4c = 1\n").body
    assert isinstance(assign, ast.Assign)
