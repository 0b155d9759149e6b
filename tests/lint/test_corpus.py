"""Corpus invariants (scripts/corpus.py) on installed SciPy, and the invariant checks themselves.

The slow test runs check and fix, through the API and the real CLI, over copies
of ``scipy.special`` and ``scipy.optimize`` (about 190 files, 33 with findings):
the whole SciPy tree takes ~6 minutes on 2 cores, almost all of it LibCST
rewriting ``scipy.stats``'s 3.6 MB of files with findings.  The full run over
SciPy, scikit-learn and statsmodels is ``python scripts/corpus.py`` (docs/corpus.md).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

import np2torch

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "corpus.py"
SUBPACKAGES = ("special", "optimize")


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("np2torch_corpus_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


corpus = _load_script()


@pytest.mark.slow
@pytest.mark.parametrize("subpackage", SUBPACKAGES)
def test_installed_scipy_subpackage_keeps_every_invariant(subpackage: str, tmp_path: Path) -> None:
    scipy_spec = importlib.util.find_spec("scipy")
    if scipy_spec is None or not scipy_spec.submodule_search_locations:
        pytest.skip("scipy is not installed")
    source = Path(list(scipy_spec.submodule_search_locations)[0]) / subpackage
    report = corpus.run_tree(source, subpackage, tmp_path)
    assert [str(v) for v in report.violations] == []
    # The run must have exercised something: findings of each kind, files rewritten, the canary rejected.
    assert report.files > 50
    assert set(report.findings) >= {"NPT001", "NPT002"}
    assert report.files_changed >= 10
    assert corpus.CANARY_NAME in report.unparsable


# ------------------------------------------------------------- the checks can fail


def _report() -> "corpus.TreeReport":
    return corpus.TreeReport(name="t", source="-")


BEFORE = "import numpy as np\n\n\ndef f(x):\n    return np.exp(x) + np.log(x)  # keep\n"


def test_expected_rewrite_replaces_exactly_the_spans() -> None:
    findings = np2torch.check_source(BEFORE)
    assert corpus.expected_rewrite(BEFORE, findings) == BEFORE.replace("np.exp", "np2t.exp").replace(
        "np.log", "np2t.log"
    )


def test_a_real_fix_passes_the_checks() -> None:
    report = _report()
    after = np2torch.fix_source(BEFORE)
    corpus.check_changed_file(report, "m.py", BEFORE.encode(), after.encode(), np2torch.check_source(BEFORE))
    assert report.violations == []


@pytest.mark.parametrize(
    "tamper, kind",
    [
        pytest.param(lambda t: t.replace("+ np2t.log(x)", "- np2t.log(x)"), "fix touched more than the findings",
                     id="an operator changed"),
        pytest.param(lambda t: t.replace("np2t.log(x)", "np.log(x)"), "fixable finding after fix",
                     id="a finding left unfixed"),
        pytest.param(lambda t: t.replace("return", "return ("), "fixed file does not parse", id="broken syntax"),
        pytest.param(lambda t: t.replace("import np2torch.runtime as np2t\n", ""), "runtime import",
                     id="runtime import missing"),
    ],
)
def test_a_wrong_fix_is_a_violation(tamper, kind: str) -> None:
    report = _report()
    after = tamper(np2torch.fix_source(BEFORE))
    corpus.check_changed_file(report, "m.py", BEFORE.encode(), after.encode(), np2torch.check_source(BEFORE))
    assert kind in {v.kind for v in report.violations}


def test_unexpected_stderr_and_tracebacks_are_violations(tmp_path: Path) -> None:
    report = _report()
    stderr = (
        f"{tmp_path}/bad.py:3:1: error: SyntaxError: invalid syntax\n"  # a syntax error is a finding, not a line here
        f"{tmp_path}/good.py: internal error: KeyError: 'x'\n"
        "Traceback (most recent call last):\n"
    )
    corpus._error_lines(report, stderr, "check", tmp_path)
    assert {("bad.py", "unexpected stderr (check)"), ("good.py", "internal error (check)"),
            ("-", "traceback (check)")} <= {(v.path, v.kind) for v in report.violations}


def test_an_unparsable_file_must_be_one_invalid_syntax_finding(tmp_path: Path) -> None:
    report = _report()
    findings = [{"code": "invalid-syntax", "path": f"{tmp_path}/bad.py"},
                {"code": "invalid-syntax", "path": f"{tmp_path}/fine.py"}, {"code": "NPT001", "path": f"{tmp_path}/x.py"}]
    run = corpus.CliRun(1, findings, "", 0.0, 0.0)
    corpus._unparsable_reported(report, run, "check", tmp_path, {"bad.py", "other_bad.py"})
    assert {(v.path, v.kind) for v in report.violations} == {
        ("fine.py", "unexpected invalid-syntax (check)"), ("other_bad.py", "unparsable file not reported (check)")}
