"""NPT901: the hand-written log-sum-exp, reported always, rewritten to logsumexp only with --unsafe-fixes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from np2torch import check_source, fix_source
from np2torch.cli import main
from np2torch.lint.engine import Settings
from np2torch.lint.rules import select_rules

UNSAFE = Settings(unsafe_fixes=True)


def last_line(source: str, settings: Settings = UNSAFE) -> str:
    return fix_source(source, settings=settings).rstrip("\n").splitlines()[-1]


@pytest.mark.parametrize(
    ("line", "fixed"),
    [
        pytest.param("y = np.log(np.sum(np.exp(x), axis=1))", "y = np2t.logsumexp(x, axis=1)", id="axis keyword"),
        pytest.param("y = np.log(np.sum(np.exp(x)))", "y = np2t.logsumexp(x)", id="no axis"),
        pytest.param("y = np.log(np.sum(np.exp(a - b), 0))", "y = np2t.logsumexp(a - b, 0)", id="axis positional"),
        pytest.param("y = np.log(np.exp(x).sum(axis=-1, keepdims=True))",
                     "y = np2t.logsumexp(x, axis=-1, keepdims=True)", id="method sum"),
        pytest.param("y = np.log(np.exp(x).sum(1))", "y = np2t.logsumexp(x, 1)", id="method sum positional"),
        pytest.param("y = (np.log(np.sum(np.exp(x), axis=1, )))", "y = (np2t.logsumexp(x, axis=1, ))",
                     id="parentheses and trailing comma"),
        pytest.param("y = np.log(np.sum(np.exp(np.log(np.sum(np.exp(x), axis=1))), axis=0))",
                     "y = np2t.logsumexp(np2t.logsumexp(x, axis=1), axis=0)", id="nested"),
    ],
)
def test_spellings(line: str, fixed: str) -> None:
    source = f"import numpy as np\n{line}\n"
    pattern = [f for f in check_source(source) if f.code == "NPT901"]
    assert pattern and not any(f.fixable for f in pattern)
    assert "np2t.logsumexp" not in fix_source(source)  # the safe fix leaves the pattern's shape
    assert last_line(source) == fixed
    assert fix_source(fix_source(source, settings=UNSAFE), settings=UNSAFE) == fix_source(source, settings=UNSAFE)


def test_comments_inside_the_collapsed_calls_stay() -> None:
    source = (
        "import numpy as np\n"
        "y = np.log(  # stable?\n"
        "    np.sum(np.exp(  # the exponentials\n"
        "        x), axis=1)  # rows\n"
        ")\n"
    )
    fixed = fix_source(source, settings=UNSAFE)
    assert fixed.endswith(
        "y = np2t.logsumexp(  # stable?\n"
        "# the exponentials\n"
        "# rows\n"
        "x, axis=1)\n"
    )
    compile(fixed, "<fixed>", "exec")


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("y = np.log(np.sum(np.exp(x), dtype=float))", id="dtype changes the sum"),
        pytest.param("y = np.log(np.sum(np.exp(x), 1, float))", id="positional dtype"),
        pytest.param("y = np.log(np.sum(np.exp(x), where=m))", id="where"),
        pytest.param("y = np.log(sum(np.exp(x)))", id="builtin sum"),
        pytest.param("y = np.log(np.sum(np.exp(x, out=o)))", id="exp with out"),
        pytest.param("y = np.log(np.sum(np.exp(x)), out=o)", id="log with out"),
        pytest.param("y = np.log(np.sum(np.exp(*xs)))", id="starred"),
        pytest.param("y = np.log(np.exp(x).mean())", id="mean is not sum"),
        pytest.param("y = np.log(np.exp(x).sum(axis=1, dtype=float))", id="method dtype"),
        pytest.param("y = math.log(np.sum(np.exp(x)))", id="math log"),
        pytest.param("y = np.log(np.sum(np.exp(x), axis=1))  # noqa: NPT901", id="noqa"),
    ],
)
def test_not_the_pattern(line: str) -> None:
    source = f"import math\nimport numpy as np\n{line}\n"
    assert not [f for f in check_source(source, settings=UNSAFE) if f.code == "NPT901"]
    assert "logsumexp" not in fix_source(source, settings=UNSAFE)


def test_from_imports_and_only_the_pattern_selected() -> None:
    source = "from numpy import log, sum, exp\ny = log(sum(exp(x), axis=0))\n"
    assert fix_source(source, settings=UNSAFE) == (
        "from numpy import sum\nimport np2torch.runtime as np2t\n\ny = np2t.logsumexp(x, axis=0)\n"
    )
    only = Settings(rules=select_rules(["NPT901"]), unsafe_fixes=True)
    assert [f.code for f in check_source(source, settings=only)] == ["NPT901"]
    # exp and log are not fixed, so their import stays
    assert fix_source(source, settings=only) == (
        "from numpy import log, sum, exp\nimport np2torch.runtime as np2t\n\ny = np2t.logsumexp(x, axis=0)\n"
    )


def test_the_rewrite_is_logsumexp_and_fixes_overflow() -> None:
    """What makes the fix worth its unsafety: same values in range, finite where the original overflows."""
    import np2torch.runtime as np2t

    x = np.random.default_rng(0).normal(size=(4, 50))
    with np.errstate(all="raise"):
        np.testing.assert_allclose(np2t.logsumexp(x, axis=1), np.log(np.sum(np.exp(x), axis=1)), rtol=1e-13)
    big = x + 1000.0
    with np.errstate(over="ignore"):
        assert np.isinf(np.log(np.sum(np.exp(big), axis=1))).all()
    assert np.isfinite(np2t.logsumexp(big, axis=1)).all()


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NP2TORCH_LINT_CACHE_DIR", str(tmp_path / ".cache-under-test"))
    return tmp_path


def test_cli_reports_always_fixes_only_with_unsafe_fixes(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = "import numpy as np\ny = np.log(np.sum(np.exp(x), axis=1))\n"
    Path("a.py").write_text(source)
    assert main(["check", "--select", "NPT901", "a.py"]) == 1
    out = capsys.readouterr().out
    assert "a.py:2:5: NPT901 " in out and "--unsafe-fixes" in out
    assert "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in out
    assert main(["fix", "--select", "NPT901", "a.py"]) == 1
    capsys.readouterr()
    assert Path("a.py").read_text() == source
    assert main(["check", "--select", "NPT901", "--unsafe-fixes", "a.py"]) == 1
    assert "[*]" in capsys.readouterr().out
    assert main(["fix", "--unsafe-fixes", "a.py"]) == 0
    capsys.readouterr()
    assert Path("a.py").read_text() == "import numpy as np\nimport np2torch.runtime as np2t\n\ny = np2t.logsumexp(x, axis=1)\n"


def test_a_pattern_row_is_the_one_shape_the_engine_matches() -> None:
    from dataclasses import replace

    import pytest

    from np2torch.lint import rules

    row = next(rule for rule in rules.RULES if rule.is_pattern)
    with pytest.raises(AssertionError, match=r"\(outer, reduction, inner\)"):
        rules._check_table((replace(row, pattern=("numpy.log", "numpy.exp")),))
