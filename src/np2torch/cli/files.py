"""Reading and writing the files np2torch checks, byte for byte (:mod:`.discovery` finds them).

The engine works on ``str``; this module owns the bytes.  A file is decoded the
way Python itself decodes source (a BOM, else a PEP 263 coding cookie, else
UTF-8) with newline translation off, so CRLF and a missing final newline reach
the engine untouched, and the fixed text is encoded back with the same codec
and BOM.  Writes are atomic (a temporary file in the same folder, fsync,
``os.replace``) and keep the file's mode bits, owner and group; a file whose
bytes would not change is never written.  Only regular files are read (a FIFO
or ``/dev/zero`` would never end), up to :data:`MAX_FILE_BYTES`, and a file the
user could not write, or one with several hard links, is never replaced.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from typing import Callable

from np2torch.lint.model import INVALID_SYNTAX, IO_ERROR

SOURCE_SUFFIXES: frozenset[str] = frozenset({".py", ".ipynb"})
"""Suffixes that directory walks collect; files named explicitly are read whatever their suffix.
``.ipynb`` files are Jupyter notebooks (their code cells are checked, see notebook.py)."""

NOTEBOOK_SUFFIX = ".ipynb"


def is_notebook(path: str) -> bool:
    return os.path.splitext(path)[1].lower() == NOTEBOOK_SUFFIX


_BOM = b"\xef\xbb\xbf"


class FileError(Exception):
    """A file that cannot be read, decoded or written; ``str()`` is one line naming it.  ``code``: the code ruff
    reports such a file under (a finding then, not a failure): ``E902`` for a file it cannot read (the system
    would not, :func:`read_error`; np2torch will not, :func:`read_regular`; it is not UTF-8), ``invalid-syntax``
    for bytes Python would not compile (an unknown coding)."""

    def __init__(self, path: str, message: str, line: int | None = None, column: int | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.path, self.message, self.line, self.column = path, message, line, column
        self.code = code

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: error: {self.message}"


def os_error(path: str, exc: OSError) -> FileError:
    return FileError(path, exc.strerror or str(exc))


def read_error(path: str, exc: OSError) -> FileError:
    """A path the system would not read (it does not exist, or may not be read), worded as ruff words it
    (Rust's ``io::Error``): ``No such file or directory (os error 2)``."""
    message = f"{exc.strerror} (os error {exc.errno})" if exc.strerror and exc.errno else str(exc)
    return FileError(path, message, code=IO_ERROR)


# ---------------------------------------------------------------- bytes <-> text


@dataclass(frozen=True)
class Source:
    text: str
    encoding: str
    """The codec that decodes the file's bytes, ``utf-8-sig`` when it starts with a BOM."""

    def encode(self, text: str) -> bytes:
        return text.encode(self.encoding)


def _undecodable(path: str, encoding: str) -> FileError:
    """Bytes the file's codec cannot decode: ruff's E902, in its words (Rust's ``io::Error`` for a file that
    is not UTF-8; ruff reads nothing else), at 1:1 as ruff has it."""
    name = "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding
    return FileError(path, f"stream did not contain valid {name}", code=IO_ERROR)


def _not_compilable(path: str, message: str) -> FileError:
    """Bytes Python refuses before parsing them (``SyntaxError: message``): ruff's ``invalid-syntax``, at 1:1."""
    return FileError(path, f"SyntaxError: {message}", 1, 1, code=INVALID_SYNTAX)


def decode_notebook(raw: bytes, path: str) -> Source:
    """A notebook is JSON text: UTF-8 (a BOM is kept on writing); one that is not is no notebook, as ruff's
    ``invalid-syntax`` has it."""
    encoding = "utf-8-sig" if raw.startswith(_BOM) else "utf-8"
    try:
        return Source(text=raw.decode(encoding), encoding=encoding)
    except UnicodeDecodeError:
        raise FileError(path, "not a notebook: invalid JSON: stream did not contain valid UTF-8",
                        code=INVALID_SYNTAX) from None


def decode_source(raw: bytes, path: str) -> Source:
    """Decode ``raw`` as Python does, or raise :class:`FileError`: undecodable bytes are ruff's E902, an unknown
    coding its ``invalid-syntax`` (Python's own ``SyntaxError`` for it)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        try:  # the usual cause: undecodable UTF-8 in the first two lines
            raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _undecodable(path, "utf-8") from None
        raise _not_compilable(path, exc.msg) from None
    shift = len(_BOM) if encoding == "utf-8-sig" else 0
    try:
        text = raw[shift:].decode("utf-8" if shift else encoding)
    except UnicodeDecodeError:
        raise _undecodable(path, encoding) from None
    return Source(text=text, encoding=encoding)  # a NUL is the engine's (np2torch.lint.nul): ruff takes some


@dataclass(frozen=True)
class Stamp:
    """Enough of a file's ``stat`` to notice that someone else wrote it meanwhile."""

    mtime_ns: int
    size: int

    @classmethod
    def of(cls, st: os.stat_result) -> Stamp:
        return cls(st.st_mtime_ns, st.st_size)


MAX_FILE_BYTES = 128 * 1024 * 1024
"""Larger files are refused unread: no Python source is this big, and a notebook this big is its outputs."""

# Opening a FIFO for reading waits for a writer; O_NONBLOCK returns at once, so fstat can refuse it.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> str:
    kind = next((name for test, name in _KINDS if test(mode)), "")
    return "not a regular file" + (f" ({kind})" if kind else "")


def _size(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB" if count >= 1024 * 1024 else f"{count} bytes"


def read_regular(path: str, display: str, limit: int | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file ``path`` and its ``stat``; :class:`FileError` for anything else.

    A FIFO, a device (``/dev/zero``) or a socket would be read for ever or until memory runs out,
    so they are refused before reading, and so is a file larger than ``limit`` (:data:`MAX_FILE_BYTES`).
    Each refusal is ruff's E902 (ruff has no size limit, and would read a FIFO or ``/dev/zero`` for ever: a file
    np2torch will not read is reported as one ruff cannot).
    """
    limit = MAX_FILE_BYTES if limit is None else limit
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except IsADirectoryError:
        raise FileError(display, "is a directory", code=IO_ERROR) from None
    except OSError as exc:
        raise read_error(display, exc) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise FileError(display, "is a directory", code=IO_ERROR)
        if not stat.S_ISREG(st.st_mode):
            raise FileError(display, _not_regular(st.st_mode), code=IO_ERROR)
        data = b"" if st.st_size > limit else _read_at_most(fd, limit + 1)
    except OSError as exc:
        raise read_error(display, exc) from None
    finally:
        os.close(fd)
    if st.st_size > limit or len(data) > limit:
        raise FileError(display, f"file larger than {_size(limit)}, not read", code=IO_ERROR)
    return data, st


def _read_at_most(fd: int, size: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_bytes(path: str, display: str) -> tuple[bytes, Stamp]:
    data, st = read_regular(path, display)
    return data, Stamp.of(st)


def write_atomic(path: str, data: bytes, display: str, expect: Stamp | None = None) -> None:
    """Replace ``path``'s content with ``data`` in one step, keeping its mode bits, owner and group.

    ``expect`` is the file's stamp when it was read: if the file changed since,
    it is left alone (someone else's edit wins) and :class:`FileError` is raised.
    A file the user could not write, or one with several hard links, is refused
    (see :func:`refuse_to_replace`).
    """
    target = os.path.realpath(path)  # write through a symlink, never over it
    try:
        before = os.stat(target)
    except OSError as exc:
        raise os_error(display, exc) from None
    refuse_to_replace(target, before, display)

    def unchanged_since_read() -> None:
        if expect is not None and Stamp.of(os.stat(target)) != expect:
            raise FileError(display, "file changed while np2torch was fixing it; left it untouched")

    try:
        replace_file(target, data, mode=stat.S_IMODE(before.st_mode), owner=(before.st_uid, before.st_gid),
                     before_replace=unchanged_since_read)
    except OSError as exc:
        raise os_error(display, exc) from None


def refuse_to_replace(target: str, st: os.stat_result, display: str) -> None:
    """Raise :class:`FileError` when replacing ``target`` by rename would do what writing it could not.

    A rename needs only the folder's permission, so a read-only file would be rewritten (even by a
    user who is not root, and by root whatever the mode); and it makes a new inode, so the other
    names of a hard-linked file would silently keep the old code.  Writing such a file in place
    instead could leave it half-written, so np2torch does neither and says why.
    """
    if not stat.S_ISREG(st.st_mode):
        raise FileError(display, f"fix not applied: {_not_regular(st.st_mode)}")
    if st.st_nlink > 1:
        raise FileError(display, f"fix not applied: the file has {st.st_nlink} hard links, and replacing it would "
                                 "leave the other links with the old code")
    if not _writable(target, st):
        raise FileError(display, "fix not applied: the file is read-only")


def _writable(target: str, st: os.stat_result) -> bool:
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # access(2) says yes to root: the mode bits say no
        return bool(st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    if os.access in os.supports_effective_ids:
        return os.access(target, os.W_OK, effective_ids=True)
    return os.access(target, os.W_OK)


def replace_file(
    target: str | os.PathLike[str],
    data: bytes,
    *,
    mode: int | None = None,
    owner: tuple[int, int] | None = None,
    durable: bool = True,
    before_replace: Callable[[], None] | None = None,
) -> None:
    """Write ``data`` to a temporary file beside ``target``, then ``os.replace`` it: never half-written.

    ``mode``: the new file's permission bits (default: a new file's, after the
    umask).  ``owner``: the new file's ``(uid, gid)`` (default: the caller's); a
    ``PermissionError`` when they cannot be kept (the target is left alone).
    ``durable``: fsync the data and the folder (a cache need not).
    ``before_replace`` may raise to abandon the write; the temporary file is removed.
    An existing ``target`` that is not a regular file (``/dev/null``) is never replaced.
    """
    _refuse_special(target)
    folder, name = os.path.split(os.fspath(target))
    folder = folder or "."
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".np2torch.tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if owner is not None:
            _chown(tmp, owner)  # before chmod: chown may clear set-user-ID and set-group-ID bits
        os.chmod(tmp, _new_file_mode() if mode is None else mode)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        fsync_folder(folder)


def _refuse_special(target: str | os.PathLike[str]) -> None:
    try:
        st = os.stat(target)
    except OSError:
        return  # a new file; anything else fails in mkstemp or os.replace with its own error
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.EINVAL, _not_regular(st.st_mode), os.fspath(target))


def _chown(tmp: str, owner: tuple[int, int]) -> None:
    """Give the temporary file the replaced file's owner and group, or refuse the replacement."""
    st = os.stat(tmp)
    if (st.st_uid, st.st_gid) == owner or not hasattr(os, "chown"):
        return
    try:
        os.chown(tmp, *owner)
    except PermissionError:
        raise PermissionError(errno.EPERM, f"fix not applied: np2torch could not keep the file's owner and group "
                                           f"({owner[0]}:{owner[1]})") from None


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Make the rename durable; not every platform can open a folder, which is fine."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = [
    "SOURCE_SUFFIXES",
    "FileError",
    "Source",
    "Stamp",
    "decode_source",
    "read_bytes",
    "write_atomic",
]
