"""``np2torch vendor FOLDER``: np2torch.runtime copied into a project as a package.

For projects that do not want np2torch as a run-time dependency: every file of
:mod:`np2torch.runtime` -- its modules and its data files, whatever they are
today -- is copied into FOLDER (``mypkg/_np2torch``), and ``np2torch fix
--runtime-module mypkg._np2torch`` imports the helpers from there.  The runtime's
modules import each other relatively, so the copy works under any package name
without a single edit: each module only gets a header (:data:`MARKER`, the
np2torch version, "do not edit", linters off) and ``__init__.py`` a last line
``__np2torch_version__ = ...``; data files are copied byte for byte.

Checked over the copied modules with ``ast`` before anything is written: they
import nothing outside the standard library, NumPy, torch and SciPy, and their
relative imports stay inside the package.  FOLDER is replaced only when
``np2torch vendor`` wrote it (or with ``--force``), and never in place: the new
package is written into a hidden folder beside it and renamed into place.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import shutil
import sys
from pathlib import Path
from typing import Iterator

import click

from np2torch import __version__
from np2torch.cli.files import fsync_folder
from np2torch.lint.suppress import MARKER

PACKAGE = "np2torch.runtime"
ALLOWED_IMPORTS = frozenset({"numpy", "torch", "scipy"})
"""Third-party top-level packages the vendored package may import (besides the standard library)."""
LAZY_IMPORTS = frozenset({"dask"})
"""Optional packages it may import inside functions only (the runtime checks ``sys.modules`` first)."""

_DATA_LINE = "# np2torch vendor data files: "
"""Header line of the vendored ``__init__.py`` naming the data files it copied (they cannot carry a marker)."""
_IMPORTERS = frozenset({"import_module", "__import__"})


class VendorError(Exception):
    """The runtime cannot be vendored as it stands (a bug in np2torch, not in the user's input)."""


class VendorUsageError(click.ClickException):
    """The user's FOLDER cannot be written (exit code 2, as every np2torch usage error)."""

    exit_code = 2


def runtime_folder() -> Path:
    """The folder holding np2torch.runtime's files."""
    return Path(__file__).resolve().parent.parent / "runtime"


# ---------------------------------------------------------------- what is copied


def _is_copied(name: str) -> bool:
    """Files and folders of the runtime that belong to the package (not caches, editor or hidden files, nor C: a
    source needs a build, a built module fits one platform and Python, and the runtime imports one optionally)."""
    return not (name.startswith(".") or name.endswith(("~", ".pyc", ".pyo", ".c", ".so", ".pyd")) or name == "__pycache__")


def _walk(folder: Path, prefix: str = "") -> Iterator[str]:
    """Relative POSIX paths of the files under ``folder`` that belong to the package, sorted."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if not _is_copied(entry.name):
            continue
        if entry.is_dir():
            yield from _walk(Path(entry.path), f"{prefix}{entry.name}/")
        elif entry.is_file():
            yield prefix + entry.name


def package_files(folder: Path | None = None, version: str = __version__) -> dict[str, bytes]:
    """Relative path -> content of every file of the vendored package, checked (:class:`VendorError`)."""
    folder = runtime_folder() if folder is None else folder
    originals = {rel: (folder / rel).read_bytes() for rel in _walk(folder)}
    if "__init__.py" not in originals:
        raise VendorError(f"{folder} has no __init__.py")
    data = sorted(rel for rel in originals if not rel.endswith(".py"))
    files: dict[str, bytes] = {}
    header_lines: dict[str, int] = {}
    for rel, content in originals.items():
        if rel.endswith(".py"):
            header = _header(version, data if rel == "__init__.py" else [])
            header_lines[rel] = header.count("\n")
            text = header + _decode(rel, content)
            if rel == "__init__.py":
                text = text.rstrip("\n") + f"\n\n__np2torch_version__ = {version!r}\n"
            files[rel] = text.encode("utf-8")
        else:
            files[rel] = content
    check_modules({rel: content.decode("utf-8") for rel, content in files.items() if rel.endswith(".py")}, header_lines)
    return files


def _decode(rel: str, content: bytes) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VendorError(f"{rel} is not UTF-8: {exc}") from None


def _header(version: str, data: list[str]) -> str:
    lines = [
        f"{MARKER} from np2torch {version} -- generated, do not edit.",
        "# Regenerate with `np2torch vendor <this package's folder>` after upgrading np2torch.",
    ]
    if data:
        lines.append(_DATA_LINE + json.dumps(data))
    lines += ["# ruff: noqa", "# flake8: noqa", "# mypy: ignore-errors", "# pylint: skip-file", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- the checks


def check_modules(modules: dict[str, str], header_lines: dict[str, int] | None = None) -> None:
    """Each module parses, imports only the standard library, NumPy, torch and SciPy (Dask inside functions), and itself relatively.

    ``header_lines``: lines vendoring put above each module's source; errors name the source's lines.
    """
    for rel, text in sorted(modules.items()):
        above = (header_lines or {}).get(rel, 0)
        try:
            tree = ast.parse(text, filename=rel)
        except SyntaxError as exc:
            raise VendorError(f"{rel} line {(exc.lineno or above) - above}: {exc.msg}") from None
        lazy = {id(inner) for outer in ast.walk(tree) if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)) for inner in ast.walk(outer)}
        optional = _optional_imports(tree)
        for node in ast.walk(tree):
            line = getattr(node, "lineno", 0) - above
            also = LAZY_IMPORTS if id(node) in lazy else frozenset()
            if isinstance(node, ast.Import):
                for alias in node.names:
                    _check_absolute(alias.name, rel, line, also)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    _check_relative(node, rel, line, modules, id(node) in optional)
                else:
                    _check_absolute(node.module or "", rel, line, also)
            elif isinstance(node, ast.Call) and _dynamic_import(node) is not None:
                _check_absolute(_dynamic_import(node) or "", rel, line)


def _optional_imports(tree: ast.Module) -> set[int]:
    """The nodes in the body of a ``try`` that handles ImportError: a module of its own they import may be absent
    from the copy (the C front, ``from ._front import Front``: the runtime runs without it)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(handler.type) for handler in node.handlers):
            found |= {id(inner) for statement in node.body for inner in ast.walk(statement)}
    return found


def _catches_import_error(caught: ast.expr | None) -> bool:
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any(isinstance(name, ast.Name) and name.id in ("ImportError", "ModuleNotFoundError") for name in names)


def _dynamic_import(call: ast.Call) -> str | None:
    """The absolute module ``importlib.import_module("x")`` or ``__import__("x")`` names with a constant."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name not in _IMPORTERS or not call.args:
        return None
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and not first.value.startswith("."):
        return first.value
    return None


def _check_absolute(name: str, rel: str, line: int, also: frozenset[str] = frozenset()) -> None:
    top = name.split(".")[0]
    if top in also:
        return
    if top == "np2torch":
        raise VendorError(f"{rel} line {line}: absolute np2torch import ({name}); the runtime must import itself relatively")
    stdlib: set[str] | None = getattr(sys, "stdlib_module_names", None)
    if top in ALLOWED_IMPORTS or top == "__future__" or stdlib is None or top in stdlib:
        return  # (Python 3.9 cannot name the standard library: only np2torch is refused there)
    raise VendorError(f"{rel} line {line}: imports {name!r}; the runtime may only use the standard library, NumPy, torch and SciPy")


def _check_relative(node: ast.ImportFrom, rel: str, line: int, modules: dict[str, str], optional: bool = False) -> None:
    package = rel.split("/")[:-1]  # the folders of the package the module is in
    if node.level > len(package) + 1:
        raise VendorError(f"{rel} line {line}: `from {'.' * node.level}{node.module or ''} import ...` leaves the package")
    if node.module is None:
        return  # `from . import x`: x may be a module or a name of __init__
    base = package[: len(package) + 1 - node.level] + node.module.split(".")
    target = "/".join(base)
    if f"{target}.py" not in modules and f"{target}/__init__.py" not in modules and not optional:
        raise VendorError(f"{rel} line {line}: imports {'.' * node.level}{node.module}, which is not in the runtime")


# ---------------------------------------------------------------- writing the package


def write_package(target: Path, force: bool = False, source: Path | None = None) -> bool:
    """Write the vendored runtime into the folder ``target``; False when it already held exactly that.

    Refuses (:class:`VendorUsageError`) a file target, or a folder np2torch did
    not write unless ``force``.  Raises :class:`VendorError` before writing
    anything when the runtime fails the checks.
    """
    if target.suffix == ".py":
        raise VendorUsageError(_single_file_message(target))
    files = package_files(source)
    parent = target.parent
    if not parent.is_dir():
        raise VendorUsageError(f"folder {parent} does not exist")
    if target.is_symlink():
        raise VendorUsageError(f"{target} is a symbolic link; name the folder itself")
    if target.exists():
        if not target.is_dir():
            raise VendorUsageError(f"{target} exists and is not a folder")
        if not force:
            _check_ours(target)
        if _read_package(target) == files:
            return False
    _remove_leftovers(parent, target.name)
    _replace_folder(target, files)
    return True


def _single_file_message(target: Path) -> str:
    folder = target.with_suffix("")
    dotted = f"{folder.parent.name}.{folder.name}" if folder.parent.name.isidentifier() else folder.name
    return (
        f"{target} names a file, but `np2torch vendor` now writes a package: name a folder, "
        f"e.g. `np2torch vendor {folder}` (and delete the old single-file copy); "
        f"`--runtime-module` stays the dotted package name (e.g. {dotted})"
    )


def _read_package(folder: Path) -> dict[str, bytes]:
    return {rel: (folder / rel).read_bytes() for rel in _walk(folder)}


def _check_ours(folder: Path) -> None:
    """Raise unless every file in ``folder`` is one ``np2torch vendor`` wrote (an empty folder is fine)."""
    present = list(_walk(folder))
    if not present:
        return
    init = folder / "__init__.py"
    if not _starts_with_marker(init):
        raise VendorUsageError(f"{folder} exists and was not written by `np2torch vendor`; use --force to replace it")
    data = _data_files(init)
    for rel in present:
        ours = _starts_with_marker(folder / rel) if rel.endswith(".py") else rel in data
        if not ours:
            raise VendorUsageError(f"{folder / rel} was not written by `np2torch vendor`; move it out of {folder} or use --force")


def _starts_with_marker(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.readline().startswith(MARKER)
    except OSError:
        return False


def _data_files(init: Path) -> set[str]:
    with open(init, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.startswith("#"):
                break
            if line.startswith(_DATA_LINE):
                try:
                    return set(json.loads(line[len(_DATA_LINE):]))
                except ValueError:
                    break
    return set()


_LEFTOVER = ".np2torch-"


def _sibling(parent: Path, name: str, role: str) -> Path:
    return parent / f".{name}{_LEFTOVER}{role}-{secrets.token_hex(4)}"


def _remove_leftovers(parent: Path, name: str) -> None:
    """Hidden folders an interrupted run of this command left beside the package."""
    for entry in os.scandir(parent):
        if entry.name.startswith(f".{name}{_LEFTOVER}") and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)


def _replace_folder(target: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` into a new folder beside ``target``, then rename it into place.

    A directory cannot be swapped with one ``rename``: the old package is first
    renamed aside, so for an instant ``target`` is missing, but it is never half
    written, and a failure puts the old one back.
    """
    staging = _sibling(target.parent, target.name, "new")
    os.mkdir(staging)  # the umask decides its mode, as for any new folder
    try:
        _write_files(staging, files)
        if target.exists():
            os.chmod(staging, target.stat().st_mode & 0o7777)
            old = _sibling(target.parent, target.name, "old")
            os.rename(target, old)
            try:
                os.rename(staging, target)
            except BaseException:
                os.rename(old, target)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, target)
        fsync_folder(target.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write_files(folder: Path, files: dict[str, bytes]) -> None:
    folders = {folder}
    for rel, content in sorted(files.items()):
        path = folder / rel
        if path.parent not in folders:
            path.parent.mkdir(parents=True, exist_ok=True)
            folders.add(path.parent)
        _write_file(path, content)
    for written in folders:
        fsync_folder(written)


def _write_file(path: Path, content: bytes) -> None:
    with open(path, "xb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())


# ---------------------------------------------------------------- the command


@click.command("vendor")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Replace FOLDER even if `np2torch vendor` did not write it.")
def command(folder: Path, force: bool) -> int:
    """Copy np2torch.runtime into FOLDER as a package (NumPy, optional torch and SciPy, nothing else).

    E.g. `np2torch vendor mypkg/_np2torch`, then `np2torch fix --runtime-module
    mypkg._np2torch` rewrites calls to import the helpers from it, and the
    project no longer needs np2torch at run time.  Re-run after upgrading
    np2torch; every file says which version wrote it.
    """
    try:
        changed = write_package(folder, force=force)
    except VendorError as exc:
        raise VendorUsageError(f"cannot vendor the runtime: {exc}") from None
    except OSError as exc:
        raise VendorUsageError(f"{exc.filename or folder}: {exc.strerror or exc}") from None
    click.echo(f"{'wrote' if changed else 'unchanged'} {folder} (np2torch {__version__} runtime)")
    old = folder.with_name(folder.name + ".py")
    if _starts_with_marker(old):
        click.echo(f"note: {old} is an older single-file copy; the package {folder} now shadows it: delete it", err=True)
    return 0
