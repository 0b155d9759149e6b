"""Fixed code type-checks: np2torch ships py.typed and a stub of the runtime generated from the table.

mypy runs on every fix fixture before and after the fix: the fix adds no error (and none
names np2torch), and on typed code the helpers resolve as NumPy's overloads do.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from np2torch import fix_source
from np2torch.lint.engine import Settings
from np2torch.lint.rules import FUNCTION_TABLE, RULES
from np2torch.tools import stubs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<message>.*)$")


def test_the_stub_is_generated_from_the_table() -> None:
    assert stubs.main(["--check"]) == 0, f"runtime/__init__.pyi is stale: run `{stubs.COMMAND}`"


def test_a_stale_stub_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stubs, "STUB_PATH", tmp_path / "__init__.pyi")
    assert stubs.main(["--check"]) == 1
    assert stubs.main(["--write"]) == 0
    assert stubs.main(["--check"]) == 0
    stubs.STUB_PATH.write_text(stubs.STUB_PATH.read_text().replace("\nexp: ", "\nexp_: ", 1))
    assert stubs.main(["--check"]) == 1


def test_the_stub_declares_every_export_of_the_runtime() -> None:
    import np2torch.runtime as runtime

    text = stubs.STUB_PATH.read_text()
    for name in runtime.__all__:
        assert re.search(rf"^(def {name}\(|{name}: _(Elementwise|Binary)Helper$|from \.\w+ import {name} as {name}$)",
                         text, re.M), name
    for row in FUNCTION_TABLE:
        overloads = text.count(f"@overload\ndef {row.name}(")
        single = text.count(f"def {row.name}(") == 1 and overloads == 0  # one signature, the def's own
        protocol = f"\n{row.name}: _ElementwiseHelper\n" in text or f"\n{row.name}: _BinaryHelper\n" in text
        typed = protocol or overloads >= 2 or single
        assert typed, f"{row.name}: no overloads"

    assert text.count("    def __call__(") == 3 + 5  # NumPy's overloads for a one-input and for a two-input ufunc


def test_an_export_the_generator_cannot_type_is_an_error() -> None:
    with pytest.raises(stubs.StubError, match="'mystery'"):
        stubs.stub_text(["exp", "mystery"], "from ._ufunc import HELPERS\n")


def test_the_package_is_marked_typed() -> None:
    assert resources.files("np2torch").joinpath("py.typed").is_file()


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the module's mypy runs: NumPy's stubs are analysed once."""
    return tmp_path_factory.mktemp("mypy-cache")


def _mypy(folder: Path, cache: Path, *files: str, strict: bool = False) -> list[tuple[str, int, str, str]]:
    pytest.importorskip("mypy")
    flags = ["--strict"] if strict else ["--check-untyped-defs"]
    done = subprocess.run(
        [sys.executable, "-m", "mypy", *flags, "--no-error-summary", "--hide-error-context", "--no-pretty",
         "--show-error-codes", "--cache-dir", str(cache), *files],
        cwd=folder, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    found = []
    for line in done.stdout.splitlines():
        match = ERROR.match(line)
        if match:
            found.append((match["file"], int(match["line"]), match["kind"], match["message"]))
    return found


def test_fixed_fixtures_type_check_as_the_originals_do(tmp_path: Path, mypy_cache: Path) -> None:
    pairs = sorted((FIXTURES / "fix").rglob("*.in.py"))
    names = []
    for n, case in enumerate(pairs):
        before = case.read_bytes().decode("utf-8")
        settings = Settings(rules=RULES, unsafe_fixes="unsafe" in case.relative_to(FIXTURES).parts[:-1])
        after = fix_source(before, str(case).replace(".in.py", ".py"), settings=settings)
        (tmp_path / f"case{n}_in.py").write_bytes(before.encode("utf-8"))
        (tmp_path / f"case{n}_out.py").write_bytes(after.encode("utf-8"))
        names += [f"case{n}_in.py", f"case{n}_out.py"]
    errors = [e for e in _mypy(tmp_path, mypy_cache, *names) if e[2] == "error"]
    assert not [e for e in errors if "np2t" in e[3]], errors
    for n, case in enumerate(pairs):
        before = Counter(e[3] for e in errors if e[0] == f"case{n}_in.py")
        after = Counter(e[3] for e in errors if e[0] == f"case{n}_out.py")
        assert not after - before, f"{case.name}: the fix added mypy errors {sorted(after - before)}"


TYPED = '''\
from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.special import erfinv, logsumexp


def f(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.exp(x, out=x)


def g(v: float) -> float:
    return float(np.log(v) + np.sin(v, dtype=np.float64))


def h(x: npt.NDArray[np.float64]) -> tuple[object, object]:
    value, sign = logsumexp(x, axis=0, return_sign=True)
    return value, sign


def k(x: npt.NDArray[np.float64]) -> object:
    return erfinv(x), logsumexp(x, keepdims=True)


v = 1.0
reveal_type(np.cos(np.ones(3)))
reveal_type(np.cos(v))
reveal_type(logsumexp(np.ones(3), None, None, False, True))
'''


def test_typed_code_type_checks_strictly_after_a_fix(tmp_path: Path, mypy_cache: Path) -> None:
    (tmp_path / "mypy.ini").write_text("[mypy]\n[mypy-scipy.*]\nignore_missing_imports = True\n")
    fixed = fix_source(TYPED, settings=Settings(rules=RULES))  # opt-in rules too
    assert fixed.count("np2t.") == 9 and "np2t.cos(v)" in fixed, fixed
    (tmp_path / "before.py").write_text(TYPED)
    (tmp_path / "after.py").write_text(fixed)
    found = _mypy(tmp_path, mypy_cache, "before.py", "after.py", strict=True)
    assert [e for e in found if e[2] == "error"] == [], found
    revealed = [e[3] for e in found if e[0] == "after.py"]
    assert revealed == [
        'Revealed type is "numpy.ndarray[tuple[Any, ...], numpy.dtype[Any]]"',  # an array gives an array
        'Revealed type is "Any"',  # a scalar gives a NumPy scalar, Any in NumPy's stubs too
        'Revealed type is "tuple[Any, Any]"',  # return_sign=True gives a pair
    ]
