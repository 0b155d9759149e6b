"""``instrument_tree`` (a tree someone else parsed, rewritten after a prefix of earlier code) and the sites that
count without sampling (``table(..., sample=False)``, ``paused()``): what ``%load_ext np2torch`` stands on."""

from __future__ import annotations

import ast
import builtins
import itertools
from typing import Any, Dict, Tuple

import numpy as np
import pytest

from np2torch.lint.model import DEFAULT_SETTINGS
from np2torch.run.instrument import TreeMismatch, instrument_tree
from np2torch.runtime import sites

PREFIX = "import numpy as np\nfrom numpy import log as ln\n"
CELL = "def f(v):\n    return np.exp(v) + ln(v)\ny = f(x)\nact = np.exp\n"
_KEYS = itertools.count()


def _instrument(text: str, tree: ast.Module | None = None, prefix: str = PREFIX) -> Tuple[ast.Module, Any, str]:
    tree = tree if tree is not None else ast.parse(text)
    key = f"<test>#{next(_KEYS)}"
    return tree, instrument_tree(tree, text, "<test>", DEFAULT_SETTINGS, key=key, prefix=prefix), key


def _run(tree: ast.Module, key: str, result: Any, sample: bool = True, **names: Any) -> Dict[str, Any]:
    sites.table(key, key, result.sites, sample=sample)
    namespace: Dict[str, Any] = {"np": np, "ln": np.log, **names}
    exec(compile(tree, "<test>", "exec"), namespace)
    return namespace


def _record(key: str) -> Dict[str, Any]:
    return next(record for record in sites.snapshot() if record["path"] == key)


def test_names_bound_in_the_prefix_resolve_and_only_the_texts_findings_count() -> None:
    tree, result, key = _instrument(CELL)
    assert sorted(spec[:5] for spec in result.sites) == [(2, 12, "exp", "numpy.exp", "NPT001"),
                                                          (2, 24, "log", "numpy.log", "NPT002")]
    assert [(f.line, f.column, f.code) for f in result.not_rewritten] == [(4, 7, "NPT001")]
    x = np.linspace(0.0, 1.0, 50) + 0.5
    assert np.array_equal(_run(tree, key, result, x=x)["y"], np.exp(x) + np.log(x))


def test_without_the_prefix_nothing_resolves() -> None:
    _tree, result, _key = _instrument(CELL, prefix="")
    assert result.sites == () and result.not_rewritten == ()


def test_the_given_trees_nodes_keep_their_positions() -> None:
    text = "z = (1 +\n     np.exp(w))\n"
    tree = ast.parse(text)
    before = [(type(n).__name__, n.lineno, n.col_offset, n.end_lineno, n.end_col_offset)
              for n in ast.walk(tree) if isinstance(n, ast.Call)]
    _tree, result, _key = _instrument(text, tree)
    site = next(n for n in ast.walk(tree) if isinstance(n, ast.Subscript))
    assert (site.lineno, site.col_offset, site.end_lineno, site.end_col_offset) == (2, 5, 2, 11)
    assert [(type(n).__name__, n.lineno, n.col_offset, n.end_lineno, n.end_col_offset)
            for n in ast.walk(tree) if isinstance(n, ast.Call)] == before
    assert [spec[:2] for spec in result.sites] == [(2, 6)]


def test_an_unparsed_text_gives_the_positions_of_the_tree_it_came_from() -> None:
    tree = ast.parse("q  =  np.exp( w )\nr = [np.exp]\n")  # the statement %timeit compiles: no text recorded
    _tree, result, _key = _instrument(ast.unparse(tree), tree)
    assert [spec[:2] for spec in result.sites] == [(1, 7)]
    assert [(f.line, f.column, f.end_line, f.end_column) for f in result.not_rewritten] == [(2, 6, 2, 12)]


def test_a_text_that_does_not_parse_to_the_tree_is_refused() -> None:
    with pytest.raises(TreeMismatch):
        _instrument("y = np.exp(x)\n", ast.parse("y = np.log(x)\n"))


def test_a_site_made_not_to_sample_counts_every_call_as_the_helpers() -> None:
    tree, result, key = _instrument("for _ in range(5):\n    y = np.exp(x)\n")
    _run(tree, key, result, sample=False, x=np.ones(64))
    record = _record(key)
    assert record["sampling"] is False and sum(record["paths"].values()) == 5
    assert all(band["first_original_s"] is None and band["original_n"] == 0 for band in record["bands"].values())


def test_no_site_samples_while_paused_and_sampling_resumes_after() -> None:
    tree, result, key = _instrument("y = np.exp(x)\n")
    code = compile(tree, "<test>", "exec")
    sites.table(key, key, result.sites)
    with sites.paused():
        exec(code, {"np": np, "x": np.ones(64)})  # the first call of its band: sampled, were it not paused
    assert sum(_record(key)["paths"].values()) == 1 and _record(key)["bands"]["7"]["first_original_s"] is None
    exec(code, {"np": np, "x": np.ones(64)})
    assert _record(key)["bands"]["7"]["first_original_s"] is not None


def test_the_sites_live_in_builtins_not_in_the_namespace() -> None:
    tree, result, key = _instrument("y = np.exp(x)\n")
    namespace = _run(tree, key, result, x=np.ones(3))
    assert key in vars(builtins)[sites.BUILTIN] and not any(name.startswith("@") for name in namespace)
