"""The import graph of src/np2torch: no circles, no private names across modules, the runtime apart from the linter.

Every import counts, also those inside functions: a lazy import that breaks a
circle still makes one.  ``from . import _backend`` is an edge to ``_backend``,
not to the package.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set, Tuple

SRC = Path(__file__).resolve().parent.parent / "src" / "np2torch"


def _modules() -> Dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> List[Tuple[str, Tuple[str, ...]]]:
    """``(module, names)`` for every import in the file (``names`` empty for ``import x``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((module, tuple(alias.name for alias in node.names)))
    return found


ENTRY_POINTS = {("np2torch", "np2torch.run.ipython")}
"""Edges the graph leaves out: hooks another program looks for on the top-level package, which import their
layer inside the hook (IPython calls ``np2torch.load_ipython_extension`` for ``%load_ext np2torch``), while
that layer reads ``np2torch.__version__`` as the command line does."""


def _graph() -> Dict[str, Set[str]]:
    edges: Dict[str, Set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for module, names in _imports(name, path):
            submodules = {f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES}
            targets = submodules or ({module} if module in MODULES else set())
            if names and submodules and len(submodules) < len(names) and module in MODULES:
                targets.add(module)  # `from pkg import submodule, name`: the package too
            edges[name] |= {target for target in targets - {name} if (name, target) not in ENTRY_POINTS}
    return edges


def test_an_entry_point_is_imported_only_inside_its_hooks() -> None:
    for name, target in ENTRY_POINTS:
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        package, _, module = target.rpartition(".")
        at_top = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                  and (node.module == package and any(alias.name == module for alias in node.names)
                       or any(alias.name == target for alias in node.names))]
        in_functions = [node for function in tree.body if isinstance(function, ast.FunctionDef)
                        for node in ast.walk(function) if isinstance(node, ast.ImportFrom) and node.module == package
                        and any(alias.name == module for alias in node.names)]
        assert not at_top and in_functions, (name, target)


def _cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    found: List[List[str]] = []
    state: Dict[str, int] = {}

    def visit(node: str, stack: List[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return found


def test_the_import_graph_has_no_circles() -> None:
    assert _cycles(_graph()) == []


def test_the_check_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]


def test_no_private_name_is_imported_from_another_module() -> None:
    crossings = []
    for name, path in MODULES.items():
        for module, names in _imports(name, path):
            if module not in MODULES:
                continue
            for imported in names:
                if imported.startswith("_") and not imported.startswith("__") and f"{module}.{imported}" not in MODULES:
                    crossings.append(f"{name} imports {module}.{imported}")
    assert crossings == []


def test_the_runtime_never_imports_the_linter() -> None:
    for name, path in MODULES.items():
        if not name.startswith("np2torch.runtime"):
            continue
        for module, _ in _imports(name, path):
            assert not (module.startswith("np2torch") and not module.startswith("np2torch.runtime")), (name, module)


def _crossings(layer: str, forbidden: tuple[str, ...]) -> List[str]:
    found = []
    for name, path in MODULES.items():
        if name == layer or name.startswith(layer + "."):
            found += [f"{name} imports {module}" for module, _ in _imports(name, path)
                      if any(module == f or module.startswith(f + ".") for f in forbidden)]
    return found


def test_the_lint_core_imports_no_command_line_or_tool_module() -> None:
    assert _crossings("np2torch.lint", ("np2torch.cli", "np2torch.tools")) == []


def test_the_command_line_imports_no_tool_module() -> None:
    # `np2torch bench|tune|vendor` are listed by name (cli.app.LAZY_COMMANDS) and imported only when run.
    assert _crossings("np2torch.cli", ("np2torch.tools",)) == []


def test_the_flake8_plugin_needs_no_runner() -> None:
    # flake8 runs the plugin once per file in its own processes: config and engine, no worker pools or cache.
    assert _crossings("np2torch.cli.flake8_plugin", ("np2torch.cli.runner", "np2torch.cli.cache")) == []


def test_only_the_language_server_imports_pygls() -> None:
    # pygls is the optional extra np2torch[server]: the linter, the command line, `run`, the tools and the runtime
    # never need it, and none of them imports the server (the command line names it in LAZY_COMMANDS).
    lsp = ("pygls", "lsprotocol", "np2torch.server")
    found = [crossing for layer in ("np2torch.lint", "np2torch.cli", "np2torch.run", "np2torch.tools", "np2torch.runtime")
             for crossing in _crossings(layer, lsp)]
    assert found == []
    assert _crossings("np2torch.server.command", ("pygls", "lsprotocol")) == []  # imports the server when run
    assert _crossings("np2torch.server", ("np2torch.tools",)) == []


def test_the_crossing_check_sees_an_import() -> None:
    assert _crossings("np2torch.tools", ("np2torch.runtime",)) != []


def _private_runtime_imports(layer: str) -> List[str]:
    """Imports of a private runtime module (``np2torch.runtime._x``) by the modules of ``layer``."""
    found = []
    for name, path in MODULES.items():
        if not (name == layer or name.startswith(layer + ".")):
            continue
        for module, names in _imports(name, path):
            targets = [module] + [f"{module}.{n}" for n in names]
            found += [f"{name} imports {target}" for target in targets if target.startswith("np2torch.runtime._")
                      and not target.startswith("np2torch.runtime.__")]
    return found


def test_the_tools_use_the_runtime_only_through_its_public_modules() -> None:
    # np2torch tune and bench measure through np2torch.runtime.tuning; the rest is private to the runtime.
    assert _private_runtime_imports("np2torch.tools") == []


def test_the_private_import_check_sees_one() -> None:
    assert _private_runtime_imports("np2torch.runtime.tuning") != []


def test_nothing_below_the_run_layer_imports_it() -> None:
    # `np2torch run` stands on the lint core, the runtime and the command line's configuration; the command line
    # names it in LAZY_COMMANDS and the package's IPython hooks import it inside themselves, when used.
    below = ("np2torch.lint", "np2torch.cli", "np2torch.runtime", "np2torch.tools")
    assert [crossing for layer in below for crossing in _crossings(layer, ("np2torch.run",))] == []


def test_the_run_layer_uses_the_runtime_only_through_its_public_modules() -> None:
    # what rewritten code calls is np2torch.runtime.sites (and the helpers behind it); nothing private
    assert _private_runtime_imports("np2torch.run") == []


MAX_FUNCTION_LINES = 80


def _long_functions(path: Path, source: str) -> List[str]:
    """``path:name (N lines)`` for each function (methods and nested ones too) longer than
    :data:`MAX_FUNCTION_LINES`, its decorators counted."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - first + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{path}:{node.name} ({length} lines)")
    return found


def test_no_function_is_longer_than_80_lines() -> None:
    long = [found for path in sorted(SRC.rglob("*.py")) for found in
            _long_functions(path.relative_to(SRC.parent), path.read_text(encoding="utf-8"))]
    assert long == []


def test_the_length_check_sees_a_long_function() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    assert _long_functions(Path("m.py"), f"@decorated\ndef f():\n{body}") == ["m.py:f (82 lines)"]
    assert _long_functions(Path("m.py"), f"def f():\n{body[:-len('    x79 = 79') - 1]}") == []


PATHS_PACKAGE = "np2torch.runtime._paths"
DECISION_PACKAGE = "np2torch.runtime._decision"
"""The modules that decide which path a call takes (``runtime/_decision/``)."""


def _path_names() -> Set[str]:
    """The paths' names, as ``_paths/__init__.py`` spells them (its ``Path("name", ...)`` records)."""
    tree = ast.parse(MODULES[PATHS_PACKAGE].read_text(encoding="utf-8"))
    return {node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "Path" and node.args and isinstance(node.args[0], ast.Constant)}


def _spelled_paths(source: str, names: Set[str]) -> List[str]:
    """Literal collections (tuple, list, set, dict keys) naming two paths or more: facts about paths spelled out."""
    found = []
    for node in ast.walk(ast.parse(source)):
        items = node.keys if isinstance(node, ast.Dict) else node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else []
        spelled = [item.value for item in items if isinstance(item, ast.Constant) and item.value in names]
        if len(spelled) > 1:
            found.append(f"line {node.lineno}: {spelled}")
    return found


def test_a_path_never_imports_the_modules_that_decide() -> None:
    # A path says what it can serve, computes it, and is priced by its record; it never knows when it is chosen.
    assert _crossings(PATHS_PACKAGE, (DECISION_PACKAGE,)) == []


def test_the_decision_reads_the_paths_from_their_records() -> None:
    names = _path_names()
    assert {"numpy", "cores", "cpu1", "cpu", "cuda"} <= names
    # the route and the cost model (the profile's fingerprint has keys named as paths are: "cpu", "cores", "numpy")
    deciding = [f"{DECISION_PACKAGE}.{module}" for module in ("route", "model")]
    found = {name: _spelled_paths(MODULES[name].read_text(encoding="utf-8"), names) for name in deciding}
    assert found == {name: [] for name in deciding}


def test_the_path_checks_see_a_crossing_and_a_spelled_tuple() -> None:
    assert _spelled_paths('CPU_PATHS = ("numpy", "cores", "cpu1", "cpu")\nlabel = {"numpy": 1, "cuda": 2}', {"numpy", "cores", "cpu1", "cpu", "cuda"}) == [
        "line 1: ['numpy', 'cores', 'cpu1', 'cpu']", "line 2: ['numpy', 'cuda']"]
    assert _spelled_paths('if path == "cuda": pass', {"cuda", "cpu"}) == []
    assert _crossings("np2torch.runtime._ufunc", (DECISION_PACKAGE,)) != []
