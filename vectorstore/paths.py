"""Paths a command creates (an export, a map, an index folder): :func:`creation_problem` says in one line why one
cannot be made, before any work; :func:`write_output` writes an output file all or nothing, only over a plain
file, never into a FIFO and never through a symbolic link (hostile round #35, F7, F15: ``--export FIFO
--force`` hung; an export under a file, or with a name over the file system's limit, ended in a raw
FileExistsError or OSError; a fourth round: a full disk left a cut export in place of the old one)."""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

NAME_MAX, PATH_MAX = 255, 4096
"""Bytes of one name and of a whole path, where the file system does not say (Linux's, and most others')."""


def shown(text: str, limit: int = 80) -> str:
    """``text`` for a one-line message: cut to ``limit`` characters, with its length (a 5,000-character name stays
    readable)."""
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text):,} characters)"


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return NAME_MAX


def creation_problem(path: str | Path, flag: str) -> str:
    """Why ``path`` cannot be created (``flag``: the option naming it, e.g. ``--export``), in one line naming the
    path and what to do, or "": a name in it over the file system's limit (in bytes: ENAMETOOLONG), the whole
    path over :data:`PATH_MAX` bytes, or a part above it that is a file, not a folder (nothing can be made under
    it). Only looks; creates nothing. Folders missing above it are not a problem (they are created)."""
    path = Path(path)
    folder = next((a for a in path.absolute().parents if _exists(a)), Path("/"))
    limit = _name_max(folder) if folder.is_dir() else NAME_MAX
    for part in path.parts:
        if len(os.fsencode(part)) > limit:
            return (f"{shown(str(path))}: a name in it is {len(os.fsencode(part)):,} bytes long, over the {limit} a "
                    f"file name may have here: choose a shorter name for {flag}")
    if len(os.fsencode(str(path.absolute()))) >= PATH_MAX:
        return (f"{shown(str(path))}: the path is {len(os.fsencode(str(path.absolute()))):,} bytes long, over the "
                f"{PATH_MAX:,} a path may have: choose a shorter one for {flag}")
    if not folder.is_dir():
        if folder.is_symlink():  # a link loop or a dangling link is no file (a hostile round called it one)
            return (f"{path}: {folder} is a symbolic link that leads to no folder (a loop, or to nothing), so nothing "
                    f"can be created under it: choose a path in a folder for {flag}")
        return (f"{path}: {folder} is a file, not a folder, so nothing can be created under it: choose a path in a "
                f"folder for {flag}")
    return ""


def cannot_create(path: Path, exc: OSError, flag: str) -> str:
    """One line for an output file ``path`` the system refused to create or write (``exc``), naming the part
    refused and what to do (``flag``: the option that named it)."""
    where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
    reason = (exc.strerror or type(exc).__name__).lower()
    hint = "a folder this user may write" if isinstance(exc, PermissionError) or exc.errno == errno.EROFS else "another path"
    return f"{path}: cannot be written ({reason}{where}): choose {hint} for {flag}"


def _exists(path: Path) -> bool:
    """True when anything (a dangling link too) is at ``path``; False also when it cannot be looked up."""
    try:
        os.lstat(path)
        return True
    except OSError:
        return False


def _umask() -> int:
    """The process' file-creation mask (read by setting it and setting it back: the only way to read it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove_stale_parts(folder: Path, stem: str) -> None:
    """Remove the ``.STEM.PID-*.part`` files in ``folder`` that a killed writer left (its PID runs no process):
    a kill -9 during an export left one beside the file for good (a hostile round). One of a writer still running
    is left alone."""
    for part in folder.glob(f".{glob.escape(stem)}.*-*.part"):
        pid = part.name[len(stem) + 2:].partition("-")[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                part.unlink()
        except OSError:  # another user's process: running
            pass


def write_output(path: str | Path, write: Callable[[BinaryIO], object], flag: str = "--export") -> None:
    """Write ``path`` all or nothing: ``write(f)`` fills a new file beside it (``.NAME.*.part``, in the same folder,
    created with the folders above it), which then replaces ``path`` in one rename; a failure meanwhile (a full
    disk: the export used to empty the file first and leave 8 KiB of it, a fourth hostile round) removes the new
    file and leaves ``path`` as it was. Only a plain file is replaced: an existing symbolic link, FIFO, socket,
    device or folder is refused untouched (the rename replaces a link put there meanwhile, and never writes
    through it or into a FIFO). An existing file keeps its permission bits.

    Raises ValueError, one line naming the path and ``flag`` (the option that named it), for such a path and for
    one the system will not let us create or write (permissions, a read-only or virtual file system, no space)."""
    import tempfile

    path = Path(path)
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        before = None
    except OSError as exc:
        raise ValueError(cannot_create(path, exc, flag)) from None
    if before is not None and not stat.S_ISREG(before.st_mode):
        raise ValueError(f"{path} is not a plain file (a symbolic link, FIFO, socket, device or folder): it is "
                         "written only as a plain file; name another file")
    part = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The new file's name within the name limit in bytes (a 255-byte name was refused at 200 characters).
        stem = os.fsencode(path.name)[:100].decode("utf-8", "ignore")
        _remove_stale_parts(path.parent, stem)
        fd, part = tempfile.mkstemp(prefix=f".{stem}.{os.getpid()}-", suffix=".part", dir=path.parent)
        os.fchmod(fd, stat.S_IMODE(before.st_mode) if before is not None else 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())  # on disk before it replaces the old file: a crash leaves one or the other
        os.replace(part, path)
        part = None
    except OSError as exc:
        if exc.filename and Path(exc.filename).parent == path.parent and str(exc.filename).endswith(".part"):
            exc.filename = str(path)  # the new file beside it is ours: the user named the path
        raise ValueError(cannot_create(path, exc, flag) + ("; the file there is unchanged" if before else "")) \
            from None
    finally:
        if part is not None:
            with contextlib.suppress(OSError):
                os.unlink(part)
