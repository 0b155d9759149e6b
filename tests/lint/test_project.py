"""The project index's text-in part (np2torch.lint.project) and the engine's use of its answer."""

from __future__ import annotations

import ast
import textwrap
from typing import Dict

import pytest

from np2torch.lint.compiled import may_name_a_compiler
from np2torch.lint.engine import Settings, check_source, fix_source
from np2torch.lint.project import ANY, Summary, answers, may_hand, summarize


def _summary(text: str) -> Summary:
    text = textwrap.dedent(text)
    return summarize(ast.parse(text), text)


@pytest.mark.parametrize(("text", "handed"), [
    pytest.param("import numba\nfrom pkg.kernels import kernel\nfast = numba.njit(kernel)\n",
                 [(0, "pkg.kernels.kernel", "numba")], id="a name imported from a module"),
    pytest.param("import numba as nb\nimport pkg.kernels as k\nnb.njit(cache=True)(k.kernel)\n",
                 [(0, "pkg.kernels.kernel", "numba")], id="an attribute of a module imported under an alias"),
    pytest.param("import jax\nimport pkg.kernels\nstep = jax.jit(pkg.kernels.step)\n",
                 [(0, "pkg.kernels.step", "jax")], id="a dotted module"),
    pytest.param("from numba import njit\nfrom . import kernels\nFAST = [njit(f) for f in (kernels.a, kernels.b)]\n",
                 [(1, "kernels.a", "numba"), (1, "kernels.b", "numba")], id="a relative import and a loop"),
    pytest.param("import torch\nfrom functools import partial\nfrom .m import f\ntorch.compile(partial(f, 1))\n",
                 [(1, "m.f", "torch")], id="partial over an imported function"),
    pytest.param("import numba\nimport pkg.k as k\nKS = [k.a]\nfor fn in KS:\n    numba.njit(fn)\n",
                 [(0, "pkg.k.a", "numba")], id="a name looped over a list"),
    pytest.param("import numba\nimport pkg.k as k\n{n: numba.njit(getattr(k, n)) for n in NAMES}\n",
                 [(0, f"pkg.k.{ANY}", "numba")], id="getattr of a module: any function of it"),
    pytest.param("import numba\nfrom .k import f\njit = numba.njit(cache=True)\nfast = jit(fun=f)\n",
                 [(1, "k.f", "numba")], id="a compiler assigned, the function by keyword"),
    pytest.param("import numba\nfrom pkg.k import Kernels\nnumba.njit(Kernels.rbf)\n",
                 [(0, "pkg.k.Kernels.rbf", "numba")], id="an attribute of an imported class"),
    pytest.param("import numba\nimport pkg.k as k\nnumba.njit(k.Kernels().rbf)\n",
                 [(0, "pkg.k.Kernels.rbf", "numba")], id="an attribute of an instance"),
    pytest.param("import numba\nfrom pkg.k import Kernels\nkernels = Kernels()\nnumba.njit(kernels.rbf)\n",
                 [(0, "pkg.k.Kernels.rbf", "numba")], id="an attribute of an instance assigned to a name"),
    pytest.param("import numba\nfrom pkg.k import KERNELS\nnumba.njit(KERNELS['rbf'])\n",
                 [(0, f"pkg.k.KERNELS.{ANY}", "numba")], id="an item of an imported container: any function of it"),
    pytest.param("import numba\nimport pkg.k as k\nfor f in k.KERNELS.values():\n    numba.njit(f)\n",
                 [(0, f"pkg.k.KERNELS.values.{ANY}", "numba")], id="a loop over an imported container's values"),
    pytest.param("import numba\nfrom pkg.k import KERNELS\nFAST = [numba.njit(f) for f in KERNELS]\n",
                 [(0, f"pkg.k.KERNELS.{ANY}", "numba")], id="a loop over an imported container"),
])
def test_what_a_module_hands_to_a_compiler(text: str, handed: list) -> None:  # type: ignore[type-arg]
    assert list(_summary(text).handed) == handed


@pytest.mark.parametrize("text", [
    pytest.param("import numba\n\n@numba.njit\ndef f(x):\n    return x\n", id="its own function"),
    pytest.param("from pkg.kernels import kernel\nfast = kernel(1)\n", id="no compiler"),
    pytest.param("import numba\nfrom pkg import kernel\nnumba.typeof(kernel)\n", id="a numba function that compiles nothing"),
    pytest.param("import numba\nfrom pkg import make\nnumba.njit(make())\n", id="a function a call returns"),
])
def test_what_hands_nothing_from_another_module(text: str) -> None:
    assert _summary(text).handed == ()


def test_only_text_that_spells_a_compiler_can_hand_one_a_function() -> None:
    assert not may_hand("s = '\xe9'\nimport numpy as np\n")  # non-ASCII text is normalised, once
    assert may_hand("import \uff4e\uff55\uff4d\uff42\uff41\n")  # fullwidth `numba`: the parser reads `numba`
    assert may_hand("import jax\n") and not may_hand("import numpy\n")


@pytest.mark.parametrize("text", [
    "import os, numba.cuda as nc\n", "import os as o, \\\n    cupyx\n", "from jax import jit\n",
    "from numba.core import decorators\n", "import sys; from torch import jit\n", "import numba\n",
    "m = importlib.import_module('numba')\n", 'jit = getattr(__import__("torch.jit"), "script")\n',
])
def test_every_way_to_a_compiler_can_hand_one_a_function(text: str) -> None:
    assert may_hand(text)


@pytest.mark.parametrize("text", [
    "import numba\nprint(numba.__version__)\n", "torch = pytest.importorskip('torch')\nx = torch.ones(3)\n",
])
def test_text_that_names_no_compiler_names_none(text: str) -> None:
    assert may_hand(text) and not may_name_a_compiler(text)
    summary = _summary(text)
    assert summary.handed == summary.compilers == ()


@pytest.mark.parametrize("text", [
    "import numba\nnumba.njit(f)\n", "jit = getattr(importlib.import_module('numba'), 'njit')\n",
    "from torch import compile as c\n", "import jax\njax.vmap(f)\n", "import numba\nnumba.jit_module()\n",
])
def test_every_way_to_a_compiler_names_it(text: str) -> None:
    assert may_name_a_compiler(text)


@pytest.mark.parametrize("text", [
    "if is_torch(xp):\n    pass\n", "# works like numba and jax\nimport numpy\n", "x = backends.numba\n",
    "from scipy import special  # no numba here\n", "import numpy as np\nnp.torch_like(1)\n",
])
def test_text_that_names_a_compiler_but_imports_or_loads_none_hands_nothing(text: str) -> None:
    assert not may_hand(text)
    summary = _summary(text)
    assert summary.handed == summary.compilers == ()


def test_module_level_from_imports_are_kept_for_re_exports() -> None:
    summary = _summary("""
        from .kernels import kernel as k
        try:
            from .fast import *
        except ImportError:
            pass

        def f():
            from .hidden import g
    """)
    assert summary.imports == (("k", 1, "kernels.kernel"), ("*", 1, "fast.*"))


def test_a_summary_survives_json_and_a_torn_one_is_refused() -> None:
    summary = _summary("import numba\nfrom .k import f\nnumba.njit(f)\n")
    assert Summary.from_json(summary.as_json()) == summary
    empty = {"handed": [], "imports": [], "compilers": [], "applied": []}
    assert Summary.from_json(empty) == Summary()
    assert Summary.from_json({**empty, "handed": [[0, "a.b"]]}) is None
    assert Summary.from_json({**empty, "imports": [["a", True, "b"]]}) is None
    assert Summary.from_json({"handed": [], "imports": []}) is None
    assert Summary.from_json([]) is None


def _answers(files: Dict[str, str]) -> Dict[str, tuple]:  # type: ignore[type-arg]
    summaries = {f"/p/{path}": _summary(text) for path, text in files.items()}
    return {path[3:]: answer for path, answer in answers(summaries, list(summaries), summaries.get,
                                                         lambda path: path[3:]).items()}


def test_answers_name_each_module_s_compiled_functions_and_who_compiles_them() -> None:
    found = _answers({
        "main.py": "import numba\nfrom pkg.kernels import kernel\nimport pkg.other as o\nnumba.njit(kernel)\n"
                   "numba.njit(o.smooth)\n",
        "pkg/__init__.py": "",
        "pkg/kernels.py": "def kernel(x):\n    return x\n",
        "pkg/other.py": "def smooth(x):\n    return x\n",
    })
    assert found == {"pkg/kernels.py": (("kernel", "numba", "main.py"),),
                     "pkg/other.py": (("smooth", "numba", "main.py"),)}


def test_answers_follow_re_exports_and_star_imports() -> None:
    found = _answers({
        "main.py": "import jax\nfrom pkg import step, stride\njax.jit(step)\njax.jit(stride)\n",
        "pkg/__init__.py": "from .kernels import step_impl as step\nfrom .more import *\n",
        "pkg/kernels.py": "def step_impl(x):\n    return x\n",
        "pkg/more.py": "def stride(x):\n    return x\n",
    })
    assert found["pkg/kernels.py"] == (("step_impl", "jax", "main.py"),)
    assert ("stride", "jax", "main.py") in found["pkg/more.py"]


def test_a_compiler_another_module_binds_compiles_what_it_is_applied_to() -> None:
    found = _answers({
        "pkg/util.py": "import numba\nfrom numba import njit\n\ndef jit(f, **kw):\n    return numba.njit(**kw)(f)\n",
        "pkg/compat.py": "from .util import *\n",
        "pkg/kernels.py": "from .util import jit\nfrom .compat import njit as nj\nfrom . import util\n\n"
                          "@jit(cache=True)\ndef a(x):\n    return x\n\ndef b(x):\n    return x\n\n"
                          "def c(x):\n    return x\n\nB = nj(b)\nC = util.jit(c)\n\n@other\ndef d(x):\n    return x\n",
    })
    assert found == {"pkg/kernels.py": (("a", "numba", "`jit` from pkg/util.py"), ("b", "numba", "`njit` from pkg/compat.py"),
                                        ("c", "numba", "`jit` from pkg/util.py"))}


def test_names_a_star_import_may_bind_are_followed_to_its_module() -> None:
    found = _answers({
        "pkg/util.py": "from numba import njit\n",
        "pkg/kernels.py": "from .util import *\n\n@njit\ndef a(x):\n    return x\n\ndef b(x):\n    return x\n",
        "main.py": "import numba\nfrom pkg.kernels import *\nnumba.njit(b)\n",
    })
    assert found["pkg/kernels.py"] == (("a", "numba", "`njit` from pkg/util.py"), ("b", "numba", "main.py"))


def test_an_attribute_of_a_module_s_class_names_the_module_and_the_function() -> None:
    found = _answers({
        "main.py": "import numba\nfrom pkg import Kernels\nimport pkg.grid as g\nnumba.njit(Kernels.rbf)\n"
                   "numba.njit(g.Grid().step)\n",
        "pkg/__init__.py": "from .kernels import Kernels\n",
        "pkg/kernels.py": "class Kernels:\n    @staticmethod\n    def rbf(x):\n        return x\n",
        "pkg/grid.py": "class Grid:\n    def step(self, x):\n        return x\n",
    })
    assert found == {"pkg/__init__.py": (("rbf", "numba", "main.py"),), "pkg/kernels.py": (("rbf", "numba", "main.py"),),
                     "pkg/grid.py": (("step", "numba", "main.py"),)}


def test_what_a_module_applies_and_the_compilers_it_binds() -> None:
    summary = _summary("""
        import numba
        from .util import jit, helper

        def wrap(f):
            return numba.njit(f)

        @jit
        def a(x):
            return helper(x)   # inside a function: not a module-level application

        FAST = jit(cache=True)(a)
    """)
    assert summary.compilers == (("wrap", "numba"),)
    assert summary.applied == ((1, "util.jit", "a"),)


def test_a_relative_import_names_one_file_an_absolute_one_every_file_it_may_be() -> None:
    found = _answers({
        "a/fast.py": "import numba\nfrom . import kernels\nnumba.njit(kernels.f)\n",
        "a/kernels.py": "def f(x):\n    return x\n",
        "b/kernels.py": "def f(x):\n    return x\n",
        "main.py": "import numba\nimport kernels\nnumba.njit(kernels.g)\n",
        "kernels.py": "def g(x):\n    return x\n",
    })
    assert found == {"a/kernels.py": (("f", "numba", "a/fast.py"), ("g", "numba", "main.py")),
                     "b/kernels.py": (("g", "numba", "main.py"),),
                     "kernels.py": (("g", "numba", "main.py"),)}


KERNELS = """\
import numpy as np

def _impl(x):
    return np.exp(x)

kernel = _impl

def plain(x):
    return np.exp(x)
"""


def test_the_engine_leaves_the_functions_other_modules_compile() -> None:
    settings = Settings(compiled_elsewhere=(("kernel", "numba", "main.py"),))
    findings = check_source(KERNELS, "kernels.py", settings=settings)
    assert [(f.line, f.fixable, f.reason) for f in findings] == [
        (4, False, "inside a numba-compiled function (compiled by main.py): np2torch.runtime helpers cannot be "
                   "compiled by numba"),
        (9, True, None),
    ]
    assert "return np.exp(x)\n\nkernel" in fix_source(KERNELS, "kernels.py", settings=settings)
    assert [f.fixable for f in check_source(KERNELS, "kernels.py")] == [True, True]  # without the index: both


def test_any_function_compiled_elsewhere_leaves_every_function() -> None:
    settings = Settings(compiled_elsewhere=((ANY, "jax", "main.py"),))
    assert not any(f.fixable for f in check_source(KERNELS, "kernels.py", settings=settings))


def test_settings_refuse_a_malformed_answer() -> None:
    with pytest.raises(ValueError, match="compiled_elsewhere"):
        Settings(compiled_elsewhere=(("kernel", "numba"),))  # type: ignore[arg-type]
