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
        "import np2torch.runtime as np2t\nfrom numpy import sum\ny = np2t.logsumexp(x, axis=0)\n"
    )
    only = Settings(rules=select_rules(["NPT901"]), unsafe_fixes=True)
    assert [f.code for f in check_source(source, settings=only)] == ["NPT901"]
    # exp and log are not fixed, so their import stays
    assert fix_source(source, settings=only) == (
        "import np2torch.runtime as np2t\nfrom numpy import log, sum, exp\ny = np2t.logsumexp(x, axis=0)\n"
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
    assert Path("a.py").read_text() == "import np2torch.runtime as np2t\nimport numpy as np\ny = np2t.logsumexp(x, axis=1)\n"


def test_a_pattern_row_is_the_one_shape_the_engine_matches() -> None:
    from dataclasses import replace

    import pytest

    from np2torch.lint import rules

    row = next(rule for rule in rules.RULES if rule.is_pattern)
    with pytest.raises(AssertionError, match=r"nested: 3 names"):
        rules._check_table((replace(row, pattern=("numpy.log", "numpy.exp")),))
    with pytest.raises(AssertionError, match=r"'spiral' pattern"):
        rules._check_table((replace(row, form="spiral"),))


# ---------------------------------------------------------------- NPT902, NPT903: softmax and log_softmax by hand

SOFTMAX = Settings(rules=select_rules(["ALL"]), unsafe_fixes=True)
HEADER = "import numpy as np\nimport scipy.special as sc\nfrom scipy.special import logsumexp\n"


@pytest.mark.parametrize(
    ("line", "code", "fixed"),
    [
        pytest.param("p = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)", "NPT902", "p = np2t.softmax(x, axis=1)",
                     id="softmax, method sum"),
        pytest.param("p = np.exp(x) / np.sum(np.exp(x), 1, keepdims=True)", "NPT902", "p = np2t.softmax(x, 1)",
                     id="softmax, np.sum with a positional axis"),
        pytest.param("p = np.exp(x) / np.sum(np.exp(x), axis=(0, 2), keepdims=True)", "NPT902",
                     "p = np2t.softmax(x, axis=(0, 2))", id="softmax over a tuple of axes"),
        pytest.param("p = np.exp(self.z) / np.exp(self.z).sum()", "NPT902", "p = np2t.softmax(self.z)",
                     id="softmax over everything, an attribute"),
        pytest.param("p = 2 * (np.exp(x) / np.exp(x).sum(axis=None))", "NPT902", "p = 2 * (np2t.softmax(x, axis=None))",
                     id="softmax inside an expression"),
        pytest.param("p = x - logsumexp(x, axis=-1, keepdims=True)", "NPT903", "p = np2t.log_softmax(x, axis=-1)",
                     id="log_softmax"),
        pytest.param("p = x - sc.logsumexp(x, 0, keepdims=True)", "NPT903", "p = np2t.log_softmax(x, 0)",
                     id="log_softmax, positional axis"),
        pytest.param("p = x - sc.logsumexp(x)", "NPT903", "p = np2t.log_softmax(x)", id="log_softmax over everything"),
    ],
)
def test_softmax_spellings(line: str, code: str, fixed: str) -> None:
    source = HEADER + line + "\n"
    found = [f for f in check_source(source, settings=Settings(rules=select_rules(["ALL"]))) if f.code == code]
    assert found and not any(f.fixable for f in found)  # reported; fixed only with --unsafe-fixes
    assert not [f for f in check_source(source) if f.code == code]  # opt-in, as the helpers' rules
    assert fix_source(source, settings=SOFTMAX).splitlines()[-1] == fixed
    once = fix_source(source, settings=SOFTMAX)
    assert fix_source(once, settings=SOFTMAX) == once


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("p = np.exp(x) / np.exp(x).sum(axis=1)", id="axis without keepdims broadcasts elsewhere"),
        pytest.param("p = np.exp(x) / np.exp(x).sum(axis=1, keepdims=False)", id="keepdims False with an axis"),
        pytest.param("p = np.exp(x) / np.exp(y).sum()", id="different operands"),
        pytest.param("p = np.exp(f(x)) / np.exp(f(x)).sum()", id="a call as x is evaluated twice"),
        pytest.param("p = np.exp(x[0]) / np.exp(x[0]).sum()", id="a subscript as x"),
        pytest.param("p = np.exp(x) / np.exp(x).sum(dtype=float)", id="dtype changes the sum"),
        pytest.param("p = np.exp(x) / np.exp(x).mean()", id="mean is not sum"),
        pytest.param("p = np.exp(x) / sum(np.exp(x))", id="builtin sum"),
        pytest.param("p = np.exp(x) * np.exp(x).sum()", id="not a division"),
        pytest.param("p = x - logsumexp(x, axis=1)", id="log_softmax axis without keepdims"),
        pytest.param("p = x - logsumexp(x, axis=1, b=w, keepdims=True)", id="b="),
        pytest.param("p = y - logsumexp(x, keepdims=True)", id="different operands, difference"),
        pytest.param("p = logsumexp(x) - x", id="reversed"),
        pytest.param("p = x + logsumexp(x)", id="a sum"),
        pytest.param("p = x - x.max()", id="not logsumexp"),
    ],
)
def test_not_a_softmax(line: str) -> None:
    source = HEADER + line + "\n"
    assert not [f for f in check_source(source, settings=SOFTMAX) if f.code in ("NPT902", "NPT903")]
    assert "softmax" not in fix_source(source, settings=SOFTMAX)


@pytest.mark.parametrize(
    ("source", "code", "by"),
    [
        pytest.param(HEADER + "globals().update(table)\np = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)\n",
                     "NPT902", "`globals().update`", id="softmax beside a namespace write"),
        pytest.param(HEADER + "globals().update(table)\np = x - logsumexp(x, axis=-1, keepdims=True)\n",
                     "NPT903", "`globals().update`", id="log_softmax beside a namespace write"),
        pytest.param("from numpy import exp\nfrom math import *\np = exp(x) / exp(x).sum(axis=1, keepdims=True)\n",
                     "NPT902", "`from math import *`", id="softmax after a star import that may rebind exp"),
        pytest.param("from scipy.special import logsumexp\nfrom helpers import *\n"
                     "p = x - logsumexp(x, axis=-1, keepdims=True)\n",
                     "NPT903", "`from helpers import *`", id="log_softmax after a star import"),
    ],
)
def test_a_ratio_or_difference_whose_name_may_be_rebound_is_not_fixed(source: str, code: str, by: str) -> None:
    # once crashed (AttributeError: the division has no `.value`), or was fixed after a star import
    (found,) = [f for f in check_source(source, settings=SOFTMAX) if f.code == code]
    assert not found.fixable and found.reason is not None and by in found.reason
    assert "softmax" not in fix_source(source, settings=SOFTMAX)


def test_the_rewrites_are_the_functions_and_fix_overflow() -> None:
    import scipy.special

    import np2torch.runtime as np2t

    x = np.random.default_rng(1).normal(size=(4, 50))
    np.testing.assert_allclose(np2t.softmax(x, axis=1), np.exp(x) / np.exp(x).sum(axis=1, keepdims=True), rtol=1e-13)
    np.testing.assert_allclose(np2t.log_softmax(x, axis=1), x - scipy.special.logsumexp(x, axis=1, keepdims=True),
                               rtol=1e-13, atol=1e-15)
    big = x + 1000.0
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(np.exp(big) / np.exp(big).sum(axis=1, keepdims=True)).all()
    assert np.isfinite(np2t.softmax(big, axis=1)).all()


def test_a_softmax_rewrite_keeps_the_comments_inside_it() -> None:
    source = HEADER + "p = np.exp(x) / np.exp(  # the logits\n    x).sum(axis=1, keepdims=True)\n"
    fixed = fix_source(source, settings=SOFTMAX)
    assert fixed.endswith("p = np2t.softmax(  # the logits\nx, axis=1)\n"), fixed
    compile(fixed, "<fixed>", "exec")
