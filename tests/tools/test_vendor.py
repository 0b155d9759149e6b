"""`np2torch vendor FOLDER`: the runtime copied as a package that works where np2torch cannot be imported."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from np2torch import __version__
from np2torch.cli import main
from np2torch.lint.rules import RULES
from np2torch.runtime.table import BINARY, FUNCTIONS
from np2torch.tools import vendor
from np2torch.tools.vendor import MARKER, VendorError, command, package_files, runtime_folder, write_package

# Blocks np2torch (and torch when asked) before anything is imported: a clean
# interpreter (-I: no PYTHONPATH, no user site, not the script's folder) that
# sees only the project folder and the venv's NumPy, SciPy and torch.
BLOCKER = textwrap.dedent(
    """
    import sys
    BLOCKED = sys.argv[1].split(",")
    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is not installed here")
    sys.meta_path.insert(0, Blocker())
    sys.path.insert(0, sys.argv[2])
    """
)

# Every helper of the rule table against its original, through the vendored package.
CALL_EVERY_HELPER = BLOCKER + textwrap.dedent(
    """
    import importlib, json
    import numpy as np
    import proj._np2torch as np2t

    pairs = json.loads(sys.argv[3])
    rng = np.random.default_rng(0)
    x = rng.uniform(0.05, 0.95, (300, 200))  # in every helper's domain (erfinv: (-1, 1), log: > 0)
    with np2t.using(device="cpu", min_size=0):
        for helper, qualname, operands in pairs:
            module, _, name = qualname.rpartition(".")
            original = getattr(importlib.import_module(module), name)
            for data in (x, x.astype(np.float32), 0.5):
                args = (data,) * operands  # a two-argument function: the same data twice
                got, want = getattr(np2t, helper)(*args), original(*args)
                assert type(got) is type(want), (helper, type(got), type(want))
                assert got.dtype == want.dtype and got.shape == want.shape, helper
                np.testing.assert_allclose(got, want, rtol=2e-6 if want.dtype == np.float32 else 1e-13, err_msg=helper)
    np.testing.assert_allclose(np2t.logsumexp(np.ones(5)), np.log(5) + 1, rtol=1e-15)
    assert np2t.__np2torch_version__ == sys.argv[4]
    assert not any(name.split(".")[0] == "np2torch" for name in sys.modules), "np2torch was imported"
    print("torch loaded" if "torch" in sys.modules else "torch not loaded", sorted(np2t.__all__))
    """
)


def vendored_project(tmp_path: Path) -> Path:
    """``tmp_path/project/proj/_np2torch``, written by the command."""
    project = tmp_path / "project"
    (project / "proj").mkdir(parents=True)
    (project / "proj" / "__init__.py").write_text("", encoding="utf-8")
    result = CliRunner().invoke(command, [str(project / "proj" / "_np2torch")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("wrote ")
    return project


def run_child(script: str, blocked: str, project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", "-c", script, blocked, str(project), *args],
                          capture_output=True, text=True, timeout=300)


def helper_pairs() -> str:
    """``(helper, original, operands)`` for every function rule (two operands for a ``binary`` row)."""
    operands = {row.name: 2 if row.kind == BINARY else 1 for row in FUNCTIONS}
    return json.dumps(sorted({(rule.helper, rule.qualname, operands[rule.helper]) for rule in RULES if rule.is_function}))


def test_every_helper_matches_numpy_and_scipy_without_np2torch(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    project = vendored_project(tmp_path)
    child = run_child(CALL_EVERY_HELPER, "np2torch", project, helper_pairs(), __version__)
    assert child.returncode == 0, child.stderr + child.stdout
    assert child.stdout.startswith("torch loaded"), "the torch path did not run"
    import np2torch.runtime

    assert child.stdout.strip().endswith(str(sorted(np2torch.runtime.__all__)))  # the package's public names, all of them


def test_the_package_works_without_torch(tmp_path: Path) -> None:
    project = vendored_project(tmp_path)
    child = run_child(CALL_EVERY_HELPER, "np2torch,torch", project, helper_pairs(), __version__)
    assert child.returncode == 0, child.stderr + child.stdout
    assert child.stdout.startswith("torch not loaded")


# ---------------------------------------------------------------- what is copied


def runtime_files() -> set:
    """The runtime folder's files, listed independently of vendor.py: not C (the front's source and the module
    built from it), which a copy runs without."""
    folder = runtime_folder()
    return {
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo", ".c", ".so", ".pyd")
        and not path.name.startswith(".") and not path.name.endswith("~")
    }


def test_every_file_of_the_runtime_is_copied_unchanged_below_its_header(tmp_path: Path) -> None:
    project = vendored_project(tmp_path)
    target = project / "proj" / "_np2torch"
    copied = {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}
    assert copied == runtime_files()
    for rel in copied:
        original, vendored = (runtime_folder() / rel).read_bytes(), (target / rel).read_bytes()
        if rel.endswith(".py"):
            text = vendored.decode("utf-8")
            assert text.startswith(MARKER) and __version__ in text.splitlines()[0] and "do not edit" in text.splitlines()[0]
            body = original.decode("utf-8")
            assert body.rstrip("\n") in text, f"{rel} was edited, not copied"
            compile(text, rel, "exec")
        else:
            assert vendored == original, f"data file {rel} changed"


def fake_runtime(folder: Path, files: dict) -> Path:
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


NEW_MODULES = {
    "__init__.py": '"""Doc."""\nfrom ._a import answer\nfrom .sub import deep\n__all__ = ["answer", "deep", "profile"]\n'
                   "def profile():\n    from . import _profile\n    return _profile.load()\n",
    "_a.py": "import json\nfrom ._table import ROWS\ndef answer():\n    return ROWS[0] * 2\n",
    "_table.py": "ROWS = (21,)\n",
    "_profile.py": "import importlib, json\nfrom pathlib import Path\n"
                   "def load():\n    table = importlib.import_module('._table', __package__)\n"
                   "    return json.loads(Path(__file__).with_name('builtin_profile.json').read_text())['n'] + table.ROWS[0]\n",
    "builtin_profile.json": '{"n": 1}\n',
    "sub/__init__.py": "from .._table import ROWS\ndef deep():\n    return ROWS\n",
    "sub/data/table.csv": "a,b\n",
    "__pycache__/_a.cpython-311.pyc": "junk",
    ".hidden.py": "import pandas\n",
    "_a.py~": "editor backup",
}


def test_new_modules_data_files_and_subpackages_are_picked_up(tmp_path: Path) -> None:
    source = fake_runtime(tmp_path / "runtime", NEW_MODULES)
    (tmp_path / "project" / "proj").mkdir(parents=True)
    target = tmp_path / "project" / "proj" / "_np2torch"
    assert write_package(target, source=source)
    copied = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert copied == ["__init__.py", "_a.py", "_profile.py", "_table.py", "builtin_profile.json", "sub/__init__.py", "sub/data/table.csv"]
    assert (target / "builtin_profile.json").read_bytes() == (source / "builtin_profile.json").read_bytes()
    script = BLOCKER + "import proj._np2torch as p\nprint(p.answer(), p.deep(), p.profile(), p.__np2torch_version__)\n"
    child = run_child(script, "np2torch", tmp_path / "project")
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["42", "(21,)", "22", __version__]


def test_the_init_names_its_data_files_and_ends_with_the_version(tmp_path: Path) -> None:
    files = package_files(fake_runtime(tmp_path / "rt", NEW_MODULES), version="9.9")
    init = files["__init__.py"].decode("utf-8")
    assert '# np2torch vendor data files: ["builtin_profile.json", "sub/data/table.csv"]' in init
    assert init.endswith("\n__np2torch_version__ = '9.9'\n")
    assert all(files[rel].decode("utf-8").startswith(MARKER) for rel in files if rel.endswith(".py"))


def test_the_real_package_imports_only_the_standard_library_numpy_torch_scipy() -> None:
    imported = set()
    for rel, content in package_files().items():
        if not rel.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(content)):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
    # The originals are imported by the module their table row names (importlib, on first use).
    imported.update(row.module.split(".")[0] for row in FUNCTIONS)
    assert "np2torch" not in imported
    assert {"numpy", "torch", "scipy"} <= imported  # torch and scipy lazily, inside functions
    if hasattr(sys, "stdlib_module_names"):
        assert imported - {"numpy", "torch", "scipy", "dask", "__future__"} <= set(sys.stdlib_module_names)


def test_dask_is_imported_inside_functions_only() -> None:
    vendor.check_modules({"_a.py": "def f():\n    import dask.array as da\n    from dask.array.core import elemwise\n"})
    with pytest.raises(VendorError, match="imports 'pandas'"):
        vendor.check_modules({"_a.py": "def f():\n    import dask, pandas\n"})


# ---------------------------------------------------------------- the checks


@pytest.mark.parametrize(
    "files, message",
    [
        pytest.param({"_a.py": "import pandas\n"}, "_a.py line 1: imports 'pandas'", id="third-party import"),
        pytest.param({"_a.py": "from pandas.api import types\n"}, "imports 'pandas.api'", id="third-party from-import"),
        pytest.param({"_a.py": "def f():\n    import sklearn\n"}, "_a.py line 2: imports 'sklearn'", id="lazy third-party import"),
        pytest.param({"_a.py": "import dask.array\n"}, "_a.py line 1: imports 'dask.array'", id="dask at the top level"),
        pytest.param({"_a.py": "import importlib\nm = importlib.import_module('pandas')\n"}, "imports 'pandas'", id="dynamic third-party import"),
        pytest.param({"sub/_b.py": "import yaml\n"}, "sub/_b.py line 1: imports 'yaml'", id="in a subpackage"),
        pytest.param({"_a.py": "from np2torch.lint.rules import RULES\n"}, "absolute np2torch import", id="absolute np2torch import"),
        pytest.param({"_a.py": "import np2torch.runtime\n"}, "absolute np2torch import", id="import np2torch"),
        pytest.param({"_a.py": "from .. import rules\n"}, "leaves the package", id="relative import out of the package"),
        pytest.param({"_a.py": "from ._missing import x\n"}, "imports ._missing, which is not in the runtime", id="missing sibling"),
        pytest.param({"_a.py": "def f(:\n"}, "_a.py line 1", id="syntax error"),
        pytest.param({"_a.py": "try:\n    from ._missing import x\nexcept ValueError:\n    x = None\n"},
                     "imports ._missing, which is not in the runtime", id="missing sibling, another error handled"),
    ],
)
def test_a_runtime_that_fails_the_checks_is_not_vendored(tmp_path: Path, files: dict, message: str) -> None:
    if "np2torch" not in message and not hasattr(sys, "stdlib_module_names"):
        pytest.skip("Python 3.9 cannot name the standard library")
    source = fake_runtime(tmp_path / "rt", {"__init__.py": "from ._ok import x\n", "_ok.py": "import os, numpy\nx = 1\n", **files})
    (tmp_path / "out").mkdir()
    with pytest.raises(VendorError, match=message.replace("(", r"\(").replace(".", r"\.")):
        write_package(tmp_path / "out" / "_np2torch", source=source)
    assert list((tmp_path / "out").iterdir()) == [], "something was written"


def test_a_failing_check_is_a_one_line_error_with_exit_code_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = fake_runtime(tmp_path / "rt", {"__init__.py": "import pandas\n"})
    monkeypatch.setattr(vendor, "runtime_folder", lambda: source)
    result = CliRunner().invoke(command, [str(tmp_path / "_np2torch")])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "cannot vendor the runtime: __init__.py line 1: imports 'pandas'" in result.output


def test_an_optional_sibling_may_be_missing(tmp_path: Path) -> None:
    # The C front (from ._front import Front, ImportError handled): the copy runs without it.
    text = "try:\n    from ._front import Front\nexcept (OSError, ImportError):\n    Front = None\n"
    source = fake_runtime(tmp_path / "rt", {"__init__.py": "", "_a.py": text, "_front.c": "/* C */\n"})
    files = package_files(source)
    assert "_a.py" in files and "_front.c" not in files


def test_subpackage_relative_imports_may_reach_the_package_root(tmp_path: Path) -> None:
    source = fake_runtime(tmp_path / "rt", {"__init__.py": "", "_t.py": "", "sub/__init__.py": "from .. import _t\nfrom .._t import *\n"})
    assert "sub/__init__.py" in package_files(source)


# ---------------------------------------------------------------- writing


def test_the_cli_writes_the_package(tmp_path: Path) -> None:
    target = tmp_path / "_np2torch"
    assert main(["vendor", str(target)]) == 0
    assert {p.name for p in target.iterdir()} == {p.split("/")[0] for p in package_files()}


def test_a_py_target_is_an_upgrade_message_with_exit_code_2(tmp_path: Path) -> None:
    (tmp_path / "mypkg").mkdir()
    target = tmp_path / "mypkg" / "_np2torch.py"
    result = CliRunner().invoke(command, [str(target)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1, result.output
    assert f"np2torch vendor {tmp_path / 'mypkg' / '_np2torch'}" in result.output
    assert "--runtime-module" in result.output and "mypkg._np2torch" in result.output
    assert list((tmp_path / "mypkg").iterdir()) == []


def test_refuses_a_folder_it_did_not_write(tmp_path: Path) -> None:
    target = tmp_path / "_np2torch"
    target.mkdir()
    (target / "__init__.py").write_text("my own code\n", encoding="utf-8")
    result = CliRunner().invoke(command, [str(target)])
    assert result.exit_code == 2
    assert "--force" in result.output and (target / "__init__.py").read_text(encoding="utf-8") == "my own code\n"
    result = CliRunner().invoke(command, [str(target), "--force"])
    assert result.exit_code == 0, result.output
    assert (target / "__init__.py").read_bytes() == package_files()["__init__.py"]


@pytest.mark.parametrize("name", ["mine.py", "notes.json"])
def test_refuses_a_vendored_folder_holding_a_file_of_the_user(tmp_path: Path, name: str) -> None:
    target = tmp_path / "_np2torch"
    write_package(target)
    (target / name).write_text("mine\n", encoding="utf-8")
    result = CliRunner().invoke(command, [str(target)])
    assert result.exit_code == 2 and name in result.output and "--force" in result.output
    assert (target / name).read_text(encoding="utf-8") == "mine\n"


def test_replaces_its_own_package_and_reports_unchanged(tmp_path: Path) -> None:
    source = fake_runtime(tmp_path / "rt", NEW_MODULES)
    target = tmp_path / "out" / "_np2torch"
    target.parent.mkdir()
    assert write_package(target, source=source)
    (target / "__pycache__").mkdir()  # Python's, not a file of the package
    (target / "__pycache__" / "_a.cpython-311.pyc").write_bytes(b"")
    assert not write_package(target, source=source)
    (target / "_a.py").write_text((target / "_a.py").read_text(encoding="utf-8") + "# an edit\n", encoding="utf-8")
    (source / "_new.py").write_text("NEW = 1\n", encoding="utf-8")
    os.remove(source / "_profile.py")
    (source / "_a.py").write_text("import json\ndef answer():\n    return 42\n", encoding="utf-8")
    assert write_package(target, source=source)
    assert {rel: (target / rel).read_bytes() for rel in package_files(source)} == package_files(source)
    assert not (target / "_profile.py").exists() and not (target / "__pycache__").exists()
    assert os.listdir(target.parent) == ["_np2torch"], "temporary folder left behind"


def test_an_empty_folder_is_filled(tmp_path: Path) -> None:
    target = tmp_path / "_np2torch"
    target.mkdir()
    assert write_package(target)
    assert (target / "__init__.py").is_file()


def test_the_folder_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "_np2torch"
    write_package(target)
    os.chmod(target, 0o750)
    (target / "_config.py").write_text(f"{MARKER}\n", encoding="utf-8")
    assert write_package(target)
    assert target.stat().st_mode & 0o777 == 0o750


def _contents(folder: Path) -> dict[str, bytes]:
    """Every file of the package, its subpackages' too (``_paths/``, ``_exact/``), by its path inside it."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_failure_while_writing_leaves_the_old_package_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "_np2torch"
    write_package(target)
    before = _contents(target)
    (target / "_config.py").write_text(f"{MARKER}\n", encoding="utf-8")
    before["_config.py"] = (target / "_config.py").read_bytes()
    calls = []

    def failing_write(path: Path, content: bytes) -> None:
        calls.append(path)
        if len(calls) == 3:
            raise OSError(28, "No space left on device", str(path))
        path.write_bytes(content)

    monkeypatch.setattr(vendor, "_write_file", failing_write)
    result = CliRunner().invoke(command, [str(target)])
    assert result.exit_code == 2 and "No space left on device" in result.output
    assert _contents(target) == before
    assert os.listdir(tmp_path) == ["_np2torch"], "temporary folder left behind"


def test_a_failed_rename_puts_the_old_package_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "_np2torch"
    write_package(target)
    (target / "_config.py").write_text(f"{MARKER}\n", encoding="utf-8")
    before = _contents(target)
    real_rename = os.rename

    def rename(src: object, dst: object) -> None:
        if ".np2torch-new-" in str(src):
            raise OSError(5, "Input/output error")
        real_rename(src, dst)

    monkeypatch.setattr(vendor.os, "rename", rename)
    with pytest.raises(OSError):
        write_package(target)
    assert _contents(target) == before
    assert os.listdir(tmp_path) == ["_np2torch"]


def test_leftovers_of_an_interrupted_run_are_removed(tmp_path: Path) -> None:
    leftover = tmp_path / "._np2torch.np2torch-old-0000"
    leftover.mkdir()
    (leftover / "__init__.py").write_text(f"{MARKER}\n", encoding="utf-8")
    write_package(tmp_path / "_np2torch")
    assert os.listdir(tmp_path) == ["_np2torch"]


def test_file_symlink_and_missing_folder_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("x", encoding="utf-8")
    for force in ([], ["--force"]):  # --force replaces a folder, never a file (once: `vendor --force /dev/null`)
        result = CliRunner().invoke(command, [str(tmp_path / "a_file"), *force])
        assert result.exit_code == 2 and "is not a folder" in result.output
        assert (tmp_path / "a_file").read_text(encoding="utf-8") == "x"
    result = CliRunner().invoke(command, [str(tmp_path / "missing" / "_np2torch")])
    assert result.exit_code == 2 and "does not exist" in result.output
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    result = CliRunner().invoke(command, [str(tmp_path / "link")])
    assert result.exit_code == 2 and "symbolic link" in result.output


def test_an_older_single_file_copy_beside_it_is_named(tmp_path: Path) -> None:
    (tmp_path / "_np2torch.py").write_text(f"{MARKER} from np2torch 0.0.1 -- generated, do not edit.\n", encoding="utf-8")
    result = CliRunner().invoke(command, [str(tmp_path / "_np2torch")])  # .output holds stderr too (click 8.1 and 8.2)
    assert result.exit_code == 0
    assert "older single-file copy" in result.output and "delete it" in result.output
    assert (tmp_path / "_np2torch.py").exists(), "never deleted without asking"
