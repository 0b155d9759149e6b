"""``np2torch run`` runs the program python runs: stdout, stderr and exit status byte for byte.

Each program is run twice in a fresh project folder, as ``python ...`` and as
``python -m np2torch run --report none ...``; tracebacks (with their line and
column markers), warnings' lines, ``inspect``, ``__main__``'s attributes,
``sys.argv``/``sys.path[0]``, exit statuses and child processes must not tell
the two apart.  Every program holds rewritable calls, so the comparison is of
rewritten code (each test also checks, from the JSON report, that the sites ran).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

Outcome = Tuple[int, str, str]


def _project(tmp_path: Path, files: Dict[str, str]) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _run(cwd: Path, argv: List[str], env: Dict[str, str] | None = None, timeout: int = 120) -> Outcome:
    done = subprocess.run([sys.executable, *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    return done.returncode, done.stdout, done.stderr


def both(root: Path, argv: List[str], env: Dict[str, str] | None = None,
         options: Tuple[str, ...] = ()) -> Tuple[Outcome, Outcome, dict]:
    """The program under plain python and under np2torch run (with ``options``), and the run's JSON report."""
    report = root.parent / "report.json"
    plain = _run(root, argv, env)
    under = _run(root, ["-m", "np2torch", "run", "--report", "none", "--report-file", str(report), *options, *argv],
                 env)
    return plain, under, json.loads(report.read_text())


def calls(report: dict) -> Dict[Tuple[str, int], int]:
    return {(Path(site["path"]).name, site["line"]): site["calls"] for site in report["sites"]}


def test_an_uncaught_exception_inside_a_rewritten_function(tmp_path: Path) -> None:
    root = _project(tmp_path, {"prog.py": """\
        import numpy as np

        def model(x):
            y = np.exp(x) + np.log(x)
            return y[5]      # IndexError, with its ^^^^ markers

        print(model(np.ones(3)))
        """})
    plain, under, report = both(root, ["prog.py"])
    assert plain[0] == 1 and "IndexError" in plain[2]
    assert under == plain
    assert calls(report) == {("prog.py", 4): 1}


def test_an_exception_raised_inside_a_rewritten_call_shows_the_originals_traceback(tmp_path: Path) -> None:
    # Raised by the original (a C ufunc, SciPy's Python frames) through a site: no np2torch frame, in what the
    # interpreter prints, in a thread's uncaught exception, and in what the program formats itself.
    root = _project(tmp_path, {"prog.py": """\
        import threading, traceback
        import numpy as np
        from scipy.special import logsumexp

        def in_a_thread():
            np.log(np.ones(3), out=np.ones(2))
        for _ in range(2):  # a site's first call runs the original, its second the helper
            thread = threading.Thread(target=in_a_thread)
            thread.start(); thread.join()
            try:
                logsumexp(np.ones((2, 2)), axis=5)
            except Exception:
                traceback.print_exc()

        def model(x):
            with np.errstate(over="raise"):
                return np.exp(x)
        for _ in range(2):
            try:
                model(np.full(10, 1000.0))
            except FloatingPointError:
                traceback.print_exc()
        print(model(np.full(10, 1000.0)))
        """})
    plain, under, report = both(root, ["prog.py"])
    assert plain[0] == 1 and plain[2].count("Traceback") == 7 and "FloatingPointError" in plain[2]
    assert under == plain
    assert calls(report) == {("prog.py", 6): 2, ("prog.py", 11): 2, ("prog.py", 17): 3}


def test_a_pattern_sites_sampled_call_warns_as_the_expression_does(tmp_path: Path) -> None:
    # A site's first call runs the original: for a pattern, the spelled-out expression, whose ufuncs and
    # operators each name themselves ("... in exp", "... in divide"), not the site's helper.
    root = _project(tmp_path, {"prog.py": """\
        import numpy as np
        from scipy.special import logsumexp

        x = np.array([1000.0, 1.0])
        print(np.log(np.sum(np.exp(x))))
        y = np.array([[1000.0, 1.0]])
        print(np.exp(y) / np.sum(np.exp(y), axis=1, keepdims=True))
        z = np.array([[np.inf, 1.0]])
        print(z - logsumexp(z, axis=1, keepdims=True))
        """})
    plain, under, report = both(root, ["prog.py"], options=("--unsafe-fixes", "--extend-select", "NPT902,NPT903"))
    assert "overflow encountered in exp" in plain[2] and "invalid value encountered in subtract" in plain[2]
    assert under == plain
    assert {(site["line"], site["code"]) for site in report["sites"]} == {(5, "NPT901"), (7, "NPT902"), (9, "NPT903")}


def test_warnings_keep_their_lines(tmp_path: Path) -> None:
    root = _project(tmp_path, {"prog.py": """\
        import numpy as np

        def f(x):
            return np.log(x)

        for _ in range(3):
            f(np.zeros(4))
        print(np.log(np.array([0.0, -1.0])))
        with np.errstate(divide="raise"):
            try:
                np.log(np.zeros(2))
            except FloatingPointError as exc:
                print("raised", exc)
        """})
    plain, under, report = both(root, ["prog.py"])
    assert "prog.py:4: RuntimeWarning: divide by zero encountered in log" in plain[2]
    assert under == plain
    assert calls(report) == {("prog.py", 4): 3, ("prog.py", 8): 1, ("prog.py", 11): 1}


@pytest.mark.parametrize("exit_call, status", [("sys.exit(3)", 3), ("sys.exit('bye')", 1), ("sys.exit()", 0),
                                               ("raise SystemExit(None)", 0)])
def test_exit_status_and_message(tmp_path: Path, exit_call: str, status: int) -> None:
    root = _project(tmp_path, {"prog.py": f"""\
        import sys
        import numpy as np
        print(np.exp(np.zeros(2)))
        {exit_call}
        """})
    plain, under, report = both(root, ["prog.py"])
    assert plain[0] == status
    assert under == plain
    assert report["exit_status"] == status


def test_main_module_attributes_argv_and_path(tmp_path: Path) -> None:
    root = _project(tmp_path, {"tool/prog.py": """\
        import sys
        import numpy as np
        print(sorted(globals()), __name__, __file__, __spec__, __package__, __cached__)
        print(sys.argv, sys.path[0], type(__loader__).__name__, __loader__.name)
        if __name__ == "__main__":
            print("main", np.exp(np.zeros(1)))
        """})
    plain, under, _ = both(root, ["tool/prog.py", "a", "--flag"])
    assert "main" in plain[1]
    assert under == plain


def test_a_package_with_relative_imports_run_with_dash_m(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/core.py": """\
            import numpy as np
            def softmax(x):
                e = np.exp(x - x.max())
                return e / e.sum()
            """,
        "pkg/__main__.py": """\
            import sys
            from .core import softmax
            import numpy as np
            print(softmax(np.arange(3.0)), sys.argv[1:], __name__, __package__, __spec__.name)
            raise ValueError("from the package")
            """})
    plain, under, report = both(root, ["-m", "pkg", "x", "-v"])
    assert plain[0] == 1 and "<frozen runpy>" in plain[2] and "ValueError: from the package" in plain[2]
    assert under == plain
    assert calls(report) == {("core.py", 3): 1}


def test_inspect_getsource_and_linecache_see_the_file(tmp_path: Path) -> None:
    root = _project(tmp_path, {"prog.py": """\
        import inspect, linecache
        import numpy as np
        from scipy.special import erf

        def f(x):
            return erf(x) * np.exp(-x)  # a comment

        print(inspect.getsource(f))
        print(linecache.getline(__file__, 6))
        print(f.__code__.co_firstlineno, [p[:2] for p in f.__code__.co_positions()][-3:])
        print(f(np.ones(2)))
        """})
    plain, under, report = both(root, ["prog.py"])
    assert under == plain
    assert sorted((site["col"], site["calls"]) for site in report["sites"]) == [(12, 1), (21, 1)]


def test_threads(tmp_path: Path) -> None:
    root = _project(tmp_path, {"prog.py": """\
        import threading
        import numpy as np

        results = {}
        def work(i):
            results[i] = float(np.sin(np.full(1000, i, dtype=float)).sum())
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(sorted(results.items()))
        """})
    plain, under, report = both(root, ["prog.py"])
    assert under == plain
    assert calls(report) == {("prog.py", 6): 8}


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_pools_run_rewritten_and_report_their_calls(tmp_path: Path, method: str) -> None:
    root = _project(tmp_path, {"prog.py": """\
        import multiprocessing as mp
        import sys
        import numpy as np

        def work(n):
            return float(np.exp(np.zeros(n)).sum())

        if __name__ == "__main__":
            ctx = mp.get_context(sys.argv[1])
            with ctx.Pool(2) as pool:                 # ended by terminate(): workers flush on SIGTERM
                print(pool.map(work, [10, 100, 1000, 5]))
            pool = ctx.Pool(2)
            print(pool.map(work, [1, 2, 3]))
            pool.close()
            pool.join()
            print(work(7))
        """})
    plain, under, report = both(root, ["prog.py", method])
    assert under == plain
    assert calls(report) == {("prog.py", 6): 8}


def test_a_python_subprocess_runs_under_the_same_rewrite_unless_no_children(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "child.py": """\
            import numpy as np
            print(np.log(np.ones(3)).sum())
            """,
        "prog.py": """\
            import subprocess, sys
            import numpy as np
            out = subprocess.run([sys.executable, "child.py"], capture_output=True, text=True).stdout
            print(out.strip(), np.exp(np.zeros(1)))
            """})
    plain, under, report = both(root, ["prog.py"])
    assert under == plain
    assert calls(report) == {("prog.py", 4): 1, ("child.py", 2): 1}
    alone = root.parent / "alone.json"
    _run(root, ["-m", "np2torch", "run", "--no-children", "--report", "none", "--report-file", str(alone), "prog.py"])
    assert calls(json.loads(alone.read_text())) == {("prog.py", 4): 1}


def test_a_users_sitecustomize_still_runs_in_children(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "custom/sitecustomize.py": "import os\nos.environ['CUSTOMIZED'] = 'yes'\n",
        "child.py": "import os\nimport numpy as np\nprint(os.environ.get('CUSTOMIZED'), np.exp(0.0 + np.zeros(1)))\n",
        "prog.py": """\
            import subprocess, sys
            print(subprocess.run([sys.executable, "child.py"], capture_output=True, text=True).stdout.strip())
            """})
    env = {"PYTHONPATH": str(root / "custom")}
    plain, under, report = both(root, ["prog.py"], env)
    assert "yes" in plain[1]
    assert under == plain
    assert calls(report) == {("child.py", 3): 1}


def test_keyboard_interrupt_dies_of_sigint(tmp_path: Path) -> None:
    root = _project(tmp_path, {"prog.py": "import numpy as np\nnp.exp(np.zeros(2))\nraise KeyboardInterrupt\n"})
    plain, under, _ = both(root, ["prog.py"])
    assert plain[0] == -2
    assert under == plain


def test_a_syntax_error_and_a_missing_script_are_what_python_says(tmp_path: Path) -> None:
    root = _project(tmp_path, {"bad.py": "import numpy as np\nnp.exp(1) +\n"})
    plain = _run(root, ["bad.py"])
    under = _run(root, ["-m", "np2torch", "run", "--report", "none", "bad.py"])
    assert under == plain
    missing = _run(root, ["-m", "np2torch", "run", "nothere.py"])
    assert missing[0] == 2 and "can't open file" in missing[2] and missing[2].count("\n") == 1


def test_modules_the_program_imports_are_rewritten_too(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "helper.py": "import numpy as np\ndef f(x):\n    return np.exp(x)\n",
        "prog.py": "import numpy as np\nimport helper\nprint(helper.f(np.zeros(2)), np.log(np.ones(1)))\n"})
    plain, under, report = both(root, ["prog.py"])
    assert under == plain
    assert calls(report) == {("helper.py", 3): 1, ("prog.py", 3): 1}


def test_a_module_the_program_writes_and_then_compiles_is_indexed_when_imported(tmp_path: Path) -> None:
    pytest.importorskip("numba")
    root = _project(tmp_path, {"prog.py": """\
        import importlib
        import os
        import shutil

        import numba
        import numpy as np

        os.makedirs("gen", exist_ok=True)
        with open(os.path.join("gen", "kernels.py"), "w") as file:
            file.write("import numpy as np\\n\\ndef kernel(x):\\n    return np.exp(x)\\n")
        importlib.invalidate_caches()
        from gen.kernels import kernel

        try:
            print(numba.njit(kernel)(np.zeros(2)), np.log(np.ones(1)))
        finally:
            shutil.rmtree("gen")  # each run starts without it
        """})
    plain, under, report = both(root, ["prog.py"])
    assert plain[0] == 0 and under == plain
    assert [(item["path"], item["line"]) for item in report["not_rewritten"]] == [(str(root / "gen" / "kernels.py"), 4)]


def test_the_users_pycache_never_holds_rewritten_code_and_a_second_run_hits_the_cache(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "helper.py": "import numpy as np\ndef f(x):\n    return np.exp(x)\n",
        "plain_module.py": "VALUE = 1\n",
        "prog.py": "import helper, plain_module\nimport numpy as np\nprint(helper.f(np.zeros(2)))\n"})
    cache = tmp_path / "cache"
    env = {"NP2TORCH_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": ""}
    first = root.parent / "first.json"
    second = root.parent / "second.json"
    _run(root, ["-m", "np2torch", "run", "--report", "none", "--report-file", str(first), "prog.py"], env)
    pycache = sorted(p.name.split(".")[0] for p in (root / "__pycache__").iterdir())
    assert pycache == ["plain_module"]  # what python itself writes for a module np2torch leaves alone
    _run(root, ["-m", "np2torch", "run", "--report", "none", "--report-file", str(second), "prog.py"], env)
    assert json.loads(first.read_text())["rewrite"] == {"compiled": 1, "cached": 0}  # helper.py: prog.py has no finding
    assert json.loads(second.read_text())["rewrite"] == {"compiled": 0, "cached": 1}
    # and a plain run afterwards imports the original code
    assert _run(root, ["-c", "import helper, inspect; print(helper.f.__code__.co_names)"])[1].strip() == \
        "('np', 'exp')"


def test_modules_keep_the_loader_python_gives_them(tmp_path: Path) -> None:
    # The rewriting loader serves the code only: a module's __loader__ and __spec__.loader, imported, reloaded
    # or run with -m, are the plain SourceFileLoader (its type, its repr in the spec, its get_code).
    root = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/mod.py": "import numpy as np\ndef g(x):\n    return np.exp(x)\n",
        "pkg/__main__.py": """\
            import importlib, re
            import numpy as np
            from . import mod

            def show(module):
                loader = module.__spec__.loader
                print(type(module.__loader__), loader is module.__loader__, re.sub(" at 0x[0-9a-f]+", "", repr(loader)))
                print(type(loader).__module__, loader.get_code(module.__name__).co_names)
            show(mod)
            show(importlib.reload(mod))
            print(type(__loader__).__name__, re.sub(" at 0x[0-9a-f]+", "", repr(__spec__)))
            print(mod.g(np.zeros(1)), np.log(np.ones(1)))
            """})
    plain, under, report = both(root, ["-m", "pkg"])
    assert plain[1].count("('numpy', 'np', 'g')") == 2  # the original code, as python's loader reads it
    assert under == plain
    assert calls(report) == {("mod.py", 3): 1, ("__main__.py", 12): 1}


def test_a_script_named_like_a_standard_module_np2torch_imports(tmp_path: Path) -> None:
    # `python -m np2torch` puts the working directory, the script's folder here, first on sys.path: np2torch's
    # own imports (the command line's: tempfile imports random) must not find the program's random.py.
    root = _project(tmp_path, {"random.py": """\
        import sys
        import numpy as np
        print(__name__, sys.path[0] == __file__.rpartition("/")[0], np.exp(np.zeros(1)))
        """})
    plain, under, report = both(root, ["random.py"])
    assert plain == (0, "__main__ True [1.]\n", "")
    assert under == plain
    assert calls(report) == {("random.py", 3): 1}
    # nor the package's own (typing): a typing.py breaks numpy's import under python, so this one calls nothing
    (root / "typing.py").write_text("import sys\nprint(__name__, sys.argv)\n")
    plain = _run(root, ["typing.py", "a"])
    assert plain == (0, "__main__ ['typing.py', 'a']\n", "")
    assert _run(root, ["-m", "np2torch", "run", "--report", "none", "typing.py", "a"]) == plain


@pytest.mark.parametrize("argv", [["prog.py"], ["-m", "pkg"]], ids=["script", "module"])
def test_safe_path_puts_no_folder_first_on_sys_path(tmp_path: Path, argv: List[str]) -> None:
    # -P / PYTHONSAFEPATH: python puts neither the script's folder nor the working directory on sys.path, so
    # `-m pkg` from the project's folder is not found, and sys.path starts with the standard library's.
    root = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/__main__.py": "import numpy as np\nprint(np.exp(np.zeros(1)))\n",
        "prog.py": "import sys\nimport numpy as np\nprint(sys.path[:2], np.exp(np.zeros(1)))\n"})
    plain, under, _ = both(root, argv, {"PYTHONSAFEPATH": "1"})
    assert str(root) not in plain[1] and (plain[0] == 0) == (argv == ["prog.py"])
    assert under == plain


def test_the_report_file_never_replaces_what_it_names_nor_changes_the_program(tmp_path: Path) -> None:
    # /dev/stdout and a FIFO are written through (after the program's output), a symbolic link's file is written
    # (the link stays), and a report that cannot be written is one line on stderr: the exit status is kept.
    root = _project(tmp_path, {"prog.py": """\
        import sys
        import numpy as np
        print("out", np.exp(np.zeros(1)), end="")
        sys.exit(3)
        """})
    plain = _run(root, ["prog.py"])
    assert plain == (3, "out [1.]", "")
    run = ["-m", "np2torch", "run", "--report", "none", "--report-file"]
    (tmp_path / "stdout").symlink_to("/dev/stdout")  # a link of the test's own: never /dev's, should it be replaced
    status, out, err = _run(root, [*run, str(tmp_path / "stdout"), "prog.py"])
    assert (status, out[:len(plain[1])], err) == plain and json.loads(out[len(plain[1]):])["exit_status"] == 3
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    assert _run(root, [*run, str(tmp_path / "link.json"), "prog.py"]) == plain
    assert (tmp_path / "link.json").is_symlink() and json.loads((tmp_path / "real.json").read_text())["sites"]
    missing = tmp_path / "nowhere" / "r.json"
    assert _run(root, [*run, str(missing), "prog.py"]) == (3, plain[1], f"np2torch run: cannot write {missing}: "
                                                                        "No such file or directory\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True) as reader:
        assert _run(root, [*run, str(fifo), "prog.py"]) == plain
        assert json.loads(reader.communicate(timeout=60)[0])["exit_status"] == 3
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_relative_report_file_is_where_the_run_started_whatever_the_program_does(tmp_path: Path) -> None:
    root = _project(tmp_path, {"prog.py": "import os\nimport numpy as np\nos.chdir('sub')\nprint(np.exp(np.zeros(1)))\n",
                               "sub/keep": ""})
    plain = _run(root, ["prog.py"])
    assert _run(root, ["-m", "np2torch", "run", "--report", "none", "--report-file", "r.json", "prog.py"]) == plain
    assert calls(json.loads((root / "r.json").read_text())) == {("prog.py", 4): 1}
    assert not (root / "sub" / "r.json").exists()


def test_orig_argv_is_pythons_and_a_program_restarting_itself_from_it_runs_rewritten(tmp_path: Path) -> None:
    # sys.orig_argv: the interpreter and its options, then the program's command line (a reloader restarts
    # the program from it: the restarted program runs under the same rewrite, not a second np2torch run).
    root = _project(tmp_path, {"prog.py": """\
        import subprocess, sys
        import numpy as np
        print(sys.orig_argv[1:], np.exp(np.zeros(1)))
        if sys.argv[-1] != "again":
            print(subprocess.run([sys.executable, *sys.orig_argv[1:], "again"], capture_output=True, text=True).stdout)
        """})
    flags = ["-W", "ignore", "-X", "dev", "-O"]
    report = tmp_path / "report.json"
    plain = _run(root, [*flags, "prog.py", "a"])
    under = _run(root, [*flags, "-m", "np2torch", "run", "--report", "none", "--report-file", str(report), "prog.py", "a"])
    assert plain[1].startswith("['-W', 'ignore', '-X', 'dev', '-O', 'prog.py', 'a'] [1.]\n")
    assert under == plain
    assert calls(json.loads(report.read_text())) == {("prog.py", 3): 2}


def test_a_patched_original_is_called_as_python_calls_it(tmp_path: Path) -> None:
    # A site's reference is evaluated as the program wrote it: when it no longer names the original (a test's
    # mock.patch, the program's own assignment), the program's line calls what it names, uncounted.
    root = _project(tmp_path, {"prog.py": """\
        from unittest import mock
        import numpy as np
        import scipy.special as sc
        from scipy.special import erf

        def f(x):
            return np.exp(x), sc.erf(x), erf(x)

        print(f(np.ones(1)))
        with mock.patch("numpy.exp", return_value="exp patched"), mock.patch("scipy.special.erf", return_value="erf"):
            print(f(np.ones(1)))  # np.exp and sc.erf are the modules' attributes; erf still names the original
        with mock.patch("__main__.erf", side_effect=ValueError("from the mock")):
            f(np.ones(1))
        """})
    plain, under, report = both(root, ["prog.py"])
    assert "('exp patched', 'erf', array([0.84270079]))" in plain[1] and "ValueError: from the mock" in plain[2]
    assert under == plain
    assert sorted((site["col"], site["calls"]) for site in report["sites"]) == [(12, 2), (23, 2), (34, 2)]


def test_a_site_reads_its_arguments_size_without_running_the_programs_code(tmp_path: Path) -> None:
    # A size property or a __len__ of the program's own runs, and prints or raises, as often as under python.
    root = _project(tmp_path, {"prog.py": """\
        import numpy as np

        class Seq:
            def __init__(self, values): self.values = values
            def __len__(self):
                print("len")
                return len(self.values)
            def __getitem__(self, i): return self.values[i]

        class Sized:
            @property
            def size(self):
                raise RuntimeError("size read")
            def __array__(self, dtype=None, copy=None): return np.zeros(3)

        for _ in range(2):
            print(np.exp(Seq([1.0, 2.0])), np.sin(Sized()), np.exp([0.0, 1.0]))
        """})
    plain, under, report = both(root, ["prog.py"])
    assert plain[0] == 0 and plain[1].count("len\n") == 4
    assert under == plain
    assert sorted((site["col"], site["calls"], site["elements"]) for site in report["sites"]) == \
        [(11, 2, 2), (36, 2, 2), (53, 2, 4)]  # 1 element for what has no native size


def test_the_report_goes_to_the_processs_stderr_not_the_stream_the_program_put_there(tmp_path: Path) -> None:
    root = _project(tmp_path, {"prog.py": """\
        import sys
        import numpy as np
        sys.stderr = open("log.txt", "w")
        print("to the log", np.exp(np.zeros(1)), file=sys.stderr)
        """})
    plain = _run(root, ["prog.py"])
    log = (root / "log.txt").read_text()
    status, out, err = _run(root, ["-m", "np2torch", "run", "prog.py"])
    assert (status, out) == plain[:2] and (root / "log.txt").read_text() == log == "to the log [1.]\n"
    assert err.startswith("np2torch run report: prog.py\n")


def test_a_program_that_execs_itself_runs_rewritten_and_is_reported(tmp_path: Path) -> None:
    # os.execv of the interpreter (a reloader): the new image is the run's own process, rewritten, and writes the
    # report at its exit (the counts of the image it replaced are gone with it); the spool folder is removed.
    root = _project(tmp_path, {"prog.py": """\
        import os, sys
        import numpy as np
        print("run", len(sys.argv), np.exp(np.zeros(1)), flush=True)
        if len(sys.argv) < 3:
            os.execv(sys.executable, [sys.executable, *sys.argv, "again"])
        sys.exit(5)
        """})
    spool = tmp_path / "spool"
    spool.mkdir()
    plain, under, report = both(root, ["prog.py", "a"], {"TMPDIR": str(spool)})
    assert plain == (5, "run 2 [1.]\nrun 3 [1.]\n", "")
    assert under == plain
    assert calls(report) == {("prog.py", 3): 1} and report["exit_status"] == 5
    assert report["command"] == ["np2torch", "run", "prog.py", "a"] and list(spool.iterdir()) == []


def test_run_path_of_a_program_file_is_runpys_own_but_for_the_code(tmp_path: Path) -> None:
    # The program's own runpy.run_path: its module attributes, the file named as given, <frozen runpy>'s frames.
    root = _project(tmp_path, {
        "other.py": "import sys\nimport numpy as np\nprint(__name__, sys.argv[0], __file__, np.exp(np.zeros(1)), x)\n",
        "bad.py": "import numpy as np\nnp.log(np.ones(2), out=np.ones(3))\n",
        "prog.py": """\
            import runpy
            ns = runpy.run_path("other.py", {"x": 2}, run_name="custom")
            print(sorted(ns), ns["__loader__"], ns["__spec__"], repr(ns["__package__"]), runpy.run_path.__module__)
            runpy.run_path("bad.py")
            """})
    plain, under, report = both(root, ["prog.py"])
    assert plain[0] == 1 and '"<frozen runpy>"' in plain[2] and 'File "bad.py", line 2' in plain[2]
    assert under == plain
    assert calls(report) == {("other.py", 3): 1, ("bad.py", 2): 1}


HEAVY = ("numpy", "scipy", "torch")


def test_numpy_is_first_imported_by_the_program_in_the_run_and_in_its_children(tmp_path: Path) -> None:
    # What a program sets before its own `import numpy` acts as under python: a BLAS thread count, a warnings
    # filter that must not end up ahead of NumPy's own (polyfit's RankWarning is shown, not raised). np2torch's
    # start-up imports none of NumPy, SciPy or torch, in the run's process or in a child it follows.
    program = """\
        import os, subprocess, sys, warnings
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        warnings.simplefilter("error")
        print("before", [m for m in ("numpy", "scipy", "torch") if m in sys.modules])
        import numpy as np
        try:
            np.polyfit([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 5)
        except Exception as exc:
            print("raised", type(exc).__name__)
        print(np.exp(np.zeros(2)), [m for m in ("numpy", "scipy", "torch") if m in sys.modules], flush=True)
        if sys.argv[1:] == ["parent"]:
            subprocess.run([sys.executable, __file__], check=True)
        """
    root = _project(tmp_path, {"prog.py": program})
    plain, under, report = both(root, ["prog.py", "parent"])
    assert plain[0] == 0 and plain[1].count("before []\n") == 2 and "raised" not in plain[1]
    assert plain[2].count("RankWarning: Polyfit may be poorly conditioned") == 2
    assert under == plain
    assert calls(report) == {("prog.py", 10): 2}


def test_the_start_up_of_run_imports_no_array_library(tmp_path: Path) -> None:
    # `python -X importtime`: every module imported is listed; a program that imports none of them gets none.
    root = _project(tmp_path, {"prog.py": "import sys\nprint(sorted(set(sys.modules) & {'numpy', 'scipy', 'torch'}))\n",
                               "other.py": "import numpy as np\nprint(np.exp(1.0))\n"})
    status, out, err = _run(root, ["-X", "importtime", "-m", "np2torch", "run", "--report", "none", "prog.py"])
    imported = {line.rsplit("|", 1)[-1].strip() for line in err.splitlines() if line.startswith("import time:")}
    assert (status, out) == (0, "[]\n") and "np2torch.run.hook" in imported
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))


@pytest.mark.parametrize("argv", [pytest.param(["prog.py"], id="imported by the script"),
                                  pytest.param(["-m", "prog"], id="imported by a -m module"),
                                  pytest.param(["-m", "broken"], id="the -m module itself")])
def test_a_syntax_error_in_a_module_the_program_imports_is_pythons_traceback(tmp_path: Path,
                                                                              argv: List[str]) -> None:
    # A file being edited: python trims the import system's frames; no np2torch frame stands between them.
    root = _project(tmp_path, {"prog.py": "import numpy as np\nprint(np.exp(0.0))\nimport broken\n",
                               "broken.py": "import numpy as np\n\ndef f(x:\n    return np.exp(x)\n"})
    plain, under, report = both(root, argv)
    assert plain[0] == 1 and plain[2].startswith("Traceback") and "SyntaxError: '(' was never closed" in plain[2]
    assert "np2torch" not in under[2]
    assert under == plain


def test_a_program_using_torch_that_forks_is_told_once_that_its_children_run_torch_on_one_thread(
        tmp_path: Path) -> None:
    # The runtime's fork hook is in every process of the run: one line names the file that imports torch and
    # starts processes (not its children, not a file that does only one of the two); the rest is python's.
    pytest.importorskip("torch")
    root = _project(tmp_path, {"helper.py": "import multiprocessing\nimport numpy as np\nONE = np.exp(0.0)\n",
                               "prog.py": """\
        import multiprocessing as mp
        import numpy as np
        import torch
        import helper

        def work(n):
            return float(np.exp(np.zeros(n)).sum() * helper.ONE)

        if __name__ == "__main__":
            with mp.get_context("fork").Pool(2) as pool:
                print(pool.map(work, [3, 4]), torch.ones(2).sum().item())
        """})
    plain, under, report = both(root, ["prog.py"])
    assert plain == (0, "[3.0, 4.0] 2.0\n", "")
    notice = (f"np2torch run: {root / 'prog.py'}: imports torch and starts processes (multiprocessing): a child it "
              "forks runs torch on one thread once np2torch.runtime is imported (docs/runtime.md, \"Fork and the "
              "program's own torch use\")\n")
    assert under == (0, plain[1], notice)
    assert calls(report)[("prog.py", 7)] == 2


def test_a_site_the_program_never_reaches_is_in_the_report_uncalled(tmp_path: Path) -> None:
    # Its file's sites are made when the program first reaches one of them: one never reached is still reported.
    root = _project(tmp_path, {
        "prog.py": "import numpy as np\n\ndef unused(x):\n    return np.log(x)\nimport never\nprint(np.exp(np.zeros(1)))\n",
        "never.py": "import sys\nif sys.argv[1:]:\n    import numpy as np\n    np.exp(np.ones(1))\n"})
    plain, under, report = both(root, ["prog.py"])
    assert under == plain == (0, "[1.]\n", "")
    assert calls(report) == {("prog.py", 4): 0, ("prog.py", 6): 1, ("never.py", 4): 0}
