"""``%load_ext np2torch`` in a real Jupyter kernel: one notebook executed by nbclient with the extension and
without it (two kernels for the module), cell by cell compared.

The notebook binds names in one cell and uses them in later ones, times a rewritten call and a function of
an earlier cell with ``%timeit``, raises in a cell, and unloads the extension; a ``pyproject.toml`` in the
kernel's working directory ignores NPT002 (``np.log``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

PLAIN = "pass"
"""What a cell of the extension's notebook is in the plain one (execution counts stay the same)."""

POSITIONS = ("print([(s.name, s.lineno, s.colno, s.end_lineno, s.end_colno, s.line)\n"
             "       for s in traceback.extract_tb(sys.last_traceback) if s.name in ('<module>', 'g', 'k')])")
"""The positions of the cell's frames in the last traceback."""

CELLS: List[tuple[str, str]] = [
    ("imports", "import sys, traceback\nimport numpy as np\nx = np.linspace(0.0, 1.0, 1000)"),
    ("load", "%load_ext np2torch"),
    ("define", "def f(v):\n    return np.exp(v) * 2.0\nact = np.exp\nlogs = np.log(x + 1.0)"),
    ("call", "for _ in range(11):\n    y = f(x)\nprint(round(float(y.sum()), 6), round(float(logs.sum()), 6))"),
    ("timeit statement", "%timeit -n1 -r1 np.exp(x)\n%time np.exp(x[:3])"),
    ("timeit function", "%timeit -n1 -r1 f(x[:100])"),
    ("raise", "def g(v):\n    w = v + 1\n    return np.exp(w)[5]\ng(x[:2])"),
    ("positions", POSITIONS),
    ("raise in call", "def k(v):\n    return 1 + np.exp(v, bogus=1)\nk(x)"),
    ("positions in call", POSITIONS),
    ("timeit cell", "%%timeit -n1 -r1\nnp.exp(x)\nnp.exp(x[:10])"),
    ("report", "%np2torch report"),
    ("report json", "%np2torch report --json"),
    ("report file", "%np2torch report --file report.json"),
    ("report wrong", "%np2torch repot"),
    ("options", "%np2torch options --select NPT001 --unsafe-fixes"),
    ("after options", "act2 = np.exp\nprint(type(act2).__name__, type(act).__name__)"),
    ("options wrong", "%np2torch options --select NOPE"),
    ("cd bad config", "%cd bad"),
    ("under a bad config", "print(np.exp(x).shape)"),
    ("cd back", "%cd .."),
    ("another transformer", "get_ipython().input_transformers_post.append(lambda lines: lines + ['pass\\n'])"),
    ("changed text", "w = np.exp(x[:5])\nprint(w.shape)"),
    ("transformer gone", "get_ipython().input_transformers_post.pop()"),
    ("syntax error", "syntax error = np.exp(x)"),
    ("report again", "%np2torch report --json"),
    ("unload", "%unload_ext np2torch"),
    ("plain again", "def h(v):\n    return np.exp(v)\nprint(h.__code__.co_names, round(float(f(x).sum()), 6))\n"
                    "ip = get_ipython()\nmagics = ip.magics_manager.magics\n"
                    "print(len(ip.ast_transformers), len(ip.input_transformers_post),\n"
                    "      [type(magics[kind][name]).__name__ for kind in ('line', 'cell') for name in ('time', 'timeit')])"),
    ("call after unload", "for _ in range(3):\n    y = f(x)"),
    ("report after unload", "%np2torch report --json"),
    ("options after unload", "%np2torch options --select NPT001"),
    ("reload", "%load_ext np2torch"),
    ("after reload", "for _ in range(2):\n    y = f(x)\nz = np.exp(x[:7])"),
    ("report after reload", "%np2torch report --json"),
]
EXTENSION_ONLY = {"load", "report", "report json", "report file", "report wrong", "options", "after options",
                  "options wrong", "report again", "unload", "report after unload", "options after unload", "reload",
                  "report after reload"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _execute(folder: Path, extension: bool) -> Dict[str, List[Dict[str, Any]]]:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source if extension or name not in EXTENSION_ONLY else PLAIN)
                      for name, source in CELLS]
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(folder)}})
    client.execute()
    return {name: cell.outputs for (name, _), cell in zip(CELLS, notebook.cells)}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("notebook")


@pytest.fixture(scope="module")
def runs(folder: Path) -> Dict[bool, Dict[str, List[Dict[str, Any]]]]:
    (folder / "pyproject.toml").write_text('[tool.np2torch]\nignore = ["NPT002"]\n', encoding="utf-8")
    (folder / "bad").mkdir()
    (folder / "bad" / "pyproject.toml").write_text('[tool.np2torch]\nselect = "NPT001"\n', encoding="utf-8")
    return {extension: _execute(folder, extension) for extension in (False, True)}


def _stdout(outputs: List[Dict[str, Any]]) -> str:
    return "".join(output["text"] for output in outputs if output.get("name") == "stdout")


def _stderr(outputs: List[Dict[str, Any]]) -> str:
    return "".join(output["text"] for output in outputs if output.get("name") == "stderr")


def _error(outputs: List[Dict[str, Any]]) -> Dict[str, Any]:
    errors = [output for output in outputs if output["output_type"] == "error"]
    assert len(errors) == 1, outputs
    return errors[0]


def _report(runs: Dict[bool, Dict[str, List[Dict[str, Any]]]]) -> Dict[str, Any]:
    report: Dict[str, Any] = json.loads(_stdout(runs[True]["report json"]))
    return report


def test_the_cells_print_what_they_print_without_the_extension(runs: Dict[bool, Any]) -> None:
    for name in ("imports", "define", "call", "plain again"):  # streams merged: the kernel may split a print
        outputs = [(_stdout(run[name]), _stderr(run[name]), [o for o in run[name] if o["output_type"] != "stream"])
                   for run in (runs[True], runs[False])]
        assert outputs[0] == outputs[1], name
    assert _stdout(runs[True]["call"]).strip() and not _stderr(runs[True]["load"])


def test_an_uncaught_exception_has_the_plain_kernels_traceback_lines_and_columns(runs: Dict[bool, Any]) -> None:
    with_extension, plain = _error(runs[True]["raise"]), _error(runs[False]["raise"])
    assert (with_extension["ename"], with_extension["evalue"]) == (plain["ename"], plain["evalue"]) == (
        "IndexError", "index 5 is out of bounds for axis 0 with size 2")
    assert [ANSI.sub("", line) for line in with_extension["traceback"]] == [
        ANSI.sub("", line) for line in plain["traceback"]]
    positions = _stdout(runs[True]["positions"])
    assert positions == _stdout(runs[False]["positions"])
    assert "('g', 3, 11, 3, 23, 'return np.exp(w)[5]')" in positions


def test_an_exception_from_a_rewritten_call_points_at_the_call(runs: Dict[bool, Any]) -> None:
    with_extension, plain = _error(runs[True]["raise in call"]), _error(runs[False]["raise in call"])
    assert (with_extension["ename"], with_extension["evalue"]) == (plain["ename"], plain["evalue"])
    positions = _stdout(runs[True]["positions in call"])
    assert positions == _stdout(runs[False]["positions in call"])
    assert "('k', 2, 15, 2, 33, 'return 1 + np.exp(v, bogus=1)')" in positions


def test_a_function_of_an_earlier_cell_is_rewritten_and_counted(runs: Dict[bool, Any]) -> None:
    sites = {(site["path"], site["line"], site["col"]): site for site in _report(runs)["sites"]}
    f = sites[("<In[3]>", 2, 12)]
    assert f["function"] == "numpy.exp"
    # 11 calls of 1000 elements (the first of their band and every other one of the first 8 run the original:
    # 4), then one of 100 elements in %timeit: the first of its band, which would run the original, runs the
    # helper because %timeit pauses sampling.
    assert f["calls"] == 12 and f["paths"]["sampled"] == 4 and f["samples"]["original"] == 4
    assert sum(count for path, count in f["paths"].items() if path != "sampled") == 8


def test_a_statement_timed_with_timeit_is_rewritten_and_never_sampled(runs: Dict[bool, Any]) -> None:
    sites = {(site["path"], site["line"], site["col"]): site for site in _report(runs)["sites"]}
    timed = sites[("<In[5] %timeit>", 1, 1)]
    assert timed["function"] == "numpy.exp" and timed["calls"] == 1 and timed["paths"]["sampled"] == 0
    second = sites[("<In[5] %time 2>", 1, 1)]  # the cell's second timing magic: a site of its own
    assert second["calls"] == 1 and second["elements"] == 3 and second["paths"]["sampled"] == 0
    assert "a timed statement: never sampled" in " ".join(timed["notes"])
    assert "per loop" in _stdout(runs[True]["timeit statement"]) + _stdout(runs[True]["timeit function"])


def test_the_projects_config_applies_and_references_are_reported_not_rewritten(runs: Dict[bool, Any]) -> None:
    report = _report(runs)
    assert all(site["function"] != "numpy.log" for site in report["sites"])  # ignore = ["NPT002"]
    assert [(item["path"], item["line"], item["col"], item["code"]) for item in report["not_rewritten"]] == [
        ("<In[3]>", 3, 7, "NPT001")]


def test_a_cell_timed_with_cell_timeit_is_rewritten_and_never_sampled(runs: Dict[bool, Any]) -> None:
    timed = [(site["line"], site["col"], site["calls"], site["paths"]["sampled"]) for site in _report(runs)["sites"]
             if site["path"] == "<In[11] %%timeit>"]
    assert sorted(timed) == [(1, 1, 1, 0), (2, 1, 1, 0)]


def test_report_prints_the_table_writes_the_file_and_refuses_a_typo(runs: Dict[bool, Any], folder: Path) -> None:
    text = _stdout(runs[True]["report"])
    assert text.startswith("np2torch run report:")
    assert re.search(r"^<In\[3\]>:2:12 +numpy\.exp +12 ", text, re.MULTILINE), text
    assert "<In[5] %timeit>:1:1" in text and "<In[3]>:3:7 NPT001 numpy.exp" in text
    written = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert [site["path"] for site in written["sites"]] == [site["path"] for site in _report(runs)["sites"]]
    assert not _stdout(runs[True]["report file"])
    assert _stderr(runs[True]["report wrong"]).startswith("np2torch: 'repot' is not a subcommand\nusage: ")


def test_options_apply_to_the_cells_that_follow(runs: Dict[bool, Any]) -> None:
    assert _stdout(runs[True]["options"]) == "np2torch: the next cells run with --select NPT001, unsafe fixes\n"
    assert _stdout(runs[True]["after options"]) == "function ufunc\n"  # the reference is now rewritten
    assert _stderr(runs[True]["options wrong"]).startswith("np2torch: ") and "NOPE" in _stderr(
        runs[True]["options wrong"]).splitlines()[0]


def test_unload_restores_plain_execution(runs: Dict[bool, Any]) -> None:
    # equal to the plain kernel's: a new function calls NumPy, and IPython's transformers and magics are its own
    assert _stdout(runs[True]["plain again"]).splitlines() == _stdout(runs[False]["plain again"]).splitlines() == [
        "('np', 'exp') 3436.845662", "0 0 ['method', 'method', 'method', 'method']"]


def test_a_cell_under_a_bad_config_runs_unchanged_with_one_line(runs: Dict[bool, Any]) -> None:
    assert _stdout(runs[True]["under a bad config"]) == _stdout(runs[False]["under a bad config"]) == "(1000,)\n"
    lines = _stderr(runs[True]["under a bad config"]).splitlines()
    assert len(lines) == 1 and lines[0].startswith("np2torch: ") and "pyproject.toml" in lines[0], lines
    assert lines[0].endswith("; <In[20]> runs unchanged")


def test_a_cell_whose_text_another_transformer_changed_is_analysed_from_its_tree(runs: Dict[bool, Any]) -> None:
    assert _stdout(runs[True]["changed text"]) == _stdout(runs[False]["changed text"]) == "(5,)\n"
    report = json.loads(_stdout(runs[True]["report again"]))
    assert [(site["line"], site["col"], site["calls"]) for site in report["sites"] if site["path"] == "<In[23]>"] == [
        (1, 5, 1)]



def test_a_cell_that_does_not_parse_fails_as_without_the_extension(runs: Dict[bool, Any]) -> None:
    with_extension, plain = _error(runs[True]["syntax error"]), _error(runs[False]["syntax error"])
    assert with_extension["ename"] == plain["ename"] == "SyntaxError"
    assert [ANSI.sub("", line) for line in with_extension["traceback"]] == [
        ANSI.sub("", line) for line in plain["traceback"]]


def _calls(report: Dict[str, Any]) -> Dict[tuple[str, int, int], int]:
    return {(site["path"], site["line"], site["col"]): site["calls"] for site in report["sites"]}


def test_functions_defined_under_the_extension_go_on_counting_and_reporting_after_unload(runs: Dict[bool, Any]) -> None:
    before = _calls(json.loads(_stdout(runs[True]["report again"])))
    after = json.loads(_stdout(runs[True]["report after unload"]))
    assert _calls(after)[("<In[3]>", 2, 12)] == before[("<In[3]>", 2, 12)] + 4  # f(x) in "plain again", then 3
    assert after["command"][-1] == "(cells up to In[27]), unloaded"
    assert _stderr(runs[True]["options after unload"]).startswith("np2torch: the extension is unloaded")


def test_a_new_load_starts_a_fresh_report(runs: Dict[bool, Any]) -> None:
    # every site counts from zero, the time is that since the new load: the calls cannot outweigh the program
    report = json.loads(_stdout(runs[True]["report after reload"]))
    assert _calls(report) == {("<In[3]>", 2, 12): 2, ("<In[33]>", 3, 5): 1}
    assert report["rewritten_s"] <= report["wall_s"]
    assert _stdout(runs[True]["after reload"]) == _stdout(runs[False]["after reload"])
