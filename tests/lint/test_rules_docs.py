"""Every row of the rule table is documented, served and in range; docs/rules.md matches the table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from np2torch import check_source, fix_source
from np2torch.cli import main
from np2torch.lint import pages, rules
from np2torch.lint.engine import Settings
from np2torch.lint.rules import (
    CODE_RANGES,
    DEFAULT_RULES,
    LEGACY_CODES,
    RANGES_FROM,
    RULES,
    RULES_BY_CODE,
    Rule,
    code_category,
    select_rules,
)
from np2torch.tools import docs

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Known problems")


def test_docs_rules_md_is_generated_from_the_table() -> None:
    on_disk = (ROOT / pages.DOCS_PATH).read_bytes().decode("utf-8")
    assert on_disk == pages.rules_document(), "docs/rules.md is stale: run `python -m np2torch.tools.docs --write`"


def test_each_rules_link_is_its_section_of_the_published_page() -> None:
    # Editors link a diagnostic's code there (np2torch server): the page is docs/rules.md, the anchor the code's.
    assert pages.RULES_URL.endswith("/" + pages.DOCS_PATH.as_posix())
    text = pages.rules_document()
    for rule in RULES:
        url = pages.rule_url(rule.code)
        assert url.startswith(pages.RULES_URL + "#") and f'<a id="{url.rpartition("#")[2]}"></a>' in text


def test_stale_docs_are_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert docs.main(["--check"]) == 1
    assert docs.main(["--write"]) == 0
    assert docs.main(["--check"]) == 0
    path = tmp_path / pages.DOCS_PATH
    path.write_text(path.read_text().replace("NPT001", "NPT00X", 1))
    assert docs.main(["--check"]) == 1


@pytest.mark.parametrize("rule", [rule for rule in RULES if not rule.is_meta], ids=lambda r: r.code)
def test_every_rule_has_a_runtime_helper(rule: Rule) -> None:
    import np2torch.runtime as runtime

    assert callable(getattr(runtime, rule.helper, None)), f"np2torch.runtime has no helper {rule.helper!r}"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_every_rule_has_a_page_with_all_sections(rule: Rule) -> None:
    text = pages.page(rule)
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert headings == list(SECTIONS)
    assert rule.why.strip() and rule.summary.strip() and rule.fix_safety_text.strip()
    document = pages.rules_document()
    assert f'<a id="{rule.code.lower()}"></a>' in document
    assert f"## {rule.code}: {rule.name}" in document


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_the_example_is_a_finding_and_its_fix_is_the_use_instead(rule: Rule) -> None:
    """The generated example really triggers the rule, and fixing it gives the documented call."""
    # Opt-in rules are enabled by their code; NPT801 judges the codes of the rules that run beside it.
    selected = Settings(rules=select_rules([rule.code] if not rule.is_meta else ["ALL"]))
    findings = [f for f in check_source(rule.example_code, settings=selected) if f.code == rule.code]
    assert findings, f"{rule.code}'s example is not a finding"
    last_line = rule.use_instead_code.rstrip("\n").splitlines()[-1]
    if not rule.fixable:  # NPT8xx: the "use instead" is written by hand, and is no finding
        assert not any(f.fixable for f in findings)
        assert not [f for f in check_source(rule.use_instead_code, settings=selected) if f.code == rule.code]
        return
    if rule.fix_safety == "unsafe":
        assert not any(f.fixable for f in findings)
        assert last_line not in fix_source(rule.example_code, settings=selected)
        settings = Settings(rules=selected.rules, unsafe_fixes=True)
        assert all(f.fixable for f in check_source(rule.example_code, settings=settings) if f.code == rule.code)
        assert last_line in fix_source(rule.example_code, settings=settings)
        return
    assert all(f.fixable for f in findings)
    assert last_line in fix_source(rule.example_code, settings=selected)
    assert not [f for f in check_source(rule.use_instead_code, settings=selected) if f.code == rule.code]


# --- opt-in rules: on only through --select ---------------------------------------

SEED_DEFAULTS = ("NPT001", "NPT002", "NPT003", "NPT004", "NPT005", "NPT006", "NPT101", "NPT901")


def test_the_default_selection_is_unchanged_by_new_rows() -> None:
    assert tuple(r.code for r in select_rules()) == SEED_DEFAULTS
    assert tuple(r.code for r in DEFAULT_RULES) == SEED_DEFAULTS
    assert Settings().rules == DEFAULT_RULES  # the engine's default is the CLI's
    assert len([r for r in RULES if r.helper]) >= 20


@pytest.mark.parametrize(
    "selector,wanted",
    [
        (["NPT1"], {"NPT101", "NPT102", "NPT112"}),
        (["NPT019"], {"NPT019"}),
        (["ALL"], {"NPT007", "NPT022", "NPT112", "NPT901"}),
        (["NPT"], {"NPT007", "NPT001"}),
    ],
    ids=["prefix", "exact code", "ALL", "NPT"],
)
def test_a_selector_naming_an_opt_in_rule_enables_it(selector: list, wanted: set) -> None:
    assert wanted <= {r.code for r in select_rules(selector)}


def test_opt_in_rules_report_only_when_selected() -> None:
    source = "import numpy as np\n\ny = np.tanh(x) + np.exp(x)\n"
    assert [f.code for f in check_source(source)] == ["NPT001"]
    chosen = Settings(rules=select_rules(["NPT0"]))
    assert sorted(f.code for f in check_source(source, settings=chosen)) == ["NPT001", "NPT019"]
    assert "Opt-in" in pages.page(RULES_BY_CODE["NPT019"]) and "Opt-in" not in pages.page(RULES_BY_CODE["NPT001"])


def test_cli_selects_opt_in_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "m.py"
    target.write_text("import numpy as np\n\ny = np.tanh(x)\n")
    assert main(["check", "--no-cache", str(target)]) == 0
    assert main(["check", "--no-cache", "--select", "NPT019", str(target)]) == 1
    assert "NPT019" in capsys.readouterr().out


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_code_range_matches_category(rule: Rule) -> None:
    if rule.code in LEGACY_CODES:
        return
    assert code_category(rule.code) == rule.category


def test_ranges_are_the_documented_ones() -> None:
    assert dict(CODE_RANGES) == {
        "0": "elementary functions",
        "1": "special functions",
        "2": "reductions",
        "8": "suppressions",
        "9": "patterns",
    }
    assert code_category("NPT123") == "special functions"
    assert code_category("NPT301") is None


def test_only_the_codes_before_the_ranges_keep_a_code_outside_their_range() -> None:
    assert LEGACY_CODES and all(code < RANGES_FROM for code in LEGACY_CODES)
    reduction = RULES_BY_CODE["NPT004"]
    rules._check_table((reduction,))  # logsumexp predates the ranges: NPT0xx, a reduction
    with pytest.raises(AssertionError, match="NPT023: code range is 'elementary functions', row says 'reductions'"):
        rules._check_table((replace(reduction, code="NPT023"),))  # a new reduction must take an NPT2xx code


def test_explain_prints_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "npt001"]) == 0
    out = capsys.readouterr().out
    assert out == pages.page(RULES[0])
    assert out.startswith("# NPT001: exp\n")


def test_explain_unknown_code_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "NPT999"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "NPT999" in captured.err


def test_rules_markdown_lists_every_row(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--format", "markdown"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| [")]
    assert [row.split("[")[1].split("]")[0] for row in rows] == [r.code for r in RULES]


def test_the_rules_the_runtime_and_bench_derive_from_one_function_table() -> None:
    # A function is described once (np2torch/runtime/table.py); everything else follows from it.
    import np2torch.runtime as np2t
    from np2torch.runtime import table as _table
    from np2torch.runtime._api import HELPERS
    from np2torch.tools import bench

    rows = {row.code: row for row in _table.FUNCTIONS}
    functions = {rule.code: rule for rule in RULES if rule.is_function}
    assert set(rows) == set(functions)
    for code, row in rows.items():
        rule = functions[code]
        assert (rule.qualname, rule.helper) == (row.qualname, row.name)
        assert row.name in np2t.__all__ and callable(getattr(np2t, row.name))
        assert row.name in bench.RECIPES
    assert set(HELPERS) == {row.name for row in _table.FUNCTIONS}
    for row in _table.FUNCTIONS:
        helper = HELPERS[row.name]
        assert helper.row is row and helper.function is getattr(np2t, row.name)
        assert type(helper).__module__.rpartition(".")[2] == row.implementation
        assert set(row.cuda_loops) <= set(row.loops)


def test_reading_the_rules_imports_no_numpy() -> None:
    import subprocess
    import sys

    code = "import sys, np2torch.lint.rules as r; assert len(r.RULES) > 1; print('numpy' in sys.modules, 'torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout.split() == ["False", "False"], proc.stderr
