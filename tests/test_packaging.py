"""Ready to publish: both distributions are built (offline, the build dependencies are the venv's) and
inspected as PyPI and a user would see them; the sdist's own tests run from the unpacked sdist."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import np2torch
from np2torch.runtime import _helper

ROOT = Path(__file__).resolve().parent.parent
# Folders whose every file the sdist carries, so that its tests run (MANIFEST.in).
SDIST_FOLDERS = ("tests", "fixtures", "docs", "scripts", "benchmarks", "examples")
SKIP_PARTS = {".git", ".venv", "build", "dist", "__pycache__", ".mypy_cache", ".pytest_cache", ".np2torch_cache"}
URL = "https://github.com/np2torch/np2torch"


def test_readme_links_work_in_a_clone() -> None:
    # README.md links the docs relatively (they work in a clone and on the repository host); the package
    # index's page gets absolute links from setup.py (test_the_wheel_is_typed_licensed_and_described).
    links = re.findall(r"\]\(([^)\s]+)\)", (ROOT / "README.md").read_text(encoding="utf-8"))
    relative = [link for link in links if not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:|#", link)]
    assert relative, "README.md links no doc"
    missing = [link for link in relative if not (ROOT / link.split("#")[0]).is_file()]
    assert missing == [], f"README.md links files that do not exist: {missing}"
    assert not [link for link in links if link.startswith(f"{URL}/blob/")], "link the docs relatively"


def test_the_version_is_written_once() -> None:
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "np2torch.__version__"}


def _source_files() -> list[Path]:
    """The files a release is built from: git's tracked and not-ignored files, or the tree on disk."""
    done = None
    if shutil.which("git") and (ROOT / ".git").exists():
        done = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                              capture_output=True, stdin=subprocess.DEVNULL)
    if done is not None and done.returncode == 0:
        names = [name for name in done.stdout.decode("utf-8", "surrogateescape").split("\0") if name]
        return [Path(name) for name in names if (ROOT / name).is_file()]
    return [path.relative_to(ROOT) for path in ROOT.rglob("*")
            if path.is_file() and not SKIP_PARTS & set(path.relative_to(ROOT).parts)
            and not path.name.endswith((".pyc", ".egg-info")) and ".egg-info" not in str(path)]


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(wheel, sdist, build output), built from a copy of the source tree (no build/ or egg-info left here)."""
    pytest.importorskip("build")
    tree = tmp_path_factory.mktemp("tree")
    for name in _source_files():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tree / name)
    out = tmp_path_factory.mktemp("dist")
    # PYTHONDONTWRITEBYTECODE makes setuptools warn that it skips byte-compiling: the environment's, not ours.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
                          capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=600)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    (wheel,), (sdist,) = out.glob("*.whl"), out.glob("*.tar.gz")
    return wheel, sdist, log


def test_the_build_is_clean_of_warnings(dists: tuple[Path, Path, str]) -> None:
    log = dists[2]
    assert not [line for line in log.splitlines() if re.search(r"warn|deprecat", line, re.I)], log


def test_the_wheel_is_typed_licensed_and_described(dists: tuple[Path, Path, str]) -> None:
    wheel = dists[0]
    version = np2torch.__version__
    # With the C front built (setup.py: optional), the wheel is this interpreter's and platform's; without, pure.
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        fronts = [name for name in names if name.startswith("np2torch/runtime/_front.")]
        tags = archive.read(f"np2torch-{version}.dist-info/WHEEL").decode("utf-8")
        info = f"np2torch-{version}.dist-info"
        metadata = Parser().parsestr(archive.read(f"{info}/METADATA").decode("utf-8"))
        entry_points = archive.read(f"{info}/entry_points.txt").decode("utf-8")
        license_text = archive.read(f"{info}/licenses/LICENSE").decode("utf-8")
    assert {"np2torch/py.typed", "np2torch/runtime/__init__.pyi", "np2torch/runtime/builtin_profile.json",
            "np2torch/runtime/table.py"} <= names
    assert {name.split("/")[0] for name in names} == {"np2torch", info}  # no tests/ or fixtures/ package
    # The C front is in the wheel where this install built it too (a compiler here), making the wheel this
    # interpreter's and platform's; else the wheel is pure.
    built = f"np2torch/runtime/_front{sysconfig.get_config_var('EXT_SUFFIX')}"
    assert (built in names) == (_helper.FRONT is not None), fronts
    if built in names:
        assert "Root-Is-Purelib: false" in tags and not wheel.name.endswith("-py3-none-any.whl")
    else:
        assert wheel.name == f"np2torch-{version}-py3-none-any.whl" and "Root-Is-Purelib: true" in tags
    assert "np2torch/runtime/_front.c" not in names  # its source is the sdist's
    assert license_text == (ROOT / "LICENSE").read_text(encoding="utf-8") and "MIT License" in license_text
    assert metadata["Version"] == version
    assert metadata["License-Expression"] == "MIT" and metadata.get_all("License-File") == ["LICENSE"]
    classifiers = metadata.get_all("Classifier")
    assert "Typing :: Typed" in classifiers and not [c for c in classifiers if c.startswith("License ::")]
    urls = dict(line.split(", ", 1) for line in metadata.get_all("Project-URL"))
    assert urls["Repository"] == URL and urls["Issues"] == f"{URL}/issues"
    description = metadata.get_payload()
    assert metadata["Description-Content-Type"] == "text/markdown" and "](docs/" not in description
    assert f"]({URL}/blob/main/docs/run.md)" in description and f"]({URL}/blob/main/LICENSE)" in description
    assert description.count("](") == (ROOT / "README.md").read_text(encoding="utf-8").count("](")
    assert "np2torch = np2torch.cli:main" in entry_points
    assert "[flake8.extension]\nNPT = np2torch.cli.flake8_plugin:Plugin" in entry_points


def test_the_sdist_carries_its_tests_and_they_run(dists: tuple[Path, Path, str], tmp_path: Path) -> None:
    sdist = dists[1]
    top = f"np2torch-{np2torch.__version__}"
    with tarfile.open(sdist) as archive:
        names = {name[len(top) + 1:] for name in archive.getnames()}
        archive.extractall(tmp_path, filter="data") if sys.version_info >= (3, 12) else archive.extractall(tmp_path)
    wanted = {str(path.as_posix()) for path in _source_files() if path.parts[0] in SDIST_FOLDERS}
    assert wanted - names == set(), "MANIFEST.in misses these"
    assert {"LICENSE", "README.md", "pyproject.toml", "tests/runtime/runtime_checks.py", "tests/data/sarif-schema-2.1.0.json",
            "src/np2torch/py.typed", "src/np2torch/runtime/__init__.pyi", "src/np2torch/runtime/_front.c"} <= names
    unpacked = tmp_path / top
    # The unpacked sdist's own source, not the editable install this suite runs from.
    env = {**os.environ, "PYTHONPATH": str(unpacked / "src")}
    where = subprocess.run([sys.executable, "-c", "import np2torch; print(np2torch.__file__)"], cwd=unpacked, env=env,
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert Path(where.stdout.strip()).is_relative_to(unpacked), where.stdout + where.stderr
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/lint/test_fixtures.py",
                           "tests/cli/test_sarif.py", "tests/lint/test_rules_docs.py", "tests/tools/test_stubs.py",
                           "-k", "not mypy and not type_check"],
                          cwd=unpacked, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert re.search(r"\d+ passed", done.stdout) and " failed" not in done.stdout
