"""`np2torch vendor`: one self-contained module that works where np2torch cannot be imported."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from np2torch import __version__
from np2torch.cli import main
from np2torch.vendor import MARKER, VendorError, command, vendored_source

# Run in a fresh interpreter: np2torch is made unimportable before anything else.
CHILD = textwrap.dedent(
    """
    import sys
    class NoNp2torch:
        def find_spec(self, name, path=None, target=None):
            if name == "np2torch" or name.startswith("np2torch."):
                raise ImportError("np2torch is not installed here")
    sys.meta_path.insert(0, NoNp2torch())
    sys.path.insert(0, sys.argv[1])
    try:
        import np2torch
    except ImportError:
        pass
    else:
        raise SystemExit("np2torch was importable")

    import numpy as np, scipy.special
    import _np2torch as np2t

    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 200))
    pairs = [(np2t.exp, np.exp, x), (np2t.log, np.log, np.abs(x)), (np2t.erf, scipy.special.erf, x)]
    with np2t.using(device="cpu", min_size=0):
        for helper, original, data in pairs:
            got, want = helper(data), original(data)
            assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-14)
        got, want = np2t.logsumexp(x, axis=0), scipy.special.logsumexp(x, axis=0)
        assert type(got) is type(want) and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-14)
        assert np2t.current_settings().min_size == 0
    assert "torch" in sys.modules, "the torch path did not run"
    before = np2t.configure(device="numpy")
    assert np2t.current_settings().device == "numpy"
    np2t.configure(device=before.device, min_size=before.min_size)
    try:
        np2t.configure(device="tpu")
    except ValueError:
        pass
    else:
        raise SystemExit("a bad device was accepted")
    assert np2t.__np2torch_version__ == sys.argv[2]
    assert not any(name == "np2torch" or name.startswith("np2torch.") for name in sys.modules)
    print("ok", sorted(np2t.__all__))
    """
)


def run_child(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, str(folder), __version__], capture_output=True, text=True, timeout=180)


def test_vendored_module_works_without_np2torch(tmp_path: Path) -> None:
    result = CliRunner().invoke(command, [str(tmp_path / "_np2torch.py")])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output
    child = run_child(tmp_path)
    assert child.returncode == 0, child.stderr + child.stdout
    import np2torch.runtime

    assert child.stdout.startswith(f"ok {sorted(np2torch.runtime.__all__)}")  # the package's public names, all of them


def test_the_cli_loads_the_command_lazily(tmp_path: Path) -> None:
    target = tmp_path / "_np2torch.py"
    assert main(["vendor", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == vendored_source()


def test_header_names_the_version_and_says_do_not_edit() -> None:
    lines = vendored_source().splitlines()
    assert lines[0].startswith(MARKER) and __version__ in lines[0] and "do not edit" in lines[0]
    compile("\n".join(lines), "_np2torch.py", "exec")


def test_no_np2torch_import_and_no_relative_import_survives() -> None:
    tree = ast.parse(vendored_source())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"relative import at line {node.lineno}"
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
    assert "np2torch" not in imported
    assert {"numpy", "torch", "scipy"} <= imported  # torch and scipy lazily, inside functions


def test_refuses_to_overwrite_a_file_it_did_not_write(tmp_path: Path) -> None:
    target = tmp_path / "_np2torch.py"
    target.write_text("my own code\n", encoding="utf-8")
    result = CliRunner().invoke(command, [str(target)])
    assert result.exit_code != 0
    assert "--force" in result.output and target.read_text(encoding="utf-8") == "my own code\n"
    result = CliRunner().invoke(command, [str(target), "--force"])
    assert result.exit_code == 0, result.output
    assert target.read_text(encoding="utf-8") == vendored_source()


def test_replaces_its_own_file_and_reports_unchanged(tmp_path: Path) -> None:
    target = tmp_path / "_np2torch.py"
    CliRunner().invoke(command, [str(target)])
    assert "unchanged" in CliRunner().invoke(command, [str(target)]).output
    target.write_text(target.read_text(encoding="utf-8") + "# an edit\n", encoding="utf-8")
    result = CliRunner().invoke(command, [str(target)])
    assert result.exit_code == 0 and "wrote" in result.output
    assert target.read_text(encoding="utf-8") == vendored_source()
    assert [p.name for p in tmp_path.iterdir()] == ["_np2torch.py"], "temporary file left behind"


def test_directory_and_missing_folder_are_clear_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(command, [str(tmp_path)])
    assert result.exit_code != 0 and "is a directory" in result.output
    result = CliRunner().invoke(command, [str(tmp_path / "missing" / "_np2torch.py")])
    assert result.exit_code != 0 and "does not exist" in result.output


# ---------------------------------------------------------------- the checks, on small fake runtimes


def fake_runtime(folder: Path, files: dict) -> Path:
    folder.mkdir()
    for name, text in files.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


def test_dependency_order_aliases_and_lazy_imports(tmp_path: Path) -> None:
    folder = fake_runtime(
        tmp_path / "rt",
        {
            "__init__": '"""Doc."""\nfrom ._b import twice as double\nfrom ._a import base\n__all__ = ["double", "base"]\n',
            "_b": "from ._a import base as start\ndef twice():\n    from ._c import lazy\n    return 2 * start + lazy()\n",
            "_a": "base = 21\n",
            "_c": "def lazy():\n    return 0\n",
        },
    )
    text = vendored_source(folder, version="9.9")
    assert text.index("base = 21") < text.index("start = base") < text.index("def twice")
    namespace: dict = {}
    exec(compile(text, "vendored", "exec"), namespace)
    assert namespace["double"]() == 42 and namespace["__np2torch_version__"] == "9.9"


@pytest.mark.parametrize(
    "files, message",
    [
        pytest.param({"__init__": "from ._a import x\nfrom ._b import y\n", "_a": "x = 1\n", "_b": "x = 2\ny = 3\n"}, "`x` is bound in both", id="same name in two modules"),
        pytest.param({"__init__": "from ._a import x\n", "_a": "def x(): pass\n__all__ = ['x']\n"}, "defines __all__", id="__all__ outside __init__"),
        pytest.param({"__init__": "from ._a import x\n", "_a": "y = 1\n"}, "_a.py has no x", id="missing name"),
        pytest.param({"__init__": "from ._a import x\n", "_a": "from ._b import y\nx = 1\n", "_b": "from ._a import x\ny = 2\n"}, "import cycle", id="cycle"),
        pytest.param({"__init__": "from ._a import x\n", "_a": "from np2torch.rules import RULES\nx = 1\n"}, "absolute np2torch import", id="absolute import"),
        pytest.param({"__init__": "from ._a import x\n", "_a": "import pandas\nx = 1\n"}, "imports 'pandas'", id="foreign dependency"),
        pytest.param({"__init__": "from . import _a\n", "_a": "x = 1\n"}, "only `from ._module import name`", id="module import"),
    ],
)
def test_refuses_what_one_namespace_cannot_hold(tmp_path: Path, files: dict, message: str) -> None:
    if "pandas" in message and not hasattr(sys, "stdlib_module_names"):
        pytest.skip("Python 3.9 cannot name the standard library")
    with pytest.raises(VendorError, match=message.replace("(", r"\(")):
        vendored_source(fake_runtime(tmp_path / "rt", files))


def test_identical_imports_in_two_modules_are_fine(tmp_path: Path) -> None:
    folder = fake_runtime(
        tmp_path / "rt",
        {"__init__": "from ._a import f\nfrom ._b import g\n", "_a": "import numpy as np\ndef f(): return np.e\n", "_b": "import numpy as np\ndef g(): return np.pi\n"},
    )
    namespace: dict = {}
    exec(vendored_source(folder), namespace)
    assert namespace["g"]() > namespace["f"]()
