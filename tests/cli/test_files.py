"""Byte-exact reading and atomic writing, and which files a run visits."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from np2torch.cli import files
from np2torch.cli.config import ConfigFinder
from np2torch.cli.discovery import discover
from np2torch.cli.files import FileError, Stamp, decode_notebook, decode_source, read_bytes, write_atomic

# ---------------------------------------------------------------- decoding


@pytest.mark.parametrize(
    ("raw", "encoding", "text"),
    [
        pytest.param(b"x = 1\n", "utf-8", "x = 1\n", id="plain utf-8"),
        pytest.param(b"x = 1\r\ny = 2\r\n", "utf-8", "x = 1\r\ny = 2\r\n", id="CRLF kept"),
        pytest.param(b"x = 1\ry = 2\r", "utf-8", "x = 1\ry = 2\r", id="lone CR kept"),
        pytest.param(b"x = 1", "utf-8", "x = 1", id="no final newline"),
        pytest.param(b"\xef\xbb\xbfx = '\xc3\xa9'\n", "utf-8-sig", "x = '\xe9'\n", id="BOM"),
        pytest.param(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n", "iso-8859-1", "# -*- coding: latin-1 -*-\nx = '\xe9'\n",
                     id="latin-1 cookie"),
        pytest.param(b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\ns = '\x80'\n", "cp1252",
                     "#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\ns = '\u20ac'\n", id="cookie line 2"),
        pytest.param(b"", "utf-8", "", id="empty"),
    ],
)
def test_decode_and_encode_round_trip(raw: bytes, encoding: str, text: str) -> None:
    source = decode_source(raw, "f.py")
    assert source.encoding == encoding
    assert source.text == text
    assert source.encode(source.text) == raw


def test_bom_survives_an_edit() -> None:
    source = decode_source(b"\xef\xbb\xbfimport numpy as np\r\n", "f.py")
    assert source.encode(source.text + "x = 1\r\n") == b"\xef\xbb\xbfimport numpy as np\r\nx = 1\r\n"


NOT_UTF8 = "f.py: error: stream did not contain valid UTF-8"  # ruff's E902 for it, at 1:1


@pytest.mark.parametrize(
    ("raw", "expected", "code"),
    [
        pytest.param(b"x = 1\ny = '\xff'\n", NOT_UTF8, "E902", id="undecodable on line 2"),
        pytest.param(b"x = '\xff'\n", NOT_UTF8, "E902", id="undecodable line 1"),
        pytest.param(b"\xef\xbb\xbfx = 1\n\n  \xfe\n", NOT_UTF8, "E902", id="undecodable after BOM"),
        pytest.param(b"# coding: ascii\nx = '\xc3\xa9'\n", "f.py: error: stream did not contain valid ascii", "E902",
                     id="undecodable in the declared coding"),
        pytest.param(b"x = '\xff'\x00\n", NOT_UTF8, "E902", id="undecodable and a NUL: decoded first, as ruff"),
        pytest.param(b"# coding: klingon\nx = 1\n", "f.py:1:1: error: SyntaxError: unknown encoding: klingon",
                     "invalid-syntax", id="unknown codec"),
        pytest.param(b"\xef\xbb\xbf# coding: latin-1\n", "f.py:1:1: error: SyntaxError: encoding problem: utf-8",
                     "invalid-syntax", id="BOM contradicts cookie"),
    ],
)
def test_undecodable_input_is_one_line_with_ruffs_code(raw: bytes, expected: str, code: str) -> None:
    with pytest.raises(FileError) as info:
        decode_source(raw, "f.py")
    assert str(info.value) == expected and info.value.code == code


def test_a_nul_is_decoded_as_any_character() -> None:
    # the engine judges it (np2torch.lint.nul): ruff takes one in a string or a comment
    assert decode_source(b"s = '\x00'  # \x00\n", "f.py").text == "s = '\x00'  # \x00\n"


def test_a_notebook_that_is_not_utf8_is_no_notebook() -> None:
    with pytest.raises(FileError) as info:  # ruff: invalid-syntax, the file "isn't valid JSON"
        decode_notebook(b'{"cells": ["\xff"]}', "n.ipynb")
    assert (str(info.value), info.value.code) == (
        "n.ipynb: error: not a notebook: invalid JSON: stream did not contain valid UTF-8", "invalid-syntax")


def test_read_bytes_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileError, match=r"^gone.py: error: No such file or directory \(os error 2\)$") as gone:
        read_bytes(str(tmp_path / "gone.py"), "gone.py")  # ruff's words for it (E902)
    assert gone.value.code == "E902"
    with pytest.raises(FileError, match=r"^d: error: is a directory$") as folder:
        read_bytes(str(tmp_path), "d")
    assert folder.value.code == "E902"  # a path np2torch will not read, as one ruff cannot


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads everything")
def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.py"
    path.write_text("x = 1\n")
    path.chmod(0)
    with pytest.raises(FileError, match=r"^secret.py: error: Permission denied \(os error 13\)$"):
        read_bytes(str(path), "secret.py")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "f.py")  # opening it for reading would wait for ever
    with pytest.raises(FileError, match=r"^f.py: error: not a regular file \(a FIFO\)$") as fifo:
        read_bytes(str(tmp_path / "f.py"), "f.py")
    assert fifo.value.code == "E902"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_a_device_is_refused_unread() -> None:
    with pytest.raises(FileError, match=r"^/dev/zero: error: not a regular file \(a character device\)$"):
        read_bytes("/dev/zero", "/dev/zero")  # reading it would never end


def test_a_file_above_the_size_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 10)
    (tmp_path / "ok.py").write_bytes(b"x = 12345\n")
    (tmp_path / "big.py").write_bytes(b"x = 123456\n")
    assert read_bytes(str(tmp_path / "ok.py"), "ok.py")[0] == b"x = 12345\n"
    with pytest.raises(FileError, match=r"^big.py: error: file larger than 10 bytes, not read$") as big:
        read_bytes(str(tmp_path / "big.py"), "big.py")
    assert big.value.code == "E902"  # ruff has no limit: reported as a file it cannot read
    assert files._size(128 * 1024 * 1024) == "128 MiB"


# ---------------------------------------------------------------- writing


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".np2torch.tmp"))


@pytest.mark.parametrize("mode", [0o644, 0o755, 0o600, 0o640])
def test_write_keeps_mode_bits(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"old\r\n")
    path.chmod(mode)
    write_atomic(str(path), b"new\r\n", "a.py")
    assert path.read_bytes() == b"new\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert leftovers(tmp_path) == []


def test_write_replaces_the_inode(tmp_path: Path) -> None:
    # A reader holding the old file open sees the old content whole: the new one is a different file.
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    with open(path, "rb") as held:
        write_atomic(str(path), b"new\n", "a.py")
        assert held.read() == b"old\n"
    assert path.read_bytes() == b"new\n"


def test_write_goes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.py"
    real.write_bytes(b"old\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    write_atomic(str(link), b"new\n", "link.py")
    assert link.is_symlink()
    assert real.read_bytes() == b"new\n"


def test_write_refuses_when_file_changed_since_read(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    _, stamp = read_bytes(str(path), "a.py")
    path.write_bytes(b"someone else's edit\n")
    os.utime(path, ns=(stamp.mtime_ns + 10**9, stamp.mtime_ns + 10**9))
    with pytest.raises(FileError, match="changed while np2torch was fixing it"):
        write_atomic(str(path), b"new\n", "a.py", expect=stamp)
    assert path.read_bytes() == b"someone else's edit\n"
    assert leftovers(tmp_path) == []


def test_failed_replace_leaves_original_and_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(FileError, match=r"^a.py: error: No space left on device$"):
        write_atomic(str(path), b"new\n", "a.py")
    assert path.read_bytes() == b"old\n"
    assert leftovers(tmp_path) == []


root_only = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
NOBODY = 65534  # nobody:nogroup on Linux


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o000])
def test_write_refuses_a_read_only_file(tmp_path: Path, mode: int) -> None:
    # Replacing by rename needs only the folder's permission: the file's own must be asked (root too).
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    path.chmod(mode)
    with pytest.raises(FileError, match=r"^a.py: error: fix not applied: the file is read-only$"):
        write_atomic(str(path), b"new\n", "a.py")
    path.chmod(0o600)
    assert path.read_bytes() == b"old\n"
    assert leftovers(tmp_path) == []


def test_write_asks_access_when_not_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    asked: list[str] = []
    monkeypatch.setattr(files.os, "geteuid", lambda: 1000, raising=False)
    monkeypatch.setattr(files.os, "access", lambda p, m, **kw: asked.append(p) or False)
    with pytest.raises(FileError, match=r"^a.py: error: fix not applied: the file is read-only$"):
        write_atomic(str(path), b"new\n", "a.py")
    assert asked == [os.path.realpath(path)] and path.read_bytes() == b"old\n"


def test_write_refuses_a_hard_linked_file(tmp_path: Path) -> None:
    # A rename would give a.py a new inode: b.py would silently keep the old code.
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    os.link(path, tmp_path / "b.py")
    with pytest.raises(FileError, match=r"^a.py: error: fix not applied: the file has 2 hard links"):
        write_atomic(str(path), b"new\n", "a.py")
    assert path.read_bytes() == (tmp_path / "b.py").read_bytes() == b"old\n"
    assert leftovers(tmp_path) == []


@root_only
def test_write_as_root_keeps_owner_group_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    os.chown(path, NOBODY, NOBODY)
    path.chmod(0o640)
    write_atomic(str(path), b"new\n", "a.py")
    st = path.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o640)
    assert path.read_bytes() == b"new\n"


@pytest.mark.skipif(not hasattr(os, "chown"), reason="no owners here")
def test_replace_refuses_when_the_owner_cannot_be_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Not root, writing someone else's group-writable file: the new inode would be ours.
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    st = path.stat()

    def refused(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(files.os, "chown", refused)
    with pytest.raises(PermissionError, match=r"np2torch could not keep the file's owner and group"):
        files.replace_file(path, b"new\n", owner=(st.st_uid + 1, st.st_gid))
    assert path.read_bytes() == b"old\n"
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_replace_file_never_replaces_a_special_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")  # as /dev/null would be: `np2torch vendor --force /dev/null` run as root
    with pytest.raises(OSError, match=r"not a regular file \(a FIFO\)"):
        files.replace_file(tmp_path / "pipe", b"x")
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode)
    assert leftovers(tmp_path) == []


def test_stamp_matches_what_was_read(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"abc")
    raw, stamp = read_bytes(str(path), "a.py")
    assert raw == b"abc" and stamp == Stamp.of(path.stat())


# ---------------------------------------------------------------- discovery


def make_tree(root: Path, names: list[str]) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("import numpy as np\n")


def displays(paths: list[str], *, force_exclude: bool = False) -> tuple[list[str], list[str]]:
    targets, errors = discover(paths, ConfigFinder(), force_exclude=force_exclude)
    return [t.display.replace(os.sep, "/") for t in targets], [str(e) for e in errors]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_walk_skips_the_usual_folders(in_tmp: Path) -> None:
    skipped = [".git", ".venv", "venv", "build", "dist", "__pycache__", ".tox", ".nox", "node_modules",
               "site-packages", "lib/site-packages"]
    make_tree(in_tmp, ["pkg/a.py", "pkg/sub/b.py", "top.py", "notes.txt", "pkg/c.pyc"]
              + [f"{name}/x.py" for name in skipped])
    make_tree(in_tmp, ["myenv/pyvenv.cfg", "myenv/lib/y.py"])
    assert displays(["."]) == (["pkg/a.py", "pkg/sub/b.py", "top.py"], [])


def test_order_is_sorted_and_duplicates_collapse(in_tmp: Path) -> None:
    make_tree(in_tmp, ["b.py", "a.py", "sub/c.py"])
    assert displays(["sub", "b.py", ".", "a.py"])[0] == ["a.py", "b.py", "sub/c.py"]


def test_display_keeps_the_users_spelling(in_tmp: Path) -> None:
    make_tree(in_tmp, ["src/pkg/a.py"])
    assert displays(["src/"])[0] == ["src/pkg/a.py"]
    assert displays(["./src/pkg/a.py"])[0] == ["src/pkg/a.py"]
    assert displays([str(in_tmp / "src")])[0] == [str(in_tmp / "src" / "pkg" / "a.py").replace(os.sep, "/")]


def test_missing_path_is_reported_and_others_go_on(in_tmp: Path) -> None:
    make_tree(in_tmp, ["a.py"])
    assert displays(["nope.py", "a.py"]) == (["a.py"], ["nope.py: error: No such file or directory (os error 2)"])


def test_explicit_files_are_checked_whatever_the_suffix_or_exclude(in_tmp: Path) -> None:
    make_tree(in_tmp, ["build/gen.py", "script", "venv/x.py"])
    assert displays(["build/gen.py", "script", "venv/x.py"])[0] == ["build/gen.py", "script", "venv/x.py"]


def test_force_exclude_applies_excludes_to_explicit_files(in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text("[tool.np2torch]\nextend-exclude = ['gen_*.py', 'legacy/']\n")
    make_tree(in_tmp, ["build/x.py", "src/gen_a.py", "legacy/deep/old.py", "src/ok.py"])
    explicit = ["build/x.py", "src/gen_a.py", "legacy/deep/old.py", "src/ok.py"]
    assert displays(explicit)[0] == sorted(explicit)
    assert displays(explicit, force_exclude=True)[0] == ["src/ok.py"]
    assert displays(["legacy"], force_exclude=True)[0] == []


def test_explicit_folder_is_walked_even_if_its_name_is_excluded(in_tmp: Path) -> None:
    make_tree(in_tmp, ["build/x.py", "build/dist/y.py"])
    assert displays(["build"])[0] == ["build/x.py"]


def test_config_exclude_replaces_defaults_and_is_relative_to_its_folder(in_tmp: Path) -> None:
    (in_tmp / "proj").mkdir()
    (in_tmp / "proj" / "pyproject.toml").write_text("[tool.np2torch]\nexclude = ['tests/data']\n")
    make_tree(in_tmp, ["proj/build/a.py", "proj/tests/data/b.py", "proj/src/tests/data/c.py", "other/build/d.py"])
    assert displays(["."])[0] == ["proj/build/a.py", "proj/src/tests/data/c.py"]


def test_nested_config_governs_its_subtree(in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text("[tool.np2torch]\nextend-exclude = ['skip_*.py']\n")
    (in_tmp / "sub").mkdir()
    (in_tmp / "sub" / "pyproject.toml").write_text("[tool.np2torch]\nextend-exclude = ['other.py']\n")
    make_tree(in_tmp, ["skip_a.py", "other.py", "sub/skip_b.py", "sub/other.py"])
    targets, _ = discover(["."], ConfigFinder())
    assert [t.display.replace(os.sep, "/") for t in targets] == ["other.py", "sub/skip_b.py"]
    assert targets[1].config.root == in_tmp / "sub"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_walks_skip_fifos(in_tmp: Path) -> None:
    make_tree(in_tmp, ["pkg/a.py"])
    os.mkfifo(in_tmp / "pkg" / "pipe.py")
    assert displays(["pkg"]) == (["pkg/a.py"], [])


def test_symlinks_are_not_followed_in_walks(in_tmp: Path) -> None:
    make_tree(in_tmp, ["real/a.py"])
    (in_tmp / "loop").symlink_to(in_tmp, target_is_directory=True)
    (in_tmp / "alias.py").symlink_to(in_tmp / "real" / "a.py")
    assert displays(["."])[0] == ["real/a.py"]


def test_no_files_is_not_an_error(in_tmp: Path) -> None:
    make_tree(in_tmp, ["readme.txt"])
    assert displays(["."]) == ([], [])


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_gitignore_is_honoured_in_a_work_tree(in_tmp: Path) -> None:
    subprocess.run(["git", "init", "-q", str(in_tmp)], check=True)
    (in_tmp / ".gitignore").write_text("generated/\n*_gen.py\n!keep_gen.py\n")
    (in_tmp / "pkg").mkdir()
    (in_tmp / "pkg" / ".gitignore").write_text("local.py\n")
    make_tree(in_tmp, ["a.py", "x_gen.py", "keep_gen.py", "generated/b.py", "pkg/local.py", "pkg/c.py"])
    assert displays(["."])[0] == ["a.py", "keep_gen.py", "pkg/c.py"]
    # an ignored file named explicitly is still checked
    assert displays(["x_gen.py"])[0] == ["x_gen.py"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_tracked_files_are_never_gitignored(in_tmp: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", str(in_tmp)], check=True)
    make_tree(in_tmp, ["tracked.py"])
    subprocess.run(["git", "add", "tracked.py"], cwd=in_tmp, check=True, env=env)
    (in_tmp / ".gitignore").write_text("*.py\n")
    make_tree(in_tmp, ["untracked.py"])
    assert displays(["."])[0] == ["tracked.py"]


def test_walk_without_git_still_works(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (in_tmp / ".git").mkdir()  # looks like a work tree, but git is not installed
    (in_tmp / ".gitignore").write_text("*.py\n")
    make_tree(in_tmp, ["a.py"])
    monkeypatch.setenv("PATH", str(in_tmp / "nowhere"))
    assert displays(["."])[0] == ["a.py"]
