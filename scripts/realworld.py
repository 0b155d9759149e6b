#!/usr/bin/env python
"""Real test suites stay green: rewrite real projects with ``np2torch fix`` and run their own tests.

Usage::

    python scripts/realworld.py                   # every project in PROJECTS
    python scripts/realworld.py lmfit emcee       # some of them
    python scripts/realworld.py --reuse           # keep venvs from an earlier run (faster iterating)

For each project (an sdist from PyPI, pinned below):

1. a fresh venv (no system site-packages) gets np2torch from this checkout
   (``-c constraints.txt '.[torch]'``), the project's dependencies and its test
   dependencies; the project itself is then uninstalled again, so that its tests
   import whichever copy of its source ``PYTHONPATH`` points at;
2. baseline: its test suite runs against an untouched copy of its source;
3. the venv's real ``np2torch fix`` rewrites a second copy's library source (its
   tests are left alone);
4. the same tests run against the rewritten copy with ``NP2TORCH_MIN_SIZE=0``
   (the torch path forced on);
5. every test that passed before and fails after is run once more on both copies,
   to tell a real regression from a flaky test.

A small pytest plugin records every test's outcome by node id, which file each
project module was imported from (proof that the rewritten copy ran) and
whether ``np2torch.runtime`` and torch were loaded.  Exit status 1 when any test
newly fails or a step breaks.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[1]
DEFAULT_WORKDIR = Path("/tmp/np2torch-realworld")
PLUGIN = "np2torch_realworld_plugin"


@dataclass(frozen=True)
class Project:
    name: str
    requirement: str
    """``NAME==VERSION`` of the sdist."""
    import_root: str
    """Folder of the sdist that holds the importable package (``.`` or ``src``)."""
    package: str
    """Import name; its library source is ``<import_root>/<package>``."""
    tests: Tuple[str, ...]
    """pytest arguments, relative to the sdist root."""
    test_requires: Tuple[str, ...] = ("pytest",)
    extras: str = ""
    pytest_args: Tuple[str, ...] = ()
    installed: bool = False
    """A compiled project: its wheel is installed in the venv and the installed package folder
    (extension modules included) is copied twice, instead of unpacking an sdist."""


PROJECTS: Tuple[Project, ...] = (
    Project(
        name="lmfit",
        requirement="lmfit==1.3.4",
        import_root=".",
        package="lmfit",
        tests=("tests",),
        # The optional packages its tests import or skip on: without them those tests would only skip.
        test_requires=("pytest", "flaky", "emcee", "pandas", "numdifftools", "matplotlib"),
        # Its own speed benchmark is a timing assertion, meaningless on a shared 2-core machine.
        pytest_args=("--deselect", "tests/test_manypeaks_speed.py::test_manypeaks_speed"),
    ),
    Project(
        name="emcee",
        requirement="emcee==3.1.6",
        import_root="src",
        package="emcee",
        tests=("src/emcee/tests",),
        test_requires=("pytest", "scipy"),
    ),
    Project(
        name="properscoring",
        requirement="properscoring==0.1",
        import_root=".",
        package="properscoring",
        tests=("properscoring/tests",),
        test_requires=("pytest", "scipy"),
    ),
    Project(
        name="filterpy",
        requirement="filterpy==2.0.0",
        import_root=".",
        package="filterpy",
        tests=("filterpy",),
        test_requires=("pytest", "scipy", "matplotlib"),
    ),
    # Compiled projects, as installed from their wheels, and a subset of their tests: those of the modules
    # with rewritten call sites (the whole suites take hours on 2 cores).
    Project(
        name="scikit-learn",
        requirement="scikit-learn==1.9.1",
        import_root=".",
        package="sklearn",
        tests=(
            "sklearn/tests/test_naive_bayes.py",
            "sklearn/tests/test_kernel_approximation.py",
            "sklearn/tests/test_discriminant_analysis.py",
            "sklearn/tests/test_dummy.py",
            "sklearn/tests/test_random_projection.py",
            "sklearn/tests/test_multioutput.py",
            "sklearn/gaussian_process/tests",
            "sklearn/mixture/tests",
            "sklearn/decomposition/tests/test_online_lda.py",
            "sklearn/decomposition/tests/test_nmf.py",
            "sklearn/decomposition/tests/test_factor_analysis.py",
            "sklearn/decomposition/tests/test_fastica.py",
            "sklearn/ensemble/tests/test_weight_boosting.py",
            "sklearn/ensemble/tests/test_iforest.py",
            "sklearn/ensemble/tests/test_bagging.py",
            "sklearn/datasets/tests/test_samples_generator.py",
            "sklearn/linear_model/tests/test_bayes.py",
            "sklearn/linear_model/tests/test_ransac.py",
            "sklearn/linear_model/tests/test_least_angle.py",
            "sklearn/linear_model/tests/test_sgd.py",
            "sklearn/neural_network/tests",
            "sklearn/manifold/tests/test_t_sne.py",
            "sklearn/neighbors/tests/test_kde.py",
            "sklearn/neighbors/tests/test_nearest_centroid.py",
            "sklearn/metrics/tests/test_pairwise.py",
            "sklearn/metrics/tests/test_ranking.py",
            "sklearn/metrics/cluster/tests/test_supervised.py",
            "sklearn/cluster/tests/test_k_means.py",
            "sklearn/cluster/tests/test_bicluster.py",
            "sklearn/preprocessing/tests/test_data.py",
            "sklearn/feature_extraction/tests/test_text.py",
            "sklearn/_loss/tests",
            "sklearn/utils/tests/test_extmath.py",
            "sklearn/svm/tests/test_svm.py",
            "sklearn/tree/tests/test_tree.py",
        ),
        test_requires=("pytest",),
        installed=True,
    ),
    Project(
        name="scipy",
        requirement="scipy==1.17.1",
        import_root=".",
        package="scipy",
        tests=("scipy/special/tests", "scipy/stats/tests", "scipy/signal/tests", "scipy/linalg/tests/test_matfuncs.py",
               "scipy/integrate/tests", "scipy/optimize/tests/test__dual_annealing.py"),
        test_requires=("pytest", "hypothesis", "mpmath"),
        installed=True,
    ),
)
PROJECTS_BY_NAME = {p.name: p for p in PROJECTS}

# Folders and files of the library source that are tests, not library: never rewritten.
TEST_DIRS = {"tests", "test", "testing"}


def is_test_file(rel: Path) -> bool:
    return any(part in TEST_DIRS for part in rel.parts[:-1]) or rel.name.startswith("test_") or rel.name in (
        "conftest.py",
    )


# ---------------------------------------------------------------- subprocesses


def run(cmd: Sequence[str], *, cwd: Optional[Path] = None, env: Optional[Dict[str, str]] = None,
        timeout: Optional[float] = None, log: Optional[Path] = None) -> subprocess.CompletedProcess:
    """Run ``cmd``; its output goes to ``log`` (appended) and is returned."""
    started = time.perf_counter()
    done = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if log is not None:
        with open(log, "a") as handle:
            handle.write(f"$ {' '.join(map(str, cmd))}  (cwd={cwd}, {time.perf_counter() - started:.0f} s, "
                         f"rc={done.returncode})\n{done.stdout}{done.stderr}\n")
    return done


def checked(cmd: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess:
    done = run(cmd, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return done


def clean_env(venv: Path, **extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"} and not k.startswith("NP2TORCH_")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env.update(extra)
    return env


# ---------------------------------------------------------------- preparing


def fetch_sdist(project: Project, sdists: Path, log: Path) -> Path:
    """The project's sdist: from ``sdists`` if already there, else ``pip download``."""
    name, _, version = project.requirement.partition("==")
    for candidate in sorted(sdists.glob(f"{name}-{version}.tar.gz")) + sorted(sdists.glob(f"{name}-{version}.zip")):
        return candidate
    sdists.mkdir(parents=True, exist_ok=True)
    checked([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(sdists),
             project.requirement], log=log)
    return fetch_sdist(project, sdists, log)


def unpack(sdist: Path, target: Path) -> Path:
    """Unpack ``sdist`` to ``target`` (the sdist's single top folder becomes ``target``)."""
    scratch = target.with_name(target.name + ".unpack")
    shutil.rmtree(scratch, ignore_errors=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(scratch, filter="data")
    (top,) = list(scratch.iterdir())
    shutil.rmtree(target, ignore_errors=True)
    top.rename(target)
    scratch.rmdir()
    return target


def copy_installed(project: Project, python: Path, target: Path) -> Path:
    """Copy the venv's installed package folder to ``target/<package>``; ``target`` is the import root."""
    probe = "import importlib.util, sys; print(list(importlib.util.find_spec(sys.argv[1]).submodule_search_locations)[0])"
    folder = Path(checked([str(python), "-c", probe, project.package], env=clean_env(python.parent.parent)).stdout.strip())
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(folder, target / project.package, ignore=shutil.ignore_patterns("__pycache__"))
    # auditwheel's vendored shared libraries (scipy.libs, scikit_learn.libs): the extension modules find
    # them through an $ORIGIN-relative RPATH, so they must sit beside the copy as beside the original.
    for libs in folder.parent.glob("*.libs"):
        shutil.copytree(libs, target / libs.name)
    return target


def np2torch_source(workdir: Path, worktree: bool) -> Tuple[Path, str]:
    """This checkout's committed HEAD exported to ``workdir`` (or the working tree itself), and a description."""
    head = run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"])
    if worktree or head.returncode != 0:
        dirty = run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"]).stdout.strip()
        return REPO, f"the working tree {REPO}" + (f" (HEAD {head.stdout.strip()}, modified)" if dirty else "")
    target = workdir / "np2torch-src"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "HEAD"], capture_output=True,
                             check=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target, f"commit {head.stdout.strip()} of {REPO} (git archive HEAD)"


def make_venv(project: Project, venv: Path, source: Optional[Path], np2torch: Path, log: Path, reuse: bool) -> Path:
    python = venv / "bin" / "python"
    constraints = REPO / "constraints.txt"
    if not (reuse and python.exists()):
        shutil.rmtree(venv, ignore_errors=True)
        checked([sys.executable, "-m", "venv", str(venv)], log=log)
        pip = [str(python), "-m", "pip", "install", "-q", "-c", str(constraints)]
        what = project.requirement if source is None else str(source)
        checked([*pip, what + (f"[{project.extras}]" if project.extras else ""), *project.test_requires],
                log=log, env=clean_env(venv))
        if source is not None:
            checked([str(python), "-m", "pip", "uninstall", "-y", project.requirement.partition("==")[0]],
                    log=log, env=clean_env(venv))
    # np2torch with its torch extra pinned as in CI; then reinstalled, so that a reused venv gets this source too.
    checked([str(python), "-m", "pip", "install", "-q", "-c", str(constraints), f"{np2torch}[torch]"],
            log=log, env=clean_env(venv))
    checked([str(python), "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", str(np2torch)],
            log=log, env=clean_env(venv))
    return python


# ---------------------------------------------------------------- the pytest plugin

PLUGIN_SOURCE = '''
"""Records test outcomes by node id and where the project was imported from (np2torch realworld.py)."""
import json
import os
import sys

_outcomes = {}
_RANK = {"passed": 0, "xpassed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}


def _set(nodeid, outcome):
    if _RANK[outcome] >= _RANK.get(_outcomes.get(nodeid), -1):
        _outcomes[nodeid] = outcome


def pytest_runtest_logreport(report):
    xfail = hasattr(report, "wasxfail")
    if report.failed:
        _set(report.nodeid, "failed" if report.when == "call" else "error")
    elif report.skipped:
        _set(report.nodeid, "xfailed" if xfail else "skipped")
    elif report.when == "call":
        _set(report.nodeid, "xpassed" if xfail else "passed")


def pytest_collectreport(report):
    if report.failed:
        _outcomes["COLLECT " + report.nodeid] = "error"


def pytest_sessionfinish(session, exitstatus):
    package = os.environ["NP2TORCH_REALWORLD_PACKAGE"]
    modules = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())
               if (name == package or name.startswith(package + ".")) and module is not None}
    with open(os.environ["NP2TORCH_REALWORLD_OUT"], "w") as handle:
        json.dump({"outcomes": _outcomes, "exitstatus": int(exitstatus), "modules": modules,
                   "runtime_loaded": "np2torch.runtime" in sys.modules,
                   "torch_loaded": "torch" in sys.modules}, handle, indent=1, sort_keys=True)
'''


@dataclass
class TestRun:
    label: str
    outcomes: Dict[str, str]
    exitstatus: int
    modules: Dict[str, Optional[str]]
    runtime_loaded: bool
    torch_loaded: bool
    seconds: float

    def count(self) -> Dict[str, int]:
        return dict(sorted(collections.Counter(self.outcomes.values()).items()))


def run_tests(project: Project, python: Path, copy: Path, label: str, workdir: Path, log: Path,
              only: Sequence[str] = (), timeout: float = 3600, forced: bool = True) -> TestRun:
    """The project's tests (``only`` these ids) against ``copy``; ``forced``: with the torch path forced on
    (``NP2TORCH_MIN_SIZE=0``), else with the default dispatch a user gets."""
    plugin_dir = workdir / "plugin"
    plugin_dir.mkdir(exist_ok=True)
    (plugin_dir / f"{PLUGIN}.py").write_text(textwrap.dedent(PLUGIN_SOURCE))
    out = workdir / f"{project.name}-{label}.json"
    out.unlink(missing_ok=True)
    env = clean_env(
        python.parent.parent,
        PYTHONPATH=os.pathsep.join([str(copy / project.import_root), str(plugin_dir)]),
        **({"NP2TORCH_MIN_SIZE": "0"} if forced else {}),  # the torch path forced on (harmless for the untouched copy)
        NP2TORCH_REALWORLD_OUT=str(out),
        NP2TORCH_REALWORLD_PACKAGE=project.package,
        MPLBACKEND="Agg",
    )
    targets = list(only) or list(project.tests)
    cmd = [str(python), "-m", "pytest", "-p", PLUGIN, "-p", "no:cacheprovider", "-q", "-o", "addopts=",
           *([] if only else project.pytest_args), *targets]
    start = time.perf_counter()
    try:
        run(cmd, cwd=copy, env=env, timeout=timeout, log=log)
    except subprocess.TimeoutExpired:
        pass
    seconds = time.perf_counter() - start
    if not out.exists():
        raise RuntimeError(f"{project.name} {label}: pytest wrote no results (see {log})")
    data = json.loads(out.read_text())
    return TestRun(label, data["outcomes"], data["exitstatus"], data["modules"], data["runtime_loaded"],
                   data["torch_loaded"], seconds)


# ---------------------------------------------------------------- fixing


def library_files(copy: Path, project: Project) -> List[Path]:
    root = copy / project.import_root / project.package
    return sorted(p for p in root.rglob("*.py") if not is_test_file(p.relative_to(root)))


def fix_library(project: Project, python: Path, copy: Path, log: Path, unsafe_fixes: bool = False) -> Dict[str, Any]:
    """Run the venv's ``np2torch check`` and ``fix`` over the library files; what they reported."""
    files = [*(["--unsafe-fixes"] if unsafe_fixes else []), *(str(p) for p in library_files(copy, project))]
    np2torch = str(python.parent / "np2torch")
    env = clean_env(python.parent.parent)
    before = run([np2torch, "check", "--no-cache", "--format", "json", *files], cwd=copy, env=env, log=log)
    findings = json.loads(before.stdout or "[]")
    if before.returncode not in (0, 1):
        raise RuntimeError(f"np2torch check failed ({before.returncode}): {before.stderr[-2000:]}")
    fixed = run([np2torch, "fix", "--no-cache", "--format", "json", *files], cwd=copy, env=env, log=log)
    # fix's notes ("the fix made line N longer than the line-length", as ruff's E501 would report) are not errors
    errors = [line for line in fixed.stderr.splitlines() if line.strip() and ": note: " not in line]
    if fixed.returncode not in (0, 1) or errors:
        raise RuntimeError(f"np2torch fix failed ({fixed.returncode}): {chr(10).join(errors)[-2000:]}")
    left = json.loads(fixed.stdout or "[]")
    rel = lambda p: os.path.relpath(p, copy)  # noqa: E731
    return {
        "library_files": len(files) - unsafe_fixes,
        "findings": len(findings),
        "fixable": sum(f["fixable"] for f in findings),
        "by_code": dict(sorted(collections.Counter(f["code"] for f in findings).items())),
        "by_file": dict(sorted(collections.Counter(rel(f["path"]) for f in findings if f["fixable"]).items())),
        # `fix` prints what remains, as `ruff check --fix` does: the findings without a fix too.
        "left": [f"{rel(f['path'])}:{f['line']}:{f['column']} {f['code']}" for f in left if f["fixable"]],
        "rewritten": sum(f["fixable"] for f in findings) - sum(f["fixable"] for f in left),
    }


# ---------------------------------------------------------------- one project


@dataclass
class ProjectReport:
    name: str
    requirement: str
    fix: Dict[str, Any] = field(default_factory=dict)
    baseline: Optional[TestRun] = None
    fixed: Optional[TestRun] = None
    newly_failing: List[str] = field(default_factory=list)
    flaky: List[str] = field(default_factory=list)
    newly_passing: List[str] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)
    problems: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    timing: Dict[str, Any] = field(default_factory=dict)

    def ok(self) -> bool:
        return not (self.newly_failing or self.missing or self.problems)


GOOD = {"passed", "xpassed", "xfailed", "skipped"}
BAD = {"failed", "error"}


def check_imports(report: ProjectReport, run_: TestRun, copy: Path, rewritten: bool) -> None:
    """The tests must have imported the project from ``copy``; the rewritten copy must load the runtime."""
    outside = [f"{m}={f}" for m, f in run_.modules.items() if f and not Path(f).resolve().is_relative_to(copy.resolve())]
    if not run_.modules:
        report.problems.append(f"{run_.label}: the tests never imported {report.name}")
    if outside:
        report.problems.append(f"{run_.label}: modules imported from elsewhere: {outside[:3]}")
    if rewritten and not run_.runtime_loaded:
        report.problems.append(f"{run_.label}: the rewritten copy never loaded np2torch.runtime")
    elif rewritten and not run_.torch_loaded:
        # Not a failure: the rewritten calls may only ever see inputs NumPy serves (scalars, object arrays).
        report.notes.append(f"{run_.label}: torch never loaded, so no rewritten call took the torch path")
    if not rewritten and run_.runtime_loaded:
        report.problems.append(f"{run_.label}: the untouched copy loaded np2torch.runtime")


def run_project(project: Project, workdir: Path, sdists: Path, np2torch: Path, reuse: bool,
                unsafe_fixes: bool = False, pairs: int = 0) -> ProjectReport:
    report = ProjectReport(project.name, project.requirement)
    here = workdir / project.name
    here.mkdir(parents=True, exist_ok=True)
    log = here / "log.txt"
    log.write_text("")
    if project.installed:
        python = make_venv(project, here / "venv", None, np2torch, log, reuse)
        baseline_copy = copy_installed(project, python, here / "baseline")
        fixed_copy = copy_installed(project, python, here / "fixed")
    else:
        sdist = fetch_sdist(project, sdists, log)
        baseline_copy = unpack(sdist, here / "baseline")
        fixed_copy = unpack(sdist, here / "fixed")
        python = make_venv(project, here / "venv", baseline_copy, np2torch, log, reuse)

    report.baseline = run_tests(project, python, baseline_copy, "baseline", here, log)
    check_imports(report, report.baseline, baseline_copy, rewritten=False)
    report.fix = fix_library(project, python, fixed_copy, log, unsafe_fixes)
    if report.fix["left"]:
        report.problems.append(f"fixable findings left after fix: {report.fix['left'][:5]}")
    report.fixed = run_tests(project, python, fixed_copy, "fixed", here, log)
    check_imports(report, report.fixed, fixed_copy, rewritten=report.fix["rewritten"] > 0)

    before, after = report.baseline.outcomes, report.fixed.outcomes
    candidates = sorted(t for t, o in after.items() if o in BAD and before.get(t) in GOOD)
    report.missing = sorted(t for t, o in before.items() if o in GOOD and t not in after)
    report.newly_passing = sorted(t for t, o in before.items() if o in BAD and after.get(t) in GOOD)
    if candidates:  # run them again on both copies: a flaky test fails on both sometimes
        ids = [t for t in candidates if not t.startswith("COLLECT ")]
        again_fixed = run_tests(project, python, fixed_copy, "fixed-rerun", here, log, only=ids) if ids else None
        again_base = run_tests(project, python, baseline_copy, "baseline-rerun", here, log, only=ids) if ids else None
        for test in candidates:
            rerun_fixed = again_fixed.outcomes.get(test) if again_fixed else None
            rerun_base = again_base.outcomes.get(test) if again_base else None
            if rerun_base in BAD or rerun_fixed in GOOD:
                report.flaky.append(f"{test} (rerun: baseline {rerun_base}, fixed {rerun_fixed})")
            else:
                report.newly_failing.append(test)
    if pairs:
        time_suites(report, project, python, (baseline_copy, fixed_copy), here, log, pairs)
    return report


def time_suites(report: ProjectReport, project: Project, python: Path, copies: Tuple[Path, Path], here: Path,
                log: Path, pairs: int) -> None:
    """``pairs`` runs of the tests on each copy (untouched, fixed), alternating, with the default dispatch:
    the fixed copy's wall time over the untouched one's, pair by pair.  Both copies' bytecode is compiled first,
    as an installed package has it."""
    checked([str(python), "-m", "compileall", "-q", *map(str, copies)], log=log)
    seconds: Dict[str, List[float]] = {"baseline": [], "fixed": []}
    for pair in range(pairs):
        order = [("baseline", copies[0]), ("fixed", copies[1])]
        for label, copy in order[::-1] if pair % 2 else order:
            seconds[label].append(run_tests(project, python, copy, f"time-{label}", here, log, forced=False).seconds)
    ratios = [fixed / base for fixed, base in zip(seconds["fixed"], seconds["baseline"])]
    report.timing = {"pairs": pairs, "ratio": statistics.median(ratios), "low": min(ratios), "high": max(ratios),
                     "baseline_s": statistics.median(seconds["baseline"]), "fixed_s": statistics.median(seconds["fixed"])}


# ---------------------------------------------------------------- printing


def print_report(report: ProjectReport) -> None:
    print(f"== {report.requirement}")
    if report.fix:
        f = report.fix
        print(f"   np2torch fix: {f['rewritten']} call sites rewritten in {len(f['by_file'])} of "
              f"{f['library_files']} library files ({f['by_code']}); findings {f['findings']}, fixable {f['fixable']}")
        for path, n in f["by_file"].items():
            print(f"     {path}: {n}")
    for run_ in (report.baseline, report.fixed):
        if run_ is not None:
            print(f"   tests {run_.label:8s}: {run_.count()} (pytest exit {run_.exitstatus}, {run_.seconds:.0f} s; "
                  f"runtime loaded {run_.runtime_loaded}, torch loaded {run_.torch_loaded})")
    print(f"   newly failing: {len(report.newly_failing)}")
    if report.timing:
        t = report.timing
        print(f"   default dispatch, {t['pairs']} alternating pairs: fixed/original wall {t['ratio']:.3f} "
              f"({t['low']:.3f}-{t['high']:.3f}; {t['fixed_s']:.1f} s / {t['baseline_s']:.1f} s), "
              f"speed {1 / t['ratio']:.2f}x")
    for label, items in (("newly failing", report.newly_failing), ("flaky (failed on rerun in baseline too, "
                         "or passed on rerun)", report.flaky), ("missing after fix", report.missing),
                         ("newly passing", report.newly_passing), ("problem", report.problems),
                         ("note", report.notes)):
        for item in items:
            print(f"   {label}: {item}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projects", nargs="*", help=f"projects to run (default: all of {', '.join(PROJECTS_BY_NAME)})")
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help=f"default: {DEFAULT_WORKDIR}")
    parser.add_argument("--sdists", type=Path, help="folder of already downloaded sdists (default: <workdir>/sdists)")
    parser.add_argument("--reuse", action="store_true", help="reuse venvs an earlier run left in the workdir")
    parser.add_argument("--json", type=Path, help="also write the reports as JSON")
    parser.add_argument("--unsafe-fixes", action="store_true", help="fix with --unsafe-fixes (e.g. NPT901)")
    parser.add_argument("--time", type=int, default=0, metavar="PAIRS",
                        help="then time each suite, fixed against untouched, default dispatch, PAIRS alternating pairs "
                             "(on a quiet machine)")
    parser.add_argument("--worktree", action="store_true",
                        help="install np2torch from the working tree as it is (default: its committed HEAD)")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]  # progress shows in a log file
    unknown = [name for name in args.projects if name not in PROJECTS_BY_NAME]
    if unknown:
        parser.error(f"unknown project(s) {unknown}; known: {', '.join(PROJECTS_BY_NAME)}")

    args.workdir.mkdir(parents=True, exist_ok=True)
    source, described = np2torch_source(args.workdir, args.worktree)
    print(f"np2torch from {described}")
    projects = [PROJECTS_BY_NAME[name] for name in args.projects] if args.projects else list(PROJECTS)
    reports = []
    for project in projects:
        try:
            report = run_project(project, args.workdir, args.sdists or args.workdir / "sdists", source, args.reuse,
                                 args.unsafe_fixes, args.time)
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            report = ProjectReport(project.name, project.requirement, problems=[f"{type(exc).__name__}: {exc}"])
        print_report(report)
        sys.stdout.flush()
        reports.append(report)
    if args.json:
        args.json.write_text(json.dumps([_as_json(r) for r in reports], indent=1) + "\n")
    newly = sum(len(r.newly_failing) for r in reports)
    print(f"{len(reports)} projects, {sum(r.fix.get('rewritten', 0) for r in reports)} call sites rewritten, "
          f"{newly} newly failing tests, {sum(len(r.problems) for r in reports)} problems")
    return 0 if all(r.ok() for r in reports) else 1


def _as_json(report: ProjectReport) -> Dict[str, Any]:
    runs = {r.label: {"counts": r.count(), "exitstatus": r.exitstatus, "seconds": round(r.seconds),
                      "runtime_loaded": r.runtime_loaded, "torch_loaded": r.torch_loaded}
            for r in (report.baseline, report.fixed) if r is not None}
    return {"project": report.requirement, "fix": report.fix, "runs": runs, "newly_failing": report.newly_failing,
            "flaky": report.flaky, "missing": report.missing, "newly_passing": report.newly_passing,
            "problems": report.problems, "notes": report.notes, "timing": report.timing}


if __name__ == "__main__":
    sys.exit(main())
